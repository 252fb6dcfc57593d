"""An experiment file's targets: a metric's ratio of one variant to another, judged against a
threshold with the engine's paired intervals (pure).

    targets:
      - {metric: scheduling throughput, variant: loadgen, baseline: perf, atLeast: 0.8}

Per workload, the ratio variant / baseline over the repeats both ran, paired by repeat
(`comparison.paired_ratio`), and `intervals.verdict` against the threshold: met, missed,
inconclusive, or an observation from one repeat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from experiment.judge import comparison
from experiment.measure import figures, intervals
from testbed import validation


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    metric: str
    variant: str
    """The ratio's numerator..."""
    baseline: str
    """... and its denominator."""
    at_least: float | None = Field(None, gt=0, alias="atLeast")
    at_most: float | None = Field(None, gt=0, alias="atMost")

    @field_validator("metric")
    @classmethod
    def _metric(cls, value: str) -> str:
        known = comparison.metric_names()
        if value not in known:
            raise ValueError(
                f"{validation.shown(value)}: unknown metric (known: {', '.join(known)})"
            )
        return value

    @model_validator(mode="after")
    def _one_threshold(self) -> Target:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("give atLeast or atMost (the ratio's threshold)")
        if self.variant == self.baseline:
            raise ValueError("baseline: a ratio of a variant to itself")
        return self

    @property
    def threshold(self) -> float:
        value = self.at_least if self.at_least is not None else self.at_most
        assert value is not None  # _one_threshold
        return value

    @property
    def describe(self) -> str:
        sign = ">=" if self.at_least is not None else "<="
        return f"{self.variant} / {self.baseline} {self.metric} {sign} {self.threshold:g}"


def unknown_variant(targets: Sequence[Target], variants: Sequence[str]) -> str | None:
    """The first target naming a variant the file does not have, as an error line."""
    for i, t in enumerate(targets):
        for field, name in (("variant", t.variant), ("baseline", t.baseline)):
            if name not in variants:
                return f"targets.{i}.{field}: no variant {name!r} (variants: {', '.join(variants)})"
    return None


@dataclass(frozen=True)
class Judged:
    target: Target
    workload: str
    interval: intervals.Interval | None
    verdict: str
    level: float = intervals.ALPHA
    """The test level the verdict was taken at (0: none taken); the interval stated is the
    (1 - level) one."""
    refused: tuple[str, ...] = ()
    """One line per pair dropped for an impossible value, naming the variant and the figure."""

    @property
    def ratio(self) -> float | None:
        i = self.interval
        return i.point if i is not None and i.pairs else None

    @property
    def notes(self) -> str:
        """The pairs dropped and the outliers found, in one clause ("" when none)."""
        parts = []
        if self.refused:
            parts.append(f"{len(self.refused)} pairs dropped: " + "; ".join(self.refused))
        if found := intervals.outliers_text(self.interval):
            parts.append(found)
        return "; ".join(parts)


def judge(
    targets: Sequence[Target],
    rows: Sequence[comparison.VariantRow],
    level: Callable[[int], float] = lambda pairs: intervals.ALPHA,
) -> list[Judged]:
    """Every target on every workload whose row has both its variants (pure), at the test
    level `level` gives for the pairs judged (the file's design: `design.Design.level`)."""
    out = []
    for t in targets:
        for row in rows:
            if row.metric != t.metric or row.noise:
                continue
            a, b = row.figures.get(t.variant), row.figures.get(t.baseline)
            kind = figures.kind(row.metric, row.unit)
            both = bool(a and b and a.values and b.values)
            interval = comparison.paired_ratio(a, b, kind) if a and b and both else None
            refused = comparison.refused(a, b, kind) if a and b and both else []
            at = level(interval.runs) if interval is not None else intervals.ALPHA
            verdict = intervals.verdict(
                interval, t.threshold, at_least=t.at_least is not None, level=at
            )
            if undefined := [v for v in (t.variant, t.baseline) if v in row.undefined]:
                verdict = f"not defined for {', '.join(undefined)}"
            names = {"A": t.variant, "B": t.baseline}
            lines = tuple(r.line(names[r.arm], row.metric) for r in refused)
            out.append(Judged(t, row.workload, interval, verdict, at, lines))
    return out


def line(j: Judged) -> str:
    """The target, its ratio, the interval at the level the verdict was taken at (its
    confidence said), the verdict, and the pairs dropped and outliers found."""
    ratio = f"{j.ratio:.2f}" if j.ratio is not None else "-"
    notes = f" ({j.notes})" if j.notes else ""
    return (
        f"{j.workload}: {j.target.describe}: ratio {ratio}, {intervals.confidence(j.level)} "
        f"interval {intervals.describe(j.interval, '{:.2f}'.format, j.level)}: {j.verdict}"
        f"{notes}"
    )


def to_json(judged: Sequence[Judged]) -> list[dict[str, Any]]:
    return [
        {
            "workload": j.workload,
            "target": j.target.describe,
            "metric": j.target.metric,
            "variant": j.target.variant,
            "baseline": j.target.baseline,
            "threshold": j.target.threshold,
            "at_least": j.target.at_least is not None,
            "ratio": j.ratio,
            "interval": None
            if j.interval is None or not j.interval.defined or j.interval.single_run
            else dict(
                zip(("low", "high"), j.interval.at(j.level or intervals.ALPHA), strict=True),
                confidence=1 - (j.level or intervals.ALPHA),
                repeats=j.interval.runs,
            ),
            "verdict": j.verdict,
            "dropped": list(j.refused),
            "outliers": [o.line() for o in intervals.outliers(j.interval)],
        }
        for j in judged
    ]
