"""An arm's optima, metric by metric, in the units of the metric catalogue (`figures`), and
the check that the arm beat none of them (pure; the solves take seconds).

Each figure is kept as JSON beside the arm's result (`optimum.json`) and in its record
(`ArmRecord.optimum`), so every report reads it as data. Which metrics: the probe phases'
placed shares (the most any placer fits), GPUs stranded, pairs aligned on a PCIe root or a
NUMA node and the bus bandwidth they model (the best for the pods the arm placed), and gangs'
blocks and racks (the fewest with every gang whole).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from experiment.measure import arm_record, bandwidth_model, figures
from experiment.measure.arm_record import ArmRecord
from experiment.oracle import inputs, patterns, solve
from experiment.oracle.solve import Bound, Sense
from testbed import vocab

STRANDED = "GPUs stranded on partly used nodes at peak"
PCIE = "GPU-NIC pairs on one PCIe root"
NUMA = "GPU-NIC pairs on one NUMA node"
BANDWIDTH = "modelled bus bandwidth per GPU (all_gather)"
GANG_LEVELS = {
    "blocks spanned per gang": vocab.LABEL_BLOCK,
    "racks spanned per gang": vocab.LABEL_RACK,
}
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Figure:
    metric: str
    unit: str
    sense: Sense
    measured: float | None
    batch: Bound
    online: Bound | None
    """None: no scheduler that places what fits ends with the arm's pods per phase."""

    @property
    def beats(self) -> str:
        """Why the arm's figure is past a limit ("" when it is not): past the batch limit is
        the oracle's error; past the online limit, a placer that refused (or never decided)
        a pod that fitted."""
        if self.measured is None:
            return ""
        sign = 1 if self.sense == "max" else -1
        if sign * (self.measured - self.batch.bound) > TOLERANCE:
            return "beats the batch optimum: the oracle's model is wrong for this run"
        if self.online is None:
            return "no online placement ends with these pods: one that fitted was refused"
        if sign * (self.measured - self.online.bound) > TOLERANCE:
            return "beats the online optimum: a pod that fitted was refused or left undecided"
        return ""

    def share(self, which: str = "online") -> float | None:
        """The arm's figure as a share of the optimum (1: optimal; for a figure to keep low,
        optimum / measured)."""
        bound = self.online if which == "online" else self.batch
        if self.measured is None or bound is None:
            return None
        best = bound.value
        if self.sense == "max":
            return self.measured / best if best else (1.0 if self.measured == 0 else None)
        return best / self.measured if self.measured else (1.0 if best == 0 else None)

    def record(self) -> arm_record.OptimumFigure:
        """The figure as the arm's record keeps it (`optimum.json`)."""
        return arm_record.OptimumFigure(
            metric=self.metric,
            unit=self.unit,
            sense=self.sense,
            measured=self.measured,
            batch=_bound_record(self.batch),
            online=None if self.online is None else _bound_record(self.online),
            share_of_online=self.share("online"),
            share_of_batch=self.share("batch"),
            beats=self.beats,
        )


def _bound_record(b: Bound) -> arm_record.OptimumBound:
    def finite(v: float) -> float | None:
        return v if math.isfinite(v) else None

    return arm_record.OptimumBound(
        objective=b.objective,
        sense=b.sense,
        value=finite(b.value),
        bound=finite(b.bound),
        optimal=b.optimal,
        seconds=b.seconds,
        gap=b.gap,
    )


def _scaled(
    both: tuple[Bound, Bound | None], f: Callable[[float], float], unit_name: str
) -> tuple[Bound, Bound | None]:
    def one(b: Bound) -> Bound:
        bound = f(b.bound) if math.isfinite(b.bound) else b.bound
        return replace(b, objective=unit_name, value=f(b.value), bound=bound)

    batch, online = both
    return one(batch), None if online is None else one(online)


def _both(get: Callable[[bool], Bound | None]) -> tuple[Bound, Bound | None]:
    """(batch, online) of one objective."""
    batch = get(False)
    if batch is None:
        raise solve.NotHeld("no placement of this fleet holds the pods the arm placed")
    return batch, get(True)


def _measured(rec: ArmRecord, metric: str) -> float | None:
    return figures.metric(metric)[2](rec)


def _unit(metric: str) -> str:
    return figures.metric(metric)[1]


def placement_figures(
    rec: ArmRecord, fleet: inputs.Fleet, time_limit: float = solve.DEFAULT_TIME_LIMIT
) -> list[Figure]:
    """The arm's figures against their optima (NotHeld, Unsupported, TooManyPatterns or
    TimeoutError if they cannot be had)."""
    workload = inputs.workload_of(rec)
    if workload.gangs:
        return _gang_figures(rec, fleet, workload, time_limit)
    oracle = solve.Oracle(fleet, workload, time_limit)
    out: list[Figure] = []
    by_phase = {phase: metric for metric, phase in figures.PROBE_PHASES.items()}
    for phase in workload.phases:
        metric = by_phase.get(phase.name)
        if metric is None or not phase.refusable or not phase.pods:
            continue

        def share(v: float, pods: int = phase.pods) -> float:
            return v / pods

        def most(online: bool, name: str = phase.name) -> Bound:
            return oracle.most_placed(name, online=online)

        placed = _both(most)
        measured = _measured(rec, metric)
        out.append(Figure(metric, _unit(metric), "max", measured, *_scaled(placed, share, "share")))
    if not any(p.demand.gpus for p in workload.phases if p.placed):
        return out
    stranded = _both(lambda o: oracle.least_stranded(online=o))
    out.append(Figure(STRANDED, _unit(STRANDED), "min", _measured(rec, STRANDED), *stranded))
    pairs = sum(p.placed * p.demand.pairs for p in workload.phases)
    if pairs:
        pcie = _both(lambda o: oracle.most_aligned("pcie", online=o))
        numa = _both(lambda o: oracle.most_aligned("numa", online=o))

        def of_pairs(v: float) -> float:
            return v / pairs

        def gbps(v: float) -> float:
            return bandwidth_model.payoff(round(v), pairs).mean_gbps

        for metric, bounds, f in (
            (PCIE, pcie, of_pairs),
            (NUMA, numa, of_pairs),
            (BANDWIDTH, pcie, gbps),
        ):
            scaled = _scaled(bounds, f, _unit(metric))
            out.append(Figure(metric, _unit(metric), "max", _measured(rec, metric), *scaled))
    return out


def _gang_figures(
    rec: ArmRecord, fleet: inputs.Fleet, workload: inputs.Workload, time_limit: float
) -> list[Figure]:
    """Blocks and racks per gang. With every gang placed whole in the optimum (else
    NotHeld), any placement is reachable in arrival order: online = batch. An arm that left a
    gang not whole counts that gang's spans over fewer pods, so it is not compared."""
    gangs = rec.result.gangs
    size = workload.phases[0].gang_size
    whole = len(gangs) == sum(p.gangs for p in workload.phases) and all(
        g.pods == (g.size or size) for g in gangs
    )
    out = []
    for metric, level in GANG_LEVELS.items():
        best = solve.gang_spans(fleet, workload, level, time_limit)
        measured = _measured(rec, metric) if whole else None
        out.append(Figure(metric, _unit(metric), "min", measured, best, best))
    return out


def arm_optimum(
    rec: ArmRecord, fleet: inputs.Fleet, time_limit: float = solve.DEFAULT_TIME_LIMIT
) -> arm_record.Optimum | None:
    """What `optimum.json` holds for an arm; None when the arm asks no placement question."""
    if not inputs.asks_placement(rec):
        return None
    started = time.monotonic()
    try:
        got = placement_figures(rec, fleet, time_limit)
    except (
        inputs.Unsupported,
        solve.NotHeld,
        patterns.TooManyPatterns,
        TimeoutError,
    ) as e:
        seconds = round(time.monotonic() - started, 2)
        return arm_record.Optimum(error=str(e), figures=[], seconds=seconds)
    return arm_record.Optimum(
        error=None,
        figures=[f.record() for f in got],
        seconds=round(time.monotonic() - started, 2),
        definitions=DEFINITIONS,
    )


DEFINITIONS = {
    "batch optimum": "every pod of the run known at once; load phases placed in full",
    "online optimum": (
        "pods in arrival order, phase by phase, never moved, none leaving, and a pod refused "
        "only if no node could hold it when it came (as kube-scheduler places): the most a "
        "scheduler can reach; equal to the batch optimum wherever that places every pod"
    ),
    "share of online": (
        "the arm's figure over the online optimum (for figures to keep low, optimum over the "
        "arm's): 1.0 is the best any such scheduler could do"
    ),
    "conditional optima": (
        "GPUs stranded and pairs aligned are optimised over placements of the same pods per "
        "phase as the arm placed"
    ),
}
