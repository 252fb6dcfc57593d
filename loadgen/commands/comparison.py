"""`loadgen compare`: two runs' result documents (or two sets of repeats) side by side,
each change judged past both runs' noise (`loadgen.compare`)."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from loadgen import compare
from loadgen.commands.common import EXIT_OK, EXIT_RUNTIME, UsageError
from loadgen.report import document
from loadgen.report import html as html_report
from testbed import cliconv, units, validation

EXIT_INCOMPARABLE = 3
"""`loadgen compare` of runs under different loads: nothing is judged."""


def compare_results(opts: dict[str, Any], out: Console) -> int:
    html: Path | None = opts.get("html")
    sides = [_results(opts["previous"]), _results(opts["current"])]
    if html is not None and html.is_dir():
        raise UsageError(f"--html {html}: is a directory (give a file name)")
    threshold = opts.get("threshold", compare.DEFAULT_FLOOR_PERCENT)
    if differences := compare.load_differences(sides[0], sides[1]):
        print(
            "loadgen: error: the runs were not under the same load, so their figures measure "
            f"the load, not a change: {'; '.join(differences)}",
            file=sys.stderr,
        )
        return EXIT_INCOMPARABLE
    found = compare.changes(sides[0], sides[1], threshold)
    docs = [side[0] for side in sides]  # the charts show each side's first run
    names = [
        side[0].run_id if len(side) == 1 else f"{side[0].run_id} and {len(side) - 1} more"
        for side in sides
    ]
    rows = [
        (
            compare.name_of(c.metric),
            compare.human(c.metric, c.previous),
            compare.human(c.metric, c.current),
            units.change(c.change_percent),
            c.judgement,
        )
        for c in found
    ]
    fmt = opts.get("output", "table")

    def table() -> None:
        t = Table(title=f"{names[0]} -> {names[1]}")
        for col, justify in (
            ("metric", "left"),
            ("previous", "right"),
            ("current", "right"),
            ("change", "right"),
            ("counts past", "right"),
            ("", "left"),
        ):
            t.add_column(col, justify=justify)  # type: ignore[arg-type]
        colours = {"better": "green", "worse": "red"}
        for c, (metric, a, b, change, judgement) in zip(found, rows, strict=True):
            colour = colours.get(judgement)
            t.add_row(
                metric,
                a,
                b,
                f"[{colour}]{change}[/]" if colour else change,
                f"±{c.threshold_percent:.1f} %"
                if math.isfinite(c.threshold_percent)
                else "too few samples",
                f"[{colour}]{judgement}[/]" if colour else judgement,
            )
        out.print(t)
        out.print(
            "counts past: the noise of the figure (95 %; the repeats' spread, else each run's "
            "own sampling noise), at least "
            f"{threshold:g} %; within it, same",
            style="dim",
        )

    doc = {
        "previous": [d.run_id for d in sides[0]],
        "current": [d.run_id for d in sides[1]],
        "rows": [  # JSON has no infinity: noise that cannot be bounded is null
            {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in row.items()}
            for row in (dataclasses.asdict(c) for c in found)
        ],
        "regressions": [c.metric for c in compare.regressions(found)],
    }
    cliconv.emit(doc, fmt, table)
    if html is not None:
        try:
            html.write_text(html_report.render_comparison(docs[0], docs[1], rows))
        except OSError as e:
            print(f"loadgen: error: cannot write {html}: {e.strerror or e}", file=sys.stderr)
            return EXIT_RUNTIME
        print(f"loadgen: charts: {html}", file=sys.stderr)
    worse = compare.regressions(found)
    if worse and opts.get("fail_on_regression"):
        listed = ", ".join(compare.name_of(c.metric) for c in worse)
        print(
            f"loadgen: error: {len(worse)} figures got worse past their noise: {listed}",
            file=sys.stderr,
        )
        return EXIT_RUNTIME
    return EXIT_OK


def _results(paths: str) -> list[document.ResultDoc]:
    """The result documents of one side: a path, or paths separated by commas."""
    docs = []
    for raw in paths.split(","):
        if not raw.strip():
            raise UsageError(f"{paths!r}: an empty path between commas (give a,b,c)")
        path = Path(raw.strip())
        try:
            docs.append(document.load(path))
        except IsADirectoryError:
            raise UsageError(f"{path} is a directory (give its result.json)") from None
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{path} is not a loadgen result: not UTF-8 text") from None
        except (ValidationError, ValueError) as e:
            raise UsageError(f"{path} is not a loadgen result: {_why_not_result(e)}") from None
    return docs


def _why_not_result(e: Exception) -> str:
    """Why a file is not a result document, in one line: JSON syntax with its line and
    column, or the first field that is wrong."""
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        if first["type"] == "json_invalid":
            return f"not JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
        return validation.one_line(e)
    return str(e).splitlines()[0]
