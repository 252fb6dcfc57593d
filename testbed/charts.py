"""Report charts and pages: plotly figures from plain data, and HTML pages that work offline
(no CDN): a results directory's pages share one plotly.js file beside them (`shared_plotly`,
the only function here that writes), a lone page embeds it. Pure otherwise: builders return
figures and strings; callers write files.

Shared by loadgen's run report, `loadgen compare --html` and the experiment's index page:

    page = charts.page("dra-testbed demo", [
        charts.Section("Pod startup latency", [
            charts.latency_cdfs(charts.Series.points("A", cdf_a), charts.Series.points("B", cdf_b)),
        ]),
        charts.Section("Fleet occupancy", [charts.occupancy_heatmap({"A": occ_a, "B": occ_b})]),
        charts.Section("Targets", [charts.targets_table(rows)]),
    ])
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

# Okabe-Ito: told apart by colour-blind readers too; A is always the first, B the second.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
_EMPTY, _FULL = "#e5e7eb", "#1e3a8a"
# Partly used nodes (the fragmentation) in warm colours, light to dark as they fill.
_PARTIAL = ("#fde68a", "#f59e0b", "#dc2626")
_HEIGHT = 360
_FEW = 20
_ONE_ROW = 4
"""Series whose legend fits in one row above the plot; more go in a column at its right (a
legend wrapping above the plot grows up into the title)."""
_SIDE_LEGEND = {"orientation": "v", "yanchor": "top", "y": 1, "xanchor": "left", "x": 1.02}
_LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "height": _HEIGHT,
    "margin": {"l": 70, "r": 20, "t": 60, "b": 55},
    # The legend sits above the plot, so it never covers a curve or an axis label.
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "hovermode": "x unified",
}
_CONFIG = {"displaylogo": False, "responsive": True}
_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;
color:#1f2937}h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #e5e7eb}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #d1d5db;padding:3px 9px}
th{background:#f3f4f6;text-align:left}td{text-align:right}td.text{text-align:left}
.met{color:#047857;font-weight:600}.missed{color:#b91c1c;font-weight:600}
.open{color:#92400e}.note{color:#4b5563}.chart{margin:.4em 0 1em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{color:#4b5563}
"""


@dataclass(frozen=True)
class Series:
    """One named curve."""

    name: str
    x: Sequence[float]
    y: Sequence[float]

    @classmethod
    def points(cls, name: str, points: Iterable[Sequence[float]]) -> Series:
        """From (x, y) pairs, as loadgen's `cdf_ms` stores them."""
        pts = list(points)
        return cls(name, [p[0] for p in pts], [p[1] for p in pts])


@dataclass(frozen=True)
class Section:
    """A heading and its parts, in order: figures, or HTML fragments (`table`, `note`)."""

    heading: str
    parts: Sequence[go.Figure | str] = field(default_factory=list)


def _figure(title: str, x_title: str, y_title: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        **_LAYOUT, title={"text": title, "x": 0, "xanchor": "left", "y": 0.97, "yanchor": "top"}
    )
    # automargin keeps long tick labels from being clipped.
    fig.update_xaxes(title_text=x_title, automargin=True, rangemode="tozero")
    fig.update_yaxes(title_text=y_title, automargin=True, rangemode="tozero")
    return fig


def latency_cdfs(
    *series: Series,
    title: str = "Pod startup latency",
    x_title: str = "latency (s)",
    scale: float = 1e-3,
) -> go.Figure:
    """Latency CDFs overlaid (A, B, ...): x in milliseconds times `scale` (seconds by
    default), y the fraction of pods at or below it."""
    fig = _figure(title, x_title, "pods at or below")
    for i, s in enumerate(series):
        fig.add_trace(
            go.Scatter(
                x=[v * scale for v in s.x],
                y=list(s.y),
                name=s.name,
                mode="lines",
                line={"color": COLOURS[i % len(COLOURS)], "width": 2, "shape": "hv"},
                hovertemplate="%{y:.1%} of pods within %{x:.3g} s<extra>" + s.name + "</extra>",
            )
        )
    right = max((v * scale for s in series for v in s.x), default=0.0)
    if right > 0:  # room on the right, so a curve ending at the maximum is not on the edge
        fig.update_xaxes(range=[0, right * 1.04])
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    fig.update_layout(hovermode="closest")
    return fig


def over_time(
    *series: Series,
    title: str,
    y_title: str,
    percent: bool = False,
    bands: Sequence[tuple[float, float]] = (),
    x_title: str = "seconds since start",
    marks: Sequence[tuple[float, str]] = (),
) -> go.Figure:
    """Series against time (throughput, GPU allocation, pods), overlaid; `percent` reads
    y as a ratio (0..1); `bands` shades x-intervals (watch gaps); `marks` draws a labelled
    vertical line at each x (a component's restart)."""
    fig = _figure(title, x_title, y_title)
    for i, s in enumerate(series):
        fig.add_trace(
            go.Scatter(
                x=list(s.x),
                y=list(s.y),
                name=s.name,
                # Markers too on short series: a one-interval rate is a single point.
                mode="lines" if len(s.x) > _FEW else "lines+markers",
                # Past the palette, colours come round again dashed, so no two look alike.
                line={
                    "color": COLOURS[i % len(COLOURS)],
                    "width": 2,
                    "dash": "solid" if i < len(COLOURS) else "dash",
                },
            )
        )
    if len(series) > _ONE_ROW:
        fig.update_layout(legend=_SIDE_LEGEND)
    for lo, hi in bands:
        fig.add_vrect(x0=lo, x1=hi, fillcolor="#fecaca", opacity=0.5, line_width=0)
    for x, label in marks:
        fig.add_vline(x=x, line_dash="dot", line_color="#b91c1c", annotation_text=label)
    if percent:
        top = max((y for s in series for y in s.y), default=1.0)
        fig.update_yaxes(tickformat=".0%", range=[0, max(1.02, top * 1.05)])
    return fig


def rate(seconds: Sequence[float], cumulative: Sequence[float]) -> Series:
    """Per-second rate of a cumulative count between consecutive samples (pods scheduled ->
    pods/s), each plotted at the end of its interval; unnamed (name it with `named`)."""
    xs, ys = [], []
    for (t0, c0), (t1, c1) in zip(
        zip(seconds, cumulative, strict=True),
        zip(seconds[1:], cumulative[1:], strict=True),
        strict=False,
    ):
        if t1 > t0:
            xs.append(t1)
            ys.append((c1 - c0) / (t1 - t0))
    return Series("", xs, ys)


def named(series: Series, name: str) -> Series:
    return Series(name, series.x, series.y)


def _grid(cells: list[float | None], cols: int) -> list[list[float | None]]:
    rows = [cells[i : i + cols] for i in range(0, len(cells), cols)]
    if rows:
        rows[-1] = rows[-1] + [None] * (cols - len(rows[-1]))
    return rows


def occupancy_summary(occupancy: Mapping[str, tuple[int, int]]) -> dict[str, int]:
    """Nodes full, partly used and empty, and the free devices stranded on partly used
    nodes, of {node: (devices used, devices)}."""
    full = partial = empty = stranded = 0
    for used, devices in occupancy.values():
        if used <= 0:
            empty += 1
        elif used >= devices:
            full += 1
        else:
            partial += 1
            stranded += devices - used
    return {"full": full, "partly_used": partial, "empty": empty, "stranded": stranded}


# The colour axis has three bands: empty nodes at 0, partly used ones spread over
# [_LO, _HI] by their used share (a warm gradient), full ones at 1; so fragmentation stands
# out against empty and full nodes, and the colour bar shows all three.
_LO, _HI = 0.12, 0.88


def _colour_value(used: int, devices: int) -> float:
    if used <= 0 or devices <= 0:
        return 0.0
    if used >= devices:
        return 1.0
    return _LO + (_HI - _LO) * used / devices


def _colourscale() -> list[list[Any]]:
    return [
        [0.0, _EMPTY],
        [_LO, _EMPTY],
        [_LO, _PARTIAL[0]],
        [0.5, _PARTIAL[1]],
        [_HI, _PARTIAL[2]],
        [_HI, _FULL],
        [1.0, _FULL],
    ]


def _natural(name: str) -> list[Any]:
    # node-2 before node-10: fleets number their nodes without padding.
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def occupancy_heatmap(
    arms: Mapping[str, Mapping[str, tuple[int, int]]],
    *,
    title: str = "Fleet occupancy (each cell a node)",
    device: str = "GPUs",
) -> go.Figure:
    """Per arm, side by side, every node as one cell coloured by how much of its `device`s
    are used: grey empty, yellow to red partly used (fragmentation), dark blue full. `arms` maps
    an arm's name to {node: (used, devices)}; nodes are laid out in natural name order
    (node-2 before node-10), so racks (named in order) stay together."""
    names = list(arms)
    biggest = max((len(o) for o in arms.values()), default=0)
    cols = max(1, math.ceil(math.sqrt(biggest)))
    subtitles = []
    for name in names:
        s = occupancy_summary(arms[name])
        subtitles.append(
            f"<b>{escape(name)}</b>: {s['full']} full, {s['partly_used']} partly used "
            f"({s['stranded']} {device} stranded), {s['empty']} empty"
        )
    fig = make_subplots(
        rows=1, cols=max(1, len(names)), subplot_titles=subtitles, horizontal_spacing=0.06
    )
    for i, name in enumerate(names, start=1):
        occ = arms[name]
        nodes = sorted(occ, key=_natural)
        share: list[float | None] = [_colour_value(*occ[n]) for n in nodes]
        text: list[str | None] = [f"{n}: {occ[n][0]}/{occ[n][1]} {device}" for n in nodes]
        fig.add_trace(
            go.Heatmap(
                z=_grid(share, cols),
                text=_grid(text, cols),  # type: ignore[arg-type]
                hovertemplate="%{text}<extra>" + escape(name) + "</extra>",
                coloraxis="coloraxis",
                xgap=1,
                ygap=1,
            ),
            row=1,
            col=i,
        )
    rows = max(1, math.ceil(biggest / cols))
    fig.update_layout(
        **{**_LAYOUT, "hovermode": "closest"},
        title={"text": title, "x": 0, "xanchor": "left", "y": 0.97, "yanchor": "top"},
        coloraxis={
            "colorscale": _colourscale(),
            "cmin": 0,
            "cmax": 1,
            "colorbar": {
                "title": {"text": f"{device} used"},
                "tickvals": [_LO / 2, 0.5, (1 + _HI) / 2],
                "ticktext": ["empty", "partly used", "full"],
                "len": 0.8,
            },
        },
    )
    fig.update_layout(height=max(_HEIGHT, min(900, 120 + rows * 14)))
    fig.update_annotations(font_size=12)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    for i in range(1, len(names) + 1):  # square cells: a node is a node
        fig.update_yaxes(scaleanchor=f"x{'' if i == 1 else i}", constrain="domain", row=1, col=i)
    return fig


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    text_columns: int = 1,
    verdict_column: int | None = None,
) -> str:
    """An HTML table of already formatted cells: the first `text_columns` left-aligned,
    numbers right-aligned; `verdict_column` coloured by its verdict (met / missed / other)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            classes = [verdict_class(cell)] if i == verdict_column else []
            if i < text_columns or i == verdict_column:
                classes.append("text")
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def verdict_class(verdict: str) -> str:
    """met, missed, plain (same, n/a) or open (inconclusive, not measured) for a verdict's
    wording."""
    v = verdict.strip().lower()
    if v.startswith(("met", "ok", "better")):
        return "met"
    if v.startswith(("missed", "violated", "worse")):
        return "missed"
    if v.startswith(("same", "n/a")):
        return "plain"
    return "open"


def targets_table(targets: Iterable[tuple[str, str, str]]) -> str:
    """(goal, measured, verdict) rows, verdicts coloured."""
    return table(("goal", "measured", "verdict"), targets, text_columns=3, verdict_column=2)


def facts(items: Iterable[tuple[str, str]]) -> str:
    """Key facts as a definition list (never a raw JSON blob)."""
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items)
    return f'<dl class="facts">{body}</dl>'


def note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def figure_html(fig: go.Figure, div_id: str) -> str:
    """A figure's div and the script that draws it (plotly.js itself comes from `page`)."""
    out: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=_CONFIG)
    return f'<div class="chart">{out}</div>'


PLOTLY_JS = "plotly.min.js"


def shared_plotly(page_dir: Path, results_dir: Path | None = None) -> str:
    """The `src` a page in `page_dir` loads plotly.js from: the one copy of its results
    directory -- `results_dir`, else `page_dir`'s parent if that holds one (an arm's
    directory inside a demo's), else `page_dir` -- written there if missing or of another
    plotly version. Relative, so a directory opens from file:// and moves whole."""
    if results_dir is None:
        results_dir = page_dir.parent if (page_dir.parent / PLOTLY_JS).is_file() else page_dir
    target = results_dir / PLOTLY_JS
    script = get_plotlyjs()
    try:
        with target.open(encoding="utf-8") as f:
            current = f.read(200) == script[:200]  # the header names the version
    except OSError:
        current = False
    if not current:
        results_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(script, encoding="utf-8")
        tmp.replace(target)
    return Path(os.path.relpath(target, page_dir)).as_posix()


def page(
    title: str, sections: Sequence[Section], *, intro: str = "", plotly_src: str | None = None
) -> str:
    """A whole page, the sections in order; `intro` is an HTML fragment under the title.
    plotly.js (only when there is a figure) from `plotly_src` (see `shared_plotly`), else
    inlined: a page on its own."""
    parts, n = [], 0
    for s in sections:
        parts.append(f"<h2>{escape(s.heading)}</h2>")
        for p in s.parts:
            if isinstance(p, go.Figure):
                n += 1
                parts.append(figure_html(p, f"chart-{n}"))
            else:
                parts.append(p)
    script = ""
    if n and plotly_src:
        script = f'<script type="text/javascript" src="{escape(plotly_src)}"></script>'
    elif n:
        script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width'><title>{escape(title)}</title>"
        f"<style>{_CSS}</style>{script}</head><body><h1>{escape(title)}</h1>{intro}"
        f"{''.join(parts)}</body></html>\n"
    )


# -- static SVG: a chart a Markdown page can show (no script), byte for byte the same each time --


@dataclass(frozen=True)
class Panel:
    """One plot of a static chart: `lines` drawn with markers (e.g. each size's median),
    `dots` as open circles (e.g. every run), the same colour for the same index."""

    title: str
    y_title: str
    lines: Sequence[Series]
    dots: Sequence[Series] = ()


def _ticks(top: float) -> list[float]:
    """0 and about four round steps up to `top` or just past it."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / 4
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= m * step)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _label(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.3g}"


def svg_panels(panels: Sequence[Panel], *, x_title: str, log_x: bool = True) -> str:
    """Panels side by side over a shared x (log scale by default: sizes from 100 to 5,000
    spread evenly), y from 0, a legend of the first panel's line names above them; every
    number written with fixed decimals, so a test can regenerate the file and compare."""
    width, height, left, right, top, bottom = 460, 330, 62, 28, 58, 46
    xs = sorted({x for p in panels for s in (*p.lines, *p.dots) for x in s.x})
    if not xs:
        return ""
    f = math.log10 if log_x else float
    x0, x1 = f(xs[0]), f(xs[-1])
    span = (x1 - x0) or 1.0
    inner_w, inner_h = width - left - right, height - top - bottom
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * len(panels)}" '
        f'height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width * len(panels)}" height="{height}" fill="white"/>',
    ]
    names = [s.name for s in panels[0].lines]
    for i, name in enumerate(names):
        out.append(
            f'<rect x="{left + 120 * i}" y="30" width="12" height="12" '
            f'fill="{COLOURS[i % len(COLOURS)]}"/><text x="{left + 120 * i + 16}" y="40">'
            f"{escape(name)}</text>"
        )
    for k, p in enumerate(panels):
        ox = width * k + left
        ys = [y for s in (*p.lines, *p.dots) for y in s.y]
        ticks = _ticks(max(ys, default=1.0))
        scale_y = inner_h / ticks[-1]

        def px(x: float, ox: float = ox) -> float:
            return ox + (f(x) - x0) / span * inner_w

        def py(y: float, scale_y: float = scale_y) -> float:
            return top + inner_h - y * scale_y

        out.append(f'<text x="{ox}" y="18" font-weight="bold">{escape(p.title)}</text>')
        for t in ticks:
            out.append(
                f'<line x1="{ox}" x2="{ox + inner_w}" y1="{py(t):.1f}" y2="{py(t):.1f}" '
                f'stroke="#e5e7eb"/><text x="{ox - 6}" y="{py(t) + 4:.1f}" '
                f'text-anchor="end">{_label(t)}</text>'
            )
        for x in xs:
            out.append(
                f'<text x="{px(x):.1f}" y="{top + inner_h + 16}" text-anchor="middle">'
                f"{_label(x)}</text>"
            )
        out.append(
            f'<text x="{ox + inner_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
            f"{escape(x_title)}</text>"
            f'<text transform="translate({ox - 48} {top + inner_h / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle">{escape(p.y_title)}</text>'
        )
        for i, s in enumerate(p.dots):
            colour = COLOURS[i % len(COLOURS)]
            out += [
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="none" stroke="{colour}"/>'
                for x, y in zip(s.x, s.y, strict=True)
            ]
        for i, s in enumerate(p.lines):
            colour = COLOURS[i % len(COLOURS)]
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(s.x, s.y, strict=True))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
            out += [
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}"/>'
                for x, y in zip(s.x, s.y, strict=True)
            ]
    out.append("</svg>")
    return "\n".join(out) + "\n"
