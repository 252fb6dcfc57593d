"""A self-contained HTML report: inline SVG plots and CSS, no external JS or CSS.

Latency CDFs per CL2 phase, a timeline of pods seen / scheduled / running / finished with the
fleet's GPU allocation ratio, per-phase tables, claim placement quality and gang spans.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from loadgen import stats
from loadgen.report.document import ResultDoc, Summary

_W, _H, _PAD = 640, 260, 44
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}
td{text-align:right}td:first-child{text-align:left}svg{background:#fafafa;margin:.5em 0}
.bad{color:#b00}.ok{color:#070}
"""


def _ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0]
    return [hi * i / n for i in range(n + 1)]


def _plot(
    series: list[tuple[str, list[tuple[float, float]]]],
    *,
    x_label: str,
    y_label: str,
    y_max: float | None = None,
    bands: list[tuple[float, float]] | None = None,
) -> str:
    """A line plot of several (label, points) series as an SVG string; `bands` shades
    x-intervals (watch gaps)."""
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_hi = max(xs, default=1.0) or 1.0
    y_hi = y_max if y_max is not None else (max(ys, default=1.0) or 1.0)

    def sx(x: float) -> float:
        return _PAD + (_W - 2 * _PAD) * x / x_hi

    def sy(y: float) -> float:
        return _H - _PAD + (2 * _PAD - _H) * y / y_hi

    # The legend is a row under the plot, so it never hides a curve.
    parts = [f'<svg width="{_W}" height="{_H + 20}" xmlns="http://www.w3.org/2000/svg">']
    parts.append(
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>'
    )
    for lo, hi in bands or []:
        x0, x1 = sx(max(0.0, min(lo, x_hi))), sx(max(0.0, min(hi, x_hi)))
        parts.append(
            f'<rect x="{x0:.1f}" y="{_PAD}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{_H - 2 * _PAD}" fill="#fdd" class="gap"/>'
        )
    for t in _ticks(x_hi):
        parts.append(
            f'<text x="{sx(t):.1f}" y="{_H - _PAD + 14}" font-size="10" '
            f'text-anchor="middle">{t:.3g}</text>'
        )
    for t in _ticks(y_hi):
        parts.append(
            f'<text x="{_PAD - 4}" y="{sy(t) + 3:.1f}" font-size="10" '
            f'text-anchor="end">{t:.3g}</text>'
        )
    parts.append(
        f'<text x="{_W / 2}" y="{_H - 8}" font-size="11" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text x="12" y="{_H / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {_H / 2})">{escape(y_label)}</text>'
    )
    for i, (label, pts) in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        if pts:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>'
            )
        parts.append(
            f'<text x="{_PAD + 105 * i}" y="{_H + 12}" font-size="11" '
            f'fill="{colour}">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _latency_table(latency: dict[str, Summary]) -> str:
    rows = ["<tr><th>phase</th><th>n</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>"]
    for metric in stats.PHASES:
        s = latency[metric]
        rows.append(
            f"<tr><td>{metric}</td><td>{s.count}</td><td>{s.Perc50:.0f}</td>"
            f"<td>{s.Perc90:.0f}</td><td>{s.Perc99:.0f}</td><td>{s.max:.0f}</td></tr>"
        )
    return "<table>" + "".join(rows) + "</table>"


def _header(doc: ResultDoc) -> list[str]:
    state = "interrupted" if doc.interrupted else ("failed" if doc.error else "complete")
    return [
        f"<h1>loadgen {escape(str(doc.scenario['name']))} — run {escape(doc.run_id)}</h1>",
        f"<p>{escape(str(doc.scenario.get('description', '')))}</p>",
        f"<p>State: <b>{state}</b>{' — ' + escape(doc.error) if doc.error else ''}. "
        f"Started {escape(doc.started_at)}, {doc.duration_seconds:.1f} s, fleet "
        f"{doc.fleet.nodes} nodes / {doc.fleet.gpus} GPUs.</p>",
    ]


def _counts(doc: ResultDoc) -> list[str]:
    rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in doc.counts.model_dump().items())
    return [f"<h2>Counts</h2><table>{rows}</table>"]


def _pending(doc: ResultDoc) -> list[str]:
    if not doc.pending and not doc.fleet.held_by_others_at_start:
        return []
    out = []
    if doc.pending:
        rows = "".join(
            f"<tr><td>{escape(g.reason)}</td><td>{g.pods}</td></tr>" for g in doc.pending
        )
        out.append(
            "<h2>Pods never scheduled</h2><table><tr><th>scheduler's reason</th>"
            f"<th>pods</th></tr>{rows}</table>"
        )
    if doc.fleet.held_by_others_at_start:
        rows = "".join(
            f"<tr><td>{escape(ns)}</td><td>{n}</td></tr>"
            for ns, n in sorted(doc.fleet.held_by_others_at_start.items())
        )
        out.append(
            "<h2>GPUs held by other namespaces at start</h2><p>Not this run's: left out of "
            f"its allocation figures.</p><table>{rows}</table>"
        )
    return out


def _watch_gaps(doc: ResultDoc) -> list[str]:
    # Shown before the latencies: readers must know which of them include an outage.
    if not doc.watch_gaps:
        return []
    items = "".join(f'<li class="bad">{escape(g.describe())}</li>' for g in doc.watch_gaps)
    return [f"<h2>Watch gaps</h2><ul>{items}</ul><p>Shaded red in the timeline.</p>"]


def _latency(doc: ResultDoc) -> list[str]:
    return [
        "<h2>Pod startup latency (ms, nearest-rank)</h2>",
        _latency_table(dict(doc.latency_ms)),
        _plot(
            [(m, [(x, y) for x, y in doc.cdf_ms.get(m, [])]) for m in stats.PHASES],
            x_label="latency (ms)",
            y_label="fraction of pods",
            y_max=1.0,
        ),
    ]


def _slos(doc: ResultDoc) -> list[str]:
    if not doc.slos:
        return []
    rows = [
        f"<tr><td>{escape(s.slo)}</td><td>{s.value_ms:.0f} ms</td>"
        f'<td class="{"ok" if s.ok else "bad"}">{"ok" if s.ok else "violated"}</td></tr>'
        for s in doc.slos
    ]
    return ["<h2>SLOs</h2><table>", *rows, "</table>"]


def _timeline(doc: ResultDoc) -> list[str]:
    t = doc.timeline
    pods = [
        (name, list(zip(t.seconds, map(float, values), strict=True)))
        for name, values in (
            ("seen", t.seen),
            ("scheduled", t.scheduled),
            ("running", t.running),
            ("finished", t.finished),
        )
    ]
    gaps = [
        (g.start_seconds, doc.duration_seconds if g.end_seconds is None else g.end_seconds)
        for g in doc.watch_gaps
    ]
    allocation = [
        ("GPU allocation ratio", list(zip(t.seconds, t.gpu_allocation_ratio, strict=True)))
    ]
    return [
        "<h2>Timeline</h2>",
        _plot(pods, x_label="seconds since start", y_label="pods", bands=gaps),
        _plot(
            allocation,
            x_label="seconds since start",
            y_label="allocated / fleet GPUs",
            y_max=1.0,
        ),
    ]


def _throughput(doc: ResultDoc) -> list[str]:
    rows = "".join(f"<tr><td>{k}</td><td>{v:.1f}</td></tr>" for k, v in doc.throughput)
    return [f"<h2>Scheduling throughput (pods/s)</h2><table>{rows}</table>"]


def _phases(doc: ResultDoc) -> list[str]:
    if len(doc.phases) < 2:
        return []
    out = []
    for p in doc.phases:
        out += [
            f"<h2>Phase {escape(p.name)} ({p.kind}, {p.objects} objects, "
            f"{p.duration_seconds:.1f} s)</h2>",
            _latency_table(dict(p.latency_ms)),
        ]
    return out


def _claims(doc: ResultDoc) -> list[str]:
    cl = doc.claims
    return [
        "<h2>Claims and placement</h2><table>"
        f"<tr><td>claims allocated</td><td>{cl.allocated} / {cl.claims}</td></tr>"
        f"<tr><td>allocation p50 / p99 (ms)</td><td>{cl.allocation_ms.Perc50:.0f} / "
        f"{cl.allocation_ms.Perc99:.0f}</td></tr>"
        f"<tr><td>GPU-NIC pairs on one PCIe root</td><td>{cl.pcie_aligned_pairs} / "
        f"{cl.gpu_nic_pairs}</td></tr>"
        f"<tr><td>GPU-NIC pairs on one NUMA node</td><td>{cl.numa_aligned_pairs} / "
        f"{cl.gpu_nic_pairs}</td></tr>"
        f"<tr><td>peak fleet GPU allocation</td><td>{doc.fleet.peak_allocation_ratio:.0%}"
        "</td></tr>"
        f"<tr><td>physical GPUs busy at peak (pods per busy GPU)</td>"
        f"<td>{doc.fleet.peak_gpus_busy} ({doc.fleet.pods_per_busy_gpu:g})</td></tr></table>"
    ]


def _gangs(doc: ResultDoc) -> list[str]:
    if not doc.gangs:
        return []
    rows = [
        f"<tr><td>{escape(g.name)}</td><td>{g.pods}</td><td>{g.nodes}</td>"
        f"<td>{g.racks}</td><td>{g.blocks}</td></tr>"
        for g in doc.gangs
    ]
    head = "<tr><th>gang</th><th>pods</th><th>nodes</th><th>racks</th><th>blocks</th></tr>"
    return ["<h3>Gangs</h3><table>", head, *rows, "</table>"]


def _definitions(doc: ResultDoc) -> list[str]:
    if not doc.definitions:
        return []
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in doc.definitions.items())
    return [f"<h2>Definitions</h2><dl>{items}</dl>"]


# The report's sections, in page order; each renders one part of the document.
_SECTIONS = (
    _header,
    _counts,
    _pending,
    _watch_gaps,
    _latency,
    _slos,
    _timeline,
    _throughput,
    _phases,
    _claims,
    _gangs,
    _definitions,
)


def render(doc: ResultDoc) -> str:
    """The whole page: every section in order, inside one self-contained document."""
    body = "".join(part for section in _SECTIONS for part in section(doc))
    title = f"loadgen {escape(doc.run_id)}"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def write(doc: ResultDoc, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.html"
    path.write_text(render(doc))
    return path
