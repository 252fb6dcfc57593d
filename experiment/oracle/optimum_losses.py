"""Where an arm falls short of its online optimum: the decisions that lost the difference
(pure, from the arm's record: its loadgen result and its optimum figures).

A figure below `SHORT` of the online optimum is broken down into the decisions the result
records one by one, each with what it cost on the objective:

- blocks or racks per gang: each gang spanning more groups than the optimum's gangs do (its
  extra groups over the number of gangs is what it adds to the per-gang mean);
- GPUs stranded: each node left partly used at peak, with its free GPUs (the optimum
  strands its own figure; the rest is the loss);
- pairs on one PCIe root or NUMA node, and the bus bandwidth they model: the pods whose
  pairs were split and the pairs split (each 1 / pairs of the share);
- pods placed by a probe: the pods refused (each 1 / pods of the share); the placements that
  took their room came earlier and are not recorded pod by pod.

The optimum is a count per node shape, not a named placement, so a decision is held against
the optimum's figure, not against its node-by-node choices.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiment.measure import arm_record, figures
from experiment.measure.arm_record import ArmRecord, Number
from experiment.oracle import arms as oracle_arms

SHORT = 0.95
"""Below this share of the online optimum an arm's figure is broken down (issue 42's target)."""
LISTED = 10
"""Decisions listed per figure, costliest first; the rest are counted and summed."""


class Decision(arm_record.OptimumPart):
    """One decision the result records, with what it cost on the figure's objective."""

    decision: str
    cost: Number


class More(arm_record.OptimumPart):
    """The decisions past the `LISTED` ones: how many, and what they cost together."""

    count: int
    cost: Number


class Loss(arm_record.OptimumPart):
    """One figure of an arm short of its online optimum: the difference lost, in the
    metric's unit, and the decisions that lost it."""

    metric: str
    unit: str
    share_of_online: Number
    measured: Number
    online: Number
    lost: Number
    decisions: list[Decision]
    """The costliest `LISTED`, costliest first."""
    more: More
    cost_of_decisions: Number
    """What every decision costs together, listed or not."""


def _decision(what: str, cost: float) -> Decision:
    return Decision(decision=what, cost=cost)


def _listed(decisions: list[Decision]) -> tuple[list[Decision], More]:
    decisions.sort(key=lambda d: -d.cost)
    rest = decisions[LISTED:]
    return decisions[:LISTED], More(count=len(rest), cost=sum(d.cost for d in rest))


def _gang_decisions(rec: ArmRecord, level: str, best: float) -> list[Decision]:
    gangs = rec.result.gangs
    out = []
    for g in gangs:
        spans = getattr(g, level)
        extra = spans - best
        if extra > 0:
            what = f"gang {g.name} ({g.pods} pods) over {spans} {level}"
            out.append(_decision(what, extra / len(gangs)))
    return out


def _stranded_decisions(rec: ArmRecord) -> list[Decision]:
    out = []
    for node, (used, total) in sorted(rec.result.fleet.occupancy_at_peak.items()):
        if 0 < used < total:
            what = f"node {node} left with {total - used} of {total} GPUs free"
            out.append(_decision(what, float(total - used)))
    return out


def _split_decisions(rec: ArmRecord, aligned: str) -> list[Decision]:
    claims = rec.result.claims
    pairs = claims.gpu_nic_pairs
    split = pairs - getattr(claims, aligned)
    if not pairs or split <= 0:
        return []
    if aligned == "pcie_aligned_pairs":
        pods = claims.with_nics - claims.fully_pcie_aligned_claims
        what = f"{pods} pods placed with {split} of their GPU-NIC pairs split across PCIe roots"
    else:
        what = f"{split} GPU-NIC pairs placed across NUMA nodes"
    return [_decision(what, split / pairs)]


def _refused_decisions(rec: ArmRecord, phase: str) -> list[Decision]:
    found = rec.phase(phase)
    if found is None:
        return []
    pods = found.counts.expected_pods
    refused = pods - found.counts.pods_scheduled
    if pods and refused > 0:
        what = (
            f"{refused} of {pods} pods of phase {phase} refused (their room was taken "
            "by earlier placements)"
        )
        return [_decision(what, refused / pods)]
    return []


def _decisions(rec: ArmRecord, metric: str, best: float, lost: float) -> list[Decision]:
    level = oracle_arms.GANG_LEVELS.get(metric)
    if level is not None:
        return _gang_decisions(rec, metric.split()[0], best)
    if metric == oracle_arms.STRANDED:
        return _stranded_decisions(rec)
    if metric == oracle_arms.PCIE:
        return _split_decisions(rec, "pcie_aligned_pairs")
    if metric == oracle_arms.NUMA:
        return _split_decisions(rec, "numa_aligned_pairs")
    if metric == oracle_arms.BANDWIDTH:
        # the split pairs are the only decisions behind it: they cost all of it
        return [_decision(d.decision, lost) for d in _split_decisions(rec, "pcie_aligned_pairs")]
    phase = figures.PROBE_PHASES.get(metric)
    return _refused_decisions(rec, phase) if phase else []


def of_arm(rec: ArmRecord, optimum_figures: Sequence[arm_record.OptimumFigure]) -> list[Loss]:
    """Per figure of the arm below `SHORT` of its online optimum: the difference lost (in the
    metric's unit), the decisions that lost it with each one's cost (`LISTED` of them, the
    rest counted), and the cost they add up to."""
    out = []
    for f in optimum_figures:
        share = f.share_of_online
        online = None if f.online is None else f.online.value
        if share is None or share >= SHORT or online is None or f.measured is None:
            continue
        best = float(online)
        lost = best - f.measured if f.sense == "max" else f.measured - best
        listed, rest = _listed(_decisions(rec, f.metric, best, lost))
        out.append(
            Loss(
                metric=f.metric,
                unit=f.unit,
                share_of_online=share,
                measured=f.measured,
                online=best,
                lost=lost,
                decisions=listed,
                more=rest,
                cost_of_decisions=sum(d.cost for d in listed) + rest.cost,
            )
        )
    return out
