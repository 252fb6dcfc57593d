"""The demo's DRA-beyond-whole-devices comparisons (sharing, extended-resource, taints): their
arms, fleet variants, rows against a baseline and targets, on plain data."""

import itertools

import pytest

from experiment.demo import defaults, plan, project_targets, summary
from experiment.measure import arm_record, intervals
from experiment.measure.arms import Arm
from experiment.measure.fleet_shape import FleetShape
from fleet import spec as fleet_spec
from loadgen import scenarios
from testbed import vocab
from tests.support import demo_workloads

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""

SHAPE = FleetShape(nodes=900, gpus=5000, eight_gpu_nodes=600, aligned_eight_nodes=200)


NEW = (plan.SHARING, plan.EXTENDED_RESOURCE, plan.TAINTS)


def test_n_arm_comparisons_rotate_so_each_arm_runs_first_once_per_cycle() -> None:
    arms = plan.arms(
        SHAPE, demo_workloads.workload(pods=100, repeat=4, comparisons=(plan.SHARING,))
    )
    order = [[a.variant for a in arms if a.repeat == rep] for rep in range(4)]
    assert order[0] == ["device-plugin", "whole", "mig", "capacity"]
    assert order[1] == ["whole", "mig", "capacity", "device-plugin"]
    assert [o[0] for o in order] == ["device-plugin", "whole", "mig", "capacity"]
    # Two-arm comparisons still alternate A B, B A.
    pair = plan.arms(SHAPE, demo_workloads.workload(pods=10, repeat=2, comparisons=(plan.TAINTS,)))
    assert [a.variant for a in pair] == ["tainted", "clean", "clean", "tainted"]


def test_the_new_comparisons_are_opt_in() -> None:
    assert not set(NEW) & set(defaults.defaults().comparisons)
    assert set(NEW) <= set(plan.ALL_COMPARISONS)


def test_sharing_asks_one_mix_of_each_shape_on_pools_of_the_same_gpus() -> None:
    arms = plan.arms(SHAPE, demo_workloads.workload(pods=100, comparisons=(plan.SHARING,)))
    by = {a.variant: a for a in arms}
    assert all(a.fleet == plan.SHARING and a.scheduler == plan.PLAIN for a in arms)
    assert {a.params["pool"] for a in arms} == {plan.POOL_MIG, plan.POOL_SHARED}
    assert by["capacity"].params["pool"] == plan.POOL_SHARED
    gpus = plan.VARIANT_NODES * 8
    for arm in arms:
        sc = scenarios.load(arm.scenario, arm.params)
        assert sc.node_selector == {vocab.LABEL_POOL: arm.params["pool"]}
        # Twice the GPUs in pods: more than the device plugin can place.
        assert sum(p.count for p in sc.phases) >= plan.SHARING_DEMAND * gpus - 5
        # Every phase is a probe by its own word: each pod left until placed or refused.
        assert {p.wait for p in sc.phases} == {"settled"}
        assert len({p.name for p in sc.phases}) == plan.SHARING_ROUNDS * len(
            plan.SHARING_FOOTPRINTS_GB
        )
        assert all(p.claim.footprint_bytes for p in sc.phases)
    shapes = {
        v: {
            (p.claim.device_plugin, p.claim.mig_profile, p.claim.memory)
            for p in scenarios.load(a.scenario, a.params).phases
        }
        for v, a in by.items()
    }
    assert shapes["device-plugin"] == {(True, None, None)}
    assert shapes["whole"] == {(False, None, None)}
    assert {m for _, m, _ in shapes["mig"]} == {"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}
    assert {c for _, _, c in shapes["capacity"]} == {"5G", "10G", "20G", "40G", "80G"}


def test_every_fleet_variant_is_a_valid_fleet_spec_of_the_demo_fleet_plus_its_pools() -> None:
    base = plan.fleet_spec(1000)
    for variant in plan.FLEET_VARIANTS:
        doc = plan.fleet_spec(1000, variant=variant)
        fleet = fleet_spec.from_data(doc)
        assert doc["pools"][: len(base["pools"])] == base["pools"]  # the demo's, untouched
        added = fleet.spec.pools[len(base["pools"]) :]
        assert added and all(p.count == plan.VARIANT_NODES for p in added)
        assert bool(fleet.spec.device_taints) == (variant == plan.TAINTS)
    er = fleet_spec.from_data(plan.fleet_spec(1000, variant=plan.EXTENDED_RESOURCE))
    flags = {p.name: p.extended_resources for p in er.spec.pools}
    assert (flags[plan.POOL_PLUGIN], flags[plan.POOL_DRA_ONLY]) == (None, False)
    with pytest.raises(ValueError, match="unknown fleet variant"):
        plan.fleet_spec(10, variant="nope")


def test_extended_resource_and_taints_arms_differ_only_in_pool_or_taints() -> None:
    arms = plan.arms(
        SHAPE,
        demo_workloads.workload(
            pods=1000, repeat=1, comparisons=(plan.EXTENDED_RESOURCE,), latency_arms=True
        ),
    )
    dra, dp = (a for a in arms if not a.latency_of)
    assert {k: v for k, v in dra.params.items() if k != "pool"} == {
        k: v for k, v in dp.params.items() if k != "pool"
    }
    assert dra.params["device_plugin"] == "true"  # the same nvidia.com/gpu pod spec
    assert int(dra.params["pods"]) == plan.VARIANT_NODES * 8  # what fits the pool
    assert any(a.latency_of for a in arms)  # a cost comparison: unsaturated arms too
    tainted, clean = plan.arms(
        SHAPE, demo_workloads.workload(pods=10, repeat=1, comparisons=(plan.TAINTS,))
    )
    assert tainted.scenario_doc == clean.scenario_doc
    assert (tainted.fleet, clean.fleet) == (plan.TAINTS, plan.TAINTS_CLEAN)
    assert scenarios.Scenario.model_validate(tainted.scenario_doc).node_selector == {
        vocab.LABEL_POOL: plan.POOL_TAINTS
    }
    assert tainted.run_key != clean.run_key  # never reused for one another


def _doc(**fleet: float) -> arm_record.ArmRecord:
    placed = int(fleet.pop("placed"))
    return arm_record.modelled(
        {
            "counts": {"expected_pods": 256, "pods_scheduled": placed},
            "fleet": fleet,
        }
    )


def _sharing_results(placed: dict[str, list[int]]) -> list[tuple[Arm, arm_record.ArmRecord]]:
    out = []
    for variant, values in placed.items():
        for rep, n in enumerate(values):
            busy = 128 if variant in ("device-plugin", "whole") else 60
            doc = _doc(
                placed=n,
                peak_gpus_busy=busy,
                pods_per_busy_gpu=n / busy,
                gpu_memory_used_share=0.2 if busy == 128 else 0.7,
            )
            out.append((Arm(plan.SHARING, variant, "inference", repeat=rep), doc))
    return out


def test_sharing_rows_hold_each_arm_against_the_device_plugin() -> None:
    results = _sharing_results(
        {"device-plugin": [128], "whole": [128], "mig": [230], "capacity": [256]}
    )
    rows = summary.rows(results)
    placed = [r for r in rows if r.metric == "pods placed at saturation"]
    assert [(r.a_name, r.b_name) for r in placed] == [
        ("whole", "device-plugin"),
        ("mig", "device-plugin"),
        ("capacity", "device-plugin"),
    ]
    assert [r.ratio for r in placed] == pytest.approx([1.0, 230 / 128, 2.0])
    goals = {t.goal: t for t in project_targets.targets(rows)}
    mig = goals["mig vs device plugin: pods placed at saturation >= 1.3x"]
    assert mig.verdict == intervals.OBSERVATION and "mig 230 vs device-plugin 128" in mig.measured
    assert not goals["capacity vs device plugin: pods per busy GPU >= 1.3x"].met


def test_sharing_targets_need_the_interval_to_clear_and_say_not_measured_without_arms() -> None:
    close = _sharing_results(
        {"device-plugin": [128, 128, 128], "mig": [120, 200, 170], "capacity": [250, 256, 255]}
    )
    goals = {t.goal: t for t in project_targets.targets(summary.rows(close))}
    assert goals["mig vs device plugin: pods placed at saturation >= 1.3x"].verdict.startswith(
        "inconclusive"
    )
    assert goals["capacity vs device plugin: pods placed at saturation >= 1.3x"].verdict == "met"
    none = {t.goal: t for t in project_targets.targets([])}
    assert none["mig vs device plugin: pods per busy GPU >= 1.3x"].verdict == (
        "not measured: run --comparisons sharing"
    )


def test_taints_and_extended_resource_targets() -> None:
    def placed_doc(scheduled: int) -> arm_record.ArmRecord:
        counts = {"expected_pods": 128, "pods_scheduled": scheduled}
        return arm_record.modelled(
            {"counts": counts, "phases": [{"name": "every-gpu", "counts": counts}]}
        )

    def arms(r: int) -> list[tuple[Arm, arm_record.ArmRecord]]:
        return [
            (Arm(plan.TAINTS, "tainted", "file", repeat=r), placed_doc(122 + r % 2)),
            (Arm(plan.TAINTS, "clean", "file", repeat=r), placed_doc(128)),
            (Arm(plan.EXTENDED_RESOURCE, "dra", "pods", repeat=r), placed_doc(128)),
            (Arm(plan.EXTENDED_RESOURCE, "device-plugin", "pods", repeat=r), placed_doc(128)),
        ]

    results = [x for r in range(5) for x in arms(r)]
    rows = summary.rows(results)
    taint = next(r for r in rows if r.comparison == plan.TAINTS)
    assert (taint.a_name, taint.b_name) == ("tainted", "clean")
    assert taint.ratio == pytest.approx((122 / 128) ** 0.6 * (123 / 128) ** 0.4)
    goals = [
        t for t in project_targets.targets(rows) if "tainted" in t.goal or "unchanged" in t.goal
    ]
    assert [t.verdict for t in goals] == ["met", "met"]
    # One repeat: observations.
    single = [t for t in project_targets.targets(summary.rows(arms(0))) if "tainted" in t.goal]
    assert single[0].verdict == intervals.OBSERVATION
    # Taints ignored (every pod placed, every repeat) is a miss.
    ignored = summary.rows(
        [(a, placed_doc(128)) if a.variant == "tainted" else (a, d) for a, d in results]
    )
    got = next(t for t in project_targets.targets(ignored) if "tainted" in t.goal)
    assert got.verdict == "missed"


def test_rows_of_two_arm_comparisons_are_unchanged_by_baselines() -> None:
    on, off = Arm("extender", "on", "pods"), Arm("extender", "off", "pods")
    docs = [R({"throughput": {"Average": v}, "counts": {"expected_pods": 1}}) for v in (9, 10)]
    rows = summary.rows([(off, docs[1]), (on, docs[0])])
    assert [(r.a_name, r.b_name) for r in rows] == [("on", "off")]
    assert list(itertools.chain(plan.BASELINES)) == list(NEW)
