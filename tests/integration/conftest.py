"""A second local cluster for what needs gates the session cluster runs without: the Workload
API (`GenericWorkload`, native gangs) and milli-unit capacity ranges
(`DRAFractionalCapacityRange`), both beta and off by default in Kubernetes 1.37; and a third,
`<test cluster>-derived`, with the alpha DRADerivedAttributes on too (kept apart so a gated
cluster already running is reused as it is).

Named `<test cluster>-gated` unless $DRA_TESTBED_GATED_CLUSTER names another (a cluster already
running with these gates, e.g. the session cluster itself, is reused); kube-scheduler runs
without the extender entry. Torn down at the end only if this session created it. And the
1.36 and 1.35 clusters (`tests/support/release_clusters.py`), for what differs by release.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from testbed import vocab
from testbed.cluster import local
from testbed.kube.client import Kube
from tests.support import own_clusters, release_clusters

GATES = {vocab.WORKLOAD_GATE: True, "DRAFractionalCapacityRange": True}
DERIVED_GATES = {**GATES, vocab.DERIVED_GATE: True}
"""The derived cluster's: the gated cluster's plus the alpha DRADerivedAttributes, which also
has kube-scheduler run its experimental allocator (the only one with the feature)."""


def _gated_cluster(suffix: str, env: str, gates: dict[str, bool]) -> Iterator[str]:
    base = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    name = os.environ.get(env, f"{base}-{suffix}")
    config = local.ClusterConfig(name=name, extender=False, feature_gates=gates)
    with own_clusters.running(config, build=True) as kubeconfig:
        yield kubeconfig


@pytest.fixture(scope="session")
def gated_kubeconfig() -> Iterator[str]:
    yield from _gated_cluster("gated", "DRA_TESTBED_GATED_CLUSTER", GATES)


@pytest.fixture(scope="session")
async def gated_kube(gated_kubeconfig: str) -> AsyncIterator[Kube]:
    async with own_clusters.client(gated_kubeconfig) as client:
        yield client


@pytest.fixture(scope="session")
def derived_kubeconfig() -> Iterator[str]:
    """`<test cluster>-derived` (or $DRA_TESTBED_DERIVED_CLUSTER): derived attributes on."""
    yield from _gated_cluster("derived", "DRA_TESTBED_DERIVED_CLUSTER", DERIVED_GATES)


@pytest.fixture(scope="session")
async def derived_kube(derived_kubeconfig: str) -> AsyncIterator[Kube]:
    async with own_clusters.client(derived_kubeconfig) as client:
        yield client


@pytest.fixture(scope="session", params=list(release_clusters.OLDER))
def older_kubeconfig(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(release, kubeconfig) of each release before 1.37, for what differs by release; each
    cluster torn down at the end only if this session created it."""
    release = str(request.param)
    with own_clusters.running(release_clusters.config(release)) as kubeconfig:
        yield release, kubeconfig


@pytest.fixture(scope="session")
async def older_kube(older_kubeconfig: tuple[str, str]) -> AsyncIterator[Kube]:
    async with own_clusters.client(older_kubeconfig[1]) as client:
        yield client
