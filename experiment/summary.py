"""Turn the arms' loadgen result files into side-by-side comparisons (pure).

Reads loadgen's versioned result JSON as data (schema_version 1), so the demo never imports
the load generator. Figures of repeated arms are reported as median and min–max, each A/B
ratio with a bootstrap 95 % interval, and a verdict needs that interval to clear its
threshold (`intervals`). Only valid arms reach here (`validity`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from experiment import bandwidth_model, intervals, plan
from experiment.plan import Arm

Doc = dict[str, Any]
SCHEMA_VERSION = 1


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

    @property
    def interval(self) -> intervals.Interval | None:
        """Bootstrap 95 % interval of the ratio (seeded: the same figures, the same interval)."""
        return intervals.ratio_interval(self.a.values, self.b.values)

    @property
    def constant(self) -> bool:
        """Every repeat of both arms gave the same value: the row cannot tell them apart."""
        return len(set(self.a.values) | set(self.b.values)) == 1


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


Metric = tuple[str, str, Callable[[Doc], float | None]]

# Rows shown only where the arms differ: alignment is enforced by the claims in the placement
# comparison (both arms 100 %), and modelled bandwidth only restates the alignment share.
DROP_IF_CONSTANT = {
    "GPU-NIC pairs on one PCIe root",
    "GPU-NIC pairs on one NUMA node",
    "modelled bus bandwidth per GPU (all_gather)",
}
UNSATURATED = ", unsaturated"

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
    ],
    "alignment": [
        ("aligned 8 GPU + 8 NIC pods placed", "share", lambda d: _placed(d, "aligned8")),
        ("aligned 4 GPU + 4 NIC pods placed", "share", lambda d: _placed(d, "aligned4")),
        ("GPU-NIC pairs on one PCIe root", "share", _aligned_share),
        ("modelled bus bandwidth per GPU (all_gather)", "GB/s", _bandwidth),
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
    # One inference mix on the same H100s four ways (each DRA arm against the device plugin).
    plan.SHARING: [
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
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
    ],
    # The same nvidia.com/gpu pods served by DRA (extendedResourceName) or the device plugin.
    plan.EXTENDED_RESOURCE: [
        ("pods placed", "share", _placed_share),
        ("scheduling throughput", "pods/s", _throughput),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        (
            "API server requests per pod",
            "requests",
            lambda d: _per_pod(d, "api_requests", component="apiserver"),
        ),
    ],
    # One pod per GPU of a pool with a share of its GPUs tainted NoSchedule, vs untainted.
    plan.TAINTS: [
        ("pods placed (one per GPU)", "share", lambda d: _placed(d, "every-gpu")),
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        ("scheduler attempts", "count", lambda d: _component(d, "schedule_attempts")),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
    ],
    "scale": [
        ("scheduling throughput", "pods/s", _throughput),
        ("pod startup p50", "ms", lambda d: _latency(d, "pod_startup", "Perc50")),
        ("pod startup p99", "ms", lambda d: _latency(d, "pod_startup", "Perc99")),
        ("scheduler CPU per pod", "ms", _scheduler_cpu_per_pod),
        ("API server + scheduler memory growth per 1,000 pods", "MiB", _memory_per_1000_pods),
    ],
}


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


def rows(results: list[tuple[Arm, Doc]]) -> list[Row]:
    """One row per comparison metric: arm A (first variant) vs arm B, medians over repeats.
    Pass valid arms only."""
    by_comparison: dict[tuple[str, str], dict[str, list[Doc]]] = {}
    order: dict[tuple[str, str], list[str]] = {}
    for arm, doc in results:
        key = (arm.comparison, arm.measure)
        variants = by_comparison.setdefault(key, {})
        variants.setdefault(arm.variant, []).append(doc)
        names = order.setdefault(key, [])
        if arm.variant not in names:
            names.append(arm.variant)
    out: list[Row] = []
    for (comparison, measure), variants in by_comparison.items():
        metrics = LATENCY_METRICS if measure == "latency" else METRICS.get(comparison, [])
        for a, b in _pairs(comparison, order[(comparison, measure)]):
            for metric, unit, get in metrics:
                fa = Figure([v for d in variants[a] if (v := get(d)) is not None])
                fb = Figure([v for d in variants[b] if (v := get(d)) is not None])
                row = Row(comparison, metric, unit, a, fa, b, fb)
                if (fa.values or fb.values) and not (metric in DROP_IF_CONSTANT and row.constant):
                    out.append(row)
    return out


def _pairs(comparison: str, variants: list[str]) -> list[tuple[str, str]]:
    """The (A, B) variant pairs a comparison's rows compare: each arm against the
    comparison's baseline (plan.BASELINES), in the plan's arm order; else its two arms, the
    arm under test first."""
    baseline = plan.BASELINES.get(comparison)
    if baseline in variants:
        return [(v, baseline) for v in variants if v != baseline]
    names = sorted(variants, key=_canonical_first)
    return [(names[0], names[1])] if len(names) == 2 else []


@dataclass(frozen=True)
class Target:
    """One of the project's goals for the demo against this run's figures."""

    goal: str
    measured: str
    verdict: str
    """"met", "missed", "inconclusive" (the interval straddles the threshold), each with
    "(single run)" when from one repeat, or "not measured: ..." when its comparison did not
    run."""

    @property
    def met(self) -> bool:
        return self.verdict.startswith("met")


def _row(rows: list[Row], comparison: str, metric: str, a_name: str = "") -> Row | None:
    return next(
        (
            r
            for r in rows
            if (r.comparison, r.metric) == (comparison, metric) and a_name in ("", r.a_name)
        ),
        None,
    )


def _ratio_target(
    rows: list[Row],
    goal: str,
    comparison: str,
    metric: str,
    threshold: float,
    *,
    at_least: bool,
    strict: bool = False,
    a_name: str = "",
) -> Target:
    """A goal on the A/B ratio of one row (of arm `a_name`, where a comparison has more
    than two), judged by the ratio's interval."""
    row = _row(rows, comparison, metric, a_name)
    interval = row.interval if row is not None else None
    if row is None or interval is None or row.ratio is None:
        return Target(goal, "-", f"not measured: run --comparisons {comparison}")
    measured = (
        f"{row.a_name} {row.a.median:.3g} vs {row.b_name} {row.b.median:.3g}: "
        f"ratio {row.ratio:.3f}, 95 % interval {intervals.describe(interval)}"
    )
    verdict = intervals.verdict(interval, threshold, at_least=at_least)
    if strict and interval.low == interval.high == threshold:
        verdict = verdict.replace("met", "missed", 1)  # no gain is not a gain
    return Target(goal, measured, verdict)


def targets(rows: list[Row]) -> list[Target]:
    """The goals the demo's comparisons can judge; each verdict needs the ratio's interval
    to clear the threshold."""
    return [
        _ratio_target(
            rows,
            "extender overhead on scheduling throughput <= 10 % (on/off >= 0.90)",
            "extender",
            "scheduling throughput",
            0.90,
            at_least=True,
        ),
        _ratio_target(
            rows,
            "aligned 8+8 pods placed after fragmenting PCIe roots: gain over the default",
            "alignment",
            "aligned 8 GPU + 8 NIC pods placed",
            1.0,
            at_least=True,
            strict=True,
        ),
        _ratio_target(
            rows,
            "aligned 4+4 pods placed after fragmenting PCIe roots: gain over the default",
            "alignment",
            "aligned 4 GPU + 4 NIC pods placed",
            1.0,
            at_least=True,
            strict=True,
        ),
        _ratio_target(
            rows,
            "8-GPU placeability gain",
            "fragmentation",
            "8-GPU pods placed after a mixed fill",
            1.0,
            at_least=True,
            strict=True,
        ),
        _ratio_target(
            rows,
            "gang locality gain (fewer blocks)",
            "placement",
            "blocks spanned per gang",
            1.0,
            at_least=False,
            strict=True,
        ),
        Target(
            "pod startup p99 <= 5 s, CL2 DRA scenario at 1,000 nodes",
            "-",
            "not measured: the demo's arms queue by design; bench/loadgen_cl2_dra.py runs it",
        ),
        *_sharing_targets(rows),
        _ratio_target(
            rows,
            "nvidia.com/gpu pods served unchanged by DRA: all placed, as by the device plugin",
            plan.EXTENDED_RESOURCE,
            "pods placed",
            1.0,
            at_least=True,
        ),
        _ratio_target(
            rows,
            f"pods kept off NoSchedule-tainted GPUs ({plan.TAINTED_SHARE:.0%} of a pool): "
            "fewer placed than on the clean pool",
            plan.TAINTS,
            "pods placed (one per GPU)",
            1.0,
            at_least=False,
            strict=True,
        ),
    ]


SHARING_GAIN = 1.3
"""The DRA guides' upper claim: MIG or shared GPUs use them 15-30 % better than the device
plugin's one whole GPU per pod."""


def _sharing_targets(rows: list[Row]) -> list[Target]:
    """MIG and capacity shares against the device plugin, >= SHARING_GAIN x on each of
    pods placed, pods per busy GPU and GPU memory used."""
    out = []
    for variant in ("mig", "capacity"):
        for metric in (
            "pods placed at saturation",
            "pods per busy GPU",
            "GPU memory used (footprints / busy GPUs' memory)",
        ):
            out.append(
                _ratio_target(
                    rows,
                    f"{variant} vs device plugin: {metric} >= {SHARING_GAIN:g}x",
                    plan.SHARING,
                    metric,
                    SHARING_GAIN,
                    at_least=True,
                    a_name=variant,
                )
            )
    return out


@dataclass(frozen=True)
class GuideRow:
    """One line of the DRA performance guide's matrix against what we measured."""

    aspect: str
    target: str
    guide: str
    """The guide's example figure."""
    measured: str
    verdict: str


# The DRA guide's targets against the device plugin, and its example matrix (FACTS §6):
# (aspect, our row, target as a ratio or MiB, the guide's wording, the guide's example).
_MEBIBYTES_IN_100_MB = 100e6 / 2**20
GUIDE: list[tuple[str, str, float, str, str]] = [
    (
        "scheduling latency overhead",
        f"pod startup p99{UNSATURATED}",
        1.10,
        "< 10 %",
        "+8 % (p99 2.5 s device plugin vs 2.7 s DRA)",
    ),
    ("API request rate overhead", "API server requests", 1.05, "< 5 %", "+4 % QPS"),
    ("scheduler CPU overhead", "scheduler CPU", 1.15, "< 15 %", "+10 % CPU"),
    (
        "control-plane memory per 1,000 pods",
        "API server + scheduler memory growth per 1,000 pods",
        _MEBIBYTES_IN_100_MB,
        "< 100 MB",
        "+10 % memory",
    ),
]


def guide_matrix(rows: list[Row]) -> list[GuideRow]:
    """The guide's matrix vs measured, from the `dra` comparison (claims vs device plugin, both
    on the plain scheduler; latency from the unsaturated arms)."""
    out = []
    for aspect, metric, threshold, target, guide in GUIDE:
        row = _row(rows, "dra", metric)
        if row is None:
            out.append(GuideRow(aspect, target, guide, "-", "not measured: run --comparisons dra"))
            continue
        if target.endswith("MB"):  # an absolute figure of the DRA arm
            interval = intervals.median_interval(row.a.values)
            measured = f"{row.a.median:.1f} MiB, 95 % interval {intervals.describe(interval)}"
        else:
            interval = row.interval
            overhead = (row.ratio - 1) if row.ratio is not None else float("nan")
            spread = intervals.describe(interval, "{:.3f}".format)
            measured = f"{overhead:+.1%} (ratio 95 % interval {spread})"
        out.append(
            GuideRow(
                aspect,
                target,
                guide,
                measured,
                intervals.verdict(interval, threshold, at_least=False),
            )
        )
    return out


def _canonical_first(variant: str) -> int:
    """A is the arm under test: extender on, DRA claims, the larger fleet."""
    return 0 if variant in ("on", "claims", "large") else 1


def accounted(doc: Doc, *, probe_phases: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Every pod the arm asked for was seen, and each either ran or is explained.

    `probe_phases` may leave pods the scheduler found unschedulable, or time out, by design
    (the fragmentation and alignment probes ask for more pods than a fragmented fleet can
    take; how many fit is the measurement).
    """
    counts = doc["counts"]
    expected = counts["expected_pods"]
    probe_timeout = any(
        p.get("name") in probe_phases and p.get("timed_out") for p in doc.get("phases") or []
    )
    if doc.get("error") and not probe_timeout:
        return False, f"error: {doc['error']}"
    if counts["pods_seen"] != expected:
        return False, f"saw {counts['pods_seen']} of {expected} pods"
    timed_out = any(p.get("timed_out") for p in doc.get("phases") or [])
    ran = counts["pods_running"] + counts["pods_succeeded"]
    if probe_phases:
        # The probe ends once each pod is placed or refused: a placed one may not have
        # reached Running yet (every other phase waited for Running, so for them the two
        # counts agree).
        ran = counts["pods_scheduled"] + counts.get("pods_unschedulable", 0)
    if ran != expected and not timed_out:
        return False, f"{ran} of {expected} pods ran"
    return True, "ok"
