"""Native gangs on the releases before 1.37, each through the Workload API version it serves:
1.36's v1alpha2 (Workload + PodGroup, pods name it in `spec.schedulingGroup`) and 1.35's
v1alpha1 (a Workload holding its pod group, pods name it in `spec.workloadRef`), with the gates
each release names (GenericWorkload for the API, GangScheduling for the scheduler's plugin).

One cluster per release, `<test cluster>-r1NN` (kube-scheduler without the extender), made for
this module and torn down after it unless it was already running (and one 1.36 cluster with
GenericWorkload only, for the refusal). Select a release with `-k 1.36` or `-k 1.35`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from extender import demand
from extender.config import Settings
from loadgen import gang_views, runner, scenarios, templates, workload_api
from loadgen.scenarios import Phase, Scenario
from testbed import vocab
from testbed.cluster import feature_gates, local
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube import workloads as workloads_api
from testbed.kube.client import Kube
from tests.support import own_clusters
from tests.support.private_fleet import (
    Fleet,
    loadgen_args,
    make_fleet,
    remove_fleet,
    run_loadgen,
)

# A cold cluster on a release not built yet would build it here: never in a test run.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

VERSIONS = {"1.36": "v1alpha2", "1.35": "v1alpha1"}
"""The Workload API version each older release serves; the clusters are the session's
(`older_kubeconfig`, `older_kube` in tests/integration/conftest.py)."""


@pytest.fixture
async def release_fleet(
    older_kube: Kube, older_kubeconfig: tuple[str, str]
) -> AsyncIterator[Fleet]:
    f = await make_fleet(older_kube, older_kubeconfig[1], nodes=4)
    try:
        yield f
    finally:
        await remove_fleet(older_kube, older_kubeconfig[1], f)


def _gangs(gangs: int, size: int, timeout: float = 120.0) -> Scenario:
    """`gangs` native gang Jobs of `size` whole-node pods (8 GPUs + 8 aligned NICs), each left
    until placed or refused (at most `timeout` s): on 4 nodes, two gangs of 3 cannot both run."""
    base = scenarios.load("gang", {"gangs": str(gangs), "size": str(size), "native": "true"})
    phase = base.phases[0]
    settled = phase.model_copy(update={"wait": "settled", "timeout": timeout})
    return base.model_copy(update={"phases": [Phase.model_validate(settled.model_dump())]})


async def test_the_release_serves_its_own_workload_api_version(
    older_kubeconfig: tuple[str, str], older_kube: Kube
) -> None:
    release, _ = older_kubeconfig
    assert await workloads_api.served_version(older_kube) == VERSIONS[release]
    # The check passes: the API served and the gang plugin's gate reported on.
    assert await workload_api.check(older_kube, _gangs(1, 2)) == VERSIONS[release]


async def test_native_gangs_bind_all_or_nothing_and_the_extender_reads_their_group(
    older_kubeconfig: tuple[str, str], older_kube: Kube, release_fleet: Fleet
) -> None:
    release, _ = older_kubeconfig
    version = VERSIONS[release]
    params = release_fleet.settings(qps=50, allow_unschedulable=True, stall_timeout=90, keep=True)
    res = await runner.run(older_kube, _gangs(2, 3, 45.0), params)
    states = gang_views.gang_states(res.records, {"gang": 3})
    assert len(states) == 2 and sum(s.seen for s in states.values()) == 6, states
    scheduled = sorted(s.scheduled for s in states.values())
    if workloads_api.standalone(version):
        # 1.36 places a PodGroup in one cycle: the gang that cannot fit is refused at once.
        assert res.error is None, res.error
        assert scheduled == [0, 3], states
    elif scheduled == [0, 0]:
        # 1.35's gang plugin reserves pod by pod and waits at Permit, so two gangs that arrive
        # together can each hold 2 of the 4 nodes there: neither binds (its known deadlock,
        # until DefaultSchedulingTimeoutDuration, 5 min), 4 pods wait and 2 are refused.
        assert res.error == "phase gang: 2 of 6 pods settled after 45s", res.error
    else:
        # Or one gang reaches Permit whole and binds; the other holds one pod at Permit,
        # neither bound nor refused.
        assert res.error == "phase gang: 5 of 6 pods settled after 45s", res.error
        assert scheduled == [0, 3], states
    # All or nothing either way: no gang is partly bound, and a bound gang has a node a pod.
    assert not any(s.partial for s in states.values())
    assert all(s.nodes == 3 for s in states.values() if s.scheduled), states
    if workloads_api.standalone(version):
        assert set(states) == {"gang-000000", "gang-000001"}
    else:
        assert set(states) == {"gang-000000/workers", "gang-000001/workers"}

    # The pods as the API server kept them name their group the release's way, and the
    # extender takes that group as the gang (ahead of the Job label every pod also has).
    ns = templates.namespace_name(res.run_id)
    pods = (await older_kube.list(r.PODS, namespace=ns)).items
    assert len(pods) == 6
    field = "schedulingGroup" if workloads_api.standalone(version) else "workloadRef"
    assert all(field in p["spec"] for p in pods)
    jobs = {demand.job_of(p, Settings()) for p in pods}
    assert jobs == {f"{ns}/{g}" for g in states}


async def test_the_gang_plugins_gate_is_read_from_the_api_servers_own_report(
    older_kubeconfig: tuple[str, str], older_kube: Kube
) -> None:
    text = await older_kube.request("GET", "/metrics", text=True)
    gates = feature_gates.enabled_in(str(text))
    assert gates[vocab.GANG_GATE] is True and gates[vocab.WORKLOAD_GATE] is True


@pytest.fixture(scope="module")
def api_without_plugin() -> Iterator[str]:
    """1.36 serving the Workload API (GenericWorkload) without the gang plugin's gate."""
    base = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    config = local.ClusterConfig(
        name=f"{base}-r136-nogang",
        extender=False,
        kubernetes="1.36",
        feature_gates={vocab.WORKLOAD_GATE: True},
    )
    with own_clusters.running(config) as kubeconfig:
        yield kubeconfig


async def test_on_1_36_without_gang_scheduling_a_native_gang_is_one_line_exit_2(
    api_without_plugin: str, tmp_path: Path
) -> None:
    kube = await Kube.connect(kubeconfig=api_without_plugin)
    try:
        fleet = await make_fleet(kube, api_without_plugin, nodes=1)
        try:
            run_id = f"nogang-{fleet.suffix}"
            code, out, err = await run_loadgen(
                "run", "gang", "native=true", "gangs=1", "size=1",
                *loadgen_args(fleet, api_without_plugin, tmp_path, run_id),
            )  # fmt: skip
            assert code == 2, (out, err)
            lines = err.strip().splitlines()
            # One line: no run id for a run refused before its namespace existed.
            assert len(lines) == 1 and "Traceback" not in err, err
            assert "serves the Workload API but runs with GangScheduling off" in lines[0]
            assert "--feature-gates GenericWorkload=true,GangScheduling=true" in lines[0]
            with pytest.raises(errors.NotFound):
                await kube.get(r.NAMESPACES, templates.namespace_name(run_id))
        finally:
            await remove_fleet(kube, api_without_plugin, fleet)
    finally:
        await kube.close()
