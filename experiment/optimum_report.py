"""Each placement arm against its optimum (`experiment.oracle`): computed once per arm beside
its result (`optimum.json`), then one table over the repeats on the console, in the run's
JSON document (its `optimum` section) and on its page, with any arm past a limit flagged.

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

from experiment import intervals
from experiment.arms import Arm
from experiment.figures import Doc
from experiment.oracle import arms as oracle_arms
from experiment.oracle import inputs
from testbed import charts, files

FILE = "optimum.json"
NOTE = (
    "Optimum: the best placement that exists for the arm's own workload on its fleet "
    "(scipy's HiGHS MILP over per-node patterns of pods and devices). Online: pods in arrival "
    "order, never moved, a pod refused only where nothing fits it when it comes (what a "
    "scheduler can reach); batch: all pods known at once. Share: the arm's figure over the "
    "optimum (optimum over the arm's for figures kept low); 1.0 is the best possible. GPUs "
    "stranded and pairs aligned are optimised for the pods the arm placed. A figure the "
    "solver did not prove optimal within its time limit shows its limit and gap."
)


def attach(doc: Doc, fleet: Callable[[], inputs.Fleet], arm_dir: Path, console: Console) -> None:
    """Compute the arm's optima (reading the fleet only if the arm asks a placement
    question), keep them in its directory and under `doc["optimum"]`, print one line each."""
    if not inputs.asks_placement(doc):
        return
    got = oracle_arms.arm_optimum(doc, fleet())
    if got is None:
        return
    doc["optimum"] = got
    files.write_atomic(arm_dir / FILE, json.dumps(doc["optimum"], indent=2) + "\n")
    optimum = doc["optimum"]
    if optimum.get("error"):
        console.print(f"[yellow]optimum: not computed: {optimum['error']}")
        return
    for f in optimum["figures"]:
        measured = "-" if f["measured"] is None else f"{f['measured']:.4g}"
        line = (
            f"optimum: {f['metric']}: arm {measured}, online {_bound(f['online'])}, "
            f"batch {_bound(f['batch'])} ({optimum['seconds']:.1f} s)"
        )
        console.print(f"[red]{line}: {f['beats']}" if f["beats"] else line)


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


def section(results: Sequence[tuple[Arm, Doc]]) -> dict[str, Any]:
    """The run's `optimum` section: per comparison, arm and metric, medians over repeats of
    the arm's figure, both optima and its shares; arms past a limit; arms not computed."""
    groups: dict[tuple[str, str, str], list[tuple[Arm, dict[str, Any]]]] = {}
    errors: dict[str, str] = {}
    for arm, doc in results:
        optimum = doc.get("optimum") or {}
        if optimum.get("error"):
            errors[arm.name] = optimum["error"]
        for f in optimum.get("figures") or []:
            groups.setdefault((arm.comparison, arm.variant, f["metric"]), []).append((arm, f))
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
            }
        )
    return {"note": NOTE, "rows": rows, "not_computed": errors}


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if unit == "share" else f"{value:.4g}"


def _cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    unit = row["unit"]
    limit = "" if row["proven_optimal"] else f" (gap <= {row['largest_gap']:.1%})"
    return (
        row["comparison"],
        row["arm"],
        row["metric"],
        _cell(row["measured"], unit),
        _cell(row["online"], unit) + limit,
        _cell(row["share_of_online"], "share"),
        _cell(row["batch"], unit) + limit,
        _cell(row["share_of_batch"], "share"),
    )


COLUMNS = (
    "comparison",
    "arm",
    "metric",
    "arm (median)",
    "online optimum",
    "share of online",
    "batch optimum",
    "share of batch",
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
    return [charts.Section("Placement against the optimum", parts)]
