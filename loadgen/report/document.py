"""The versioned JSON result of a run: built once from the measurements, read by every
other output (console, PerfData, HTML) and by `loadgen compare`.

The pydantic models are the schema: `ResultDoc.model_json_schema()` is written next to each
result, and `load()` validates a file against it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from loadgen import gang_views, outcome, placement, records, series, slo, stats
from loadgen.report import explanation as why
from loadgen.report import faults as faults_doc
from testbed import files, units, versions

SCHEMA_VERSION: Literal[1] = 1


class _Doc(BaseModel):
    # Fields are only ever added within a schema version, so a reader ignores the ones it
    # does not know: an older loadgen still compares a newer run's result.
    model_config = ConfigDict(extra="ignore")


class Summary(_Doc):
    count: int
    min: float
    max: float
    avg: float
    Perc50: float
    Perc90: float
    Perc99: float

    def cells(self) -> tuple[str, str, str, str, str]:
        """count, p50, p90, p99 and max as every report shows them (pods; milliseconds)."""
        return (
            units.count(self.count),
            units.millis(self.Perc50),
            units.millis(self.Perc90),
            units.millis(self.Perc99),
            units.millis(self.max),
        )


class Throughput(_Doc):
    Average: float
    Perc50: float
    Perc90: float
    Perc95: float
    Perc99: float


class Counts(_Doc):
    expected_pods: int
    objects_requested: int
    objects_created: int
    create_failures: int
    create_retries: int
    pods_seen: int
    pods_scheduled: int
    pods_running: int
    pods_succeeded: int
    pods_failed: int
    pods_unschedulable: int = 0
    """Found unschedulable by the scheduler and never scheduled."""


class PhaseDoc(_Doc):
    name: str
    kind: str
    objects: int
    waves: int
    timed_out: bool
    duration_seconds: float
    create_seconds: float
    counts: Counts
    latency_ms: dict[str, Summary]
    throughput: Throughput
    create_request_ms: Summary


class Claims(_Doc):
    claims: int
    allocated: int
    allocation_ms: Summary
    with_nics: int
    gpu_nic_pairs: int
    pcie_aligned_pairs: int
    numa_aligned_pairs: int
    fully_pcie_aligned_claims: int


class Gang(_Doc):
    name: str
    pods: int
    """Of its pods, those bound to a node (whose nodes, racks and blocks are counted)."""
    nodes: int
    racks: int
    blocks: int
    size: int = 0
    """Pods the gang needs at once."""
    running: int = 0
    partial: bool = False
    """Some but not all of its pods bound at the end of the run."""
    time_to_running_ms: float | None = None
    """From its first pod created to its last pod Running (watch-receive times)."""


class GangSummary(_Doc):
    """Every gang of the run at its end: all or nothing, and how long all took."""

    gangs: int
    complete: int
    """Gangs with every pod Running."""
    partial: int
    """Gangs with some but not all pods bound to nodes (all-or-nothing broken)."""
    unplaced: int
    """Gangs with no pod bound."""
    time_to_running_ms: Summary
    """Over complete gangs: first pod created to last pod Running."""


class Fleet(_Doc):
    nodes: int
    gpus: int
    peak_gpus_allocated: int
    peak_allocation_ratio: float
    gpus_stranded_at_peak: int = 0
    """Free GPUs on partly used nodes at the sample with the highest allocation."""
    peak_gpus_busy: int = 0
    """Most physical GPUs the run's claims kept busy at once (sampled each second): with
    MIG partitions or capacity shares, fewer than the devices allocated."""
    pods_per_busy_gpu: float = 0.0
    """Pods running per busy physical GPU at that sample."""
    gpu_memory_requested_bytes: int = 0
    """At that sample: GPU memory the scheduled pods say their workloads use (their
    footprint, or a capacity request's memory)."""
    gpu_memory_taken_bytes: int = 0
    """At that sample: GPU memory the allocations take (a capacity share's consumed memory,
    a MIG partition's memory, a whole GPU's memory; a device-plugin GPU is a whole one)."""
    gpu_memory_of_busy_bytes: int = 0
    """At that sample: the whole memory of the busy physical GPUs."""
    gpu_memory_requested_share_of_taken: float = 0.0
    """Requested / taken: how much of what the allocations take the workloads use."""
    gpu_memory_used_share: float = 0.0
    """Requested / memory of the busy GPUs: the utilization the guides' 15-30 % is about."""
    occupancy_at_peak: dict[str, tuple[int, int]] = {}
    """Per fleet node (GPUs allocated, GPUs) at the sample with the most GPUs allocated
    (sampled each second; anyone's allocations): the occupancy heatmap."""
    held_by_others_at_start: dict[str, int] = {}
    """Per other namespace, fleet GPUs its claims held when the run started: not this
    run's, so left out of its allocation figures."""


class PendingGroup(_Doc):
    """Pods never scheduled, grouped by the scheduler's reason."""

    reason: str
    """PodScheduled's message, e.g. "0/4 nodes are available: 4 cannot allocate all
    claims." """
    pods: int


class Timeline(_Doc):
    seconds: list[float]
    seen: list[int]
    scheduled: list[int]
    running: list[int]
    finished: list[int]
    gpu_allocation_ratio: list[float]


class ServerCheck(_Doc):
    checked: int
    violations: int
    """Pods whose client create->Running was shorter than the server's timestamps allow:
    their first watch event arrived late, and CL2's create is its receive time."""


class SloResult(_Doc):
    slo: str
    metric: str
    stat: str
    threshold_ms: float
    value_ms: float
    ok: bool


class WatchGap(_Doc):
    """A watch broken mid-run (API server outage, 410 Gone): what it saw of that interval
    arrived late, so latencies across it include part of the outage."""

    watch: str
    reason: str
    """gone (410: relisted), error (no answer or 5xx: resumed), ..."""
    start_seconds: float
    """Since the start of the run, like the timeline."""
    end_seconds: float | None
    """First delivery after the watch resumed; None: nothing arrived before the run ended."""
    pods_straddling: int
    """Pods whose create-to-running interval overlaps the gap (their latencies include it)."""

    def describe(self) -> str:
        """One line for the console and HTML reports."""
        end = (
            f"{self.end_seconds:.1f}s"
            if self.end_seconds is not None
            else "the end (no event after it)"
        )
        return (
            f"{self.watch} watch broken from {self.start_seconds:.1f}s to {end} "
            f"({self.reason}); latencies of {self.pods_straddling} pods straddle it"
        )


class ComponentMetrics(_Doc):
    summary: dict[str, float]
    """cpu_seconds, rss_bytes (after), schedule_attempts, dynamic_resources_seconds, ...:
    counters summed over the component's processes; only rss_bytes when `partial`."""
    deltas: dict[str, float]
    processes: int = 1
    """Processes of the component the run saw (a restart adds one)."""
    partial: str | None = None
    """Why its counter figures could not be made whole (none are given then)."""
    spans_processes: list[str] = []
    """Gauge changes that would span processes, left out (after a restart, the change of
    process_resident_memory_bytes, so no rss_growth_bytes)."""
    attempts_bound_unseen: int = 0
    """kube-scheduler: the run's pods first seen bound while an old process went unscraped
    before its restart (`Restart.bound_unseen`), counted in `summary["schedule_attempts"]`:
    each is at least one scheduled attempt that no counter scrape holds, so the figure stays
    a lower bound of the real count, not short of the pods it scheduled."""


class ResultDoc(_Doc):
    schema_version: Literal[1]
    kind: Literal["LoadgenResult"]
    run_id: str
    namespace: str
    scenario: dict[str, object]
    settings: dict[str, object]
    started_at: str
    finished_at: str
    duration_seconds: float
    interrupted: bool
    error: str | None
    cleaned_up: bool
    fleet: Fleet
    counts: Counts
    latency_ms: dict[str, Summary]
    throughput: Throughput
    phases: list[PhaseDoc]
    claims: Claims
    gangs: list[Gang]
    gang_summary: GangSummary | None = None
    timeline: Timeline
    cdf_ms: dict[str, list[tuple[float, float]]]
    server_check: ServerCheck
    slos: list[SloResult]
    watch_restarts: int
    metrics: dict[str, ComponentMetrics] = {}
    loadgen_cpu_seconds: float | None = None
    """loadgen's own CPU over the run (from its first list of the cluster to the end of the
    measurement), its start-up and its reports not counted; None in older results."""
    watch_gaps: list[WatchGap] = []
    pending: list[PendingGroup] = []
    definitions: dict[str, str] = {}
    """What each figure means, with the reference it follows (pod_startup, throughput, ...)."""
    explanation: why.Explanation | None = None
    """kube-scheduler's own view, where the control plane's CPU went and the pathologies
    found (added within schema version 1: older readers ignore it). None: the scheduler was
    neither scraped nor profiled."""
    faults: faults_doc.Faults = faults_doc.Faults()
    """Components' restarts, failed scrapes and figures not made whole (added within schema
    version 1: a result written before has none, and reads as a run without faults)."""
    apiserver_version: str = ""
    """kube-apiserver's gitVersion (kube-scheduler's is the explanation's `release`)."""
    version_skew: str | None = None
    """Why this run's kube-scheduler was outside the supported version skew with its API
    server (a preview release: a newer scheduler), one sentence; None inside it or unknown
    (both added within schema version 1)."""


def _rfc3339(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def summary_of(values: list[float]) -> Summary:
    """count, min, max, avg and Perc50/90/99 of `values` (all 0 for none) as a `Summary`."""
    s = stats.summarize(values)
    return Summary(count=int(s.pop("count")), **s)


def _gangs(result: outcome.RunResult) -> dict[str, object]:
    """`gangs` (one per gang with a pod bound, as before) and `gang_summary` (every gang)."""
    sizes = {p.name: p.concurrent for p in result.scenario.phases if p.gang}
    states = gang_views.gang_states(result.records, sizes)
    gangs = [
        Gang(
            name=name,
            pods=g.scheduled,
            nodes=g.nodes,
            racks=g.racks,
            blocks=g.blocks,
            size=g.size,
            running=g.running,
            partial=g.partial,
            time_to_running_ms=None if g.time_to_running is None else g.time_to_running * 1000,
        )
        for name, g in sorted(states.items())
        if g.scheduled
    ]
    if not states:
        return {"gangs": gangs}
    times = [g.time_to_running * 1000 for g in states.values() if g.time_to_running is not None]
    summary = GangSummary(
        gangs=len(states),
        complete=len(times),
        partial=sum(1 for g in states.values() if g.partial),
        unplaced=sum(1 for g in states.values() if not g.scheduled),
        time_to_running_ms=summary_of(times),
    )
    return {"gangs": gangs, "gang_summary": summary}


def _pod_events(rec: records.Records, phase: str | None) -> list[dict[str, float | None]]:
    # CL2 watch-receive semantics: create is the first event, run and watch are both the
    # first Running observation (see stats.DEFINITIONS).
    return [
        {"create": r.created, "schedule": r.scheduled, "run": r.running, "watch": r.running}
        for r in rec.pods.values()
        if phase is None or r.phase == phase
    ]


def _latency(
    rec: records.Records, phase: str | None
) -> tuple[dict[str, Summary], dict[str, list[float]]]:
    durations = stats.phase_durations_ms(_pod_events(rec, phase))
    return {k: summary_of(v) for k, v in durations.items()}, durations


def _throughput(rec: records.Records, phase: str | None) -> Throughput:
    ticks = [
        (s.t, s.scheduled if phase is None else s.phase_scheduled.get(phase, 0))
        for s in rec.timeline
        if s.tick
    ]
    return Throughput(**stats.throughput(ticks))


def _counts(result: outcome.RunResult, phase: str | None) -> Counts:
    prs = [p for p in result.phases if phase is None or p.phase.name == phase]
    c = result.records.total if phase is None else records.phase_counts(result.records, phase)
    return Counts(
        expected_pods=sum(p.phase.pods for p in prs) if prs else 0,
        objects_requested=sum(p.stats.requested for p in prs),
        objects_created=sum(p.stats.created + p.stats.already_existed for p in prs),
        create_failures=sum(p.stats.failed for p in prs),
        create_retries=sum(p.stats.retries for p in prs),
        pods_seen=c.seen,
        pods_scheduled=c.scheduled,
        pods_running=c.running,
        pods_succeeded=c.succeeded,
        pods_failed=c.failed,
        pods_unschedulable=c.unschedulable,
    )


def _phase(result: outcome.RunResult, pr: outcome.PhaseResult) -> PhaseDoc:
    name = pr.phase.name
    end = pr.finished or result.finished_mono
    return PhaseDoc(
        name=name,
        kind=pr.phase.kind,
        objects=pr.phase.count,
        waves=pr.waves,
        timed_out=pr.timed_out,
        duration_seconds=round(end - pr.started, 3),
        create_seconds=round((pr.created or end) - pr.started, 3),
        counts=_counts(result, name),
        latency_ms=_latency(result.records, name)[0],
        throughput=_throughput(result.records, name),
        create_request_ms=summary_of([s * 1000.0 for s in pr.stats.request_seconds]),
    )


def _claims(rec: records.Records) -> Claims:
    recs = list(rec.claims.values())
    allocated = [r for r in recs if r.allocated is not None]
    pairs = pcie = numa = full = with_nics = 0
    for r in allocated:
        if not (r.gpu_pcie and r.nic_pcie):
            continue
        with_nics += 1
        n = min(len(r.gpu_pcie), len(r.nic_pcie))
        pairs += n
        p = placement.aligned_pairs(r.gpu_pcie, r.nic_pcie)
        pcie += p
        numa += placement.aligned_pairs(r.gpu_numa, r.nic_numa)
        full += p == n
    return Claims(
        claims=len(recs),
        allocated=len(allocated),
        allocation_ms=summary_of(
            [(r.allocated - r.seen) * 1000.0 for r in allocated if r.allocated is not None]
        ),
        with_nics=with_nics,
        gpu_nic_pairs=pairs,
        pcie_aligned_pairs=pcie,
        numa_aligned_pairs=numa,
        fully_pcie_aligned_claims=full,
    )


def _timeline(result: outcome.RunResult) -> Timeline:
    samples, origin, gpus = result.records.timeline, result.started_mono, result.fleet_gpus
    return Timeline(
        seconds=[round(s.t - origin, 3) for s in samples],
        seen=[s.seen for s in samples],
        scheduled=[s.scheduled for s in samples],
        running=[s.running for s in samples],
        finished=[s.finished for s in samples],
        gpu_allocation_ratio=[round(s.gpus_allocated / gpus, 4) if gpus else 0.0 for s in samples],
    )


def _fleet(result: outcome.RunResult) -> Fleet:
    rec, gpus = result.records, result.fleet_gpus
    # Stranded GPUs are sampled; the peak itself is exact (a short peak can fall between
    # samples).
    peak_sample = max(rec.timeline, key=lambda s: s.gpus_allocated, default=None)
    peak = max(rec.fleet.peak_gpus_allocated, peak_sample.gpus_allocated if peak_sample else 0)
    busiest = max(rec.timeline, key=lambda s: s.gpus_busy, default=None)
    return Fleet(
        nodes=result.fleet_nodes,
        gpus=gpus,
        peak_gpus_allocated=peak,
        peak_allocation_ratio=round(peak / gpus, 4) if gpus else 0.0,
        gpus_stranded_at_peak=peak_sample.gpus_stranded if peak_sample else 0,
        peak_gpus_busy=busiest.gpus_busy if busiest else 0,
        pods_per_busy_gpu=(
            round((busiest.running - busiest.finished) / busiest.gpus_busy, 3)
            if busiest and busiest.gpus_busy
            else 0.0
        ),
        gpu_memory_requested_bytes=busiest.memory_requested if busiest else 0,
        gpu_memory_taken_bytes=busiest.memory_taken if busiest else 0,
        gpu_memory_of_busy_bytes=busiest.memory_busy if busiest else 0,
        gpu_memory_requested_share_of_taken=(
            round(busiest.memory_requested / busiest.memory_taken, 4)
            if busiest and busiest.memory_taken
            else 0.0
        ),
        gpu_memory_used_share=(
            round(busiest.memory_requested / busiest.memory_busy, 4)
            if busiest and busiest.memory_busy
            else 0.0
        ),
        occupancy_at_peak=dict(sorted(rec.fleet.peak_occupancy.items())),
        held_by_others_at_start=dict(result.held_by_others_at_start),
    )


def _server_check(rec: records.Records) -> ServerCheck:
    checked = [
        (r.created, r.running, r.created_server, r.running_server)
        for r in rec.pods.values()
        if r.running is not None and r.created_server is not None and r.running_server
    ]
    return ServerCheck(checked=len(checked), violations=stats.server_bound_violations(checked))


def _slos(slos: list[slo.Slo], latency: dict[str, Summary]) -> list[SloResult]:
    values = {k: v.model_dump() for k, v in latency.items()}
    out = []
    for s in slos:
        value, ok = slo.check(s, values)
        out.append(
            SloResult(
                slo=s.text,
                metric=s.metric,
                stat=s.stat,
                threshold_ms=s.threshold_ms,
                value_ms=value,
                ok=ok,
            )
        )
    return out


def _watch_gaps(result: outcome.RunResult) -> list[WatchGap]:
    rec, origin = result.records, result.started_mono
    out = []
    for g in rec.watch_gaps:
        end = result.finished_mono if g.end is None else g.end
        straddling = sum(
            1
            for r in rec.pods.values()
            if r.created < end
            and (result.finished_mono if r.running is None else r.running) > g.start
        )
        out.append(
            WatchGap(
                watch=g.watch,
                reason=g.reason,
                start_seconds=round(g.start - origin, 3),
                end_seconds=None if g.end is None else round(g.end - origin, 3),
                pods_straddling=straddling,
            )
        )
    return out


def _metrics(result: outcome.RunResult, faults: faults_doc.Faults) -> dict[str, ComponentMetrics]:
    out = {}
    for name, d in result.metrics.items():
        c = result.components.get(name)
        partial = "; ".join(c.partial) if c is not None and c.partial else None
        spans = c.spans_processes if c is not None else []
        summary = series.summary(d, partial=partial is not None, spans_processes=bool(spans))
        unseen = 0
        if "schedule_attempts" in summary:  # kube-scheduler's figures, and not partial
            unseen = sum(r.bound_unseen or 0 for r in faults.restarts if r.component == name)
            summary["schedule_attempts"] += unseen
        out[name] = ComponentMetrics(
            summary=summary,
            deltas=d,
            processes=c.processes if c is not None else 1,
            partial=partial,
            spans_processes=spans,
            attempts_bound_unseen=unseen,
        )
    return out


def _settings(settings: outcome.Settings) -> dict[str, object]:
    return {
        "qps": settings.qps,
        "max_in_flight": settings.max_in_flight,
        "arrival": settings.arrival,
        "node_selector": settings.node_selector,
        "keep": settings.keep,
        "timeout": settings.timeout,
        "stall_timeout": settings.stall_timeout,
        "seed": settings.seed,
        "scrape": settings.scrape,
        "profile": settings.profile,
    }


def build(result: outcome.RunResult, slos: list[slo.Slo] | None = None) -> ResultDoc:
    """The result document of a (possibly partial) run."""
    rec = result.records
    latency, durations = _latency(rec, None)
    counts = _counts(result, None)
    throughput = _throughput(rec, None)
    claims = _claims(rec)
    faults = faults_doc.build(result)
    return ResultDoc(
        schema_version=SCHEMA_VERSION,
        kind="LoadgenResult",
        run_id=result.run_id,
        namespace=result.namespace,
        scenario=result.scenario.model_dump(mode="json"),
        settings=_settings(result.settings),
        started_at=_rfc3339(result.started_wall),
        finished_at=_rfc3339(result.wall(result.finished_mono)),
        duration_seconds=round(result.finished_mono - result.started_mono, 3),
        interrupted=result.interrupted,
        error=result.error,
        cleaned_up=result.cleaned_up,
        fleet=_fleet(result),
        counts=counts,
        latency_ms=latency,
        throughput=throughput,
        phases=[_phase(result, pr) for pr in result.phases],
        claims=claims,
        **_gangs(result),
        timeline=_timeline(result),
        cdf_ms={k: stats.cdf(v) for k, v in durations.items()},
        server_check=_server_check(rec),
        slos=_slos(slos or [], latency),
        watch_restarts=rec.watch_restarts,
        watch_gaps=_watch_gaps(result),
        definitions=dict(stats.DEFINITIONS),
        pending=[PendingGroup(reason=k, pods=n) for k, n in records.pending(rec).items()],
        metrics=_metrics(result, faults),
        loadgen_cpu_seconds=None if result.cpu_seconds is None else round(result.cpu_seconds, 3),
        faults=faults,
        explanation=why.build(
            result,
            pods=counts.pods_seen,
            claims=claims.claims,
            throughput=throughput.Average,
        ),
        apiserver_version=result.apiserver_version,
        version_skew=versions.skew(
            result.apiserver_version,
            result.scheduler_view.release if result.scheduler_view is not None else "",
        ),
    )


def write(doc: ResultDoc, out_dir: Path) -> Path:
    """`result.json` and its schema `result.schema.json` in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "result.json"
    files.write_atomic(
        out_dir / "result.schema.json", json.dumps(ResultDoc.model_json_schema(), indent=1) + "\n"
    )
    files.write_atomic(path, doc.model_dump_json(indent=1) + "\n")
    return path


def load(path: Path) -> ResultDoc:
    """A result file, validated (pydantic.ValidationError / OSError / ValueError on trouble)."""
    return ResultDoc.model_validate_json(path.read_text())
