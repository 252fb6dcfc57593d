"""PFN's release-to-release table (pure): SchedulingThroughput per release, and the change
from each release to the next, as markdown for release notes and the narrative
(docs/results/narrative/scheduler-perf.md)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

from loadgen.report import document
from testbed import units

STATS: Final = ("Average", "Perc50", "Perc90", "Perc99")


def markdown(columns: Sequence[tuple[str, document.ResultDoc | None]]) -> str:
    """`columns`: (release label, its median result or None for no data), oldest first."""
    labels = [label for label, _ in columns]
    steps = [f"{a} → {b}" for a, b in itertools.pairwise(labels)]
    head = ["Metric", *labels, *steps]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for stat in STATS:
        values = [getattr(d.throughput, stat) if d else None for _, d in columns]
        cells = [f"{v:.1f}" if v is not None else "no data" for v in values]
        for a, b in itertools.pairwise(values):
            cells.append(units.change((b - a) / a * 100) if a and b is not None else "n/a")
        lines.append(f"| SchedulingThroughput {stat} (pods/s) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
