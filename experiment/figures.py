"""What an arm measured, read from its loadgen result (pure): the metric catalogue every
report draws on, and `Figure`, one metric of one arm over its repeats.

Reads loadgen's versioned result JSON as data (schema_version 1), so the engine never imports
the load generator. A metric is a name, a unit and a getter; its measure says which arms
have it (throughput arms at saturation, or their unsaturated latency arms).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from experiment import bandwidth_model, intervals

Doc = dict[str, Any]
SCHEMA_VERSION = 1
Getter = Callable[[Doc], float | None]
Metric = tuple[str, str, Getter]
"""(name, unit, getter)."""


@dataclass(frozen=True)
class Figure:
    """One metric of one arm over its repeats."""

    values: list[float]

    @property
    def median(self) -> float:
        return intervals.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return intervals.min_max(self.values)


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


def _placed(doc: Doc, name: str) -> float | None:
    """Share of a probe phase's pods the scheduler placed."""
    for phase in doc.get("phases") or []:
        if phase.get("name") == name:
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


def _fleet_figure(key: str) -> Callable[[Doc], float | None]:
    def get(doc: Doc) -> float | None:
        value = (doc.get("fleet") or {}).get(key)
        return float(value) if value is not None else None

    return get


def _pods_placed(doc: Doc) -> float | None:
    return float((doc.get("counts") or {}).get("pods_scheduled", 0))


def _placed_share(doc: Doc) -> float | None:
    counts = doc.get("counts") or {}
    expected = counts.get("expected_pods") or 0
    return counts.get("pods_scheduled", 0) / expected if expected else None


def _bandwidth(doc: Doc) -> float | None:
    claims = doc.get("claims") or {}
    pairs = claims.get("gpu_nic_pairs") or 0
    if not pairs:
        return None
    return bandwidth_model.payoff(claims.get("pcie_aligned_pairs", 0), pairs).mean_gbps


UNSATURATED = ", unsaturated"

# Every figure of a saturating (throughput) arm, by name. Some read the demo's probe phases
# (`whole`, `aligned8`, `aligned4`, `every-gpu`): a file whose scenario names its phases so
# has them too.
THROUGHPUT_METRICS: list[Metric] = [
    ("scheduling throughput", "pods/s", _throughput),
    ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
    ("pod startup p90", "ms", lambda d: _latency(d, "pod_startup", "Perc90")),
    ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
    ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
    ("nodes DRA-filtered per pod", "nodes", lambda d: _per_pod(d, "dra_filter_calls")),
    ("extender CPU per pod", "ms", lambda d: _per_pod(d, "cpu_seconds", 1000, "extender")),
    ("GPU-NIC pairs on one PCIe root", "share", _aligned_share),
    ("GPU-NIC pairs on one NUMA node", "share", _numa_share),
    ("blocks spanned per gang", "blocks", lambda d: _mean_gang(d, "blocks")),
    ("racks spanned per gang", "racks", lambda d: _mean_gang(d, "racks")),
    ("modelled bus bandwidth per GPU (all_gather)", "GB/s", _bandwidth),
    ("8-GPU pods placed after a mixed fill", "share", lambda d: _placed(d, "whole")),
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
    ("aligned 8 GPU + 8 NIC pods placed", "share", lambda d: _placed(d, "aligned8")),
    ("aligned 4 GPU + 4 NIC pods placed", "share", lambda d: _placed(d, "aligned4")),
    ("scheduler CPU", "s", lambda d: _component(d, "cpu_seconds")),
    ("scheduler attempts", "count", lambda d: _component(d, "schedule_attempts")),
    ("API server requests", "count", lambda d: _component(d, "api_requests", "apiserver")),
    ("API server + scheduler memory growth per 1,000 pods", "MiB", _memory_per_1000_pods),
    ("pods placed at saturation", "pods", _pods_placed),
    ("physical GPUs busy at peak", "GPUs", _fleet_figure("peak_gpus_busy")),
    ("pods per busy GPU", "pods", _fleet_figure("pods_per_busy_gpu")),
    (
        "GPU memory used (footprints / busy GPUs' memory)",
        "share",
        _fleet_figure("gpu_memory_used_share"),
    ),
    (
        "GPU memory requested / taken by the allocations",
        "share",
        _fleet_figure("gpu_memory_requested_share_of_taken"),
    ),
    ("pods placed", "share", _placed_share),
    (
        "API server requests per pod",
        "requests",
        lambda d: _per_pod(d, "api_requests", component="apiserver"),
    ),
    ("pods placed (one per GPU)", "share", lambda d: _placed(d, "every-gpu")),
]

# Latency arms (Poisson arrivals below the sustained rate): pod startup as service time.
LATENCY_METRICS: list[Metric] = [
    (f"pod startup p50{UNSATURATED}", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
    (f"pod startup p90{UNSATURATED}", "ms", lambda d: _latency(d, "pod_startup", "Perc90")),
    (f"pod startup p99{UNSATURATED}", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
    (
        f"create to schedule p99{UNSATURATED}",
        "ms",
        lambda d: _latency(d, "create_to_schedule", "Perc99"),
    ),
]

METRICS: dict[str, tuple[str, Getter, str]] = {
    **{name: (unit, get, "throughput") for name, unit, get in THROUGHPUT_METRICS},
    **{name: (unit, get, "latency") for name, unit, get in LATENCY_METRICS},
}
"""Every metric by name: (unit, getter, measure)."""


def metric(name: str) -> Metric:
    """The catalogue's metric `name` as (name, unit, getter); KeyError if unknown."""
    unit, get, _ = METRICS[name]
    return (name, unit, get)
