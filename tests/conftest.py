"""Session fixtures: one real local control plane for the whole test session.

The suite never uses a user's cluster: it runs on a cluster of its own, `dra-testbed-test`
(or, while another live session holds that one, `dra-testbed-test-<pid>`), with its own
extender port, created here and torn down at the end if this session created it. Set
$DRA_TESTBED_TEST_CLUSTER to name the cluster to use (brought up if needed; two sessions side
by side each name their own) and $DRA_TESTBED_EXTENDER_PORT for the loopback port its
kube-scheduler calls the extender on; $DRA_TESTBED_KUBECONFIG runs the suite on an existing
cluster instead. The session holds its cluster (`testbed.cluster.holds`), so `testbed down`
of it says the tests still run.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import settings

from testbed import vocab
from testbed.cluster import holds, local
from testbed.kube.client import Kube
from tests.support import own_clusters

TEST_CLUSTER = "dra-testbed-test"
TEST_EXTENDER_PORT = vocab.EXTENDER_DEFAULT_PORT + 10_000
"""Not the default port: a user's own extender may listen there."""

# No per-example deadline: it is a wall-clock assert, and these machines are shared and noisy
# (a 200 ms deadline failed a YAML round trip under load). Slowness is benches' business.
settings.register_profile("testbed", deadline=None)
settings.load_profile("testbed")


@pytest.fixture(scope="session")
def extender_port() -> int:
    """Where the test cluster's kube-scheduler calls the extender."""
    return int(os.environ.get("DRA_TESTBED_EXTENDER_PORT", TEST_EXTENDER_PORT))


def _test_cluster_name() -> str:
    if explicit := os.environ.get("DRA_TESTBED_TEST_CLUSTER"):
        return explicit
    home = local.ClusterConfig(name=TEST_CLUSTER).home
    return (
        TEST_CLUSTER if not holds.holders(home, TEST_CLUSTER) else f"{TEST_CLUSTER}-{os.getpid()}"
    )


@pytest.fixture(scope="session")
def cluster_config(extender_port: int) -> local.ClusterConfig:
    """The test session's local cluster (never the user's default `dra-testbed`)."""
    name = _test_cluster_name()
    if name == local.DEFAULT_NAME:
        raise pytest.UsageError(
            f"DRA_TESTBED_TEST_CLUSTER={name} is the users' default cluster; name another"
        )
    return local.ClusterConfig(name=name, extender_port=extender_port)


@pytest.fixture(scope="session")
def kubeconfig(cluster_config: local.ClusterConfig) -> Iterator[str]:
    if explicit := os.environ.get("DRA_TESTBED_KUBECONFIG"):
        yield explicit
        return
    cluster = local.LocalCluster(cluster_config)
    with holds.hold(cluster_config.home, cluster_config.name, f"test session {os.getpid()}"):
        status, created = cluster.up()
        try:
            yield str(status.kubeconfig)
        finally:
            if created and not os.environ.get("DRA_TESTBED_KEEP_CLUSTER"):
                try:
                    cluster.down()
                except local.ClusterError as e:  # another session or run uses it: leave it
                    warnings.warn(f"left the test cluster up: {e}", stacklevel=1)


@pytest.fixture(scope="session")
async def kube(kubeconfig: str) -> AsyncIterator[Kube]:
    async with own_clusters.client(kubeconfig) as client:
        yield client
