"""Self-contained HTML reports (plotly charts, plotly.js inlined once, works offline).

`render`: one run. Latency CDFs per CL2 phase, pods / throughput / GPU allocation over
time (watch gaps shaded), per-phase tables, claim placement quality, gang spans, the
components' resource figures, and why it went so (kube-scheduler's queues over time, where
its CPU went, the pathologies found), all in human units.
`render_comparison`: `loadgen compare --html`, two runs overlaid with the table of changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go

from loadgen import scheduler_view, stats
from loadgen.report import explanation, faults
from loadgen.report.document import Fleet, ResultDoc, Summary
from testbed import charts, units
from testbed.charts import Section, Series


def _state(doc: ResultDoc) -> str:
    return "interrupted" if doc.interrupted else ("failed" if doc.error else "complete")


def _latency_table(latency: dict[str, Summary]) -> str:
    rows = [
        (metric, *s.cells()) for metric in stats.PHASES if (s := latency.get(metric)) is not None
    ]
    return charts.table(("phase", "pods", "p50", "p90", "p99", "max"), rows)


def _facts(doc: ResultDoc) -> str:
    items = [
        ("scenario", str(doc.scenario.get("name", ""))),
        ("run", doc.run_id),
        ("state", _state(doc) + (f": {doc.error}" if doc.error else "")),
        ("started", doc.started_at),
        ("duration", units.duration(doc.duration_seconds)),
        ("fleet", f"{units.count(doc.fleet.nodes)} nodes, {units.count(doc.fleet.gpus)} GPUs"),
    ]
    description = str(doc.scenario.get("description", "") or "")
    return charts.facts(items) + (charts.note(description) if description else "")


def _counts(doc: ResultDoc) -> list[Section]:
    rows = [(k.replace("_", " "), units.count(v)) for k, v in doc.counts.model_dump().items()]
    return [Section("Counts", [charts.table(("figure", "value"), rows)])]


def _pending(doc: ResultDoc) -> list[Section]:
    out = []
    if doc.pending:
        rows = [(g.reason, units.count(g.pods)) for g in doc.pending]
        out.append(
            Section("Pods never scheduled", [charts.table(("scheduler's reason", "pods"), rows)])
        )
    others = doc.fleet.held_by_others_at_start
    if others:
        rows = [(ns, units.count(n)) for ns, n in sorted(others.items())]
        out.append(
            Section(
                "GPUs held by other namespaces at start",
                [
                    charts.note("Not this run's: left out of its allocation figures."),
                    charts.table(("namespace", "GPUs"), rows),
                ],
            )
        )
    return out


def _version_skew(doc: ResultDoc) -> list[Section]:
    # First: every figure below comes from a scheduler newer than its API server.
    if not doc.version_skew:
        return []
    return [Section("Version skew", [charts.note(doc.version_skew)])]


def _watch_gaps(doc: ResultDoc) -> list[Section]:
    # Shown before the latencies: readers must know which of them include an outage.
    if not doc.watch_gaps:
        return []
    items = [charts.note(g.describe()) for g in doc.watch_gaps]
    return [Section("Watch gaps", [*items, charts.note("Shaded red in the timelines.")])]


def _latency(doc: ResultDoc) -> list[Section]:
    cdfs = charts.latency_cdfs(
        *(Series.points(m, doc.cdf_ms.get(m, [])) for m in stats.PHASES if doc.cdf_ms.get(m)),
        title="Pod startup latency by phase (CDF)",
    )
    return [
        Section("Pod startup latency (nearest-rank)", [_latency_table(dict(doc.latency_ms)), cdfs])
    ]


def _slos(doc: ResultDoc) -> list[Section]:
    if not doc.slos:
        return []
    rows = [(s.slo, units.millis(s.value_ms), "ok" if s.ok else "violated") for s in doc.slos]
    return [Section("SLOs", [charts.table(("SLO", "measured", "verdict"), rows, verdict_column=2)])]


def _gaps(doc: ResultDoc) -> list[tuple[float, float]]:
    return [
        (g.start_seconds, doc.duration_seconds if g.end_seconds is None else g.end_seconds)
        for g in doc.watch_gaps
    ]


def _restarts(doc: ResultDoc) -> list[tuple[float, str]]:
    """Vertical marks at the components' restarts (their new process's start)."""
    return [
        (
            r.seen_seconds if r.started_seconds is None else r.started_seconds,
            f"{faults.who(r.component)} restarted",
        )
        for r in doc.faults.restarts
    ]


def _timeline(doc: ResultDoc) -> list[Section]:
    t = doc.timeline
    marks = _restarts(doc)
    pods = charts.over_time(
        *(
            Series(name, t.seconds, [float(v) for v in values])
            for name, values in (
                ("seen", t.seen),
                ("scheduled", t.scheduled),
                ("running", t.running),
                ("finished", t.finished),
            )
        ),
        title="Pods over time",
        y_title="pods",
        bands=_gaps(doc),
        marks=marks,
    )
    throughput = charts.over_time(
        charts.named(charts.rate(t.seconds, [float(v) for v in t.scheduled]), "scheduled"),
        title="Scheduling throughput over time",
        y_title="pods/s",
        bands=_gaps(doc),
        marks=marks,
    )
    allocation = charts.over_time(
        Series("GPUs allocated", t.seconds, t.gpu_allocation_ratio),
        title="Fleet GPU allocation over time",
        y_title="share of fleet GPUs",
        percent=True,
        bands=_gaps(doc),
        marks=marks,
    )
    th = doc.throughput
    summary = charts.table(
        ("scheduling throughput (pods/s)", "average", "p50", "p90", "p99"),
        [("all pods", *(f"{v:.1f}" for v in (th.Average, th.Perc50, th.Perc90, th.Perc99)))],
    )
    return [Section("Over time", [pods, summary, throughput, allocation])]


def _phases(doc: ResultDoc) -> list[Section]:
    if len(doc.phases) < 2:
        return []
    return [
        Section(
            f"Phase {p.name} ({p.kind}, {units.count(p.objects)} objects, "
            f"{units.duration(p.duration_seconds)})",
            [_latency_table(dict(p.latency_ms))],
        )
        for p in doc.phases
    ]


def _claims(doc: ResultDoc) -> list[Section]:
    cl = doc.claims
    rows = [
        ("claims allocated", f"{units.count(cl.allocated)} / {units.count(cl.claims)}"),
        (
            "allocation p50 / p99",
            f"{units.millis(cl.allocation_ms.Perc50)} / {units.millis(cl.allocation_ms.Perc99)}",
        ),
        ("GPU-NIC pairs on one PCIe root", f"{cl.pcie_aligned_pairs} / {cl.gpu_nic_pairs}"),
        ("GPU-NIC pairs on one NUMA node", f"{cl.numa_aligned_pairs} / {cl.gpu_nic_pairs}"),
        ("peak fleet GPU allocation", units.percent(doc.fleet.peak_allocation_ratio)),
        ("GPUs stranded at the peak", units.count(doc.fleet.gpus_stranded_at_peak)),
        (
            "physical GPUs busy at peak (pods per busy GPU)",
            f"{units.count(doc.fleet.peak_gpus_busy)} ({doc.fleet.pods_per_busy_gpu:g})",
        ),
        ("GPU memory requested / taken by allocations / of the busy GPUs", _memory(doc.fleet)),
    ]
    parts: list[go.Figure | str] = [charts.table(("figure", "value"), rows)]
    if doc.fleet.occupancy_at_peak:
        parts.append(
            charts.occupancy_heatmap(
                {f"run {doc.run_id}": doc.fleet.occupancy_at_peak},
                title="Fleet occupancy at the allocation peak (each cell a node)",
            )
        )
    if doc.gangs:
        parts.append(
            charts.table(
                ("gang", "pods bound", "of", "nodes", "racks", "blocks", "all Running after"),
                [
                    (
                        g.name,
                        *(str(v) for v in (g.pods, g.size or g.pods, g.nodes, g.racks, g.blocks)),
                        "-" if g.time_to_running_ms is None else units.millis(g.time_to_running_ms),
                    )
                    for g in doc.gangs
                ],
            )
        )
    return [Section("Claims and placement", parts)]


def _faults(doc: ResultDoc) -> list[Section]:
    # Beside the watch gaps: readers must know which figures span a restart, or lack one.
    lines = doc.faults.lines()
    if not lines:
        return []
    notes = [charts.note(line) for line in lines]
    if doc.faults.restarts:
        notes.append(charts.note("Marked by a vertical line in the timelines."))
    return [Section("Restarts and scrapes", notes)]


def _components(doc: ResultDoc) -> list[Section]:
    if not doc.metrics:
        return []
    rows = [
        (name, units.label(k), units.by_name(k, v))
        for name, m in doc.metrics.items()
        for k, v in m.summary.items()
        if v
    ]
    rows += [(name, "counter figures", "partial") for name, m in doc.metrics.items() if m.partial]
    return [
        Section(
            "Control-plane components over the run",
            [charts.table(("component", "figure", "value"), rows, text_columns=2)],
        )
    ]


def _definitions(doc: ResultDoc) -> list[Section]:
    if not doc.definitions:
        return []
    return [Section("Definitions", [charts.facts(doc.definitions.items())])]


# The report's sections, in page order; each renders one part of the document.
_SECTIONS = (
    _version_skew,
    _counts,
    _pending,
    _watch_gaps,
    _faults,
    _latency,
    _slos,
    _timeline,
    _phases,
    _claims,
    _components,
    lambda doc: _explanation(doc.explanation),
    _definitions,
)


def render(doc: ResultDoc, plotly_src: str | None = None) -> str:
    """The whole page of one run; plotly.js from `plotly_src` (else inlined)."""
    sections = [s for section in _SECTIONS for s in section(doc)]
    return charts.page(
        f"loadgen {doc.scenario.get('name', '')}: run {doc.run_id}",
        sections,
        intro=_facts(doc),
        plotly_src=plotly_src,
    )


def write(doc: ResultDoc, out_dir: Path) -> Path:
    """`report.html` in `out_dir`, sharing its results directory's plotly.js (an arm of a
    demo: the demo's)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.html"
    path.write_text(render(doc, charts.shared_plotly(out_dir)))
    return path


# The headline phase first; the rest in CL2's order.
_PHASE_ORDER = ("pod_startup", *(m for m in stats.PHASES if m != "pod_startup"))


def _varies(cdf: list[tuple[float, float]] | None) -> bool:
    """A CDF worth drawing: some latency above zero (run_to_watch is zero by definition)."""
    return any(x > 0 for x, _ in cdf or [])


def render_comparison(
    prev: ResultDoc, cur: ResultDoc, table: Sequence[tuple[str, str, str, str, str]]
) -> str:
    """`loadgen compare --html`: the table of changes (formatted rows: metric, previous,
    current, change, judgement), the two runs' latency CDFs overlaid per phase, their
    throughput and GPU allocation over time and their fleet occupancy side by side."""
    a, b = f"previous ({prev.run_id})", f"current ({cur.run_id})"
    cdfs = [
        charts.latency_cdfs(
            Series.points(a, prev.cdf_ms.get(m, [])),
            Series.points(b, cur.cdf_ms.get(m, [])),
            title=f"{m} latency (CDF)",
        )
        for m in _PHASE_ORDER
        if _varies(prev.cdf_ms.get(m)) or _varies(cur.cdf_ms.get(m))
    ]
    pt, ct = prev.timeline, cur.timeline
    throughput = charts.over_time(
        charts.named(charts.rate(pt.seconds, [float(v) for v in pt.scheduled]), a),
        charts.named(charts.rate(ct.seconds, [float(v) for v in ct.scheduled]), b),
        title="Scheduling throughput over time",
        y_title="pods/s",
    )
    allocation = charts.over_time(
        Series(a, pt.seconds, pt.gpu_allocation_ratio),
        Series(b, ct.seconds, ct.gpu_allocation_ratio),
        title="Fleet GPU allocation over time",
        y_title="share of fleet GPUs",
        percent=True,
    )
    over_time: list[go.Figure | str] = [throughput, allocation]
    if prev.fleet.occupancy_at_peak or cur.fleet.occupancy_at_peak:
        over_time.append(
            charts.occupancy_heatmap(
                {a: prev.fleet.occupancy_at_peak, b: cur.fleet.occupancy_at_peak},
                title="Fleet occupancy at each run's allocation peak (each cell a node)",
            )
        )
    intro = charts.facts(
        [
            ("previous", f"{prev.run_id}: {prev.scenario.get('name', '')}, {prev.started_at}"),
            ("current", f"{cur.run_id}: {cur.scenario.get('name', '')}, {cur.started_at}"),
        ]
    )
    return charts.page(
        f"loadgen compare: {prev.run_id} → {cur.run_id}",
        [
            Section(
                "Changes",
                [
                    charts.table(
                        ("metric", "previous", "current", "change", ""), table, verdict_column=4
                    )
                ],
            ),
            Section("Pod startup latency", cdfs),
            Section("Over time and fleet occupancy", over_time),
        ],
        intro=intro,
    )


def _memory(f: Fleet) -> str:
    """Footprints the pods declare against what their allocations take; without footprints
    there is nothing to call used."""
    taken = f"{units.size(f.gpu_memory_taken_bytes)} / {units.size(f.gpu_memory_of_busy_bytes)}"
    if not f.gpu_memory_requested_bytes:
        return f"no footprint declared / {taken}"
    return (
        f"{units.size(f.gpu_memory_requested_bytes)} / {taken} "
        f"({units.percent(f.gpu_memory_used_share)} used)"
    )


def _present(
    seconds: Sequence[float], values: Sequence[float | None]
) -> tuple[list[float], list[float]]:
    pairs = [(t, v) for t, v in zip(seconds, values, strict=False) if v is not None]
    return [t for t, _ in pairs], [v for _, v in pairs]


def _summed(t: scheduler_view.Timeline, keys: Sequence[str]) -> list[float | None]:
    """Several counters of the view added sample by sample (missing: 0), each over its
    processes (a restart is no negative rate)."""
    columns = [t.cumulative(k) for k in keys]
    return [sum(c[i] or 0.0 for c in columns) for i in range(len(t.seconds))]


def _rates_by(t: scheduler_view.Timeline, prefix: str, top: int = 6) -> list[Series]:
    """Per-second rates of the counters under `prefix`, grouped by the first label after
    it (incoming pods by event), the busiest `top` groups."""
    groups: dict[str, list[str]] = {}
    for key in t.values:
        if key.startswith(prefix):
            groups.setdefault(key[len(prefix) :].split(":", 1)[0], []).append(key)
    out = []
    for name, keys in groups.items():
        x, y = _present(t.seconds, _summed(t, keys))
        out.append(charts.named(charts.rate(x, y), name))
    out.sort(key=lambda s: -sum(s.y))
    return out[:top]


def _scheduler_view(v: explanation.SchedulerView) -> list[go.Figure | str]:
    t = v.totals
    tl = scheduler_view.Timeline(seconds=list(v.seconds), values=dict(v.values))
    marks = [(at, "kube-scheduler restarted") for at in t.restarts]
    pending = [
        Series(q, *_present(v.seconds, v.values[scheduler_view.PENDING + q]))
        for q in scheduler_view.QUEUES
        if scheduler_view.PENDING + q in v.values
    ]
    parts: list[go.Figure | str] = [
        charts.note(
            f"kube-scheduler {v.release}, its /metrics sampled through the run "
            f"({len(v.seconds)} samples)."
        ),
        charts.over_time(
            *pending, title="kube-scheduler: pending pods by queue", y_title="pods", marks=marks
        ),
    ]
    if t.restarts:
        when = ", ".join(f"{at:.1f}s" for at in t.restarts)
        parts.insert(
            1,
            charts.note(
                f"kube-scheduler restarted (a new process first sampled at {when}): its "
                "counters are summed over its processes."
            ),
        )
    incoming = _rates_by(tl, scheduler_view.INCOMING)
    if incoming:
        parts.append(
            charts.over_time(
                *incoming,
                title="kube-scheduler: pods moved into a queue, by event",
                y_title="pods/s",
                marks=marks,
            )
        )
    handling = _rates_by(tl, scheduler_view.EVENT_SECONDS)
    if "hint_seconds" in v.values:
        x, y = _present(v.seconds, tl.cumulative("hint_seconds"))
        handling.append(charts.named(charts.rate(x, y), "queueing hints (all)"))
    if handling:
        parts.append(
            charts.over_time(
                *handling,
                title="kube-scheduler: event handling, seconds per second",
                y_title="s/s",
                marks=marks,
            )
        )
    means = [
        Series(name, *scheduler_view.mean_per_interval(tl, total, count))
        for name, total, count in (
            ("attempt", "attempt_seconds", "attempts"),
            ("algorithm", "algorithm_seconds", "algorithm_count"),
        )
    ]
    parts.append(
        charts.over_time(
            *means,
            title="kube-scheduler: mean time per scheduling attempt",
            y_title="seconds",
            marks=marks,
        )
    )
    rows = [("attempts", units.count(int(t.attempts)), f"{t.attempt_mean * 1000:.1f} ms each")]
    rows.append(
        (
            "scheduling algorithm",
            f"{t.algorithm_seconds:.1f} s",
            f"{t.algorithm_mean * 1000:.1f} ms each",
        )
    )
    for point, secs in t.point_seconds.items():
        rows.append((f"extension point {point}", f"{secs:.1f} s", ""))
    per_attempt = t.outside_points_seconds / t.attempts * 1000 if t.attempts else 0.0
    rows.append(
        (
            "algorithm outside extension points (extender calls as kube-scheduler saw them)",
            f"{t.outside_points_seconds:.1f} s",
            f"{per_attempt:.1f} ms per attempt",
        )
    )
    for verb, secs in sorted(t.extender_seconds.items()):
        calls = t.extender_calls.get(verb, 0.0)
        each = f"{secs / calls * 1000:.1f} ms per call" if calls else ""
        rows.append((f"extender served {verb}", f"{secs:.1f} s", each))
    rows.append(("API client waiting on its rate limiter", f"{t.throttle_seconds:.1f} s", ""))
    rows.append(("hint executions", f"{t.hint_seconds:.2f} s", units.count(int(t.hint_count))))
    for event, secs in t.event_seconds.items():
        rows.append((f"handling {event}", f"{secs:.2f} s", ""))
    parts.append(charts.table(("kube-scheduler over the run", "time", "per"), rows, text_columns=1))
    return parts


def _cpu_table(name: str, p: explanation.CpuProfile) -> list[go.Figure | str]:
    who = {"scheduler": "kube-scheduler", "apiserver": "kube-apiserver"}.get(name, name)
    if not p.profiled:
        return [charts.note(f"{who} not profiled: {p.reason}")]
    rows = [(c.category, f"{c.cpu_seconds:.2f} s", units.percent(c.share)) for c in p.categories]
    of_run = "" if p.run_share is None else f", {units.percent(p.run_share)} of the run"
    how = (
        f"{len(p.files)} slices kept beside this report, `go tool pprof` reads them"
        if p.source == "pprof"
        else "its own CPU clock per stage of its work, from its /metrics"
    )
    parts: list[go.Figure | str] = [
        charts.note(
            f"Where {who}'s CPU went: {p.cpu_seconds:.1f} s of CPU in {p.seconds_profiled:.0f} s "
            f"profiled{of_run} ({how}); named categories cover {units.percent(p.coverage)} of "
            "the CPU."
        ),
        charts.table(("category", "CPU", "share"), rows),
    ]
    if p.top_other:
        parts.append(
            charts.table(
                ("uncategorized leaf function", "CPU"),
                [(f, f"{s:.2f} s") for f, s in p.top_other],
            )
        )
    if p.reason:
        parts.append(charts.note(f"{who} profiling stopped: {p.reason}"))
    parts.extend(charts.note(f"{who} {explanation.unanswered(span)}") for span in p.unanswered)
    parts.extend(charts.note(f"unreadable: {u}") for u in p.unreadable)
    if p.busy_slices:
        parts.append(
            charts.note(f"{p.busy_slices} slices skipped: another client was profiling {who}.")
        )
    return parts


def _explanation(e: explanation.Explanation | None) -> list[Section]:
    if e is None:
        return []
    findings: list[go.Figure | str] = [
        charts.table(
            ("pathology", "upstream", "evidence", "try"),
            [(f.title, f.issue or "-", f.evidence, f.knob) for f in e.findings],
            text_columns=4,
        )
        if e.findings
        else charts.note("No known pathology found in this run's evidence.")
    ]
    sections = [Section("Why it went so: known pathologies", findings)]
    if e.scheduler is not None:
        sections.append(Section("kube-scheduler's own view", _scheduler_view(e.scheduler)))
    cpu_parts = [part for name, p in e.cpu.items() for part in _cpu_table(name, p)]
    if cpu_parts:
        sections.append(Section("Where the control plane's CPU went", cpu_parts))
    return sections
