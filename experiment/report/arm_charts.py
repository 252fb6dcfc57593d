"""Charts and sections every experiment report shares (its arms' own loadgen results side by
side, the invalid arms, links to each arm's report), over `testbed.charts`."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiment.measure import arm_record
from experiment.measure.arm_record import ResultDoc
from experiment.measure.arms import Arm
from testbed import charts


def _arm_doc(out_dir: Path, name: str) -> ResultDoc | None:
    """An arm's loadgen result, or None where the arm left none (interrupted, refused) or
    none loadgen's schema reads. A run's arms each have a directory; kept results
    (bench/results) are flat `<arm>.json`."""
    for path in (out_dir / name / arm_record.RESULT, out_dir / f"{name}.json"):
        try:
            return arm_record.read_result(path)
        except (OSError, ValueError):
            continue
    return None


def first_repeat_groups(arms: Sequence[Arm], min_size: int = 1) -> dict[str, list[Arm]]:
    """Per comparison (or workload), its first repeat's throughput arms as run, for groups of
    at least `min_size` arms."""
    groups: dict[str, list[Arm]] = {}
    for arm in arms:
        if arm.repeat == 0 and not arm.latency_of:
            groups.setdefault(arm.comparison, []).append(arm)
    return {c: group for c, group in groups.items() if len(group) >= min_size}


def comparison_charts(out_dir: Path, group: list[Arm]) -> list[Any]:
    """The arms side by side: pod startup CDFs, throughput and GPU allocation over time, and
    the fleet occupancy at each arm's allocation peak (fragmentation at a glance)."""
    docs = {arm.variant: _arm_doc(out_dir, arm.name) for arm in group}
    if any(d is None for d in docs.values()):
        return [charts.note("an arm left no result: no charts for this comparison")]
    got = {k: d for k, d in docs.items() if d is not None}
    if any("occupancy_at_peak" not in d.fleet.model_fields_set for d in got.values()):
        # a result kept from before loadgen recorded it (`testbed report`)
        return [
            charts.note("an arm's result has no 'occupancy_at_peak': no charts for this comparison")
        ]
    cdfs, rates, alloc, occupancy = [], [], [], {}
    for name, d in got.items():
        t = d.timeline
        cdfs.append(charts.Series.points(name, d.cdf_ms.get("pod_startup", [])))
        rates.append(charts.named(charts.rate(t.seconds, t.scheduled), name))
        alloc.append(charts.Series(name, t.seconds, t.gpu_allocation_ratio))
        occupancy[name] = dict(d.fleet.occupancy_at_peak)
    return [
        charts.latency_cdfs(*cdfs, title="Pod startup latency (first repeat)"),
        charts.over_time(*rates, title="Scheduling throughput", y_title="pods/s"),
        charts.over_time(
            *alloc, title="Fleet GPU allocation", y_title="share of fleet GPUs", percent=True
        ),
        charts.occupancy_heatmap(occupancy),
    ]


def arm_page(out_dir: Path | None, name: str) -> str:
    """Where an arm's own report is, relative to the index: `<arm>/report.html`, or for kept
    flat results `<arm>.html`."""
    if out_dir is None or (out_dir / name).is_dir() or not (out_dir / f"{name}.json").is_file():
        return f"{name}/report.html"
    return f"{name}.html"


def arm_sections(
    arms: Sequence[Arm], invalid: Mapping[str, str], out_dir: Path | None = None
) -> list[Any]:
    """The invalid arms with their reasons (if any), then a link to each arm's own report."""
    sections = []
    if invalid:
        items = "".join(f"<li>{html.escape(n)}: {html.escape(w)}</li>" for n, w in invalid.items())
        sections.append(
            charts.Section("Invalid arms (left out of every figure)", [f"<ul>{items}</ul>"])
        )
    links = "".join(
        f"<li><a href='{html.escape(arm_page(out_dir, arm.name))}'>{html.escape(arm.name)}</a></li>"
        for arm in arms
    )
    sections.append(charts.Section("Each arm's report", [f"<ul>{links}</ul>"]))
    return sections
