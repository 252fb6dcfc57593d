"""Each placement arm against its optimum (`experiment.oracle`): computed once per arm beside
its result (`optimum.json`, its record's `optimum`), then one table over the repeats on the
console, in the run's JSON document (its `optimum` section) and on its page, with any arm past
a limit flagged.

Every report gets it the same way: the runner puts the section (`Section`, as JSON) into the
run's facts, which both reporters write into their JSON, and `report_files` draws it from
there (`read`: a document written before a key was reads as it did, the key's default).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from experiment.measure import arm_record, intervals
from experiment.measure.arm_record import ArmRecord, Number
from experiment.measure.arms import Arm
from experiment.oracle import arms as oracle_arms
from experiment.oracle import inputs, optimum_losses
from testbed import charts, files

FILE = "optimum.json"
NOTE = (
    "Optimum: the best placement that exists for the arm's own workload on its fleet "
    "(scipy's HiGHS MILP over per-node patterns of pods and devices). Online: pods in arrival "
    "order, never moved, a pod refused only where nothing fits it when it comes (what a "
    "scheduler can reach); batch: all pods known at once. Share: the arm's figure over the "
    "optimum (optimum over the arm's for figures kept low); 1.0 is the best possible. GPUs "
    "stranded and pairs aligned are optimised for the pods the arm placed. A figure the "
    "solver did not prove optimal within its time limit shows its limit and gap. Interval: "
    "each repeat's share is its arm's figure over that same arm's optimum (a pair), and the "
    f"{intervals.CONFIDENCE:.0%} interval is Student's t over the log shares (the engine's "
    "paired ratio interval, around their geometric mean; shown from 2 repeats)."
)


class ShareInterval(arm_record.OptimumPart):
    """The paired interval of a row's shares over its repeats (`share_interval`)."""

    low: Number
    high: Number
    point: Number


class Row(arm_record.OptimumPart):
    """One comparison, arm and metric over its repeats: medians of the arm's figure, of both
    optima and of its shares, and the shares per repeat with their intervals (a key a row
    written before it lacks reads as it did: no shares, no interval)."""

    comparison: str
    arm: str
    metric: str
    unit: str
    repeats: int
    measured: Number | None
    online: Number | None
    batch: Number | None
    share_of_online: Number | None
    share_of_batch: Number | None
    proven_optimal: bool
    largest_gap: Number
    beats: dict[str, str]
    """Per arm past a limit, why."""
    shares_of_online: list[Number | None] = []
    """In repeat order."""
    shares_of_batch: list[Number | None] = []
    interval_online: ShareInterval | None = None
    """None from one repeat, or where the shares give none."""
    interval_batch: ShareInterval | None = None


class Section(arm_record.OptimumPart):
    """The run's `optimum` section (`section`), as its JSON document holds it; a document
    without one reads as empty."""

    note: str = ""
    """What the figures are (`NOTE` where a document has none)."""
    rows: list[Row] = []
    not_computed: dict[str, str] = {}
    """Per arm whose optimum was not computed, why."""
    losses: dict[str, list[optimum_losses.Loss]] = {}
    """Per arm short of its online optimum, its figures' losses (`optimum_losses`)."""

    def to_json(self) -> dict[str, Any]:
        """The section as the run's JSON document holds it."""
        return self.model_dump()


def read(doc: Mapping[str, Any]) -> Section:
    """A run's JSON document's `optimum` section (empty without one); pydantic's
    ValidationError when it is not of the section's schema."""
    return Section.model_validate(doc.get("optimum") or {})


def compute(
    rec: ArmRecord, fleet: Callable[[], inputs.Fleet], arm_dir: Path, console: Console
) -> arm_record.Optimum | None:
    """The arm's optima (reading the fleet only if the arm asks a placement question), kept
    in its directory (`optimum.json`, for its record's `optimum`), one line printed each;
    None when it asks none."""
    if not inputs.asks_placement(rec):
        return None
    optimum = oracle_arms.arm_optimum(rec, fleet())
    if optimum is None:
        return None
    files.write_atomic(arm_dir / FILE, json.dumps(optimum.model_dump(), indent=2) + "\n")
    if optimum.error:
        console.print(f"[yellow]optimum: not computed: {optimum.error}")
        return optimum
    for f in optimum.figures:
        measured = "-" if f.measured is None else f"{f.measured:.4g}"
        line = (
            f"optimum: {f.metric}: arm {measured}, online {_bound(f.online)}, "
            f"batch {_bound(f.batch)} ({optimum.seconds:.1f} s)"
        )
        console.print(f"[red]{line}: {f.beats}" if f.beats else line)
    return optimum


def _bound(b: arm_record.OptimumBound | None) -> str:
    if b is None:
        return "none"
    value = "-" if b.value is None else f"{b.value:.4g}"
    if b.optimal:
        return value
    limit = "-" if b.bound is None else f"{b.bound:.4g}"
    return f"{value} (limit {limit}, gap {b.gap:.1%})"


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None and not math.isnan(v)]
    return intervals.median(got) if got else None


def _pair(f: arm_record.OptimumFigure, which: str) -> tuple[float, float]:
    """(numerator, denominator) of one repeat's share: the arm over the optimum, or the
    optimum over the arm for a figure to keep low; (1, 1) where both are 0 (share 1)."""
    bound = f.online if which == "online" else f.batch
    if f.measured is None or bound is None or bound.value is None:
        return math.nan, math.nan
    arm, best = float(f.measured), float(bound.value)
    if arm == best == 0:
        return 1.0, 1.0
    return (arm, best) if f.sense == "max" else (best, arm)


def share_interval(
    figs: Sequence[arm_record.OptimumFigure], which: str
) -> intervals.Interval | None:
    """The interval of the arm's share of its `which` ("online" or "batch") optimum over its
    repeats (in repeat order), each repeat's arm paired with its own optimum."""
    pairs = [_pair(f, which) for f in figs]
    return intervals.ratio_interval([a for a, _ in pairs], [b for _, b in pairs], "count")


def _interval(interval: intervals.Interval | None) -> ShareInterval | None:
    if interval is None or interval.single_run or not interval.defined:
        return None
    return ShareInterval(low=interval.low, high=interval.high, point=interval.point)


def section(results: Sequence[tuple[Arm, ArmRecord]]) -> Section:
    """The run's `optimum` section: per comparison, arm and metric, medians over repeats of
    the arm's figure, both optima and its shares (per repeat, and their intervals); arms
    past a limit; arms not computed; per arm short of its online optimum, the decisions
    that lost the difference (`optimum_losses`)."""
    groups: dict[tuple[str, str, str], list[tuple[Arm, arm_record.OptimumFigure]]] = {}
    errors: dict[str, str] = {}
    losses: dict[str, list[optimum_losses.Loss]] = {}
    for arm, rec in sorted(results, key=lambda r: r[0].repeat):
        if rec.optimum_error:
            errors[arm.name] = rec.optimum_error
        for f in rec.optimum_figures:
            groups.setdefault((arm.comparison, arm.variant, f.metric), []).append((arm, f))
        lost = optimum_losses.of_arm(rec, rec.optimum_figures)
        if lost:
            losses[arm.name] = lost
    rows = []
    for (comparison, variant, metric), got in groups.items():
        figs = [f for _, f in got]
        rows.append(
            Row(
                comparison=comparison,
                arm=variant,
                metric=metric,
                unit=figs[0].unit,
                repeats=len(figs),
                measured=_median([f.measured for f in figs]),
                online=_median([None if f.online is None else f.online.value for f in figs]),
                batch=_median([f.batch.value for f in figs]),
                share_of_online=_median([f.share_of_online for f in figs]),
                share_of_batch=_median([f.share_of_batch for f in figs]),
                proven_optimal=all(
                    f.batch.optimal and (True if f.online is None else f.online.optimal)
                    for f in figs
                ),
                largest_gap=max(
                    max(0.0 if f.online is None else f.online.gap, f.batch.gap) for f in figs
                ),
                beats={a.name: f.beats for a, f in got if f.beats},
                shares_of_online=[f.share_of_online for f in figs],
                shares_of_batch=[f.share_of_batch for f in figs],
                interval_online=_interval(share_interval(figs, "online")),
                interval_batch=_interval(share_interval(figs, "batch")),
            )
        )
    return Section(note=NOTE, rows=rows, not_computed=errors, losses=losses)


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if unit == "share" else f"{value:.4g}"


def _share_cell(row: Row, which: str) -> str:
    if which == "online":
        share, interval = row.share_of_online, row.interval_online
    else:
        share, interval = row.share_of_batch, row.interval_batch
    text = _cell(share, "share")
    if interval is not None:
        text += f" [{interval.low:.1%}, {interval.high:.1%}]"
    return text


def _cells(row: Row) -> tuple[str, ...]:
    unit = row.unit
    limit = "" if row.proven_optimal else f" (gap <= {row.largest_gap:.1%})"
    return (
        row.comparison,
        row.arm,
        row.metric,
        _cell(row.measured, unit),
        _cell(row.online, unit) + limit,
        _share_cell(row, "online"),
        _cell(row.batch, unit) + limit,
        _share_cell(row, "batch"),
    )


def loss_lines(optimum: Section, decisions: int = 3) -> list[str]:
    """Per arm and figure short of its online optimum, one line: what it lost and its
    costliest decisions (`decisions` of them, the rest counted)."""
    out = []
    for arm, figures in optimum.losses.items():
        for f in figures:
            unit = f.unit
            shown = f.decisions[:decisions]
            hidden = len(f.decisions) - len(shown) + f.more.count
            what = "; ".join(f"{d.decision} ({_cost(d.cost, unit)})" for d in shown)
            more = f"; {hidden} more" if hidden else ""
            out.append(
                f"arm {arm}: {f.metric} at {f.share_of_online:.1%} of the online optimum "
                f"({_cell(f.measured, unit)} vs {_cell(f.online, unit)}): "
                f"{what or 'no decision recorded'}{more}"
            )
    return out


def _cost(cost: float, unit: str) -> str:
    return f"{cost:+.1%}" if unit == "share" else f"{cost:+.3g} {unit}"


COLUMNS = (
    "comparison",
    "arm",
    "metric",
    "arm (median)",
    "online optimum",
    "share of online [95 % interval]",
    "batch optimum",
    "share of batch [95 % interval]",
)


def console_table(optimum: Section, console: Console) -> None:
    rows = optimum.rows
    if not rows and not optimum.not_computed:
        return
    table = Table(title="placement against the optimum (medians over repeats)")
    for column in COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*_cells(row))
    console.print(table)
    for row in rows:
        for arm, why in row.beats.items():
            console.print(f"[red]arm {arm}: {row.metric} {why}")
    for arm, why in optimum.not_computed.items():
        console.print(f"[yellow]arm {arm}: optimum not computed: {why}")
    for line in loss_lines(optimum):
        console.print(line, highlight=False)


def html_sections(doc: Mapping[str, Any]) -> list[charts.Section]:
    """The page's section from a run's JSON document (none without an `optimum` section)."""
    optimum = read(doc)
    rows = optimum.rows
    if not rows:
        return []
    parts = [
        charts.table(COLUMNS, [_cells(r) for r in rows], text_columns=3),
        charts.note(optimum.note or NOTE),
    ]
    flagged = [f"arm {arm}: {r.metric} {why}" for r in rows for arm, why in r.beats.items()]
    parts += [charts.note(line) for line in flagged]
    parts += [charts.note(line) for line in loss_lines(optimum)]
    return [charts.Section("Placement against the optimum", parts)]
