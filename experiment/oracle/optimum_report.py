"""Each placement arm against its optimum (`experiment.oracle`): computed once per arm beside
its result (`optimum.json`, its record's `optimum`), then one table over the repeats on the
console, in the run's JSON document (its `optimum` section) and on its page, with any arm past
a limit flagged.

Every report gets it the same way: the runner puts the section into the run's facts, which
both reporters write into their JSON, and `report_files` draws it from there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from experiment.measure import intervals
from experiment.measure.arm_record import ArmRecord
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


def compute(
    rec: ArmRecord, fleet: Callable[[], inputs.Fleet], arm_dir: Path, console: Console
) -> dict[str, Any] | None:
    """The arm's optima (reading the fleet only if the arm asks a placement question), kept
    in its directory (`optimum.json`, for its record's `optimum`), one line printed each;
    None when it asks none."""
    if not inputs.asks_placement(rec):
        return None
    optimum = oracle_arms.arm_optimum(rec, fleet())
    if optimum is None:
        return None
    files.write_atomic(arm_dir / FILE, json.dumps(optimum, indent=2) + "\n")
    if optimum["error"]:
        console.print(f"[yellow]optimum: not computed: {optimum['error']}")
        return optimum
    for f in optimum["figures"]:
        measured = "-" if f["measured"] is None else f"{f['measured']:.4g}"
        line = (
            f"optimum: {f['metric']}: arm {measured}, online {_bound(f['online'])}, "
            f"batch {_bound(f['batch'])} ({optimum['seconds']:.1f} s)"
        )
        console.print(f"[red]{line}: {f['beats']}" if f["beats"] else line)
    return optimum


def _bound(b: Mapping[str, Any] | None) -> str:
    if b is None:
        return "none"
    value = "-" if b.get("value") is None else f"{b['value']:.4g}"
    if b.get("optimal"):
        return value
    limit = "-" if b.get("bound") is None else f"{b['bound']:.4g}"
    return f"{value} (limit {limit}, gap {b.get('gap', 0):.1%})"


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None and not math.isnan(v)]
    return intervals.median(got) if got else None


def _pair(f: Mapping[str, Any], which: str) -> tuple[float, float]:
    """(numerator, denominator) of one repeat's share: the arm over the optimum, or the
    optimum over the arm for a figure to keep low; (1, 1) where both are 0 (share 1)."""
    bound = f[which]
    if f["measured"] is None or bound is None or bound.get("value") is None:
        return math.nan, math.nan
    arm, best = float(f["measured"]), float(bound["value"])
    if arm == best == 0:
        return 1.0, 1.0
    return (arm, best) if f["sense"] == "max" else (best, arm)


def share_interval(figs: Sequence[Mapping[str, Any]], which: str) -> intervals.Interval | None:
    """The interval of the arm's share of its `which` ("online" or "batch") optimum over its
    repeats (in repeat order), each repeat's arm paired with its own optimum."""
    pairs = [_pair(f, which) for f in figs]
    return intervals.ratio_interval([a for a, _ in pairs], [b for _, b in pairs], "count")


def _interval_json(interval: intervals.Interval | None) -> dict[str, Any] | None:
    if interval is None or interval.single_run or not interval.defined:
        return None
    return {"low": interval.low, "high": interval.high, "point": interval.point}


def section(results: Sequence[tuple[Arm, ArmRecord]]) -> dict[str, Any]:
    """The run's `optimum` section: per comparison, arm and metric, medians over repeats of
    the arm's figure, both optima and its shares (per repeat, and their intervals); arms
    past a limit; arms not computed; per arm short of its online optimum, the decisions
    that lost the difference (`optimum_losses`)."""
    groups: dict[tuple[str, str, str], list[tuple[Arm, dict[str, Any]]]] = {}
    errors: dict[str, str] = {}
    losses: dict[str, list[dict[str, Any]]] = {}
    for arm, rec in sorted(results, key=lambda r: r[0].repeat):
        if rec.optimum_error:
            errors[arm.name] = rec.optimum_error
        for f in rec.optimum_figures:
            groups.setdefault((arm.comparison, arm.variant, f["metric"]), []).append((arm, f))
        lost = optimum_losses.of_arm(rec, rec.optimum_figures)
        if lost:
            losses[arm.name] = lost
    rows = []
    for (comparison, variant, metric), got in groups.items():
        figs = [f for _, f in got]
        rows.append(
            {
                "comparison": comparison,
                "arm": variant,
                "metric": metric,
                "unit": figs[0]["unit"],
                "repeats": len(figs),
                "measured": _median([f["measured"] for f in figs]),
                "online": _median([(f["online"] or {}).get("value") for f in figs]),
                "batch": _median([f["batch"]["value"] for f in figs]),
                "share_of_online": _median([f["share_of_online"] for f in figs]),
                "share_of_batch": _median([f["share_of_batch"] for f in figs]),
                "proven_optimal": all(
                    f["batch"]["optimal"] and (f["online"] or {}).get("optimal", True) for f in figs
                ),
                "largest_gap": max(
                    max((f["online"] or {}).get("gap", 0.0), f["batch"]["gap"]) for f in figs
                ),
                "beats": {a.name: f["beats"] for a, f in got if f["beats"]},
                "shares_of_online": [f["share_of_online"] for f in figs],
                "shares_of_batch": [f["share_of_batch"] for f in figs],
                "interval_online": _interval_json(share_interval(figs, "online")),
                "interval_batch": _interval_json(share_interval(figs, "batch")),
            }
        )
    return {"note": NOTE, "rows": rows, "not_computed": errors, "losses": losses}


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if unit == "share" else f"{value:.4g}"


def _share_cell(row: Mapping[str, Any], which: str) -> str:
    text = _cell(row[f"share_of_{which}"], "share")
    interval = row.get(f"interval_{which}")
    if interval:
        text += f" [{interval['low']:.1%}, {interval['high']:.1%}]"
    return text


def _cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    unit = row["unit"]
    limit = "" if row["proven_optimal"] else f" (gap <= {row['largest_gap']:.1%})"
    return (
        row["comparison"],
        row["arm"],
        row["metric"],
        _cell(row["measured"], unit),
        _cell(row["online"], unit) + limit,
        _share_cell(row, "online"),
        _cell(row["batch"], unit) + limit,
        _share_cell(row, "batch"),
    )


def loss_lines(optimum: Mapping[str, Any], decisions: int = 3) -> list[str]:
    """Per arm and figure short of its online optimum, one line: what it lost and its
    costliest decisions (`decisions` of them, the rest counted)."""
    out = []
    for arm, figures in (optimum.get("losses") or {}).items():
        for f in figures:
            unit = f["unit"]
            shown = f["decisions"][:decisions]
            hidden = len(f["decisions"]) - len(shown) + f["more"]["count"]
            what = "; ".join(f"{d['decision']} ({_cost(d['cost'], unit)})" for d in shown)
            more = f"; {hidden} more" if hidden else ""
            out.append(
                f"arm {arm}: {f['metric']} at {f['share_of_online']:.1%} of the online optimum "
                f"({_cell(f['measured'], unit)} vs {_cell(f['online'], unit)}): "
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


def console_table(optimum: Mapping[str, Any], console: Console) -> None:
    rows = optimum.get("rows") or []
    if not rows and not optimum.get("not_computed"):
        return
    table = Table(title="placement against the optimum (medians over repeats)")
    for column in COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*_cells(row))
    console.print(table)
    for row in rows:
        for arm, why in row["beats"].items():
            console.print(f"[red]arm {arm}: {row['metric']} {why}")
    for arm, why in (optimum.get("not_computed") or {}).items():
        console.print(f"[yellow]arm {arm}: optimum not computed: {why}")
    for line in loss_lines(optimum):
        console.print(line, highlight=False)


def html_sections(doc: Mapping[str, Any]) -> list[charts.Section]:
    """The page's section from a run's JSON document (none without an `optimum` section)."""
    optimum = doc.get("optimum") or {}
    rows = optimum.get("rows") or []
    if not rows:
        return []
    parts = [
        charts.table(COLUMNS, [_cells(r) for r in rows], text_columns=3),
        charts.note(optimum.get("note") or NOTE),
    ]
    flagged = [f"arm {arm}: {r['metric']} {why}" for r in rows for arm, why in r["beats"].items()]
    parts += [charts.note(line) for line in flagged]
    parts += [charts.note(line) for line in loss_lines(optimum)]
    return [charts.Section("Placement against the optimum", parts)]
