import itertools
from typing import Any

import pytest

from experiment.demo import dra_guide, plan, project_targets, summary
from experiment.measure import arm_record, intervals
from experiment.measure.accounting import accounted
from experiment.measure.arms import LATENCY_PODS, Arm
from experiment.measure.figures import Figure
from experiment.measure.fleet_shape import FleetShape, shape_of
from testbed import vocab
from tests.support import demo_workloads

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""


def test_fleet_spec_splits_nodes_across_profiles_exactly() -> None:
    for nodes in (10, 50, 1000, 4999):
        spec = plan.fleet_spec(nodes)
        assert sum(p["count"] for p in spec["pools"]) == nodes
        assert spec["extendedResources"] is True
        assert spec["name"] == plan.FLEET_NAME


def _slice(node: str, driver: str, devices: list[dict[str, object]]) -> dict[str, object]:
    return {"spec": {"nodeName": node, "driver": driver, "devices": devices}}


def test_shape_counts_gpus_and_rdma_nics_per_node() -> None:
    rdma = {"attributes": {vocab.NIC_ATTR_RDMA: {"bool": True}}}
    plain = {"attributes": {vocab.NIC_ATTR_RDMA: {"bool": False}}}
    slices = [
        _slice("a", vocab.GPU_DRIVER, [{}] * 8),
        _slice("a", vocab.NIC_DRIVER, [rdma] * 8),
        _slice("b", vocab.GPU_DRIVER, [{}] * 8),
        _slice("b", vocab.NIC_DRIVER, [rdma] * 4),
        _slice("c", vocab.GPU_DRIVER, [{}] * 4),
        _slice("c", vocab.NIC_DRIVER, [plain]),
    ]
    assert shape_of(slices) == FleetShape(
        nodes=3, gpus=20, eight_gpu_nodes=2, aligned_eight_nodes=1
    )


SHAPE = FleetShape(nodes=40, gpus=300, eight_gpu_nodes=35, aligned_eight_nodes=30)


def test_arms_pair_up_and_alternate_order_between_repeats() -> None:
    workload = demo_workloads.workload(
        pods=100, repeat=2, comparisons=("extender", "dra"), latency_arms=True
    )
    arms = plan.arms(SHAPE, workload)
    assert [(a.comparison, a.variant, a.repeat, a.measure) for a in arms] == [
        ("extender", "on", 0, "throughput"),
        ("extender", "on", 0, "latency"),
        ("extender", "off", 0, "throughput"),
        ("extender", "off", 0, "latency"),
        ("dra", "claims", 0, "throughput"),
        ("dra", "claims", 0, "latency"),
        ("dra", "device-plugin", 0, "throughput"),
        ("dra", "device-plugin", 0, "latency"),
        ("extender", "off", 1, "throughput"),
        ("extender", "off", 1, "latency"),
        ("extender", "on", 1, "throughput"),
        ("extender", "on", 1, "latency"),
        ("dra", "device-plugin", 1, "throughput"),
        ("dra", "device-plugin", 1, "latency"),
        ("dra", "claims", 1, "throughput"),
        ("dra", "claims", 1, "latency"),
    ]
    # Each latency arm follows its throughput arm (whose sustained rate sets its arrivals),
    # with at most LATENCY_PODS pods.
    for before, arm in itertools.pairwise(arms):
        if arm.latency_of:
            assert arm.latency_of == before.name and arm.name == before.name + "-latency"
            assert arm.params["pods"] == "100" and arm.scheduler == before.scheduler
    assert {a.scheduler for a in arms if a.comparison == "dra"} == {plan.PLAIN}
    on = next(a for a in arms if a.variant == "on")
    off = next(a for a in arms if a.variant == "off")
    assert (on.scheduler, off.scheduler) == (plan.EXTENDER, plan.PLAIN)
    assert on.params == off.params  # same workload in both arms


def test_arms_reject_more_pods_than_gpus_and_unknown_comparisons() -> None:
    with pytest.raises(ValueError, match="exceeds the fleet's 300 GPUs"):
        plan.arms(SHAPE, demo_workloads.workload(pods=301))
    with pytest.raises(ValueError, match="unknown comparison"):
        plan.arms(SHAPE, demo_workloads.workload(pods=10, comparisons=("nope",)))


def test_fragmentation_probes_every_8_gpu_node_perfect_packing_keeps_whole() -> None:
    doc = plan.fragmentation_scenario(SHAPE)
    fill = sum(p["count"] * p["claim"]["gpus"] for p in doc["phases"][:-1])
    assert SHAPE.gpus // 4 - 7 < fill <= SHAPE.gpus // 4
    # Perfect packing leaves a whole node for every 8-GPU pod, and no more: a miss is
    # fragmentation.
    assert SHAPE.eight_gpu_nodes - -(-fill // 8) == doc["phases"][-1]["count"]
    assert doc["phases"][-1] == {
        "name": "whole",
        "kind": "pods",
        "count": 26,
        "claim": {"gpus": 8},
        "wait": "settled",
        "timeout": "300s",
    }


def _doc(thr: float, p99: float) -> arm_record.ArmRecord:
    return arm_record.modelled(
        {
            "throughput": {"Average": thr},
            "latency_ms": {
                "pod_startup": {"count": 1, "Perc50": p99, "Perc90": p99, "Perc99": p99}
            },
        }
    )


def test_rows_pair_the_two_variants_by_repeat() -> None:
    on = [Arm("extender", "on", "pods", repeat=r) for r in range(3)]
    off = [Arm("extender", "off", "pods", "", repeat=r) for r in range(3)]
    rows = summary.rows(
        [
            (off[0], _doc(10, 100)),
            (on[0], _doc(9, 300)),
            (on[1], _doc(8, 200)),
            (off[1], _doc(10, 100)),
            (on[2], _doc(7, 200)),  # its "off" arm was invalid: no pair
        ]
    )
    thr = next(r for r in rows if r.metric == "scheduling throughput")
    assert (thr.a_name, thr.b_name) == ("on", "off")
    assert thr.a.median == 8 and thr.b.median == 10 and thr.a.repeats == [0, 1, 2]
    assert thr.interval is not None and thr.interval.runs == 2
    assert thr.ratio == pytest.approx((0.9 * 0.8) ** 0.5)


def test_an_arm_without_a_throughput_sample_has_no_throughput() -> None:
    on, off = Arm("extender", "on", "pods"), Arm("extender", "off", "pods")
    empty = {"throughput": dict.fromkeys(("Average", "Perc50", "Perc90", "Perc95", "Perc99"), 0.0)}
    rows = summary.rows([(on, R(empty)), (off, _doc(10, 100))])
    thr = next(r for r in rows if r.metric == "scheduling throughput")
    assert thr.a.values == [] and thr.ratio is None
    # Throughput is a reported figure, not a target; a headline figure no arm has is "no
    # data", not "not measured" (its comparison ran).
    got = {t.goal: t for t in project_targets.targets(rows)}[OVERHEAD]
    assert got.verdict == "no data: no arm has scheduler + extender CPU per pod"


def _counts(expected: int, seen: int, running: int) -> dict[str, int]:
    return {
        "expected_pods": expected,
        "pods_seen": seen,
        "pods_scheduled": running,
        "pods_running": running,
        "pods_succeeded": 0,
    }


def _declared(doc: dict[str, Any], wait: str = "settled") -> dict[str, Any]:
    """`doc` with its scenario: one phase `whole`, waiting `wait`."""
    phase = {"name": "whole", "kind": "pods", "count": 1, "wait": wait}
    return {**doc, "scenario": {"name": "probe", "phases": [phase]}}


def test_accounting_allows_only_the_probe_phase_to_time_out() -> None:
    probe = {
        "counts": _counts(10, 10, 7),
        "error": "phase whole: 2 of 5 pods Running after 60s",
        "phases": [{"name": "whole", "timed_out": True}],
    }
    assert accounted(R(_declared(probe))) == (True, "ok")
    assert not accounted(R(_declared(probe, wait="running")))[0]
    assert not accounted(R(probe))[0]
    missing = {"counts": _counts(10, 9, 9), "error": None, "phases": []}
    assert accounted(R(missing)) == (False, "saw 9 of 10 pods")
    # A settled probe: 3 pods found unschedulable are its measurement, not lost pods, and one
    # placed but not yet Running when the probe ended is placed.
    settled = {
        "counts": {**_counts(10, 10, 6), "pods_scheduled": 7, "pods_unschedulable": 3},
        "error": None,
        "phases": [{"name": "whole", "timed_out": False}],
    }
    assert accounted(R(_declared(settled))) == (True, "ok")
    assert accounted(R(settled)) == (False, "6 of 10 pods ran")


def test_completed_pods_are_counted_once() -> None:
    # Ten Job pods that ran and succeeded: pods_running already counts them.
    jobs = {"counts": {**_counts(10, 10, 10), "pods_succeeded": 10}, "error": None, "phases": []}
    assert accounted(R(jobs)) == (True, "ok")


def test_the_fragmentation_probe_waits_until_each_pod_is_placed_or_refused() -> None:
    from loadgen.scenarios.model import Scenario

    doc = plan.fragmentation_scenario(SHAPE)
    assert doc["phases"][-1]["wait"] == "settled"
    Scenario.model_validate(doc)  # loadgen accepts it


def test_the_scale_comparison_runs_the_same_pods_on_the_small_then_the_large_fleet() -> None:
    workload = demo_workloads.workload(
        pods=1000, repeat=2, comparisons=("scale",), scale_nodes=200, latency_arms=True
    )
    arms = plan.arms(SHAPE, workload)
    assert [(a.variant, a.fleet_nodes) for a in arms if not a.latency_of] == [
        ("small", 0),
        ("large", 200),
        ("large", 200),  # the second repeat starts where the first ended: no extra resize
        ("small", 0),
    ]
    # A latency arm runs on its throughput arm's fleet, with at most LATENCY_PODS pods.
    assert all(a.fleet_nodes == b.fleet_nodes for a, b in zip(arms[::2], arms[1::2], strict=True))
    assert {a.params["pods"] for a in arms if a.latency_of} == {str(LATENCY_PODS)}
    # 1,000 pods do not fit the small fleet's 300 GPUs: they hold no claim.
    assert {a.params["gpus"] for a in arms} == {"0"}
    fits = plan.arms(
        SHAPE, demo_workloads.workload(pods=300, comparisons=("scale",), scale_nodes=200)
    )
    assert {a.params["gpus"] for a in fits} == {"1"}
    with pytest.raises(ValueError, match="--scale-nodes"):
        plan.arms(SHAPE, demo_workloads.workload(pods=10, comparisons=("scale",)))


def test_the_dra_comparison_runs_its_own_claims_arm_in_alternating_order() -> None:
    arms = plan.arms(
        SHAPE, demo_workloads.workload(pods=100, repeat=2, comparisons=("extender", "dra"))
    )
    assert not any(a.same_as for a in arms)
    dra = [(a.variant, a.repeat) for a in arms if a.comparison == "dra" and not a.latency_of]
    assert dra == [("claims", 0), ("device-plugin", 0), ("device-plugin", 1), ("claims", 1)]


def _pair(comparison: str, metric: str, a: str, av: float, b: str, bv: float) -> summary.Row:
    return summary.Row(comparison, metric, "x", a, Figure([av]), b, Figure([bv]))


OVERHEAD = project_targets.HEADLINE[0][0]
COST = "scheduler + extender CPU per pod"


def _repeats(comparison: str, metric: str, a: list[float], b: list[float]) -> summary.Row:
    return summary.Row(comparison, metric, "x", "on", Figure(a), "off", Figure(b))


def test_one_repeat_gives_observations_never_verdicts() -> None:
    rows = [
        _pair("extender", COST, "on", 11.5, "off", 10.0),
        _pair("placement", "blocks spanned per gang", "on", 1.1, "off", 3.7),
        _pair("fragmentation", "8-GPU pods placed after a mixed fill", "on", 0.8, "off", 0.8),
    ]
    got = {t.goal: t for t in project_targets.targets(rows)}
    assert got[OVERHEAD].verdict == intervals.OBSERVATION and not got[OVERHEAD].met
    assert "ratio 1.150" in got[OVERHEAD].measured
    assert got["gang locality gain (fewer blocks)"].verdict == intervals.OBSERVATION
    assert not any(t.met for t in got.values())
    assert got["pod startup p99 <= 5 s, CL2 DRA scenario at 1,000 nodes"].verdict.startswith(
        "not measured"
    )
    assert got[
        "aligned 8+8 pods placed after fragmenting PCIe roots: gain over the default"
    ].verdict == ("not measured: run --comparisons alignment")


def test_repeats_give_a_verdict_only_when_the_interval_clears_the_threshold() -> None:
    clear = [
        _repeats("extender", COST, [10.4, 10.3, 10.2, 10.3, 10.4], [10.0, 9.9, 10.1, 10, 10.1])
    ]
    assert (
        project_targets.targets(clear)[0].verdict == "met" and project_targets.targets(clear)[0].met
    )
    # The overhead flipping between runs (13.8 % vs 5.1 %): neither met nor missed.
    flip = [_repeats("extender", COST, [11.38, 10.51, 11.0], [10.0, 10.0, 10.0])]
    assert project_targets.targets(flip)[0].verdict.startswith("inconclusive")
    # Equal placement in every repeat is no gain.
    equal = [
        _repeats("fragmentation", "8-GPU pods placed after a mixed fill", [0.8] * 5, [0.8] * 5)
    ]
    got = {t.goal: t for t in project_targets.targets(equal)}
    assert got["8-GPU placeability gain"].verdict == "missed"


def _probe_doc(expected: int, placed: int, refused: int) -> arm_record.ArmRecord:
    counts = {"expected_pods": expected, "pods_scheduled": placed, "pods_unschedulable": refused}
    return arm_record.modelled({"phases": [{"name": "aligned8", "counts": counts}]})


def test_a_placeability_verdict_needs_the_probes_to_have_settled() -> None:
    """The 1,000-node run: "off" left 212 of 225 probes without a verdict after 300 s; that is
    not 212 refusals, and "on 1 vs off 0.0578" is no gain shown."""
    results = []
    for r in range(5):
        results.append((Arm("alignment", "on", "file", repeat=r), _probe_doc(225, 225, 0)))
        results.append((Arm("alignment", "off", "file", repeat=r), _probe_doc(225, 13, 0)))
    goal = "aligned 8+8 pods placed after fragmenting PCIe roots: gain over the default"
    got = {t.goal: t for t in project_targets.targets(summary.rows(results))}[goal]
    assert got.verdict == "inconclusive (off: only 6% of probe pods settled in a repeat)"
    assert "off: 65 placed, 0 refused, 1060 no verdict in time" in got.measured
    settled = [
        (arm, _probe_doc(225, 13, 212) if arm.variant == "off" else doc) for arm, doc in results
    ]
    assert {t.goal: t for t in project_targets.targets(summary.rows(settled))}[
        goal
    ].verdict == "met"


def test_constant_alignment_rows_are_dropped_and_varying_ones_kept() -> None:
    def gang(aligned: int) -> arm_record.ArmRecord:
        return arm_record.modelled(
            {"claims": {"gpu_nic_pairs": 8, "pcie_aligned_pairs": aligned}, "gangs": []}
        )

    on, off = Arm("placement", "on", "gang"), Arm("placement", "off", "gang")
    constant = summary.rows([(on, gang(8)), (off, gang(8))])
    assert not any("PCIe" in r.metric or "bandwidth" in r.metric for r in constant)
    differ = summary.rows([(on, gang(8)), (off, gang(4))])
    assert {r.metric for r in differ} >= {
        "GPU-NIC pairs on one PCIe root",
        "modelled bus bandwidth per GPU (all_gather)",
    }


def test_the_guide_matrix_holds_dra_against_the_device_plugin() -> None:
    rows = [
        _repeats(
            "dra",
            "pod startup p99, unsaturated",
            [2600, 2620, 2640, 2610, 2630],
            [2500, 2480, 2520, 2490, 2510],
        ),
        _repeats(
            "dra", "API server requests per pod", [20, 21, 20.5, 20, 21], [10, 10.1, 9.9, 10, 10]
        ),
        _repeats("dra", "scheduler CPU per pod", [1.0, 1.2, 1.1], [1.0, 1.0, 1.0]),
        _repeats(
            "dra",
            "API server + scheduler memory growth per 1,000 pods",
            [40, 50, 45, 42, 48],
            [1, 1, 1, 1, 1],
        ),
    ]
    got = {g.aspect: g for g in dra_guide.guide_matrix(rows)}
    assert got["scheduling latency overhead"].verdict == "met"  # +5 %, interval under 10 %
    assert got["scheduling latency overhead"].guide.startswith("+8 %")
    assert got["API request overhead"].verdict == "missed"  # +100 % per pod
    assert got["scheduler CPU overhead"].verdict.startswith("inconclusive")  # 0..20 %
    assert got["control-plane memory per 1,000 pods"].verdict == "met"
    assert dra_guide.guide_matrix([])[0].verdict == (
        "not measured: run --comparisons dra --latency-arms"
    )
    assert dra_guide.guide_matrix([])[1].verdict == "not measured: run --comparisons dra"


def test_memory_growth_that_went_negative_is_noise_not_a_figure() -> None:
    memory = "API server + scheduler memory growth per 1,000 pods"
    row = _repeats("dra", memory, [40, -122, 45], [10, 12, 11])
    assert row.noise and row.ratio is None
    got = {g.aspect: g for g in dra_guide.guide_matrix([row])}[
        "control-plane memory per 1,000 pods"
    ]
    assert got.measured.startswith("noise") and got.verdict.startswith("not measured")


def test_the_alignment_probe_fragments_roots_then_asks_for_exactly_the_room_packing_leaves() -> (
    None
):
    from loadgen.scenarios.model import Scenario

    doc = plan.alignment_scenario(SHAPE)
    Scenario.model_validate(doc)  # loadgen accepts it
    phases = {p["name"]: p for p in doc["phases"]}
    fill = [p for p in doc["phases"] if p["name"].startswith("fill")]
    # Loose GPU+NIC pairs and lone GPUs: nothing forces the fill to keep roots whole.
    assert {"align": False, "gpus": 1, "nics": 1} in [p["claim"] for p in fill]
    fill_gpus = sum(p["count"] * p["claim"]["gpus"] for p in fill)
    assert fill_gpus <= SHAPE.aligned_eight_nodes * 8 // 4
    probes = [phases["aligned8"], phases["aligned4"]]
    assert all(p["wait"] == "settled" and p["claim"]["align"] for p in probes)
    probe_gpus = sum(p["count"] * p["claim"]["gpus"] for p in probes)
    whole_left = SHAPE.aligned_eight_nodes - -(-fill_gpus // 8)
    assert probe_gpus == 8 * whole_left  # every probe fits only if the fill packed perfectly


def test_latency_arms_are_opt_in() -> None:
    plain = plan.arms(SHAPE, demo_workloads.workload(pods=100, repeat=1, comparisons=("extender",)))
    assert [a.name for a in plain] == ["extender-on-0", "extender-off-0"]


def test_the_default_demo_gives_verdicts_from_five_alternated_repeats() -> None:
    from experiment.demo import command, wing

    w = wing.workload_of(command.builtin("demo"))
    assert w.repeat >= 5
    # Every pair alternates: each arm runs first in about half the repeats.
    arms = plan.arms(SHAPE, w)
    for comparison in w.comparisons:
        firsts = [
            next(a.variant for a in arms if a.comparison == comparison and a.repeat == r)
            for r in range(w.repeat)
        ]
        assert len(set(firsts)) == 2 and abs(firsts.count(firsts[0]) * 2 - w.repeat) <= 1


def test_a_cost_of_zero_or_less_drops_its_pair_named_and_never_a_verdict_alone() -> None:
    """A CPU delta read across a counter reset: that pair is dropped, the report names the arm
    and the figure in one line, and the other pairs decide; every pair so: no data, no
    verdict, no traceback."""

    def ms(a: list[float], b: list[float]) -> summary.Row:
        return summary.Row("extender", COST, "ms", "on", Figure(a), "off", Figure(b))

    on, off = [10.4, 10.3, -3.0, 10.3, 10.4, 10.2], [10.0, 9.9, 10.1, 10.0, 10.1, 10.0]
    (got,) = project_targets.headline([ms(on, off)])
    assert got.verdict == "met"
    assert f"(1 of 6 dropped; on's {COST} -3 (a cost cannot be 0 or less): pair dropped)" in (
        got.measured
    )
    (none,) = project_targets.headline([ms([-1.0] * 4, off[:4])])
    assert not intervals.is_verdict(none.verdict) and none.verdict.startswith("no data")
    assert f"on's {COST} -1 (a cost cannot be 0 or less): pair dropped" in none.verdict


def test_a_verdict_needs_the_first_look_s_pairs_after_the_drops() -> None:
    """A sequential run closed after 5 pairs whose 2 were refused: 3 pairs judge nothing."""
    from experiment.plan import design

    judging = project_targets.Judging(design.Design(24, sequential=True).closed(5))
    assert judging.level("extender", 3) == 0.0 and judging.level("extender", 5) > 0.04


def test_outlier_pairs_are_reported_beside_the_verdict() -> None:
    on = [10.4, 10.3, 10.2, 10.3, 10.4, 10.2, 10.3, 10.4, 10.3, 15.0]
    (got,) = project_targets.headline(
        [summary.Row("extender", COST, "ms", "on", Figure(on), "off", Figure([10.0] * 10))]
    )
    assert "; outliers: pair 10 ratio 1.5, " in got.measured
    assert "robust sd above the median (set aside by the trimmed test)" in got.measured
