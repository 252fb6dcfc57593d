"""`loadgen compare A.json B.json`: metric, previous, current and % difference, in human
units, with whether each change is for the better; `--html` adds the runs' charts."""

from __future__ import annotations

import re
from collections.abc import Callable

from loadgen import stats
from loadgen.report.document import ResultDoc
from testbed import units

# Metrics where a bigger number is better (for the sign hint only).
_HIGHER_IS_BETTER = ("throughput",)


def rows(prev: ResultDoc, cur: ResultDoc) -> list[tuple[str, float, float, float | None]]:
    """(metric, previous, current, % change or None when previous is 0)."""
    out: list[tuple[str, float, float, float | None]] = []

    def add(name: str, a: float, b: float) -> None:
        if a or b:  # a metric zero in both runs (run_to_watch, by definition) says nothing
            out.append((name, a, b, (b - a) / a * 100.0 if a else None))

    for phase in stats.PHASES:
        pa, pb = prev.latency_ms.get(phase), cur.latency_ms.get(phase)
        if pa is None or pb is None:
            continue
        for stat in ("Perc50", "Perc90", "Perc99"):
            add(f"{phase} {stat} (ms)", getattr(pa, stat), getattr(pb, stat))
    for stat in ("Average", "Perc50", "Perc90", "Perc99"):
        add(
            f"throughput {stat} (pods/s)",
            getattr(prev.throughput, stat),
            getattr(cur.throughput, stat),
        )
    add(
        "claim allocation Perc99 (ms)",
        prev.claims.allocation_ms.Perc99,
        cur.claims.allocation_ms.Perc99,
    )
    add("pods running", prev.counts.pods_running, cur.counts.pods_running)
    add("duration (s)", prev.duration_seconds, cur.duration_seconds)
    if prev.claims.gpu_nic_pairs or cur.claims.gpu_nic_pairs:
        add(
            "GPU-NIC PCIe-aligned share (%)",
            _share(prev.claims.pcie_aligned_pairs, prev.claims.gpu_nic_pairs),
            _share(cur.claims.pcie_aligned_pairs, cur.claims.gpu_nic_pairs),
        )
    return out


def _share(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def higher_is_better(metric: str) -> bool:
    return metric.startswith(_HIGHER_IS_BETTER) or "aligned" in metric


# "name (unit)": the unit decides the formatting.
_UNIT = re.compile(r"^(?P<name>.*) \((?P<unit>[^)]*)\)$")
_FORMAT: dict[str, Callable[[float], str]] = {
    "ms": units.millis,
    "s": units.duration,
    "%": lambda v: f"{v:.1f} %",
    "pods/s": lambda v: f"{v:,.1f} pods/s",
}


def human(metric: str, value: float) -> str:
    """A row's value in the unit its metric name gives: ms and s as durations, % and
    pods/s with one decimal, anything else a count."""
    m = _UNIT.match(metric)
    fmt = _FORMAT.get(m["unit"]) if m else None
    return fmt(value) if fmt else units.count(value)


def judgement(metric: str, pct: float | None) -> str:
    """better, worse, same or n/a (previous was zero) for a row's change."""
    if pct is None:
        return "n/a"
    if pct == 0:
        return "same"
    return "better" if (pct > 0) == higher_is_better(metric) else "worse"


def formatted(prev: ResultDoc, cur: ResultDoc) -> list[tuple[str, str, str, str, str]]:
    """`rows` ready to print: metric (unit dropped: the values carry it), previous,
    current, change and its judgement."""
    out = []
    for metric, a, b, pct in rows(prev, cur):
        m = _UNIT.match(metric)
        name = m["name"] if m else metric
        out.append(
            (name, human(metric, a), human(metric, b), units.change(pct), judgement(metric, pct))
        )
    return out
