"""Human units and the report charts, from plain data (no browser: see tests/browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from testbed import charts, units
from testbed.charts import Section, Series


@pytest.mark.parametrize(
    ("value", "text"),
    [(512, "512 B"), (3 * 1024, "3.0 KiB"), (8.05183e8, "767.9 MiB"), (1.5 * 2**30, "1.50 GiB")],
)
def test_sizes_read_in_binary_units(value: float, text: str) -> None:
    assert units.size(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.0004, "400 µs"),
        (0.012, "12 ms"),
        (3.4, "3.40 s"),
        (95.24, "95.2 s"),
        (725, "12m05s"),
    ],
)
def test_durations_pick_their_unit(seconds: float, text: str) -> None:
    assert units.duration(seconds) == text


def test_a_count_names_one_in_the_singular() -> None:
    assert (units.counted(1, "pair"), units.counted(11, "pair")) == ("1 pair", "11 pairs")


def test_figures_are_formatted_by_their_name() -> None:
    assert units.by_name("rss_bytes", 8.05183e8) == "767.9 MiB"
    assert units.label("rss_growth_bytes") == "rss growth"
    assert units.by_name("cpu_seconds", 2.5) == "2.50 s"
    assert units.by_name("peak_allocation_ratio", 0.256) == "25.6 %"
    assert units.by_name("schedule_attempts", 12345.0) == "12,345"
    assert units.millis(1500) == "1.50 s"
    assert units.change(None) == "n/a" and units.change(12.345) == "+12.3 %"


def _trace_data(fig: Any) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(fig.to_json())["data"]
    return data


def test_latency_cdfs_overlay_a_and_b_in_seconds() -> None:
    fig = charts.latency_cdfs(
        Series.points("A", [(100.0, 0.5), (200.0, 1.0)]),
        Series.points("B", [(300.0, 1.0)]),
    )
    a, b = _trace_data(fig)
    assert (a["name"], a["x"], a["y"]) == ("A", [0.1, 0.2], [0.5, 1.0])
    assert b["name"] == "B" and b["x"] == [0.3]
    assert a["line"]["color"] != b["line"]["color"]


def test_rate_turns_a_cumulative_count_into_pods_per_second() -> None:
    r = charts.rate([0.0, 1.0, 2.0, 4.0], [0.0, 10.0, 10.0, 30.0])
    assert (list(r.x), list(r.y)) == ([1.0, 2.0, 4.0], [10.0, 0.0, 10.0])


def test_a_long_legend_goes_beside_the_plot_and_no_two_series_look_alike() -> None:
    def chart(n: int) -> Any:
        return charts.over_time(
            *(Series(f"s{i}", [0, 1], [0, i]) for i in range(n)), title="t", y_title="y"
        )

    assert chart(2).layout.legend.orientation == "h"  # one row above the plot
    wide = chart(len(charts.COLOURS) + 1)
    assert wide.layout.legend.orientation == "v" and wide.layout.legend.x > 1
    looks = {(t.line.color, t.line.dash) for t in wide.data}
    assert len(looks) == len(wide.data)


def test_occupancy_counts_full_partly_used_and_empty_nodes() -> None:
    occ = {"n0": (8, 8), "n1": (3, 8), "n2": (0, 8), "n3": (7, 8)}
    assert charts.occupancy_summary(occ) == {
        "full": 1,
        "partly_used": 2,
        "empty": 1,
        "stranded": 6,
    }
    fig = charts.occupancy_heatmap({"A": occ, "B": {"n0": (8, 8)}})
    a, b = _trace_data(fig)
    # 4 nodes: a 2 x 2 grid in name order: full 1, empty 0, partly used in between by share.
    (full, three), (empty, seven) = a["z"]
    assert (full, empty) == (1.0, 0.0) and 0 < three < seven < 1
    assert b["z"] == [[1.0, None]]  # the smaller fleet padded to the same grid width
    titles = [x["text"] for x in json.loads(fig.to_json())["layout"]["annotations"]]
    assert titles[0].startswith("<b>A</b>: 1 full, 2 partly used (6 GPUs stranded), 1 empty")


def test_tables_escape_cells_and_colour_verdicts() -> None:
    out = charts.targets_table(
        [("fit <b>", "1.2x", "met"), ("x", "y", "missed (single run)"), ("z", "-", "not measured")]
    )
    assert "fit &lt;b&gt;" in out
    assert [m for m in re.findall(r'class="(\w+) text"', out) if m != "text"] == [
        "met",
        "missed",
        "open",
    ]


def test_a_page_inlines_plotly_once_and_draws_every_figure() -> None:
    fig = charts.over_time(Series("a", [0, 1], [0, 1]), title="t", y_title="y")
    page = charts.page("T <x>", [Section("one", [fig, charts.note("n")]), Section("two", [fig])])
    assert page.count("<script") == 3  # plotly.js, then one per figure
    assert page.count("Plotly.newPlot") == 2 and 'id="chart-2"' in page
    assert "<script src" not in page and "<title>T &lt;x&gt;</title>" in page
    # Without figures, no plotly.js: a table-only page stays small.
    assert "<script" not in charts.page("T", [Section("t", [charts.note("n")])])


def test_occupancy_lays_nodes_out_in_natural_order() -> None:
    occ = {f"node-{i}": (8 if i >= 2 else 0, 8) for i in range(12)}
    (trace,) = _trace_data(charts.occupancy_heatmap({"A": occ}))
    # node-0, node-1 empty first, then node-2..node-11 full (not node-10, node-11 after node-1)
    assert [v for row in trace["z"] for v in row if v is not None][:3] == [0.0, 0.0, 1.0]


def test_a_results_directory_shares_one_plotly_js(tmp_path: Path) -> None:
    """The index and each arm's page load the directory's one copy, by a relative path (the
    directory opens from file:// and moves whole); a second page writes no second copy."""
    assert charts.shared_plotly(tmp_path, tmp_path) == charts.PLOTLY_JS
    shared = tmp_path / charts.PLOTLY_JS
    written = shared.stat().st_mtime_ns
    arm = tmp_path / "extender-on-0"
    arm.mkdir()
    assert charts.shared_plotly(arm) == f"../{charts.PLOTLY_JS}"
    assert shared.stat().st_mtime_ns == written
    assert [p.name for p in arm.iterdir()] == []
    fig = charts.latency_cdfs(Series("A", [1.0], [1.0]))
    text = charts.page("t", [Section("s", [fig])], plotly_src="../plotly.min.js")
    assert '<script type="text/javascript" src="../plotly.min.js"></script>' in text
    assert len(text) < 100_000  # plotly.js itself is ~4.6 MB
    lone = tmp_path / "other" / "run"
    assert charts.shared_plotly(lone) == charts.PLOTLY_JS  # no shared copy above: its own


def test_a_static_svg_chart_draws_each_line_and_run_and_is_the_same_each_time() -> None:
    lines = [charts.Series("a", [100, 1000], [1.0, 4.0]), charts.Series("b", [100], [2.0])]
    dots = [charts.Series("a", [100, 1000, 1000], [1.0, 3.0, 5.0])]
    panels = [charts.Panel("cost", "ms", lines, dots), charts.Panel("rate", "pods/s", lines)]
    svg = charts.svg_panels(panels, x_title="nodes")
    assert svg == charts.svg_panels(panels, x_title="nodes")
    assert svg.count("<polyline") == 4 and svg.count('fill="none" stroke="#0072B2"/>') == 3
    first = re.search(r'<polyline points="([\d.]+),([\d.]+) ([\d.]+),([\d.]+)"', svg)
    assert first is not None
    x0, y0, x1, y1 = (float(v) for v in first.groups())
    assert x1 > x0 and y1 < y0  # right for more nodes, up for more cost
    assert ">6<" in svg and ">1,000<" in svg  # y in steps of 2 past the highest run (5); x ticks
    assert charts.svg_panels([charts.Panel("none", "ms", [])], x_title="x") == ""
