"""An experiment file's outputs: the console tables, `experiment.json` and `index.html`.

Per workload and metric each variant's median (min-max over repeats) and its ratio to the
first variant with the ratio's paired 95 % interval; the release-to-release table where
variants differ only in the release, its change with the same interval; per
workload the variants' charts side by side; each arm's own
loadgen report linked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from experiment.judge import comparison, targets
from experiment.judge.comparison import ReleaseRow, VariantRow
from experiment.measure import intervals, process_cpu
from experiment.measure.arm_record import ArmRecord
from experiment.measure.arms import Arm
from experiment.measure.figures import SCHEMA_VERSION, Figure
from experiment.plan import design
from experiment.plan.wing import Finished
from experiment.report import report_files
from experiment.sites import clusterloader2
from experiment.spec.spec import Experiment
from testbed import charts, units

RELEASE_COLUMNS = ("workload", "metric", "previous", "current", "% change")


def value_text(value: float, unit: str) -> str:
    """A figure in its unit as every report prints it."""
    if math.isnan(value):
        return "-"
    if unit == "share":
        return units.percent(value)
    if unit in ("count", "nodes"):
        return f"{value:,.0f}"
    if unit == "ms":
        # Three significant figures under 100 ms: an extender's 1.8 ms a pod is not "2".
        digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
        return f"{value:,.{digits}f}"
    return f"{value:,.2f}"


def _figure(f: Figure, unit: str) -> str:
    if len(f.values) > 1:
        low, high = f.spread
        return f"{value_text(f.median, unit)} ({value_text(low, unit)}–{value_text(high, unit)})"
    return value_text(f.median, unit)


def _interval(interval: intervals.Interval | None) -> str:
    """` [low–high]` of a ratio over >= 2 paired repeats, else nothing."""
    if interval is None or interval.single_run or not interval.defined:
        return ""
    return f" [{interval.low:.2f}–{interval.high:.2f}]"


NOISE = "noise (negative in a repeat)"
NOT_DEFINED = "not defined"
"""A variant whose arms do not define the metric (`figures.defined`), e.g. in-process."""


def _variant_cell(row: VariantRow, variant: str) -> str:
    if row.noise:
        return NOISE
    if variant in row.undefined:
        return NOT_DEFINED
    text = _figure(row.figures[variant], row.unit)
    ratio = row.ratio(variant)
    if variant != row.baseline and ratio is not None:
        text += f" ×{ratio:.2f}{_interval(row.interval(variant))}"
    return text


def _change(row: ReleaseRow) -> str:
    """The change of the medians, with the 95 % interval of the change where there is one."""
    c, i = row.change, row.interval
    if row.noise:
        return NOISE
    if c is None:
        return "-"
    if i is None or i.single_run or not i.defined:
        return f"{c:+.1%}"
    return f"{c:+.1%} [{i.low - 1:+.1%}, {i.high - 1:+.1%}]"


def _interval_json(interval: intervals.Interval | None) -> dict[str, Any] | None:
    if interval is None or interval.single_run or not interval.defined:
        return None
    return {"low": interval.low, "high": interval.high, "repeats": interval.runs}


def _release_cells(r: ReleaseRow) -> tuple[str, ...]:
    return (
        r.workload,
        f"{r.metric} [{r.unit}]",
        f"{r.previous}: {_figure(r.previous_value, r.unit)}",
        f"{r.current}: {_figure(r.current_value, r.unit)}",
        _change(r),
    )


def _variants(rows: Sequence[VariantRow]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        seen += [v for v in r.figures if v not in seen]
    return seen


def _variant_cells(rows: Sequence[VariantRow], variants: list[str]) -> list[tuple[str, ...]]:
    return [
        (
            r.workload,
            f"{r.metric} [{r.unit}]",
            *(_variant_cell(r, v) if v in r.figures else "-" for v in variants),
        )
        for r in rows
    ]


def console_tables(
    rows: Sequence[VariantRow], releases: Sequence[ReleaseRow], out: Console
) -> None:
    variants = _variants(rows)
    table = Table(
        title="variants side by side (median, min–max over repeats; ×ratio to the first "
        "variant [its 95 % interval, paired by repeat])"
    )
    for col in ("workload", "metric", *variants):
        table.add_column(col, justify="left" if col in ("workload", "metric") else "right")
    for cells in _variant_cells(rows, variants):
        table.add_row(*map(escape, cells))
    out.print(table)
    if releases:
        rt = Table(title="release to release (median over repeats; % change [its 95 % interval])")
        for col in RELEASE_COLUMNS:
            rt.add_column(col, justify="left" if col in ("workload", "metric") else "right")
        for r in releases:
            rt.add_row(*map(escape, _release_cells(r)))
        out.print(rt)


def agreement_table(cl2: clusterloader2.Sections) -> Table:
    """ClusterLoader2's arms' rows: each phase's p50/p90/p99 by loadgen observe and by its
    PerfData, the difference and what max(20 ms, 5 %) allows."""
    table = Table(title="ClusterLoader2 agreement (loadgen observe - ClusterLoader2, ms)")
    for i, col in enumerate(clusterloader2.AGREEMENT_COLUMNS):
        table.add_column(col, justify="left" if i < 4 else "right")
    for cells in clusterloader2.agreement_cells(cl2):
        table.add_row(*map(escape, cells))
    return table


def figure_json(f: Figure) -> dict[str, Any]:
    return {
        "values": [None if math.isnan(v) else v for v in f.values],
        "repeats": list(f.repeats),
        "median": None if math.isnan(f.median) else f.median,
    }


@dataclass(frozen=True)
class Extras:
    """What a file's run reports beside its rows: its targets judged, and each variant's CPU
    by process where its arms measured it."""

    judged: list[targets.Judged]
    breakdowns: list[process_cpu.Breakdown]
    cl2: clusterloader2.Sections = field(default_factory=dict)
    """The ClusterLoader2 arms' rows held against its PerfData, by arm name."""

    def lines(self) -> list[str]:
        out = []
        if self.cl2:
            out += ["ClusterLoader2 agreement (loadgen observe beside its PerfData):"]
            out += [f"  {line}" for line in clusterloader2.agreement_lines(self.cl2)]
        if self.judged:
            out += ["targets (ratio, its paired 95 % interval and verdict):"]
            out += [f"  {targets.line(j)}" for j in self.judged]
        if self.breakdowns:
            out += ["where the CPU goes, ms per pod by process:"]
            out += [f"  {line}" for b in self.breakdowns for line in process_cpu.lines(b)]
        return out


def extras(
    exp: Experiment,
    rows: Sequence[VariantRow],
    results: Sequence[Any],
    closed_at: int | None = None,
) -> Extras:
    """`closed_at`: the pairs of a closing look a sequential run's budget forced (its
    verdicts are taken at the error budget left there)."""
    judged = targets.judge(exp.targets, rows, design.of(exp, closed_at).level)
    return Extras(judged, process_cpu.breakdowns(results), clusterloader2.sections(results))


def undecided_targets(exp: Experiment, rows: Sequence[VariantRow]) -> list[str]:
    """A file's targets, on each of its workloads, without a verdict (met or missed) at the
    level its design gives the pairs run: a sequential run goes on while any is left. A
    target with no figure yet is undecided too (more pairs may bring it)."""
    judged = targets.judge(exp.targets, rows, design.of(exp).level)
    decided = {(j.target, j.workload) for j in judged if intervals.is_verdict(j.verdict)}
    return [
        f"{w.name}: {t.describe}"
        for t in exp.targets
        for w in exp.workloads
        if (t, w.name) not in decided
    ]


def to_json(
    exp: Experiment,
    meta: dict[str, Any],
    rows: Sequence[VariantRow],
    releases: Sequence[ReleaseRow],
    more: Extras | None = None,
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "ExperimentResult",
        **meta,
        "spec": exp.model_dump(mode="json", by_alias=True, exclude_defaults=True),
        "comparisons": [
            {
                "workload": r.workload,
                "metric": r.metric,
                "unit": r.unit,
                "baseline": r.baseline,
                "variants": {
                    v: {
                        **figure_json(f),
                        **({"defined": False} if v in r.undefined else {}),
                        "ratio_to_baseline": r.ratio(v),
                        "ratio_interval": None
                        if v == r.baseline
                        else _interval_json(r.interval(v)),
                    }
                    for v, f in r.figures.items()
                },
            }
            for r in rows
        ],
        "releases": [
            {
                "workload": r.workload,
                "metric": r.metric,
                "unit": r.unit,
                "previous": {"variant": r.previous, **figure_json(r.previous_value)},
                "current": {"variant": r.current, **figure_json(r.current_value)},
                "change": r.change,
                "ratio_interval": _interval_json(r.interval),
            }
            for r in releases
        ],
        **(
            {
                "targets": targets.to_json(more.judged),
                "process_cpu": process_cpu.to_json(more.breakdowns),
                **(
                    {clusterloader2.KEY: {a: s.model_dump() for a, s in more.cl2.items()}}
                    if more.cl2
                    else {}
                ),
            }
            if more is not None
            else {}
        ),
    }


def write(
    out_dir: Path,
    exp: Experiment,
    meta: dict[str, Any],
    rows: Sequence[VariantRow],
    releases: Sequence[ReleaseRow],
    arms: Sequence[Arm],
    *,
    keep_json: bool = False,
    more: Extras | None = None,
) -> Path:
    variants = _variants(rows)
    lead = [
        charts.Section(
            "Variants side by side",
            [
                charts.table(
                    ("workload", "metric", *variants),
                    _variant_cells(rows, variants),
                    text_columns=2,
                ),
                charts.note(
                    "Median over repeats (min–max); ×ratio to the first variant with its 95 % "
                    "interval in brackets: each repeat's arms ran back to back, so per repeat the "
                    "log of the ratio, and Student's t over those (scipy.stats). An interval that "
                    "excludes 1 is a difference; one that spans 1 is not shown to be one. No "
                    "interval from one repeat."
                ),
            ],
        )
    ]
    if releases:
        table = charts.table(RELEASE_COLUMNS, [_release_cells(r) for r in releases], text_columns=2)
        lead.append(charts.Section("Release to release", [table]))
    if more is not None and (text := more.lines()):
        lead.append(charts.Section("Targets and CPU by process", [charts.note(t) for t in text]))
    if more is not None and more.cl2:
        cells = clusterloader2.agreement_cells(more.cl2)
        table = charts.table(clusterloader2.AGREEMENT_COLUMNS, cells, text_columns=4)
        lead.append(charts.Section("ClusterLoader2 agreement", [table]))
    facts = [
        ("experiment", exp.name),
        *(("description", exp.description) for _ in [0] if exp.description),
        *(("site", s) for s in meta.get("sites", [])),
        ("variants", ", ".join(v.name for v in exp.variants)),
        ("workloads", ", ".join(w.name for w in exp.workloads)),
        ("repeats", f"{exp.repeats} ({exp.order})"),
        ("elapsed", units.duration(float(meta.get("elapsed_seconds", 0.0)))),
    ]
    return report_files.write(
        out_dir,
        "experiment.json",
        to_json(exp, meta, rows, releases, more),
        title=f"dra-testbed experiment {exp.name}",
        intro=charts.facts(facts),
        arms=arms,
        invalid=meta.get("invalid_arms") or {},
        lead=lead,
        keep_json=keep_json,
    )


class Reporter:
    """The engine's own reporter (`experiment.plan.wing.Reporter`) for a file's variants x
    workloads: the variants side by side and release to release."""

    def report(self, run: Finished, console: Console) -> Path:
        exp, results = run.exp, run.results
        rows = comparison.rows(results, [v.name for v in exp.variants], exp.metrics)
        releases = comparison.release_rows(results, exp.release_pairs(), exp.metrics)
        console_tables(rows, releases, console)
        more = extras(exp, rows, results, run.meta.get("closed_at"))
        if more.cl2:
            console.print(agreement_table(more.cl2))
        for line in more.lines():
            console.print(escape(line))
        return write(run.out_dir, exp, run.meta, rows, releases, run.arms, more=more)

    def undecided(
        self, exp: Experiment, results: list[tuple[Arm, ArmRecord]], arms: list[Arm]
    ) -> list[str]:
        """A file's `targets:` are its headlines (`undecided_targets`)."""
        metrics = list(dict.fromkeys(t.metric for t in exp.targets))
        return undecided_targets(
            exp, comparison.rows(results, [v.name for v in exp.variants], metrics)
        )
