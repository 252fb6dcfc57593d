"""The placement oracle on the fleet's own profiles and on kept results: what a node holds,
the two optima, bad input, and the invariant that no recorded arm beats its optimum."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from experiment.measure import arm_record
from experiment.oracle import arms, inputs, patterns, solve
from experiment.oracle.inputs import Demand, Phase, Workload
from experiment.spec import mixed_fleet
from fleet import render
from fleet import spec as fleet_spec
from testbed import vocab

RESULTS = Path(__file__).parents[3] / "bench" / "results"


def _fleet(doc: dict[str, Any]) -> inputs.Fleet:
    rendered = render.render(fleet_spec.from_data(doc))
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in rendered.nodes}
    return inputs.fleet_of(rendered.slices, labels)


def _profile_fleet(profile: str, nodes: int, **topology: int) -> inputs.Fleet:
    doc: dict[str, Any] = {
        "name": "t",
        "pools": [{"name": "p", "profile": profile, "count": nodes}],
    }
    if topology:
        doc["topology"] = topology
    return _fleet(doc)


def _shape(profile: str) -> inputs.Hardware:
    return next(iter(_profile_fleet(profile, 1).hardware.values()))


def test_a_node_shape_is_read_from_its_slices_rdma_nics_only() -> None:
    dgx, four_nic, l4 = _shape("dgx-h100"), _shape("h100-4nic"), _shape("l4-4gpu")
    assert [(r.numa, r.gpus, r.nics) for r in dgx] == [(0, 1, 1)] * 4 + [(1, 1, 1)] * 4
    assert [(r.numa, r.gpus, r.nics) for r in four_nic] == [(0, 2, 1)] * 2 + [(1, 2, 1)] * 2
    # The L4 host's NIC is not RDMA: the rdma.dra.net class never selects it.
    assert [(r.gpus, r.nics) for r in l4] == [(1, 0)] * 4


@pytest.mark.parametrize(
    ("profile", "demand", "most"),
    [
        ("dgx-h100", Demand(8, 8, True, False), 1),
        ("dgx-h100", Demand(4, 4, True, True), 2),
        ("dgx-h100", Demand(1, 0, False, False), 8),
        ("h100-4nic", Demand(8, 8, True, False), 0),
        ("h100-4nic", Demand(4, 4, True, False), 1),
        # two roots per NUMA node, one NIC each: 4 aligned pairs on one NUMA node never fit
        ("h100-4nic", Demand(4, 4, True, True), 0),
        ("h100-4nic", Demand(2, 2, False, True), 2),
        ("l4-4gpu", Demand(1, 1, False, False), 0),
    ],
)
def test_what_one_node_holds(profile: str, demand: Demand, most: int) -> None:
    assert patterns.capacity(_shape(profile), demand) == most


def _workload(*phases: tuple[str, Demand, int, bool]) -> Workload:
    return Workload(tuple(Phase(n, d, pods, 0, probe) for n, d, pods, probe in phases), {})


EIGHT, FOUR = Demand(8, 8, True, False), Demand(4, 4, True, False)


def test_the_online_optimum_places_what_fits_first_and_the_batch_one_need_not() -> None:
    # One dgx-h100: an 8+8 pod, then two 4+4 pods. Batch refuses the 8+8 to place both
    # 4+4; a scheduler placing what fits places the 8+8 and then has no room.
    oracle = solve.Oracle(
        _profile_fleet("dgx-h100", 1), _workload(("a8", EIGHT, 1, True), ("a4", FOUR, 2, True))
    )
    assert oracle.most_placed("a4", online=False).value == 2
    assert oracle.most_placed("a4", online=True).value == 0
    assert oracle.most_placed("a8", online=True).value == 1


def test_online_equals_batch_where_batch_places_every_pod() -> None:
    oracle = solve.Oracle(
        _profile_fleet("dgx-h100", 3), _workload(("a8", EIGHT, 1, True), ("a4", FOUR, 4, True))
    )
    for phase in ("a8", "a4"):
        batch, online = (oracle.most_placed(phase, online=o) for o in (False, True))
        assert batch.optimal and online.optimal and batch.value == online.value


def test_a_load_the_fleet_cannot_hold_is_named_with_its_shortfall() -> None:
    fleet = _profile_fleet("dgx-h100", 2)
    with pytest.raises(solve.NotHeld, match=r"phase fill: 20 pods of 1 GPU asked, at most 16"):
        solve.Oracle(fleet, _workload(("fill", Demand(1, 0, False, False), 20, False)))
    with pytest.raises(
        solve.NotHeld, match=r"phase big: 2 pods .* after the phases before it \(1 short\)"
    ):
        solve.Oracle(
            fleet,
            _workload(("fill", Demand(4, 0, False, False), 1, False), ("big", EIGHT, 2, False)),
        )


def test_gangs_keep_to_the_fewest_blocks_that_hold_them() -> None:
    fleet = _profile_fleet("dgx-h100", 8, hostsPerRack=2, racksPerBlock=2)  # 2 blocks of 4
    gangs = Workload((Phase("gang", EIGHT, 8, 0, False, gang_size=4),), {})
    assert solve.gang_spans(fleet, gangs, vocab.LABEL_BLOCK).value == 1.0
    assert solve.gang_spans(fleet, gangs, vocab.LABEL_RACK).value == 2.0
    one_of_six = Workload((Phase("gang", EIGHT, 6, 0, False, gang_size=6),), {})
    assert solve.gang_spans(fleet, one_of_six, vocab.LABEL_BLOCK).value == 2.0
    too_big = Workload((Phase("gang", EIGHT, 9, 0, False, gang_size=9),), {})
    with pytest.raises(solve.NotHeld, match=r"need 9 pods .* holds 8 .1 short"):
        solve.gang_spans(fleet, too_big, vocab.LABEL_BLOCK)


def test_a_bound_short_of_optimal_states_its_limit_and_gap() -> None:
    bound = solve.Bound("x", "max", 90.0, 100.0, False, 60.0)
    assert bound.gap == pytest.approx(0.1)
    assert bound.describe() == "90 (limit 100, gap 10.0%)"
    assert solve.Bound("x", "max", 7.0, 7.0, True, 0.1).describe() == "7"


def test_an_arm_past_a_limit_is_flagged() -> None:
    limit = solve.Bound("x", "max", 0.8, 0.8, True, 0.0)
    above = solve.Bound("x", "max", 1.0, 1.0, True, 0.0)
    assert arms.Figure("m", "share", "max", 0.8, above, limit).beats == ""
    assert "online" in arms.Figure("m", "share", "max", 0.9, above, limit).beats
    assert "batch" in arms.Figure("m", "share", "max", 1.1, above, limit).beats


def test_claims_the_oracle_does_not_model_are_refused_by_name() -> None:
    doc = {
        "scenario": {
            "name": "s",
            "phases": [
                {"name": "mig", "kind": "pods", "count": 1, "claim": {"mig_profile": "1g.10gb"}}
            ],
        },
        "phases": [{"name": "mig", "counts": {"expected_pods": 1}}],
    }
    with pytest.raises(inputs.Unsupported, match=r"phase mig: .* mig_profile"):
        inputs.workload_of(arm_record.modelled(doc))


# Kept demo results (bench/results) and the fleets they ran on (the demo's mixed fleet).
KEPT = [
    (100, "demo-align-100x3-20261122T2158", "alignment"),
    (1000, "demo-frag-1000-20261122T0959", "fragmentation"),
    (1000, "demo-1000-20261122T0635", "placement"),
]


@pytest.mark.parametrize(("nodes", "run", "comparison"), KEPT)
def test_no_recorded_arm_beats_its_optimum(nodes: int, run: str, comparison: str) -> None:
    fleet = _fleet(mixed_fleet.spec(nodes))
    checked = 0
    for path in sorted((RESULTS / run).glob(f"{comparison}-*.json")):
        got = arms.arm_optimum(arm_record.build(path.read_text()), fleet)
        assert got is not None and got.error is None, path.name
        for figure in got.figures:
            assert figure.batch.optimal, (path.name, figure.metric)
            assert figure.beats == "", (path.name, figure)
            checked += figure.measured is not None
    assert checked >= 4


def test_a_device_tainted_noschedule_is_not_in_the_fleet() -> None:
    doc = {
        "name": "t",
        "pools": [{"name": "p", "profile": "dgx-h100", "count": 4}],
        "deviceTaints": [{"effect": "NoSchedule", "share": 0.25, "pools": ["p"]}],
    }
    fleet = _fleet(doc)
    assert sum(r.gpus for hw in fleet.hardware.values() for r in hw) == 32 - 8


def test_an_arm_that_refused_a_pod_that_fitted_has_no_online_optimum() -> None:
    # Two dgx-h100 nodes, 8-GPU probes: the arm placed 1 of 2 while the other node stayed
    # empty, which no scheduler that places what fits can end with.
    doc: dict[str, Any] = {
        "scenario": {
            "name": "s",
            "phases": [
                {
                    "name": "whole",
                    "kind": "pods",
                    "count": 2,
                    "wait": "settled",
                    "claim": {"gpus": 8},
                }
            ],
        },
        "phases": [{"name": "whole", "counts": {"expected_pods": 2, "pods_scheduled": 1}}],
        "fleet": {"gpus_stranded_at_peak": 0},
    }
    figures = arms.placement_figures(arm_record.modelled(doc), _profile_fleet("dgx-h100", 2))
    stranded = next(f for f in figures if f.metric == arms.STRANDED)
    assert stranded.online is None and stranded.batch.value == 0
    assert "refused" in stranded.beats
    assert stranded.record().online is None


def test_a_solve_stopped_by_its_time_limit_is_never_called_optimal() -> None:
    # 40 gangs of 7 on 60 blocks of 3-7 nodes: more than HiGHS proves in a second here.
    shape = _shape("dgx-h100")
    hardware: dict[str, inputs.Hardware] = {}
    labels: dict[str, dict[str, str]] = {}
    for block in range(60):
        for i in range(3 + block % 5):
            name = f"b{block}-n{i}"
            hardware[name], labels[name] = shape, {vocab.LABEL_BLOCK: f"b{block}"}
    gangs = Workload((Phase("g", EIGHT, 40 * 7, 0, False, gang_size=7),), {})
    try:
        got = solve.gang_spans(inputs.Fleet(hardware, labels), gangs, vocab.LABEL_BLOCK, 1.0)
    except TimeoutError as e:
        assert "no placement found within 1 s" in str(e)
        return
    # Whether or not it finished: the limit never passes the placement found, a gap is
    # stated unless proven, and the limit is at least one block per gang.
    assert 1.0 <= got.bound <= got.value
    if not got.optimal:
        assert "limit" in got.describe()
