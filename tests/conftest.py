"""Session fixtures: one real local control plane for the whole test session.

The cluster is brought up once (or reused if `testbed up` already runs one, or taken from
$DRA_TESTBED_KUBECONFIG for an existing cluster) and torn down at the end only if this session
created it. $DRA_TESTBED_TEST_CLUSTER names it and $DRA_TESTBED_EXTENDER_PORT sets the loopback
port its kube-scheduler calls the extender on, so two test sessions can run side by side.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import settings

from testbed import vocab
from testbed.cluster import local
from testbed.kube.client import ClientSettings, Kube

# No per-example deadline: it is a wall-clock assert, and these machines are shared and noisy
# (a 200 ms deadline failed a YAML round trip under load). Slowness is benches' business.
settings.register_profile("testbed", deadline=None)
settings.load_profile("testbed")


@pytest.fixture(scope="session")
def extender_port() -> int:
    """Where the test cluster's kube-scheduler calls the extender."""
    return int(os.environ.get("DRA_TESTBED_EXTENDER_PORT", vocab.EXTENDER_DEFAULT_PORT))


@pytest.fixture(scope="session")
def kubeconfig(extender_port: int) -> Iterator[str]:
    if explicit := os.environ.get("DRA_TESTBED_KUBECONFIG"):
        yield explicit
        return
    name = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    cluster = local.LocalCluster(local.ClusterConfig(name=name, extender_port=extender_port))
    status, created = cluster.up()
    try:
        yield str(status.kubeconfig)
    finally:
        if created and not os.environ.get("DRA_TESTBED_KEEP_CLUSTER"):
            cluster.down()


@pytest.fixture(scope="session")
async def kube(kubeconfig: str) -> AsyncIterator[Kube]:
    client = await Kube.connect(kubeconfig=kubeconfig, settings=ClientSettings(qps=500, burst=1000))
    try:
        yield client
    finally:
        await client.close()
