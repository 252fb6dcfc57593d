"""What an arm measured, read from its record (pure): the metric catalogue every report draws
on, and `Figure`, one metric of one arm over its repeats.

Reads an arm's `ArmRecord` (loadgen's versioned result, parsed by its own schema, and the
engine's fields beside it) by attribute: a field loadgen renames fails in mypy or at parse
time, never as a figure silently None. A metric is a name, a unit and a getter; its measure
says which arms have it (throughput arms at saturation, or their unsaturated latency arms).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from experiment.measure import arm_record, bandwidth_model, intervals
from experiment.measure.arm_record import ArmRecord, ComponentMetrics, CpuProfile, Summary

SCHEMA_VERSION = 1
Getter = Callable[[ArmRecord], float | None]
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


def _latency(summaries: Mapping[str, Summary], latency: str, stat: str) -> float | None:
    summary = summaries.get(latency)
    return float(getattr(summary, stat)) if summary is not None and summary.count else None


def _throughput(rec: ArmRecord) -> float | None:
    """scheduler_perf's average; None (no data) when no rate was sampled: loadgen then writes
    zeros where scheduler_perf emits no data item."""
    t = rec.result.throughput
    return float(t.Average) if any((t.Average, t.Perc50, t.Perc99)) else None


def _share(part: float, whole: float) -> float | None:
    """`part` over `whole`; None when `whole` is zero."""
    return part / whole if whole else None


def _mean_gang(rec: ArmRecord, level: str) -> float | None:
    gangs = rec.result.gangs
    return statistics.fmean(getattr(g, level) for g in gangs) if gangs else None


def _gang_summary(rec: ArmRecord, key: str) -> float | None:
    """A figure of the run's gangs at its end (loadgen's `gang_summary`)."""
    summary = rec.result.gang_summary
    if summary is None:
        return None
    if key == "complete_share":
        return summary.complete / summary.gangs if summary.gangs else None
    if key.startswith("Perc"):
        times = summary.time_to_running_ms
        return float(getattr(times, key)) if times.count else None
    return float(getattr(summary, key))


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


def probe_outcome(rec: ArmRecord, name: str) -> ProbeOutcome | None:
    """The probe phase `name`'s outcome in an arm's result; None without that phase."""
    phase = rec.phase(name)
    if phase is None:
        return None
    counts = phase.counts
    return ProbeOutcome(counts.expected_pods, counts.pods_scheduled, counts.pods_unschedulable)


def _placed(rec: ArmRecord, name: str) -> float | None:
    """Share of a probe phase's pods the scheduler placed."""
    outcome = probe_outcome(rec, name)
    return outcome.placed / outcome.expected if outcome and outcome.expected else None


SERIES_CAP = 300
"""loadgen keeps at most this many changed series per scraped component (`loadgen.series
.deltas`) and drops the rest: a component at the cap may lack the very series a figure
reads (its CPU and memory then read 0), so its figures are left out, not taken as 0."""


def capped(rec: ArmRecord) -> list[str]:
    """The components whose scrape hit loadgen's series cap in this arm."""
    return sorted(
        name for name, scraped in rec.result.metrics.items() if len(scraped.deltas) >= SERIES_CAP
    )


def _scraped(rec: ArmRecord, component: str) -> ComponentMetrics | None:
    """A component's scrape; None when it was not scraped or its scrape hit the series cap
    (a figure may be missing from it)."""
    scraped = rec.result.metrics.get(component)
    return scraped if scraped is not None and len(scraped.deltas) < SERIES_CAP else None


def _component(rec: ArmRecord, key: str, component: str = "scheduler") -> float | None:
    """A component's summary figure; None when it was not scraped or its scrape hit the
    series cap (the figure may be missing from it)."""
    scraped = _scraped(rec, component)
    if scraped is None or key not in scraped.summary:
        return None
    return float(scraped.summary[key])


def scraped_cpu_seconds(rec: ArmRecord, component: str) -> float | None:
    """A scraped component's CPU seconds over the arm; None when not scraped or capped."""
    return _component(rec, "cpu_seconds", component)


IDLE_EXTENDER = "extender-idle"
"""loadgen's name for an extender that only watches through the arm, beside the one called."""
EXTENDER_SERVED = "extender CPU per pod served"


def _extender_served_per_pod(rec: ArmRecord) -> float | None:
    """The called extender's CPU per pod less an idle one's in the same arm (the same watches
    of the same pods): what answering the scheduler cost. None without an idle one."""
    called, idle = (scraped_cpu_seconds(rec, c) for c in ("extender", IDLE_EXTENDER))
    pods = rec.result.counts.expected_pods
    if called is None or idle is None or not pods:
        return None
    return (called - idle) / pods * 1000


def _memory_per_1000_pods(rec: ArmRecord) -> float | None:
    """MiB the API server and the scheduler grew by over the arm, per 1,000 pods. Resident
    memory moves with GC timing and can shrink over an arm: a report marks a row with a
    negative value as noise (`NOISY_IF_NEGATIVE`), not as a figure."""
    pods = rec.result.counts.expected_pods
    growth = [_component(rec, "rss_growth_bytes", c) for c in ("apiserver", "scheduler")]
    if not pods or None in growth:
        return None
    return sum(g for g in growth if g is not None) / 2**20 / pods * 1000


def _per_pod(
    rec: ArmRecord, key: str, scale: float = 1.0, component: str = "scheduler"
) -> float | None:
    """A component's summary figure divided by the arm's pods."""
    pods = rec.result.counts.expected_pods
    value = _component(rec, key, component)
    return value / pods * scale if pods and value is not None else None


def _per_second(rec: ArmRecord, key: str, component: str) -> float | None:
    """A component's summary figure over the arm's duration (its scrapes bracket the run).
    No idle baseline is subtracted: loadgen measures none (both arms of a comparison carry
    the same idle load, so it shifts rates, not their order)."""
    seconds = rec.result.duration_seconds
    value = _component(rec, key, component)
    return value / seconds if seconds > 0 and value is not None else None


def _scheduler_cpu_per_pod(rec: ArmRecord) -> float | None:
    return _per_pod(rec, "cpu_seconds", 1000)


def _scheduling_cost_per_pod(rec: ArmRecord) -> float | None:
    """What scheduling a pod cost in CPU, the scheduler's and the extender's together (the
    extender runs in both arms of its comparison: off, it only watches)."""
    scheduler = _per_pod(rec, "cpu_seconds", 1000)
    extender = _per_pod(rec, "cpu_seconds", 1000, "extender")
    return scheduler + extender if scheduler is not None and extender is not None else None


PATH_CPU = "whole-path CPU per pod"


def _path_cpu_per_pod(rec: ArmRecord) -> float | None:
    """The CPU of every process on the arm's path (`process_cpu`), in ms per pod; None where
    it was not measured."""
    kept = rec.process_cpu
    return sum(kept.cpu_seconds.values()) / kept.pods * 1000 if kept and kept.pods else None


ALGORITHM_SUM = "scheduler_scheduling_algorithm_duration_seconds_sum"


def _scheduler_sum_per_pod(rec: ArmRecord, prefix: str, label: str = "") -> float | None:
    """kube-scheduler's histogram sums whose series start with `prefix` (and carry `label`)
    over the arm, in ms per pod scheduled; None where none was scraped."""
    scraped = _scraped(rec, "scheduler")
    pods = rec.result.counts.pods_scheduled
    if scraped is None or not pods:
        return None
    found = [v for k, v in scraped.deltas.items() if k.startswith(prefix) and label in k]
    return sum(found) * 1000 / pods if found else None


def _algorithm_per_pod(rec: ArmRecord) -> float | None:
    """kube-scheduler's own scheduling_algorithm_duration_seconds (filter and score, extender
    calls included) summed over the arm, in ms per pod scheduled; None where the histogram
    was not scraped (results before it was)."""
    return _scheduler_sum_per_pod(rec, ALGORITHM_SUM)


FILTER_SUM = "scheduler_framework_extension_point_duration_seconds_sum"


def _filter_per_pod(rec: ArmRecord) -> float | None:
    """Wall time of kube-scheduler's Filter extension point (all plugins) summed over the
    arm, in ms per pod scheduled; None where it was not scraped."""
    return _scheduler_sum_per_pod(rec, FILTER_SUM, 'extension_point="Filter"')


REQUEUE_CATEGORY = "queue and requeue"
"""loadgen's CPU category of the scheduling queue's work (`loadgen.cpu.QUEUE`)."""
REQUEUE_SIGNATURE = "isPodWorthRequeuing"
"""loadgen's signature of kubernetes/kubernetes#138095's function (`loadgen.cpu.SIGNATURES`)."""


def _scheduler_profile(rec: ArmRecord) -> CpuProfile | None:
    """kube-scheduler's CPU breakdown over the arm; None when it was not profiled."""
    explanation = rec.result.explanation
    if explanation is None or "scheduler" not in explanation.cpu:
        return None
    cpu = explanation.cpu["scheduler"]
    return cpu if cpu.profiled and cpu.cpu_seconds else None


def _category_share(rec: ArmRecord, category: str) -> float | None:
    cpu = _scheduler_profile(rec)
    if cpu is None:
        return None
    shares = {c.category: c.share for c in cpu.categories}
    return shares.get(category, 0.0)


def _signature_share(rec: ArmRecord, name: str) -> float | None:
    cpu = _scheduler_profile(rec)
    if cpu is None:
        return None
    return float(cpu.signatures.get(name, 0.0))


def _phase_latency(rec: ArmRecord, name: str, latency: str, stat: str) -> float | None:
    """A latency of the phase `name` (e.g. ClusterLoader2 DRA's `churn`); None without it."""
    phase = rec.phase(name)
    return _latency(phase.latency_ms, latency, stat) if phase is not None else None


def _churn(latency: str, stat: str) -> Getter:
    return lambda rec: _phase_latency(rec, "churn", latency, stat)


def _run_latency(latency: str, stat: str) -> Getter:
    return lambda rec: _latency(rec.result.latency_ms, latency, stat)


def _fleet_figure(key: str, unrecorded: float | None = None) -> Getter:
    """A figure of loadgen's `fleet` section; `unrecorded` where the result was written
    before loadgen kept it (the field is absent from it, not 0)."""

    def get(rec: ArmRecord) -> float | None:
        fleet = rec.result.fleet
        return float(getattr(fleet, key)) if key in fleet.model_fields_set else unrecorded

    return get


def _pods_placed(rec: ArmRecord) -> float | None:
    return float(rec.result.counts.pods_scheduled)


def _bandwidth(rec: ArmRecord) -> float | None:
    claims = rec.result.claims
    if not claims.gpu_nic_pairs:
        return None
    return bandwidth_model.payoff(claims.pcie_aligned_pairs, claims.gpu_nic_pairs).mean_gbps


CL2_AGREEMENT = "loadgen observe within tolerance of ClusterLoader2"


def _cl2_agreement(rec: ArmRecord) -> float | None:
    """Share of the agreement rows (loadgen observe beside ClusterLoader2's PerfData) within
    tolerance; None for an arm without ClusterLoader2."""
    rows = rec.clusterloader2.rows if rec.clusterloader2 is not None else []
    return sum(r.ok for r in rows) / len(rows) if rows else None


UNSATURATED = ", unsaturated"

# Every figure of a saturating (throughput) arm, by name. The placeability ones read a probe
# phase by its name (PROBE_PHASES: `whole`, `aligned8`, `aligned4`, `every-gpu`): any
# scenario that names its probe phases so has them.
THROUGHPUT_METRICS: list[Metric] = [
    ("scheduling throughput", "pods/s", _throughput),
    ("pod startup p50", "ms", _run_latency("pod_startup", "Perc50")),
    ("pod startup p90", "ms", _run_latency("pod_startup", "Perc90")),
    ("pod startup p99", "ms", _run_latency("pod_startup", "Perc99")),
    ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
    (PATH_CPU, "ms", _path_cpu_per_pod),
    ("nodes DRA-filtered per pod", "nodes", lambda r: _per_pod(r, "dra_filter_calls")),
    ("extender CPU per pod", "ms", lambda r: _per_pod(r, "cpu_seconds", 1000, "extender")),
    (EXTENDER_SERVED, "ms", _extender_served_per_pod),
    ("scheduler + extender CPU per pod", "ms", _scheduling_cost_per_pod),
    ("scheduling algorithm per pod", "ms", _algorithm_per_pod),
    ("Filter time per pod", "ms", _filter_per_pod),
    (
        "GPU-NIC pairs on one PCIe root",
        "share",
        lambda r: _share(r.result.claims.pcie_aligned_pairs, r.result.claims.gpu_nic_pairs),
    ),
    (
        "GPU-NIC pairs on one NUMA node",
        "share",
        lambda r: _share(r.result.claims.numa_aligned_pairs, r.result.claims.gpu_nic_pairs),
    ),
    ("blocks spanned per gang", "blocks", lambda r: _mean_gang(r, "blocks")),
    ("racks spanned per gang", "racks", lambda r: _mean_gang(r, "racks")),
    ("gang time to all Running p50", "ms", lambda r: _gang_summary(r, "Perc50")),
    ("gang time to all Running p99", "ms", lambda r: _gang_summary(r, "Perc99")),
    ("partial gangs at the end", "gangs", lambda r: _gang_summary(r, "partial")),
    ("gangs all Running", "share", lambda r: _gang_summary(r, "complete_share")),
    ("modelled bus bandwidth per GPU (all_gather)", "GB/s", _bandwidth),
    ("8-GPU pods placed after a mixed fill", "share", lambda r: _placed(r, "whole")),
    (
        "fleet GPU allocation at saturation",
        "share",
        _fleet_figure("peak_allocation_ratio", 0.0),
    ),
    (
        "GPUs stranded on partly used nodes at peak",
        "GPUs",
        _fleet_figure("gpus_stranded_at_peak", 0.0),
    ),
    ("aligned 8 GPU + 8 NIC pods placed", "share", lambda r: _placed(r, "aligned8")),
    ("aligned 4 GPU + 4 NIC pods placed", "share", lambda r: _placed(r, "aligned4")),
    # Costs are rates and per-pod figures, never totals of arms of different length.
    ("scheduler CPU per second", "cores", lambda r: _per_second(r, "cpu_seconds", "scheduler")),
    ("scheduler attempts per pod", "attempts", lambda r: _per_pod(r, "schedule_attempts")),
    # Shares of kube-scheduler's profiled CPU (kubernetes/kubernetes#138095's evidence): load
    # changes how long the scheduler takes, not what its CPU is spent on.
    (
        "scheduler CPU in queue and requeue",
        "share",
        lambda r: _category_share(r, REQUEUE_CATEGORY),
    ),
    (
        "scheduler CPU under isPodWorthRequeuing",
        "share",
        lambda r: _signature_share(r, REQUEUE_SIGNATURE),
    ),
    (
        "API server requests per second",
        "requests/s",
        lambda r: _per_second(r, "api_requests", "apiserver"),
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
    (
        "pods placed",
        "share",
        lambda r: _share(r.result.counts.pods_scheduled, r.result.counts.expected_pods),
    ),
    (
        "API server requests per pod",
        "requests",
        lambda r: _per_pod(r, "api_requests", component="apiserver"),
    ),
    ("pods placed (one per GPU)", "share", lambda r: _placed(r, "every-gpu")),
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
    (f"pod startup p50{UNSATURATED}", "ms", _run_latency("pod_startup", "Perc50")),
    (f"pod startup p90{UNSATURATED}", "ms", _run_latency("pod_startup", "Perc90")),
    (f"pod startup p99{UNSATURATED}", "ms", _run_latency("pod_startup", "Perc99")),
    (
        f"create to schedule p99{UNSATURATED}",
        "ms",
        _run_latency("create_to_schedule", "Perc99"),
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


IN_PROCESS_METRICS = frozenset({"scheduling throughput", PATH_CPU})
"""What such a result defines as loadgen's arms do: SchedulingThroughput is scheduler_perf's own
definition, and the CPU of the whole path (there, the benchmark's process tree). The rest
(latencies from a watch, a scheduler's own CPU apart from its API server's, claims, fleet
figures) it does not measure: its result holds zeros there, which are not figures."""


CL2_METRICS = frozenset({CL2_AGREEMENT, *(n for n in METRICS if n.startswith("churn "))})
"""What a ClusterLoader2 arm's result (`experiment.sites.clusterloader2`: loadgen observe on
testing/dra's pods) defines: its churn phase's latencies and the agreement with ClusterLoader2.
Its other figures cover other pods than a loadgen arm's (no scrape, one observer per phase)."""


def defined(metric: str, rec: ArmRecord) -> bool:
    """Whether `metric` is defined for the arm `rec` (not: whether it has a value)."""
    if rec.in_process:
        return metric in IN_PROCESS_METRICS
    if rec.source == arm_record.CL2_SOURCE:
        return metric in CL2_METRICS
    return metric != CL2_AGREEMENT


def metric(name: str) -> Metric:
    """The catalogue's metric `name` as (name, unit, getter); KeyError if unknown."""
    unit, get, _ = METRICS[name]
    return (name, unit, get)
