"""The demo's report: console tables, `demo.json` (versioned) and a self-contained
`index.html` (targets, the side-by-side table, per comparison A and B charts, the guide's
matrix) linking each arm's own loadgen report."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from experiment.demo import dra_guide, project_targets, summary, wing
from experiment.demo.dra_guide import GuideRow
from experiment.demo.project_targets import Target
from experiment.demo.summary import Row
from experiment.measure import bandwidth_model, figures, intervals
from experiment.measure.arm_record import ArmRecord
from experiment.measure.arms import LATENCY_RATE_DEFINITION, Arm
from experiment.measure.figures import SCHEMA_VERSION
from experiment.plan import design
from experiment.plan.wing import Finished
from experiment.report import rebuild, report_files, variants_report
from experiment.spec.spec import Experiment
from testbed import charts, units

KIND = "DemoResult"
"""The `kind` of the demo's top-level result document, FILE."""
FILE = "demo.json"

_ALIGNED, _UNALIGNED = bandwidth_model.PUBLISHED_BUS_BANDWIDTH["all_gather"]
MODEL_NOTE = (
    "Bus bandwidth is a model, not a measurement: kwok nodes move no bytes. Each placed GPU is "
    f"priced with DRANet's published NCCL figures (all_gather {_ALIGNED:.2f} GB/s aligned on a "
    f"PCIe root, {_UNALIGNED:.2f} GB/s otherwise; arXiv 2506.23628)."
)

# What the demo's figures mean, stated in every demo.json and index.html. Each arm's own
# loadgen report carries the definitions of its pod startup and throughput figures.
DEFINITIONS = {
    "pod startup": "ClusterLoader2's PodStartupLatency and its phases, from client "
    "watch-receive times (create = first event seen); nearest-rank percentiles (each arm's "
    "report states it in full)",
    "scheduling throughput": "scheduler_perf's SchedulingThroughput: pods scheduled sampled "
    "on a 1 s ticker, first sample skipped, no zero intervals; the average of the rates",
    "latency arm": LATENCY_RATE_DEFINITION,
    "figures": "median over repeats with min-max of valid arms that accounted for every pod; "
    "costs are per pod or per second of the arm (no idle baseline subtracted: none is "
    "measured); memory growth that went negative is marked noise, not a figure; an arm with "
    "no throughput sample has no throughput (scheduler_perf emits none)",
    "verdicts": intervals.METHOD,
    "design": design.__doc__.split("\n\n")[0].replace("\n", " ") if design.__doc__ else "",
    "dropped repeats": "a verdict states the repeats it dropped (an arm invalid or without the "
    f"figure) and is '{project_targets.NOT_JUDGED}' past 1 in "
    f"{round(1 / project_targets.DROP_LIMIT)}",
    "probes": "placeability probes count placed, refused by the scheduler and no verdict "
    "within the time limit separately; a placeability verdict needs "
    f"{figures.SETTLED_FOR_VERDICT:.0%} of probe pods settled in every arm and repeat",
    "valid arm": "on the extender's scheduler: the extender answered every call ok, at least "
    "one filter call per pod scheduled, kube-scheduler's log was read and showed no skipped "
    "extender call, and under 1 % of filter calls had requests left to DRA unjudged; an "
    "invalid arm is shown and left out of every figure; a scrape that hit loadgen's series "
    "cap is flagged and its component's figures left out",
}


def _fmt(value: float, unit: str) -> str:
    if unit == "share" and not math.isnan(value):
        return f"{value:.1%}"
    return variants_report.value_text(value, unit)


def _cell(row_values: list[float], median: float, unit: str) -> str:
    if len(row_values) > 1:
        return f"{_fmt(median, unit)} ({_fmt(min(row_values), unit)}–{_fmt(max(row_values), unit)})"
    return _fmt(median, unit)


def _ratio(r: Row) -> str:
    return f"{r.ratio:.2f}" if r.ratio is not None else "-"


def _interval(r: Row) -> str:
    return intervals.describe(r.interval, "{:.2f}".format)


COLUMNS = ("comparison", "metric", "A", "B", "A/B", "A/B 95 % interval")


def _cells(r: Row) -> tuple[str, ...]:
    if r.noise:
        a = b = "noise (negative in a repeat)"
    else:
        a = _cell(r.a.values, r.a.median, r.unit)
        b = _cell(r.b.values, r.b.median, r.unit)
    return (
        r.comparison,
        f"{r.metric} [{r.unit}]",
        f"{r.a_name}: {a}",
        f"{r.b_name}: {b}",
        _ratio(r),
        "-" if r.noise else _interval(r),
    )


def console_table(rows: list[Row], console: Console) -> None:
    table = Table(
        title="dra-testbed demo: side by side (median, min–max over repeats; each ratio "
        "over paired repeats with its t 95 % interval)"
    )
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("comparison", "metric") else "right")
    for r in rows:
        table.add_row(*_cells(r))
    console.print(table)
    console.print(MODEL_NOTE, style="dim")


def console_guide(guide: list[GuideRow], console: Console) -> None:
    table = Table(title="the DRA guide's matrix vs measured (DRA claims vs device plugin)")
    for col in ("aspect", "guide's target", "guide's example", "ours", "verdict"):
        table.add_column(col)
    for g in guide:
        table.add_row(g.aspect, g.target, g.guide, g.measured, g.verdict)
    console.print(table)


def ordered(targets: list[Target]) -> tuple[list[Target], list[Target]]:
    """The targets this run measured, answers first (`Target.rank`), and those it did not,
    in their own order: a small run measures a few, and its page leads with those."""
    ranked = sorted(targets, key=lambda t: t.rank)  # stable: same rank keeps the goal order
    return (
        [t for t in ranked if t.measured_in_run],
        [t for t in ranked if not t.measured_in_run],
    )


_RUN_COMPARISON = f"{project_targets.NOT_MEASURED}: run --comparisons "


def not_measured_line(unmeasured: list[Target]) -> str:
    """One line for the targets a run did not measure: how many, the comparisons to add for
    them, and any other way (e.g. a bench)."""
    comparisons = dict.fromkeys(
        t.verdict.removeprefix(_RUN_COMPARISON)
        for t in unmeasured
        if t.verdict.startswith(_RUN_COMPARISON)
    )
    ways = [f"add {','.join(comparisons)} to --comparisons"] if comparisons else []
    ways += [
        f"{t.goal}: {t.verdict.removeprefix(project_targets.NOT_MEASURED).lstrip(': ')}"
        for t in unmeasured
        if not t.verdict.startswith(_RUN_COMPARISON)
    ]
    count = f"{len(unmeasured)} target{'s' if len(unmeasured) != 1 else ''}"
    return f"{count} not measured in this run; " + "; ".join(ways)


def console_targets(targets: list[Target], console: Console) -> None:
    measured, unmeasured = ordered(targets)
    table = Table(title="targets: the project's goals against this run")
    for col in ("goal", "measured", "verdict"):
        table.add_column(col)
    for t in measured:
        # Only a verdict is coloured as final: an observation or "inconclusive" is yellow.
        style = "green" if t.met else "red" if t.verdict.startswith("missed") else "yellow"
        table.add_row(t.goal, t.measured, f"[{style}]{t.verdict}")
    if measured:
        console.print(table)
    if unmeasured:
        console.print(not_measured_line(unmeasured), style="dim", soft_wrap=True)


def _targets_html(targets: list[Target]) -> list[str]:
    """The measured targets' table, answers first; the others folded under one line."""
    measured, unmeasured = ordered(targets)
    parts = [charts.targets_table([(t.goal, t.measured, t.verdict) for t in measured])]
    parts = parts if measured else []
    if unmeasured:
        rows = charts.targets_table([(t.goal, t.measured, t.verdict) for t in unmeasured])
        parts.append(
            f"<details><summary>{escape(not_measured_line(unmeasured))}</summary>{rows}</details>"
        )
    return parts


def _interval_json(r: Row) -> dict[str, Any] | None:
    interval = r.interval
    if interval is None or r.noise or not interval.defined:
        return None
    return {"low": interval.low, "high": interval.high, "runs": interval.runs}


def _probes_json(outcomes: list[figures.ProbeOutcome]) -> list[dict[str, int]] | None:
    if not outcomes:
        return None
    return [
        {
            "expected": o.expected,
            "placed": o.placed,
            "refused": o.refused,
            "no_verdict": o.no_verdict,
        }
        for o in outcomes
    ]


def _side(
    name: str, f: figures.Figure, noise: bool, probes: list[figures.ProbeOutcome]
) -> dict[str, Any]:
    return {
        "variant": name,
        "values": [_num(v) for v in f.values],
        "repeats": f.repeats,
        "median": None if noise else _num(f.median),
        "probes": _probes_json(probes),
    }


def to_json(
    rows: list[Row], meta: dict[str, Any], targets: list[Target], guide: list[GuideRow]
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        **meta,
        "model_note": MODEL_NOTE,
        "definitions": DEFINITIONS,
        "targets": [
            {
                "goal": t.goal,
                "measured": t.measured,
                "verdict": t.verdict,
                "met": t.met,
                "is_verdict": intervals.is_verdict(t.verdict),
            }
            for t in targets
        ],
        "comparisons": [
            {
                "comparison": r.comparison,
                "metric": r.metric,
                "unit": r.unit,
                "a": _side(r.a_name, r.a, r.noise, r.probes[0]),
                "b": _side(r.b_name, r.b, r.noise, r.probes[1]),
                "noise": r.noise,
                "ratio": r.ratio,
                "ratio_interval_95": _interval_json(r),
            }
            for r in rows
        ],
        "guide_matrix": [
            {
                "aspect": g.aspect,
                "target": g.target,
                "guide": g.guide,
                "measured": g.measured,
                "verdict": g.verdict,
            }
            for g in guide
        ],
    }


def _num(v: float) -> float | None:
    return None if math.isnan(v) or math.isinf(v) else v


def _facts(meta: dict[str, Any]) -> str:
    keep = ("nodes", "pods", "repeat", "scale_nodes", "design", "stopped")
    items = [(k, str(meta[k])) for k in keep if meta.get(k) is not None]
    items.append(("elapsed", units.duration(float(meta.get("elapsed_seconds", 0.0)))))
    return charts.facts(items)


def write(
    out_dir: Path,
    rows: list[Row],
    meta: dict[str, Any],
    arms: list[Arm],
    targets: list[Target],
    guide: list[GuideRow],
    *,
    keep_json: bool = False,
) -> Path:
    lead = [
        charts.Section("Targets", _targets_html(targets)),
        charts.Section(
            "Side by side",
            [
                charts.table(COLUMNS, [_cells(r) for r in rows], text_columns=2),
                charts.note(MODEL_NOTE),
            ],
        ),
    ]
    guide_rows = [(g.aspect, g.target, g.guide, g.measured, g.verdict) for g in guide]
    after = []
    if guide_rows:
        header = ("aspect", "guide's target", "guide's example", "ours", "verdict")
        table = charts.table(header, guide_rows, text_columns=4, verdict_column=4)
        after.append(charts.Section("The DRA guide's matrix vs measured", [table]))
    return report_files.write(
        out_dir,
        FILE,
        to_json(rows, meta, targets, guide),
        title="dra-testbed demo",
        intro=_facts(meta),
        arms=arms,
        invalid=meta.get("invalid_arms") or {},
        lead=lead,
        after_comparisons=after,
        last=[charts.Section("Definitions", [charts.facts(DEFINITIONS.items())])],
        min_group=2,
        keep_json=keep_json,
    )


def rebuild_page(out_dir: Path, doc: dict[str, Any]) -> Path:
    """`index.html` from a kept `demo.json` (`testbed report`); the JSON is left as is."""

    def side(s: dict[str, Any]) -> figures.Figure:
        return rebuild.figure(s["values"], s.get("repeats"))

    def probes(s: dict[str, Any]) -> list[figures.ProbeOutcome]:
        return [
            figures.ProbeOutcome(p["expected"], p["placed"], p["refused"])
            for p in s.get("probes") or []
        ]

    rows = [
        Row(
            c["comparison"],
            c["metric"],
            c["unit"],
            c["a"]["variant"],
            side(c["a"]),
            c["b"]["variant"],
            side(c["b"]),
            (probes(c["a"]), probes(c["b"])),
        )
        for c in doc["comparisons"]
    ]
    targets = [Target(t["goal"], t["measured"], t["verdict"]) for t in doc.get("targets") or []]
    guide = [GuideRow(**g) for g in doc.get("guide_matrix") or []]
    pairs = {(r.comparison, name) for r in rows for name in (r.a_name, r.b_name)}
    arms = rebuild.arms_from_names(doc.get("arms") or {}, pairs)
    return write(out_dir, rows, doc, arms, targets, guide, keep_json=True)


class Reporter:
    """What the demo hands the runner (`experiment.plan.wing.Reporter`): its rows, targets and
    guide matrix, on the console and in `demo.json` and `index.html`."""

    def report(self, run: Finished, console: Console) -> Path:
        workload = wing.workload_of(run.exp)
        meta = {**run.meta, "pods": workload.pods, "scale_nodes": workload.scale_nodes}
        # Invalid arms are shown (below and in demo.json), never averaged in.
        rows = summary.rows(run.results)
        judging = _judging(run.exp, run.arms, run.meta.get("closed_at"))
        goals = project_targets.targets(rows, judging)
        guide = dra_guide.guide_matrix(rows, judging)
        console_table(rows, console)
        console_targets(goals, console)
        console_guide(guide, console)
        console.print(f"design: {judging.plan.describe()}", style="dim", soft_wrap=True)
        if meta.get("stopped"):
            console.print(f"stopped: {meta['stopped']}", soft_wrap=True)
        return write(run.out_dir, rows, meta, run.arms, goals, guide)

    def undecided(
        self, exp: Experiment, results: list[tuple[Arm, ArmRecord]], arms: list[Arm]
    ) -> list[str]:
        return project_targets.undecided(summary.rows(results), _judging(exp, arms))


def _judging(
    exp: Experiment, arms: list[Arm], closed_at: int | None = None
) -> project_targets.Judging:
    """Verdicts at the run's design's level (closed after `closed_at` pairs where the budget
    forced a closing look) for the repeats each comparison ran."""
    return project_targets.Judging(design.of(exp, closed_at), project_targets.repeats_run(arms))
