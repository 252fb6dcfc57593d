"""The demo's outputs: a console table, `demo.json` (versioned) and a self-contained
`index.html` linking each arm's own loadgen report."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from experiment import bandwidth_model, intervals
from experiment.summary import SCHEMA_VERSION, GuideRow, Row, Target

_ALIGNED, _UNALIGNED = bandwidth_model.PUBLISHED_BUS_BANDWIDTH["all_gather"]
MODEL_NOTE = (
    "Bus bandwidth is a model, not a measurement: kwok nodes move no bytes. Each placed GPU is "
    f"priced with DRANet's published NCCL figures (all_gather {_ALIGNED:.2f} GB/s aligned on a "
    f"PCIe root, {_UNALIGNED:.2f} GB/s otherwise; arXiv 2506.23628)."
)


def _fmt(value: float, unit: str) -> str:
    if math.isnan(value):
        return "-"
    if unit == "share":
        return f"{value:.1%}"
    if unit in ("ms", "count"):
        return f"{value:,.0f}"
    return f"{value:,.2f}"


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
    return (
        r.comparison,
        f"{r.metric} [{r.unit}]",
        f"{r.a_name}: {_cell(r.a.values, r.a.median, r.unit)}",
        f"{r.b_name}: {_cell(r.b.values, r.b.median, r.unit)}",
        _ratio(r),
        _interval(r),
    )


def console_table(rows: list[Row], console: Console) -> None:
    table = Table(
        title="dra-testbed demo: side by side (median, min–max over repeats; bootstrap "
        "95 % interval of each ratio)"
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


def console_targets(targets: list[Target], console: Console) -> None:
    table = Table(title="targets: the project's goals against this run")
    for col in ("goal", "measured", "verdict"):
        table.add_column(col)
    for t in targets:
        style = (
            "green"
            if t.met
            else "yellow"
            if t.verdict.startswith(("not ", "inconclusive"))
            else "red"
        )
        table.add_row(t.goal, t.measured, f"[{style}]{t.verdict}")
    console.print(table)


def _interval_json(interval: intervals.Interval | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    return {"low": interval.low, "high": interval.high, "runs": interval.runs}


def to_json(
    rows: list[Row], meta: dict[str, Any], targets: list[Target], guide: list[GuideRow]
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "DemoResult",
        **meta,
        "model_note": MODEL_NOTE,
        "targets": [
            {"goal": t.goal, "measured": t.measured, "verdict": t.verdict, "met": t.met}
            for t in targets
        ],
        "comparisons": [
            {
                "comparison": r.comparison,
                "metric": r.metric,
                "unit": r.unit,
                "a": {"variant": r.a_name, "values": r.a.values, "median": _num(r.a.median)},
                "b": {"variant": r.b_name, "values": r.b.values, "median": _num(r.b.median)},
                "ratio": r.ratio,
                "ratio_interval_95": _interval_json(r.interval),
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
    return None if math.isnan(v) else v


def write(
    out_dir: Path,
    rows: list[Row],
    meta: dict[str, Any],
    arm_dirs: list[str],
    targets: list[Target],
    guide: list[GuideRow],
) -> Path:
    doc = to_json(rows, meta, targets, guide)
    (out_dir / "demo.json").write_text(json.dumps(doc, indent=2) + "\n")
    body = [
        "<!doctype html><html><head><meta charset='utf-8'><title>dra-testbed demo</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,td:nth-child(2){text-align:left}</style></head><body>",
        "<h1>dra-testbed demo</h1>",
        f"<p>{html.escape(json.dumps(meta))}</p>",
        "<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS) + "</tr>",
    ]
    for r in rows:
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>")
    body.append("</table>")
    body.append(f"<p><em>{html.escape(MODEL_NOTE)}</em></p>")
    body.append("<h2>Targets</h2><table><tr><th>goal</th><th>measured</th><th>verdict</th></tr>")
    for t in targets:
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in (t.goal, t.measured, t.verdict))
        body.append(f"<tr>{cells}</tr>")
    body.append(
        "</table><h2>The DRA guide's matrix vs measured</h2><table><tr><th>aspect</th>"
        "<th>guide's target</th><th>guide's example</th><th>ours</th><th>verdict</th></tr>"
    )
    for g in guide:
        cells = "".join(
            f"<td>{html.escape(c)}</td>"
            for c in (g.aspect, g.target, g.guide, g.measured, g.verdict)
        )
        body.append(f"<tr>{cells}</tr>")
    invalid = meta.get("invalid_arms") or {}
    if invalid:
        body.append("</table><h2>Invalid arms (left out of every figure)</h2><ul>")
        body += [f"<li>{html.escape(n)}: {html.escape(why)}</li>" for n, why in invalid.items()]
        body.append("</ul><table>")
    body.append("</table><h2>Each arm's report</h2><ul>")
    for d in arm_dirs:
        body.append(f"<li><a href='{html.escape(d)}/report.html'>{html.escape(d)}</a></li>")
    body.append("</ul></body></html>")
    index = out_dir / "index.html"
    index.write_text("\n".join(body) + "\n")
    return index
