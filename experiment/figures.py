"""What an arm measured, read from its loadgen result (pure): the metric catalogue every
report draws on, and `Figure`, one metric of one arm over its repeats.

Reads loadgen's versioned result JSON as data (schema_version 1), so the engine never imports
the load generator. A metric is a name, a unit and a getter; its measure says which arms
have it (throughput arms at saturation, or their unsaturated latency arms).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
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
    repeats: list[int] = field(default_factory=list)
    """The repeat each value came from (pairs A's and B's values); empty: by position."""

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
    """scheduler_perf's average; None (no data) when no rate was sampled: loadgen then writes
    zeros where scheduler_perf emits no data item."""
    t = doc.get("throughput") or {}
    return float(t["Average"]) if any(t.get(k) for k in ("Average", "Perc50", "Perc99")) else None


def _share(doc: Doc, section: str, part: str, whole: str) -> float | None:
    """`part` over `whole` of one section of the result; None when `whole` is zero."""
    values = doc.get(section) or {}
    total = values.get(whole) or 0
    return values.get(part, 0) / total if total else None


def _mean_gang(doc: Doc, level: str) -> float | None:
    gangs = doc.get("gangs") or []
    return statistics.fmean(g[level] for g in gangs) if gangs else None


def _gang_summary(doc: Doc, key: str) -> float | None:
    """A figure of the run's gangs at its end (loadgen's `gang_summary`)."""
    summary = doc.get("gang_summary")
    if not summary:
        return None
    if key == "complete_share":
        return summary["complete"] / summary["gangs"] if summary["gangs"] else None
    if key.startswith("Perc"):
        times = summary["time_to_running_ms"]
        return float(times[key]) if times.get("count") else None
    return float(summary[key])


@dataclass(frozen=True)
class ProbeOutcome:
    """What a probe phase saw of its pods: placed, refused by the scheduler (found
    unschedulable), or no verdict from the scheduler within the phase's time limit."""

    expected: int
    placed: int
    refused: int

    @property
    def no_verdict(self) -> int:
        return max(0, self.expected - self.placed - self.refused)

    @property
    def settled(self) -> float:
        """Share of the probe's pods with a verdict (placed or refused)."""
        return (self.placed + self.refused) / self.expected if self.expected else 0.0


def probe_outcome(doc: Doc, name: str) -> ProbeOutcome | None:
    """The probe phase `name`'s outcome in an arm's result; None without that phase."""
    for phase in doc.get("phases") or []:
        if phase.get("name") == name:
            counts = phase["counts"]
            return ProbeOutcome(
                int(counts.get("expected_pods") or 0),
                int(counts.get("pods_scheduled") or 0),
                int(counts.get("pods_unschedulable") or 0),
            )
    return None


def _placed(doc: Doc, name: str) -> float | None:
    """Share of a probe phase's pods the scheduler placed."""
    outcome = probe_outcome(doc, name)
    return outcome.placed / outcome.expected if outcome and outcome.expected else None


SERIES_CAP = 300
"""loadgen keeps at most this many changed series per scraped component (`loadgen.series
.deltas`) and drops the rest: a component at the cap may lack the very series a figure
reads (its CPU and memory then read 0), so its figures are left out, not taken as 0."""


def capped(doc: Doc) -> list[str]:
    """The components whose scrape hit loadgen's series cap in this arm."""
    metrics = doc.get("metrics") or {}
    return sorted(
        name
        for name, scraped in metrics.items()
        if isinstance(scraped, dict) and len(scraped.get("deltas") or {}) >= SERIES_CAP
    )


def _component(doc: Doc, key: str, component: str = "scheduler") -> float | None:
    """A component's summary figure; None when it was not scraped or its scrape hit the
    series cap (the figure may be missing from it)."""
    scraped = (doc.get("metrics") or {}).get(component) or {}
    if len(scraped.get("deltas") or {}) >= SERIES_CAP:
        return None
    value = (scraped.get("summary") or {}).get(key)
    return float(value) if value is not None else None


def scraped_cpu_seconds(doc: Doc, component: str) -> float | None:
    """A scraped component's CPU seconds over the arm; None when not scraped or capped."""
    return _component(doc, "cpu_seconds", component)


def _memory_per_1000_pods(doc: Doc) -> float | None:
    """MiB the API server and the scheduler grew by over the arm, per 1,000 pods. Resident
    memory moves with GC timing and can shrink over an arm: a report marks a row with a
    negative value as noise (`NOISY_IF_NEGATIVE`), not as a figure."""
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


def _per_second(doc: Doc, key: str, component: str) -> float | None:
    """A component's summary figure over the arm's duration (its scrapes bracket the run).
    No idle baseline is subtracted: loadgen measures none (both arms of a comparison carry
    the same idle load, so it shifts rates, not their order)."""
    seconds = float(doc.get("duration_seconds") or 0.0)
    value = _component(doc, key, component)
    return value / seconds if seconds > 0 and value is not None else None


def _scheduler_cpu_per_pod(doc: Doc) -> float | None:
    return _per_pod(doc, "cpu_seconds", 1000)


def _scheduling_cost_per_pod(doc: Doc) -> float | None:
    """What scheduling a pod cost in CPU, the scheduler's and the extender's together (the
    extender runs in both arms of its comparison: off, it only watches)."""
    scheduler = _per_pod(doc, "cpu_seconds", 1000)
    extender = _per_pod(doc, "cpu_seconds", 1000, "extender")
    return scheduler + extender if scheduler is not None and extender is not None else None


PATH_CPU = "whole-path CPU per pod"


def _path_cpu_per_pod(doc: Doc) -> float | None:
    """The CPU of every process on the arm's path (`process_cpu`), in ms per pod; None where
    it was not measured."""
    kept = doc.get("process_cpu") or {}
    pods = kept.get("pods")
    return sum(kept["cpu_seconds"].values()) / pods * 1000 if pods else None


ALGORITHM_SUM = "scheduler_scheduling_algorithm_duration_seconds_sum"


def _algorithm_per_pod(doc: Doc) -> float | None:
    """kube-scheduler's own scheduling_algorithm_duration_seconds (filter and score, extender
    calls included) summed over the arm, in ms per pod scheduled; None where the histogram
    was not scraped (results before it was)."""
    scraped = (doc.get("metrics") or {}).get("scheduler") or {}
    deltas = scraped.get("deltas") or {}
    pods = int((doc.get("counts") or {}).get("pods_scheduled") or 0)
    if len(deltas) >= SERIES_CAP or not pods:
        return None
    found = [v for k, v in deltas.items() if k.startswith(ALGORITHM_SUM)]
    return sum(found) * 1000 / pods if found else None


FILTER_SUM = "scheduler_framework_extension_point_duration_seconds_sum"


def _filter_per_pod(doc: Doc) -> float | None:
    """Wall time of kube-scheduler's Filter extension point (all plugins) summed over the
    arm, in ms per pod scheduled; None where it was not scraped."""
    scraped = (doc.get("metrics") or {}).get("scheduler") or {}
    deltas = scraped.get("deltas") or {}
    pods = int((doc.get("counts") or {}).get("pods_scheduled") or 0)
    if len(deltas) >= SERIES_CAP or not pods:
        return None
    found = [
        v for k, v in deltas.items() if k.startswith(FILTER_SUM) and 'extension_point="Filter"' in k
    ]
    return sum(found) * 1000 / pods if found else None


REQUEUE_CATEGORY = "queue and requeue"
"""loadgen's CPU category of the scheduling queue's work (`loadgen.cpu.QUEUE`)."""
REQUEUE_SIGNATURE = "isPodWorthRequeuing"
"""loadgen's signature of kubernetes/kubernetes#138095's function (`loadgen.cpu.SIGNATURES`)."""


def _scheduler_profile(doc: Doc) -> dict[str, Any] | None:
    """kube-scheduler's CPU breakdown over the arm; None when it was not profiled."""
    cpu = ((doc.get("explanation") or {}).get("cpu") or {}).get("scheduler") or {}
    return cpu if cpu.get("profiled") and cpu.get("cpu_seconds") else None


def _category_share(doc: Doc, category: str) -> float | None:
    cpu = _scheduler_profile(doc)
    if cpu is None:
        return None
    shares = {c["category"]: float(c["share"]) for c in cpu.get("categories") or []}
    return shares.get(category, 0.0)


def _signature_share(doc: Doc, name: str) -> float | None:
    cpu = _scheduler_profile(doc)
    return None if cpu is None else float((cpu.get("signatures") or {}).get(name, 0.0))


def _phase_latency(doc: Doc, name: str, latency: str, stat: str) -> float | None:
    """A latency of the phase `name` (e.g. ClusterLoader2 DRA's `churn`); None without it."""
    for phase in doc.get("phases") or []:
        if phase.get("name") == name:
            return _latency(phase, latency, stat)
    return None


def _churn(latency: str, stat: str) -> Getter:
    return lambda doc: _phase_latency(doc, "churn", latency, stat)


def _fleet_figure(key: str) -> Callable[[Doc], float | None]:
    def get(doc: Doc) -> float | None:
        value = (doc.get("fleet") or {}).get(key)
        return float(value) if value is not None else None

    return get


def _pods_placed(doc: Doc) -> float | None:
    return float((doc.get("counts") or {}).get("pods_scheduled", 0))


def _bandwidth(doc: Doc) -> float | None:
    claims = doc.get("claims") or {}
    pairs = claims.get("gpu_nic_pairs") or 0
    if not pairs:
        return None
    return bandwidth_model.payoff(claims.get("pcie_aligned_pairs", 0), pairs).mean_gbps


CL2_SOURCE = "clusterloader2"
"""`scenario.source` of a ClusterLoader2 arm's result, and its section of ClusterLoader2's
figures and agreement rows (`experiment.clusterloader2`)."""
CL2_AGREEMENT = "loadgen observe within tolerance of ClusterLoader2"


def _cl2_agreement(doc: Doc) -> float | None:
    """Share of the agreement rows (loadgen observe beside ClusterLoader2's PerfData) within
    tolerance; None for an arm without ClusterLoader2."""
    section = doc.get(CL2_SOURCE) or {}
    rows = section.get("rows") or []
    return sum(bool(r["ok"]) for r in rows) / len(rows) if rows else None


UNSATURATED = ", unsaturated"

# Every figure of a saturating (throughput) arm, by name. The placeability ones read a probe
# phase by its name (PROBE_PHASES: `whole`, `aligned8`, `aligned4`, `every-gpu`): any
# scenario that names its probe phases so has them.
THROUGHPUT_METRICS: list[Metric] = [
    ("scheduling throughput", "pods/s", _throughput),
    ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
    ("pod startup p90", "ms", lambda d: _latency(d, "pod_startup", "Perc90")),
    ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
    ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
    (PATH_CPU, "ms", _path_cpu_per_pod),
    ("nodes DRA-filtered per pod", "nodes", lambda d: _per_pod(d, "dra_filter_calls")),
    ("extender CPU per pod", "ms", lambda d: _per_pod(d, "cpu_seconds", 1000, "extender")),
    ("scheduler + extender CPU per pod", "ms", _scheduling_cost_per_pod),
    ("scheduling algorithm per pod", "ms", _algorithm_per_pod),
    ("Filter time per pod", "ms", _filter_per_pod),
    (
        "GPU-NIC pairs on one PCIe root",
        "share",
        lambda d: _share(d, "claims", "pcie_aligned_pairs", "gpu_nic_pairs"),
    ),
    (
        "GPU-NIC pairs on one NUMA node",
        "share",
        lambda d: _share(d, "claims", "numa_aligned_pairs", "gpu_nic_pairs"),
    ),
    ("blocks spanned per gang", "blocks", lambda d: _mean_gang(d, "blocks")),
    ("racks spanned per gang", "racks", lambda d: _mean_gang(d, "racks")),
    ("gang time to all Running p50", "ms", lambda d: _gang_summary(d, "Perc50")),
    ("gang time to all Running p99", "ms", lambda d: _gang_summary(d, "Perc99")),
    ("partial gangs at the end", "gangs", lambda d: _gang_summary(d, "partial")),
    ("gangs all Running", "share", lambda d: _gang_summary(d, "complete_share")),
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
    # Costs are rates and per-pod figures, never totals of arms of different length.
    ("scheduler CPU per second", "cores", lambda d: _per_second(d, "cpu_seconds", "scheduler")),
    ("scheduler attempts per pod", "attempts", lambda d: _per_pod(d, "schedule_attempts")),
    # Shares of kube-scheduler's profiled CPU (kubernetes/kubernetes#138095's evidence): load
    # changes how long the scheduler takes, not what its CPU is spent on.
    (
        "scheduler CPU in queue and requeue",
        "share",
        lambda d: _category_share(d, REQUEUE_CATEGORY),
    ),
    (
        "scheduler CPU under isPodWorthRequeuing",
        "share",
        lambda d: _signature_share(d, REQUEUE_SIGNATURE),
    ),
    (
        "API server requests per second",
        "requests/s",
        lambda d: _per_second(d, "api_requests", "apiserver"),
    ),
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
    ("pods placed", "share", lambda d: _share(d, "counts", "pods_scheduled", "expected_pods")),
    (
        "API server requests per pod",
        "requests",
        lambda d: _per_pod(d, "api_requests", component="apiserver"),
    ),
    ("pods placed (one per GPU)", "share", lambda d: _placed(d, "every-gpu")),
    # ClusterLoader2's DRA scenario (`cl2-dra`): its churn phase, kubernetes#140877's path.
    *(
        (f"churn {label} {p}", "ms", _churn(key, stat))
        for label, key in (
            ("pod startup", "pod_startup"),
            ("create to schedule", "create_to_schedule"),
        )
        for p, stat in (("p50", "Perc50"), ("p99", "Perc99"))
    ),
    (CL2_AGREEMENT, "share", _cl2_agreement),
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

NOISY_IF_NEGATIVE = {"API server + scheduler memory growth per 1,000 pods"}
"""Figures a negative value shows to be noise (growth shrank with GC timing)."""
COST_UNITS = frozenset({"ms", "pods/s", "cores", "requests/s"})
"""Units of measured CPU, time and throughput figures: never 0 or less (a counter read
across a reset can make one so), and never exact."""
MEASURED = frozenset(
    {
        *NOISY_IF_NEGATIVE,
        "scheduler CPU in queue and requeue",
        "scheduler CPU under isPodWorthRequeuing",
    }
)
"""Measured figures in other units (a share of a CPU profile, memory growth): 0 or less may be
true of them, and the same value in every repeat is not exactness."""


def kind(metric: str, unit: str) -> intervals.Kind:
    """How a figure is judged (`intervals.Kind`): a cost by its unit, the other measured
    figures by name; the rest (pods placed, nodes spanned, their shares) are counts."""
    if unit in COST_UNITS:
        return "cost"
    return "measured" if metric in MEASURED else "count"


PROBE_PHASES = {
    "8-GPU pods placed after a mixed fill": "whole",
    "aligned 8 GPU + 8 NIC pods placed": "aligned8",
    "aligned 4 GPU + 4 NIC pods placed": "aligned4",
    "pods placed (one per GPU)": "every-gpu",
}
"""Placeability figures and the probe phase each reads."""
SETTLED_FOR_VERDICT = 0.95
"""A placeability verdict needs this share of the probe's pods settled in every arm."""

METRICS: dict[str, tuple[str, Getter, str]] = {
    **{name: (unit, get, "throughput") for name, unit, get in THROUGHPUT_METRICS},
    **{name: (unit, get, "latency") for name, unit, get in LATENCY_METRICS},
}
"""Every metric by name: (unit, getter, measure)."""


IN_PROCESS_SOURCE = "scheduler_perf"
"""`scenario.source` of a result scheduler_perf wrote in loadgen's schema (`schedperf.result`)."""
IN_PROCESS_METRICS = frozenset({"scheduling throughput", PATH_CPU})
"""What such a result defines as loadgen's arms do: SchedulingThroughput is scheduler_perf's own
definition, and the CPU of the whole path (there, the benchmark's process tree). The rest
(latencies from a watch, a scheduler's own CPU apart from its API server's, claims, fleet
figures) it does not measure: its result holds zeros there, which are not figures."""


CL2_METRICS = frozenset({CL2_AGREEMENT, *(n for n in METRICS if n.startswith("churn "))})
"""What a ClusterLoader2 arm's result (`experiment.clusterloader2`: loadgen observe on
testing/dra's pods) defines: its churn phase's latencies and the agreement with ClusterLoader2.
Its other figures cover other pods than a loadgen arm's (no scrape, one observer per phase)."""


def in_process(doc: Doc) -> bool:
    return (doc.get("scenario") or {}).get("source") == IN_PROCESS_SOURCE


def clusterloader2(doc: Doc) -> bool:
    return (doc.get("scenario") or {}).get("source") == CL2_SOURCE


def defined(metric: str, doc: Doc) -> bool:
    """Whether `metric` is defined for the arm whose result is `doc` (not: whether it has a
    value)."""
    if in_process(doc):
        return metric in IN_PROCESS_METRICS
    if clusterloader2(doc):
        return metric in CL2_METRICS
    return metric != CL2_AGREEMENT


def metric(name: str) -> Metric:
    """The catalogue's metric `name` as (name, unit, getter); KeyError if unknown."""
    unit, get, _ = METRICS[name]
    return (name, unit, get)
