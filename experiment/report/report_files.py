"""The two files every experiment report writes into its output directory: its JSON document
and `index.html` (the report's own sections, per comparison its arms' charts side by side,
the invalid arms and a link to each arm's report)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiment.measure.arms import Arm
from experiment.oracle import optimum_report
from experiment.report import arm_charts
from testbed import charts, files


def write(
    out_dir: Path,
    json_name: str,
    doc: Mapping[str, Any],
    *,
    title: str,
    intro: str,
    arms: Sequence[Arm],
    invalid: Mapping[str, str],
    lead: Sequence[charts.Section],
    after_comparisons: Sequence[charts.Section] = (),
    last: Sequence[charts.Section] = (),
    min_group: int = 1,
    keep_json: bool = False,
) -> Path:
    """Write `doc` as `json_name` (unless `keep_json`: a page rebuilt from a kept document
    leaves it as it is) and the page: `lead`, the comparisons of at least `min_group` arms,
    `after_comparisons`, the arms' sections, `last`. Returns the page."""
    if not keep_json:
        # Valid JSON only: a missing figure is null, never NaN (json.dumps refuses NaN here).
        text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
        files.write_atomic(out_dir / json_name, text)
    sections = [*lead, *optimum_report.html_sections(doc)]
    for key, group in arm_charts.first_repeat_groups(arms, min_group).items():
        heading = f"{key}: {' vs '.join(arm.variant for arm in group)}"
        sections.append(charts.Section(heading, arm_charts.comparison_charts(out_dir, group)))
    sections += after_comparisons
    sections += arm_charts.arm_sections(arms, invalid, out_dir)
    sections += last
    index = out_dir / "index.html"
    src = charts.shared_plotly(out_dir, out_dir)
    index.write_text(charts.page(title, sections, intro=intro, plotly_src=src))
    return index
