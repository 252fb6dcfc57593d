"""The console summary: counts, per-phase latency percentiles, throughput, placement, SLOs."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from loadgen import stats
from loadgen.report import explanation
from loadgen.report.document import ResultDoc
from testbed import units


def render(doc: ResultDoc, console: Console) -> None:
    c = doc.counts
    state = "interrupted" if doc.interrupted else ("failed" if doc.error else "complete")
    console.print(
        f"[bold]loadgen[/] {doc.scenario['name']} run {doc.run_id}: {state} in "
        f"{units.duration(doc.duration_seconds)} on {units.count(doc.fleet.nodes)} nodes / "
        f"{units.count(doc.fleet.gpus)} GPUs"
    )
    console.print(
        f"objects created {c.objects_created}/{c.objects_requested} "
        f"(failures {c.create_failures}, retries {c.create_retries}); pods: expected "
        f"{c.expected_pods}, seen {c.pods_seen}, scheduled {c.pods_scheduled}, running "
        f"{c.pods_running}, succeeded {c.pods_succeeded}, failed {c.pods_failed}"
    )
    if doc.error:
        console.print(f"[red]error:[/] {doc.error}")
    if doc.version_skew:
        console.print(f"[yellow]{doc.version_skew}[/]", highlight=False)
    for group in doc.pending:
        console.print(f"[yellow]{group.pods} pods never scheduled:[/] {group.reason}")
    others = doc.fleet.held_by_others_at_start
    if others:
        who = ", ".join(f"{ns} {n}" for ns, n in sorted(others.items()))
        console.print(f"[yellow]GPUs held by other namespaces at start (not counted):[/] {who}")
    for g in doc.watch_gaps:
        console.print(f"[yellow]watch gap:[/] {g.describe()}")
    for line in doc.faults.lines():
        console.print(f"[yellow]fault:[/] {line}", highlight=False)
    table = Table(title="Pod startup latency (nearest-rank)")
    table.add_column("scope")
    table.add_column("phase")
    for col in ("n", "p50", "p90", "p99", "max"):
        table.add_column(col, justify="right")
    scopes = [("all", doc.latency_ms)]
    if len(doc.phases) > 1:
        scopes += [(p.name, p.latency_ms) for p in doc.phases]
    for scope, latency in scopes:
        for metric in stats.PHASES:
            table.add_row(scope, metric, *latency[metric].cells())
    console.print(table)
    t = doc.throughput
    console.print(
        f"scheduling throughput (pods/s): avg {t.Average:.1f}  p50 {t.Perc50:.0f}  "
        f"p90 {t.Perc90:.0f}  p99 {t.Perc99:.0f}"
    )
    cl = doc.claims
    if cl.claims:
        console.print(
            f"claims: {cl.allocated}/{cl.claims} allocated, allocation p99 "
            f"{units.millis(cl.allocation_ms.Perc99)}; fleet GPU allocation peak "
            f"{units.percent(doc.fleet.peak_allocation_ratio)}"
        )
    if doc.fleet.peak_gpus_busy:
        console.print(
            f"physical GPUs busy at peak: {doc.fleet.peak_gpus_busy} "
            f"({doc.fleet.pods_per_busy_gpu:g} pods per busy GPU)"
        )
    f = doc.fleet
    if f.gpu_memory_taken_bytes and f.gpu_memory_requested_bytes:
        console.print(
            f"GPU memory requested {units.size(f.gpu_memory_requested_bytes)} of "
            f"{units.size(f.gpu_memory_taken_bytes)} the allocations take "
            f"({units.percent(f.gpu_memory_requested_share_of_taken)}), "
            f"{units.percent(f.gpu_memory_used_share)} of the busy GPUs' "
            f"{units.size(f.gpu_memory_of_busy_bytes)}"
        )
    elif f.gpu_memory_taken_bytes:
        console.print(
            f"GPU memory the allocations take: {units.size(f.gpu_memory_taken_bytes)} "
            "(no pod declares a footprint, so no utilization)"
        )
    if cl.gpu_nic_pairs:
        console.print(
            f"GPU-NIC pairs: {cl.pcie_aligned_pairs}/{cl.gpu_nic_pairs} on one PCIe root, "
            f"{cl.numa_aligned_pairs}/{cl.gpu_nic_pairs} on one NUMA node"
        )
    if (gs := doc.gang_summary) is not None:
        tr = gs.time_to_running_ms
        times = (
            f", first pod created to last Running p50 {units.millis(tr.Perc50)} "
            f"p99 {units.millis(tr.Perc99)}"
            if tr.count
            else ""
        )
        console.print(
            f"gangs: {gs.complete}/{gs.gangs} all Running, {gs.partial} partial (some pods "
            f"bound, not all), {gs.unplaced} with no pod bound{times}"
        )
    if doc.gangs:
        spans = ", ".join(f"{g.name}: {g.nodes}n/{g.racks}r/{g.blocks}b" for g in doc.gangs)
        console.print(f"gangs (nodes/racks/blocks): {spans}")
    if doc.server_check.violations:
        console.print(
            f"[yellow]{doc.server_check.violations} pods measured faster than the API "
            "server's timestamps allow (their first watch event arrived late; CL2's create is "
            "its receive time)[/]"
        )
    for name, m in doc.metrics.items():
        figures = ", ".join(
            f"{units.label(k)} {units.by_name(k, v)}" for k, v in m.summary.items() if v
        )
        if m.partial:
            figures = f"counter figures partial; {figures}" if figures else "partial"
        elif m.processes > 1:
            bound = (
                f"; attempts include {m.attempts_bound_unseen} pods seen bound while the old "
                "process went unscraped"
                if m.attempts_bound_unseen
                else ""
            )
            figures = f"{figures or 'no change'} (summed over {m.processes} processes{bound})"
        console.print(f"{name} over the run: {figures or 'no change'}")
    if doc.loadgen_cpu_seconds is not None:
        console.print(f"loadgen over the run: cpu {units.duration(doc.loadgen_cpu_seconds)}")
    if doc.explanation is not None:
        for line in explanation_lines(doc.explanation):
            console.print(line, highlight=False)
    for r in doc.slos:
        mark = "[green]ok[/]" if r.ok else "[red]VIOLATED[/]"
        console.print(f"SLO {r.slo}: {units.millis(r.value_ms)} {mark}")
    for name, text in doc.definitions.items():
        console.print(f"[dim]{name}: {text}[/]", highlight=False)


_NAMES = {"scheduler": "kube-scheduler", "apiserver": "kube-apiserver"}


def explanation_lines(e: explanation.Explanation) -> list[str]:
    """Why the run went as it did, in a few lines (rich markup)."""
    lines = []
    if (v := e.scheduler) is not None:
        t = v.totals
        pending = ", ".join(f"{q} {t.pending_peak[q]:.0f}" for q in t.pending_peak) or "none"
        line = f"kube-scheduler {v.release}: pending peak {pending}"
        if t.attempts:
            line += (
                f"; algorithm {t.algorithm_mean * 1000:.1f} ms of each attempt's "
                f"{t.attempt_mean * 1000:.1f} ms"
            )
        calls = sum(t.extender_calls.values())
        if calls and t.attempts:
            line += (
                f"; extender {t.outside_points_seconds / t.attempts * 1000:.1f} ms per attempt "
                f"as kube-scheduler saw it, {sum(t.extender_seconds.values()) / calls * 1000:.1f}"
                " ms per call served"
            )
        if t.restarts:
            line += "; restarted at " + ", ".join(f"{at:.1f}s" for at in t.restarts)
            line += " (counters summed over its processes)"
        lines.append(line)
    for name, p in e.cpu.items():
        who = _NAMES.get(name, name)
        if not p.profiled:
            lines.append(f"[yellow]{who} not profiled:[/] {p.reason}")
            continue
        top = sorted(p.categories, key=lambda c: -c.share)
        parts = ", ".join(f"{c.category} {units.percent(c.share)}" for c in top if c.share >= 0.01)
        of_run = "" if p.run_share is None else f", {units.percent(p.run_share)} of the run"
        lines.append(
            f"where {who}'s CPU went ({p.cpu_seconds:.1f} s CPU in "
            f"{p.seconds_profiled:.0f} s profiled{of_run}; named {units.percent(p.coverage)}): "
            f"{parts}"
        )
        if p.reason:
            lines.append(f"[yellow]{who} profiling stopped:[/] {p.reason}")
        lines.extend(f"[yellow]{who} {explanation.unanswered(span)}[/]" for span in p.unanswered)
        lines.extend(f"[yellow]{who} profile unreadable:[/] {u}" for u in p.unreadable)
        if p.busy_slices:
            lines.append(
                f"[yellow]{who}: {p.busy_slices} profile slices skipped[/] (another client "
                "was profiling it)"
            )
    for f in e.findings:
        issue = f" ({f.issue})" if f.issue else ""
        lines.append(f"[bold red]{f.title}[/]{issue}: {f.evidence}; try: {f.knob}")
    return lines
