"""Generic comparisons of an experiment file's variants, metric by metric (pure).

A wing's built-in comparisons have their own rows (the wing's reporter); an experiment
file's variants x workloads are compared here: per workload and metric (from the
catalogue, `figures.METRICS`), each variant's median over repeats (min-max beside it) and its
ratio to the first variant, and, for variants that differ only in the Kubernetes release, the
release-to-release table (previous, current, % change). Each ratio carries its 95 % interval
from the repeats the two variants share, paired by repeat as a wing's are
(`experiment.measure.intervals`): an interval that excludes 1 is a difference, one that spans it is
not shown to be one, and one repeat gives no interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from experiment.measure import figures, intervals
from experiment.measure.arm_record import ArmRecord
from experiment.measure.arms import Arm
from experiment.measure.figures import METRICS, NOISY_IF_NEGATIVE, UNSATURATED, Figure, defined

DEFAULT_METRICS = (
    "scheduling throughput",
    "pod startup p50",
    "pod startup p99",
    "scheduler CPU per pod",
    f"pod startup p99{UNSATURATED}",
)
"""What a file without `metrics:` compares (each where its arms have a value)."""


def metric_names() -> list[str]:
    return sorted(METRICS)


@dataclass(frozen=True)
class VariantRow:
    workload: str
    metric: str
    unit: str
    figures: dict[str, Figure]
    """Per variant (in the file's order), its values over repeats."""
    baseline: str
    undefined: tuple[str, ...] = ()
    """Variants whose arms do not define the metric (`figures.defined`): no value there is
    "not defined", not "not measured"."""

    @property
    def noise(self) -> bool:
        """A figure that went negative where it cannot (memory growth shrunk by GC timing):
        no ratio or interval is formed from it."""
        return noisy(self.metric, *self.figures.values())

    def ratio(self, variant: str) -> float | None:
        """variant / baseline of the medians; None when the baseline is zero or missing, or
        the row is noise."""
        if self.noise:
            return None
        base = self.figures[self.baseline].median
        value = self.figures[variant].median
        return value / base if base and base == base and value == value else None

    def interval(self, variant: str) -> intervals.Interval | None:
        """variant / baseline over the repeats both ran, paired by repeat."""
        if self.noise:
            return None
        return paired_ratio(
            self.figures[variant], self.figures[self.baseline], figures.kind(self.metric, self.unit)
        )


@dataclass(frozen=True)
class ReleaseRow:
    workload: str
    metric: str
    unit: str
    previous: str
    """`variant (release)` of the older release."""
    current: str
    previous_value: Figure
    current_value: Figure

    @property
    def noise(self) -> bool:
        return noisy(self.metric, self.previous_value, self.current_value)

    @property
    def change(self) -> float | None:
        """(current - previous) / previous of the medians, as a fraction; None if undefined
        or noise."""
        if self.noise:
            return None
        prev, cur = self.previous_value.median, self.current_value.median
        return (cur - prev) / prev if prev and prev == prev and cur == cur else None

    @property
    def interval(self) -> intervals.Interval | None:
        """current / previous over the repeats both ran, paired by repeat."""
        if self.noise:
            return None
        return paired_ratio(
            self.current_value, self.previous_value, figures.kind(self.metric, self.unit)
        )


def noisy(metric: str, *figures: Figure) -> bool:
    """A figure that cannot be negative went negative in some repeat (`NOISY_IF_NEGATIVE`)."""
    return metric in NOISY_IF_NEGATIVE and any(v < 0 for f in figures for v in f.values)


def paired_ratio(
    a: Figure, b: Figure, kind: intervals.Kind = "measured"
) -> intervals.Interval | None:
    """The 95 % interval of A/B from the repeats both figures have (by position where a
    figure does not know its repeats), pairs with a value impossible for a figure of `kind`
    refused (`intervals.split`)."""
    a_repeats = a.repeats or list(range(len(a.values)))
    b_repeats = b.repeats or list(range(len(b.values)))
    return intervals.ratio_interval(
        *intervals.paired(a.values, a_repeats, b.values, b_repeats), kind
    )


def refused(a: Figure, b: Figure, kind: intervals.Kind = "measured") -> list[intervals.Refused]:
    """The pairs `paired_ratio` leaves out for a value impossible for a figure of `kind`
    (`intervals.split`), their positions among the repeats both figures have."""
    a_repeats = a.repeats or list(range(len(a.values)))
    b_repeats = b.repeats or list(range(len(b.values)))
    return intervals.split(*intervals.paired(a.values, a_repeats, b.values, b_repeats), kind)[1]


def _figure(
    docs: Sequence[tuple[int, ArmRecord]], get: Callable[[ArmRecord], float | None]
) -> Figure:
    """One variant's values of a metric with the repeat each came from."""
    got = [(repeat, x) for repeat, d in docs if (x := get(d)) is not None]
    return Figure([x for _, x in got], [r for r, _ in got])


Docs = list[tuple[int, ArmRecord]]
"""(repeat, result) of one variant's arms."""


def _by_workload(
    results: Sequence[tuple[Arm, ArmRecord]],
) -> dict[tuple[str, str], dict[str, Docs]]:
    out: dict[tuple[str, str], dict[str, Docs]] = {}
    for arm, doc in results:
        by_variant = out.setdefault((arm.comparison, arm.measure), {})
        by_variant.setdefault(arm.variant, []).append((arm.repeat, doc))
    return out


def _wanted(metrics: Sequence[str]) -> list[str]:
    return list(metrics) if metrics else [m for m in DEFAULT_METRICS if m in METRICS]


def rows(
    results: Sequence[tuple[Arm, ArmRecord]], variants: Sequence[str], metrics: Sequence[str] = ()
) -> list[VariantRow]:
    """One row per workload and metric that some arm has a value for. Pass valid arms only."""
    out = []
    for (workload, measure), docs in _by_workload(results).items():
        present = [v for v in variants if v in docs]
        if not present:
            continue
        for metric in _wanted(metrics):
            unit, get, kind = METRICS[metric]
            if kind != measure:
                continue
            figures = {v: _figure(docs[v], get) for v in present}
            undefined = tuple(v for v in present if not any(defined(metric, d) for _, d in docs[v]))
            for v in undefined:
                figures[v] = Figure([])  # an in-process result's zeros are no figures
            if any(f.values for f in figures.values()):
                out.append(VariantRow(workload, metric, unit, figures, present[0], undefined))
    return out


def release_rows(
    results: Sequence[tuple[Arm, ArmRecord]],
    pairs: Sequence[tuple[str, str, str, str]],
    metrics: Sequence[str] = (),
) -> list[ReleaseRow]:
    """Previous vs current release per (previous variant, its release, current variant, its
    release) pair, for each workload and metric both have values for."""
    out = []
    for (workload, measure), docs in _by_workload(results).items():
        for prev, prev_release, cur, cur_release in pairs:
            if prev not in docs or cur not in docs:
                continue
            for metric in _wanted(metrics):
                unit, get, kind = METRICS[metric]
                if kind != measure:
                    continue
                a = _figure(docs[prev], get)
                b = _figure(docs[cur], get)
                if a.values and b.values:
                    out.append(
                        ReleaseRow(
                            workload,
                            metric,
                            unit,
                            f"{prev} ({prev_release})",
                            f"{cur} ({cur_release})",
                            a,
                            b,
                        )
                    )
    return out
