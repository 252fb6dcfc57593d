"""Where an arm falls short of its online optimum, the decisions that lost the difference, on
plain result data: gangs over extra blocks, nodes left partly used, split pairs, refused pods."""

from __future__ import annotations

from typing import Any

import pytest

from experiment.measure import arm_record
from experiment.oracle import arms as oracle_arms
from experiment.oracle import optimum_losses
from experiment.oracle.solve import Bound

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""


def _figure(
    metric: str, unit: str, sense: str, measured: float, best: float
) -> arm_record.OptimumFigure:
    bound = Bound("x", sense, best, best, True, 0.1)  # type: ignore[arg-type]
    return oracle_arms.Figure(metric, unit, sense, measured, bound, bound).record()  # type: ignore[arg-type]


def _gangs(*blocks: int) -> list[dict[str, Any]]:
    return [
        {"name": f"gang-{i}", "pods": 4, "nodes": 4, "racks": b, "blocks": b}
        for i, b in enumerate(blocks)
    ]


def test_each_gang_over_the_optimums_blocks_is_a_decision_costing_its_extra_blocks() -> None:
    doc = {"gangs": _gangs(1, 3, 2, 1)}
    figure = _figure("blocks spanned per gang", "blocks", "min", 7 / 4, 1.0)
    [got] = optimum_losses.of_arm(R(doc), [figure])
    assert got.lost == pytest.approx(0.75)
    assert [d.decision for d in got.decisions] == [
        "gang gang-1 (4 pods) over 3 blocks",
        "gang gang-2 (4 pods) over 2 blocks",
    ]
    assert [d.cost for d in got.decisions] == [0.5, 0.25]
    # the decisions add up to the difference lost
    assert got.cost_of_decisions == pytest.approx(got.lost)


def test_a_figure_at_or_above_the_threshold_is_not_broken_down() -> None:
    doc = {"gangs": _gangs(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2)}
    figure = _figure("blocks spanned per gang", "blocks", "min", 21 / 20, 1.0)
    share = figure.share_of_online
    assert share is not None and share == pytest.approx(20 / 21) and share >= optimum_losses.SHORT
    assert optimum_losses.of_arm(R(doc), [figure]) == []


def test_nodes_left_partly_used_cost_their_free_gpus_costliest_first_the_rest_counted() -> None:
    occupancy = {f"n{i}": [8 - (i % 3), 8] for i in range(15)}  # free: 0, 1, 2, 0, 1, 2, ...
    occupancy["empty"] = [0, 8]
    doc = {"fleet": {"occupancy_at_peak": occupancy, "gpus_stranded_at_peak": 15}}
    figure = _figure(oracle_arms.STRANDED, "GPUs", "min", 15, 3)
    [got] = optimum_losses.of_arm(R(doc), [figure])
    assert got.lost == 12
    assert len(got.decisions) == optimum_losses.LISTED
    assert got.decisions[0].model_dump() == {
        "decision": "node n11 left with 2 of 8 GPUs free",
        "cost": 2.0,
    }
    costs = [d.cost for d in got.decisions]
    assert costs == sorted(costs, reverse=True)
    assert got.more.count == 0  # 10 nodes partly used: all listed
    assert got.cost_of_decisions == 15  # the optimum strands 3 of them too


def test_split_pairs_are_the_decisions_behind_aligned_pairs_and_bandwidth() -> None:
    claims = {
        "with_nics": 100,
        "gpu_nic_pairs": 400,
        "pcie_aligned_pairs": 360,
        "numa_aligned_pairs": 380,
        "fully_pcie_aligned_claims": 88,
    }
    figures = [
        _figure(oracle_arms.PCIE, "share", "max", 0.9, 1.0),
        _figure(oracle_arms.NUMA, "share", "max", 0.95, 1.0),
        _figure(oracle_arms.BANDWIDTH, "GB/s", "max", 40.0, 46.0),
    ]
    pcie, bandwidth = optimum_losses.of_arm(R({"claims": claims}), figures)
    assert [d.model_dump() for d in pcie.decisions] == [
        {
            "decision": "12 pods placed with 40 of their GPU-NIC pairs split across PCIe roots",
            "cost": pytest.approx(0.1),
        }
    ]
    assert pcie.cost_of_decisions == pytest.approx(pcie.lost)
    assert bandwidth.metric == oracle_arms.BANDWIDTH
    assert bandwidth.decisions[0].cost == pytest.approx(6.0)


def test_refused_probe_pods_are_the_decision_behind_pods_placed() -> None:
    doc = {
        "phases": [
            {"name": "fill", "counts": {"expected_pods": 20, "pods_scheduled": 20}},
            {"name": "aligned4", "counts": {"expected_pods": 50, "pods_scheduled": 40}},
        ]
    }
    figure = _figure("aligned 4 GPU + 4 NIC pods placed", "share", "max", 0.8, 1.0)
    [got] = optimum_losses.of_arm(R(doc), [figure])
    assert got.decisions[0].decision.startswith("10 of 50 pods of phase aligned4 refused")
    assert got.cost_of_decisions == pytest.approx(0.2) == pytest.approx(got.lost)


def test_a_figure_without_an_online_optimum_or_a_measure_is_left_alone() -> None:
    figure = _figure("blocks spanned per gang", "blocks", "min", 3.0, 1.0)
    assert optimum_losses.of_arm(R({}), [figure.model_copy(update={"online": None})]) == []
    unmeasured = figure.model_copy(update={"measured": None, "share_of_online": None})
    assert optimum_losses.of_arm(R({}), [unmeasured]) == []
    # short, but the result records no decision: the figure is listed with none
    [got] = optimum_losses.of_arm(R({}), [figure])
    assert got.decisions == [] and got.cost_of_decisions == 0
    assert got.model_dump()["more"] == {"count": 0, "cost": 0}
