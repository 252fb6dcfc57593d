"""Outputs of a run: the versioned JSON document (the source every other output reads),
CL2 PerfData files, the per-pod CSV, the console summary and the self-contained HTML report.
"""

from __future__ import annotations

from pathlib import Path

from loadgen import outcome, slo
from loadgen.report import document, explanation, html, perfdata, pods


def write_all(
    result: outcome.RunResult, out_dir: Path, slos: list[slo.Slo] | None = None
) -> document.ResultDoc:
    """Every file output of `result` into `out_dir`; returns the result document."""
    doc = document.build(result, slos)
    document.write(doc, out_dir)
    explanation.write_profiles(result, out_dir)
    perfdata.write(doc, out_dir)
    html.write(doc, out_dir)
    pods.write(result, out_dir)
    return doc
