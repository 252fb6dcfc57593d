"""Gangs as the Workload API has them (1.37, GenericWorkload on: the gated cluster), against
the private label: all or nothing at the end of the run, and the bad input around it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loadgen import gang_views, runner, scenarios, templates
from loadgen.report import document
from loadgen.scenarios import Phase, Scenario
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import (
    Fleet,
    loadgen_args,
    namespace_gone,
    private_fleet,
    run_loadgen,
)

pytestmark = pytest.mark.cluster


@pytest.fixture
async def gated_fleet(gated_kube: Kube, gated_kubeconfig: str) -> AsyncIterator[Fleet]:
    async with private_fleet(gated_kube, gated_kubeconfig, nodes=4) as f:
        yield f


def _gangs(native: bool, gangs: int, size: int) -> Scenario:
    """`gangs` Jobs of `size` whole-node pods (8 GPUs + 8 aligned NICs), each left until
    placed or refused: on 4 nodes, two gangs of 3 cannot both run."""
    base = scenarios.load("gang", {"gangs": str(gangs), "size": str(size), "native": str(native)})
    phase = base.phases[0]
    settled = phase.model_copy(update={"wait": "settled", "timeout": 90.0})
    return base.model_copy(update={"phases": [Phase.model_validate(settled.model_dump())]})


async def test_native_gangs_bind_all_or_nothing_where_labelled_ones_split(
    gated_kube: Kube, gated_fleet: Fleet
) -> None:
    params = gated_fleet.settings(qps=50, allow_unschedulable=True, stall_timeout=60)
    res = await runner.run(gated_kube, _gangs(True, 2, 3), params)
    states = gang_views.gang_states(res.records, {"gang": 3})
    assert len(states) == 2 and sum(s.seen for s in states.values()) == 6
    # One gang fits (3 of the 4 nodes), the other cannot: none of its pods is bound.
    assert sorted(s.scheduled for s in states.values()) == [0, 3], states
    assert not any(s.partial for s in states.values())
    summary = document.build(res).gang_summary
    assert summary is not None
    assert (summary.gangs, summary.partial, summary.unplaced) == (2, 0, 1)
    (bound,) = [s for s in states.values() if s.scheduled]
    assert bound.nodes == 3
    await namespace_gone(gated_kube, res.run_id)  # its claims released

    # The same demand as labelled gangs, which the scheduler places pod by pod: 4 of the 6
    # pods bound, so one gang is left split across the last free node.
    params = gated_fleet.settings(qps=50, allow_unschedulable=True, stall_timeout=60)
    res = await runner.run(gated_kube, _gangs(False, 2, 3), params)
    states = gang_views.gang_states(res.records, {"gang": 3})
    assert sum(s.scheduled for s in states.values()) == 4
    assert sum(s.partial for s in states.values()) >= 1


async def test_a_native_gang_that_fits_is_timed_from_first_pod_created_to_last_running(
    gated_kube: Kube, gated_fleet: Fleet
) -> None:
    sc = scenarios.load("gang", {"gangs": "2", "size": "2", "native": "true"})
    res = await runner.run(gated_kube, sc, gated_fleet.settings(qps=50))
    assert res.error is None
    summary = document.build(res).gang_summary
    assert summary is not None
    assert (summary.gangs, summary.complete, summary.partial, summary.unplaced) == (2, 2, 0, 0)
    times = summary.time_to_running_ms
    assert times.count == 2 and 0 < times.Perc50 <= times.Perc99
    # No private label: the pods name their PodGroup, which the run made with its Workload.
    assert all(r.gang in ("gang-000000", "gang-000001") for r in res.records.pods.values())


async def test_a_native_gang_without_the_workload_api_is_one_line_exit_2_nothing_created(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"nogw-{fleet.suffix}"
    code, out, err = await run_loadgen(
        "run", "gang", "native=true", "gangs=1", "size=2",
        *loadgen_args(fleet, kubeconfig, tmp_path, run_id),
    )  # fmt: skip
    assert code == 2, (out, err)
    # One line of what is missing: no run id, for no namespace was made.
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"loadgen: run {run_id}" not in err, err
    assert "GenericWorkload=true" in lines[0] and "Traceback" not in err
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, templates.namespace_name(run_id))


async def test_a_gang_larger_than_the_fleet_is_refused_before_anything_is_created(
    gated_kube: Kube, gated_fleet: Fleet
) -> None:
    sc = scenarios.load("gang", {"gangs": "1", "size": "5", "native": "true"})
    settings = gated_fleet.settings()
    with pytest.raises(runner.Unfit, match="one gang needs 5 pods x 8 GPUs = 40 GPUs at once"):
        await runner.run(gated_kube, sc, settings)
    with pytest.raises(errors.NotFound):
        await gated_kube.get(r.NAMESPACES, templates.namespace_name(settings.run_id))
