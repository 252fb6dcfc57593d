"""Turn the arms' loadgen result files into side-by-side comparisons (pure).

Reads loadgen's versioned result JSON as data (schema_version 1), so the demo never imports
the load generator. Figures of repeated arms are reported as min / median / max.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from experiment import bandwidth_model
from experiment.plan import Arm

Doc = dict[str, Any]
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Figure:
    """One metric of one arm over its repeats."""

    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values)) if self.values else (float("nan"),) * 2


@dataclass(frozen=True)
class Row:
    comparison: str
    metric: str
    unit: str
    a_name: str
    a: Figure
    b_name: str
    b: Figure

    @property
    def ratio(self) -> float | None:
        """a / b of the medians; None when b is zero or missing."""
        b = self.b.median
        return self.a.median / b if b and b == b else None


def _latency(doc: Doc, phase: str, stat: str) -> float | None:
    summary = (doc.get("latency_ms") or {}).get(phase)
    return float(summary[stat]) if summary and summary.get("count") else None


def _throughput(doc: Doc) -> float | None:
    return float(doc["throughput"]["Average"]) if doc.get("throughput") else None


def _aligned_share(doc: Doc) -> float | None:
    claims = doc.get("claims") or {}
    pairs = claims.get("gpu_nic_pairs") or 0
    return claims.get("pcie_aligned_pairs", 0) / pairs if pairs else None


def _numa_share(doc: Doc) -> float | None:
    claims = doc.get("claims") or {}
    pairs = claims.get("gpu_nic_pairs") or 0
    return claims.get("numa_aligned_pairs", 0) / pairs if pairs else None


def _mean_gang(doc: Doc, level: str) -> float | None:
    gangs = doc.get("gangs") or []
    return statistics.fmean(g[level] for g in gangs) if gangs else None


def _placeable_whole(doc: Doc) -> float | None:
    for phase in doc.get("phases") or []:
        if phase.get("name") == "whole":
            counts = phase["counts"]
            expected = counts.get("expected_pods") or 0
            return counts.get("pods_scheduled", 0) / expected if expected else None
    return None


def _component(doc: Doc, key: str, component: str = "scheduler") -> float | None:
    summary = ((doc.get("metrics") or {}).get(component) or {}).get("summary") or {}
    value = summary.get(key)
    return float(value) if value is not None else None


def _memory_per_1000_pods(doc: Doc) -> float | None:
    """MiB the API server and the scheduler grew by over the arm, per 1,000 pods."""
    pods = int(doc["counts"]["expected_pods"])
    growth = [_component(doc, "rss_growth_bytes", c) for c in ("apiserver", "scheduler")]
    if not pods or None in growth:
        return None
    return sum(g for g in growth if g is not None) / 2**20 / pods * 1000


def _per_pod(doc: Doc, key: str, scale: float = 1.0, component: str = "scheduler") -> float | None:
    """A component's summary figure divided by the arm's pods."""
    pods = int((doc.get("counts") or {}).get("expected_pods") or 0)
    value = _component(doc, key, component)
    return value / pods * scale if pods and value is not None else None


def _scheduler_cpu_per_pod(doc: Doc) -> float | None:
    return _per_pod(doc, "cpu_seconds", 1000)


def _bandwidth(doc: Doc) -> float | None:
    claims = doc.get("claims") or {}
    pairs = claims.get("gpu_nic_pairs") or 0
    if not pairs:
        return None
    return bandwidth_model.payoff(claims.get("pcie_aligned_pairs", 0), pairs).mean_gbps


Metric = tuple[str, str, Callable[[Doc], float | None]]

METRICS: dict[str, list[Metric]] = {
    "extender": [
        ("scheduling throughput", "pods/s", _throughput),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
        ("pod startup p90", "ms", lambda d: _latency(d, "pod_startup", "Perc90")),
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        # Packing fills nodes, and kube-scheduler still runs DRA's Filter on full nodes before
        # asking the extender: more nodes checked per pod is the policy's cost in the scheduler.
        ("nodes DRA-filtered per pod", "nodes", lambda d: _per_pod(d, "dra_filter_calls")),
        # Off, the extender still runs and watches the same pods and claims: the difference
        # is what answering the scheduler costs.
        (
            "extender CPU per pod",
            "ms",
            lambda d: _per_pod(d, "cpu_seconds", 1000, "extender"),
        ),
    ],
    "placement": [
        ("GPU-NIC pairs on one PCIe root", "share", _aligned_share),
        ("GPU-NIC pairs on one NUMA node", "share", _numa_share),
        ("blocks spanned per gang", "blocks", lambda d: _mean_gang(d, "blocks")),
        ("racks spanned per gang", "racks", lambda d: _mean_gang(d, "racks")),
        ("modelled bus bandwidth per GPU (all_gather)", "GB/s", _bandwidth),
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
    ],
    "fragmentation": [
        ("8-GPU pods placed after a mixed fill", "share", _placeable_whole),
        (
            "fleet GPU allocation at saturation",
            "share",
            lambda d: float((d.get("fleet") or {}).get("peak_allocation_ratio", 0.0)),
        ),
        (
            "GPUs stranded on partly used nodes at peak",
            "GPUs",
            lambda d: float((d.get("fleet") or {}).get("gpus_stranded_at_peak", 0)),
        ),
    ],
    "dra": [
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
        ("scheduling throughput", "pods/s", _throughput),
        ("scheduler CPU", "s", lambda d: _component(d, "cpu_seconds")),
        ("scheduler attempts", "count", lambda d: _component(d, "schedule_attempts")),
        ("API server requests", "count", lambda d: _component(d, "api_requests", "apiserver")),
        ("API server + scheduler memory growth per 1,000 pods", "MiB", _memory_per_1000_pods),
    ],
    "scale": [
        ("scheduling throughput", "pods/s", _throughput),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        ("API server + scheduler memory growth per 1,000 pods", "MiB", _memory_per_1000_pods),
    ],
}


def rows(results: list[tuple[Arm, Doc]]) -> list[Row]:
    """One row per comparison metric: arm A (first variant) vs arm B, medians over repeats."""
    by_comparison: dict[str, dict[str, list[Doc]]] = {}
    order: dict[str, list[str]] = {}
    for arm, doc in results:
        variants = by_comparison.setdefault(arm.comparison, {})
        variants.setdefault(arm.variant, []).append(doc)
        names = order.setdefault(arm.comparison, [])
        if arm.variant not in names:
            names.append(arm.variant)
    out: list[Row] = []
    for comparison, variants in by_comparison.items():
        names = sorted(order[comparison], key=_canonical_first)
        if len(names) != 2:
            continue
        a, b = names
        for metric, unit, get in METRICS.get(comparison, []):
            fa = Figure([v for d in variants[a] if (v := get(d)) is not None])
            fb = Figure([v for d in variants[b] if (v := get(d)) is not None])
            if fa.values or fb.values:
                out.append(Row(comparison, metric, unit, a, fa, b, fb))
    return out


@dataclass(frozen=True)
class Target:
    """One of the project's goals for the demo against this run's medians."""

    goal: str
    measured: str
    verdict: str
    """"met", "missed by ...", or "not measured: ..." when its comparison did not run."""

    @property
    def met(self) -> bool:
        return self.verdict == "met"


def _row(rows: list[Row], comparison: str, metric: str) -> Row | None:
    return next((r for r in rows if (r.comparison, r.metric) == (comparison, metric)), None)


def targets(rows: list[Row]) -> list[Target]:
    """The goals the demo's comparisons can judge, each met or missed by how much."""
    out = []
    thr = _row(rows, "extender", "scheduling throughput")
    goal = "extender overhead on scheduling throughput <= 10 %"
    if thr is None or thr.ratio is None:
        out.append(Target(goal, "-", "not measured: run --comparisons extender"))
    else:
        overhead = 1 - thr.ratio
        miss = overhead - 0.10
        out.append(
            Target(
                goal,
                f"{overhead:.1%}",
                "met" if miss <= 0 else f"missed by {miss * 100:.1f} points",
            )
        )
    aligned = _row(rows, "placement", "GPU-NIC pairs on one PCIe root")
    goal = "aligned claims placed on one PCIe root: 100 %"
    if aligned is None or not aligned.a.values:
        out.append(Target(goal, "-", "not measured: run --comparisons placement"))
    else:
        share = aligned.a.median
        out.append(
            Target(
                goal,
                f"{share:.1%}",
                "met" if share >= 1.0 else f"missed by {(1 - share) * 100:.1f} points",
            )
        )
    for comparison, metric, goal, higher in (
        ("fragmentation", "8-GPU pods placed after a mixed fill", "8-GPU placeability gain", True),
        ("placement", "blocks spanned per gang", "gang locality gain (fewer blocks)", False),
    ):
        row = _row(rows, comparison, metric)
        if row is None or row.ratio is None:
            out.append(Target(goal, "-", f"not measured: run --comparisons {comparison}"))
            continue
        gain = row.ratio > 1 if higher else row.ratio < 1
        out.append(
            Target(
                goal,
                f"{row.a_name} {row.a.median:.3g} vs {row.b_name} {row.b.median:.3g}",
                "met" if gain else "missed: no gain over the default scheduler",
            )
        )
    out.append(
        Target(
            "pod startup p99 <= 5 s, CL2 DRA scenario at 1,000 nodes",
            "-",
            "not measured: the demo's arms queue by design; bench/loadgen_cl2_dra.py runs it",
        )
    )
    return out


def _canonical_first(variant: str) -> int:
    """A is the arm under test: extender on, DRA claims, the larger fleet."""
    return 0 if variant in ("on", "claims", "large") else 1


def accounted(doc: Doc, *, probe_phase: str | None = None) -> tuple[bool, str]:
    """Every pod the arm asked for was seen, and each either ran or is explained.

    `probe_phase` may leave pods the scheduler found unschedulable, or time out, by design
    (the fragmentation probe asks for more 8-GPU pods than a fragmented fleet can take; how
    many fit is the measurement).
    """
    counts = doc["counts"]
    expected = counts["expected_pods"]
    probe_timeout = any(
        p.get("name") == probe_phase and p.get("timed_out") for p in doc.get("phases") or []
    )
    if doc.get("error") and not probe_timeout:
        return False, f"error: {doc['error']}"
    if counts["pods_seen"] != expected:
        return False, f"saw {counts['pods_seen']} of {expected} pods"
    timed_out = any(p.get("timed_out") for p in doc.get("phases") or [])
    ran = counts["pods_running"] + counts["pods_succeeded"]
    if probe_phase is not None:
        # The probe ends once each pod is placed or refused: a placed one may not have
        # reached Running yet (every other phase waited for Running, so for them the two
        # counts agree).
        ran = counts["pods_scheduled"] + counts.get("pods_unschedulable", 0)
    if ran != expected and not timed_out:
        return False, f"{ran} of {expected} pods ran"
    return True, "ok"
