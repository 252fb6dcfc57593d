"""The demo's summary table: its comparisons' rows, arm A vs arm B with medians over
repeats (pure). `project_targets` and `dra_guide` judge these rows against the project's
targets and the DRA guide's matrix.

Figures of repeated arms are reported as median and min–max, each A/B ratio from the
repeats paired (a repeat's two arms ran back to back) with a Student's t 95 % interval, and a
verdict needs a significant test and that interval strictly past its threshold (`intervals`).
Only valid, accounted arms reach here (`validity`, `accounting`).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiment.demo import plan
from experiment.measure import figures, intervals
from experiment.measure.arm_record import ArmRecord
from experiment.measure.arms import Arm
from experiment.measure.figures import LATENCY_METRICS, Figure, Metric, ProbeOutcome


@dataclass(frozen=True)
class Row:
    comparison: str
    metric: str
    unit: str
    a_name: str
    a: Figure
    b_name: str
    b: Figure
    probes: tuple[list[ProbeOutcome], list[ProbeOutcome]] = ([], [])
    """A placeability row's probe outcomes per repeat, of A and of B."""

    @property
    def ratio(self) -> float | None:
        """The ratio the interval is around (geometric mean of the per-repeat ratios); None
        when it cannot be formed or the row is noise."""
        interval = self.interval
        if interval is None or self.noise:
            return None
        point = interval.point
        return point if point == point else None

    @property
    def pairs(self) -> tuple[list[float], list[float]]:
        """A's and B's values of the repeats both arms have (paired by repeat; by position
        where the figures do not know their repeats and are as long); none else."""
        if self.a.repeats and self.b.repeats:
            return intervals.paired(self.a.values, self.a.repeats, self.b.values, self.b.repeats)
        if len(self.a.values) == len(self.b.values):
            return self.a.values, self.b.values
        return [], []

    @property
    def interval(self) -> intervals.Interval | None:
        """95 % interval of the ratio over the repeats both arms have, pairs with a value
        impossible for the figure refused (`intervals.split`)."""
        a, b = self.pairs
        return intervals.ratio_interval(a, b, self.kind) if a else None

    @property
    def kind(self) -> intervals.Kind:
        return figures.kind(self.metric, self.unit)

    @property
    def noise(self) -> bool:
        """A figure that went negative where it cannot (memory growth shrunk by GC timing)."""
        return self.metric in figures.NOISY_IF_NEGATIVE and any(
            v < 0 for v in (*self.a.values, *self.b.values)
        )

    @property
    def unsettled(self) -> str:
        """Why a placeability row gives no verdict: an arm where fewer than
        SETTLED_FOR_VERDICT of the probe pods were placed or refused in some repeat; ""."""
        for name, outcomes in ((self.a_name, self.probes[0]), (self.b_name, self.probes[1])):
            if low := min((o.settled for o in outcomes), default=1.0):
                if low < figures.SETTLED_FOR_VERDICT:
                    return f"{name}: only {low:.0%} of probe pods settled in a repeat"
            elif outcomes:
                return f"{name}: no probe pod settled in a repeat"
        return ""

    @property
    def constant(self) -> bool:
        """Every repeat of both arms gave the same value: the row cannot tell them apart."""
        return len(set(self.a.values) | set(self.b.values)) == 1


# Rows shown only where the arms differ: alignment is enforced by the claims in the placement
# comparison (both arms 100 %), and modelled bandwidth only restates the alignment share.
DROP_IF_CONSTANT = {
    "GPU-NIC pairs on one PCIe root",
    "GPU-NIC pairs on one NUMA node",
    "modelled bus bandwidth per GPU (all_gather)",
}


def _metrics(*names: str) -> list[Metric]:
    return [figures.metric(name) for name in names]


METRICS: dict[str, list[Metric]] = {
    "extender": _metrics(
        # The headline: what scheduling a pod costs, which repeats tell apart in a few pairs
        # (throughput's on/off ratio varies 30-50 % between repeats on a shared machine).
        "scheduler + extender CPU per pod",
        "scheduling algorithm per pod",
        "scheduling throughput",
        "pod startup p50",
        "pod startup p90",
        "pod startup p99",
        "scheduler CPU per pod",
        # Packing fills nodes, and kube-scheduler still runs DRA's Filter on full nodes before
        # asking the extender: more nodes checked per pod is the policy's cost in the scheduler.
        "nodes DRA-filtered per pod",
        # Off, the extender still runs and watches the same pods and claims: the difference
        # is what answering the scheduler costs.
        "extender CPU per pod",
    ),
    "placement": _metrics(
        "GPU-NIC pairs on one PCIe root",
        "GPU-NIC pairs on one NUMA node",
        "blocks spanned per gang",
        "racks spanned per gang",
        "modelled bus bandwidth per GPU (all_gather)",
        "pod startup p99",
    ),
    "fragmentation": _metrics(
        "8-GPU pods placed after a mixed fill",
        "fleet GPU allocation at saturation",
        "GPUs stranded on partly used nodes at peak",
    ),
    "alignment": _metrics(
        "aligned 8 GPU + 8 NIC pods placed",
        "aligned 4 GPU + 4 NIC pods placed",
        "GPU-NIC pairs on one PCIe root",
        "modelled bus bandwidth per GPU (all_gather)",
    ),
    "dra": _metrics(
        "pod startup p99",
        "pod startup p50",
        "scheduling throughput",
        "scheduler CPU per pod",
        "scheduler attempts per pod",
        "API server requests per pod",
        "API server + scheduler memory growth per 1,000 pods",
    ),
    # One inference mix on the same H100s four ways (each DRA arm against the device plugin).
    plan.SHARING: _metrics(
        "pods placed at saturation",
        "physical GPUs busy at peak",
        "pods per busy GPU",
        "GPU memory used (footprints / busy GPUs' memory)",
        "GPU memory requested / taken by the allocations",
        "scheduler CPU per pod",
        "pod startup p50",
    ),
    # The same nvidia.com/gpu pods served by DRA (extendedResourceName) or the device plugin.
    plan.EXTENDED_RESOURCE: _metrics(
        "pods placed",
        "scheduling throughput",
        "pod startup p50",
        "pod startup p99",
        "scheduler CPU per pod",
        "API server requests per pod",
    ),
    # One pod per GPU of a pool with a share of its GPUs tainted NoSchedule, vs untainted.
    plan.TAINTS: _metrics(
        "pods placed (one per GPU)",
        "scheduler CPU per pod",
        "scheduler attempts per pod",
        "pod startup p50",
    ),
    "scale": _metrics(
        "scheduling throughput",
        "pod startup p50",
        "pod startup p99",
        "scheduler CPU per pod",
        "API server + scheduler memory growth per 1,000 pods",
    ),
}
"""Each comparison's rows, from the catalogue (`figures.METRICS`)."""


def rows(results: list[tuple[Arm, ArmRecord]]) -> list[Row]:
    """One row per comparison metric: arm A (first variant) vs arm B, medians over repeats.
    Pass valid arms only."""
    by_comparison: dict[tuple[str, str], dict[str, list[tuple[int, ArmRecord]]]] = {}
    order: dict[tuple[str, str], list[str]] = {}
    for arm, doc in results:
        key = (arm.comparison, arm.measure)
        variants = by_comparison.setdefault(key, {})
        variants.setdefault(arm.variant, []).append((arm.repeat, doc))
        names = order.setdefault(key, [])
        if arm.variant not in names:
            names.append(arm.variant)
    out: list[Row] = []
    for (comparison, measure), variants in by_comparison.items():
        metrics = LATENCY_METRICS if measure == "latency" else METRICS.get(comparison, [])
        for a, b in _pairs(comparison, order[(comparison, measure)]):
            for metric, unit, get in metrics:
                row = Row(
                    comparison,
                    metric,
                    unit,
                    a,
                    _figure(variants[a], get),
                    b,
                    _figure(variants[b], get),
                    (_probes(variants[a], metric), _probes(variants[b], metric)),
                )
                if (row.a.values or row.b.values) and not (
                    metric in DROP_IF_CONSTANT and row.constant
                ):
                    out.append(row)
    return out


def _figure(docs: list[tuple[int, ArmRecord]], get: figures.Getter) -> Figure:
    got = [(r, v) for r, d in docs if (v := get(d)) is not None]
    return Figure([v for _, v in got], [r for r, _ in got])


def _probes(docs: list[tuple[int, ArmRecord]], metric: str) -> list[ProbeOutcome]:
    phase = figures.PROBE_PHASES.get(metric)
    if phase is None:
        return []
    return [o for _, d in docs if (o := figures.probe_outcome(d, phase)) is not None]


def _pairs(comparison: str, variants: list[str]) -> list[tuple[str, str]]:
    """The (A, B) variant pairs a comparison's rows compare: each arm against the
    comparison's baseline (plan.BASELINES), in the plan's arm order; else its two arms, the
    arm under test first."""
    baseline = plan.BASELINES.get(comparison)
    if baseline in variants:
        return [(v, baseline) for v in variants if v != baseline]
    names = sorted(variants, key=_canonical_first)
    return [(names[0], names[1])] if len(names) == 2 else []


def find_row(rows: list[Row], comparison: str, metric: str, a_name: str = "") -> Row | None:
    """The row of one comparison's metric (of arm `a_name`, where it has more than two)."""
    return next(
        (
            r
            for r in rows
            if (r.comparison, r.metric) == (comparison, metric) and a_name in ("", r.a_name)
        ),
        None,
    )


def _canonical_first(variant: str) -> int:
    """A is the arm under test: extender on, DRA claims, the larger fleet."""
    return 0 if variant in ("on", "claims", "large") else 1
