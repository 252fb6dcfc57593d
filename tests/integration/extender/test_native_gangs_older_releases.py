"""The extender in the kube-scheduler path of the releases before 1.37 with native gangs
(GenericWorkload and GangScheduling on): 1.36 places a PodGroup (v1alpha2) in one cycle, 1.35
a Workload's pod group (v1alpha1) pod by pod held at Permit; either way the scheduler calls
the extender for every pod, no pod of the group is bound before the last, and the group's
pods follow one anchor rack. (Without the extender, the same two gangs of 4 on 16 nodes of
2 racks spanned 2 racks each in two runs on 1.36.)

One cluster per release, `<test cluster>-r1NN-ext`, whose kube-scheduler calls the extender on
$DRA_TESTBED_EXTENDER_PORT, where this module serves it in-process.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.config import Settings
from loadgen import gang_views, runner, scenarios
from testbed import vocab
from testbed.cluster import local, ports
from testbed.kube.client import Kube
from tests.support import own_clusters
from tests.support.private_fleet import Fleet, make_fleet, remove_fleet

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

GROUPS = {
    "1.36": ("gang-000000", "gang-000001"),
    "1.35": ("gang-000000/workers", "gang-000001/workers"),
}


@pytest.fixture(scope="module", params=sorted(GROUPS, reverse=True))
def release_cluster(request: pytest.FixtureRequest, extender_port: int) -> Iterator[str]:
    release = str(request.param)
    base = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    config = local.ClusterConfig(
        name=f"{base}-r{release.replace('.', '')}-ext",
        kubernetes=release,
        extender_port=extender_port,
        feature_gates=dict.fromkeys(vocab.WORKLOAD_GATES[release], True),
    )
    with own_clusters.running(config) as kubeconfig:
        yield kubeconfig


@pytest.fixture(scope="module")
async def release_kube(release_cluster: str) -> AsyncIterator[Kube]:
    async with own_clusters.client(release_cluster) as client:
        yield client


@pytest.fixture(scope="module")
async def extender_app(
    release_kube: Kube, extender_port: int
) -> AsyncIterator[tuple[web.Application, CollectorRegistry]]:
    if ports.in_use(extender_port):
        pytest.fail(f"127.0.0.1:{extender_port} is busy: stop what listens")
    registry = CollectorRegistry()
    app = app_mod.build(Settings(), registry=registry, kube=release_kube)
    runner_ = web.AppRunner(app, access_log=None)
    await runner_.setup()
    try:
        await web.TCPSite(runner_, "127.0.0.1", extender_port).start()
        await asyncio.wait_for(app[app_mod.STORE].ready.wait(), 60)
        yield app, registry
    finally:
        await runner_.cleanup()


@pytest.fixture
async def two_racks(release_kube: Kube, release_cluster: str) -> AsyncIterator[Fleet]:
    f = await make_fleet(release_kube, release_cluster, nodes=16)  # 8 hosts per rack: 2 racks
    try:
        yield f
    finally:
        await remove_fleet(release_kube, release_cluster, f)


async def test_each_pod_group_is_scored_pod_by_pod_and_lands_in_one_rack(
    release_kube: Kube,
    extender_app: tuple[web.Application, CollectorRegistry],
    two_racks: Fleet,
) -> None:
    _, registry = extender_app

    def calls(verb: str) -> float:
        labels = {"verb": verb, "outcome": "ok"}
        return registry.get_sample_value("extender_requests_total", labels) or 0.0

    before = calls("prioritize")
    # Two PodGroups of 4 whole-node pods (8 GPUs + 8 NICs each) on 16 empty nodes.
    sc = scenarios.load("gang", {"gangs": "2", "size": "4", "native": "true"})
    res = await runner.run(release_kube, sc, two_racks.settings(qps=50))
    assert res.error is None, res.error
    states = gang_views.gang_states(res.records, {"gang": 4})
    version = await release_kube.request("GET", "/version")
    release = f"{version['major']}.{version['minor']}".rstrip("+")
    assert set(states) == set(GROUPS[release]), states
    assert all(s.scheduled == 4 and not s.partial for s in states.values()), states
    # Whether in one cycle (1.36) or pod by pod (1.35), the extender is asked about each.
    assert calls("prioritize") - before >= 8
    # None of a group's pods is placed before the last, so each follows the anchor rack.
    assert [s.racks for s in states.values()] == [1, 1], states
