"""The report pages in a real browser (headless Chromium over the DevTools protocol): each
loads from a file with no console error, draws every chart it holds, and each chart's pixels
show coloured marks (not a blank canvas). Screenshots land in the test's tmp_path.

Needs Chromium (Debian's `chromium`; hack/install-test-deps.sh installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiment.demo import report
from experiment.demo.project_targets import Target
from experiment.demo.summary import Row
from experiment.measure.arms import Arm
from experiment.measure.figures import Figure
from loadgen import compare, outcome, records
from loadgen.report import document, html
from testbed import charts
from testbed.charts import Section, Series
from tests.support import cdp, png
from tests.support import synthetic_run as synthetic

# Each chart's plot area must show this many saturated pixels (curves, heatmap cells):
# a chart whose script failed is a white box with at most grey axes.
_MIN_MARKED_PIXELS = 150


def _demo_index(tmp_path: Path) -> str:
    """The demo's index page as `experiment.demo.report.write` builds it, over two arms' real
    loadgen result files: targets, the side-by-side table, A/B CDFs, throughput and GPU
    allocation over time, the fleet occupancy side by side."""
    arms = [Arm("extender", "on", "pods"), Arm("extender", "off", "pods")]
    for arm, startup_ms in zip(arms, (1000.0, 1500.0), strict=True):
        (tmp_path / arm.name).mkdir()
        document.write(document.build(_run(startup_ms)), tmp_path / arm.name)
    figure = Figure([12.0])
    rows = [Row("extender", "throughput", "pods/s", "on", figure, "off", figure)]
    targets = [Target("p99 within 10 %", "ratio 1.31", "missed (single run)")]
    index = report.write(tmp_path, rows, {"nodes": 36, "pods": 40}, arms, targets, [])
    return index.read_text()


def _run(startup_ms: float) -> outcome.RunResult:
    """40 pods, with a timeline sampled every 0.2 s (the synthetic run's has two samples)."""
    res = synthetic.run_result(startup_ms=startup_ms, pods=40)
    res.records.timeline = [
        records.Sample(100.0 + i / 5, 4 * i, 4 * i, 4 * i, 0, 4 * i) for i in range(11)
    ]
    # 5 full nodes, then partly used ones (more of them the slower run), then empty ones.
    partly = int(startup_ms / 100)
    res.records.fleet.peak_occupancy = {
        f"node-{i:02d}": ((8 if i < 5 else 3 if i < 5 + partly else 0), 8) for i in range(36)
    }
    return res


def _pages(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    """Each page written to a file, with the number of charts it must draw."""
    prev = document.build(_run(startup_ms=1000.0))
    cur = document.build(_run(startup_ms=1500.0))
    pages = {
        # CDFs, pods, throughput, GPU allocation, occupancy.
        "run": (html.render(cur), 5),
        # 5 phases' CDFs (run_to_watch is zero by definition), throughput, GPU allocation,
        # occupancy A next to B.
        "compare": (html.render_comparison(prev, cur, compare.formatted(prev, cur)), 8),
        # The index loads the directory's one plotly.js (beside it).
        "experiment": (_demo_index(tmp_path), 4),
    }
    out = {}
    for name, (text, figures) in pages.items():
        path = tmp_path / f"{name}.html"
        path.write_text(text)
        out[name] = (path, figures)
    # An arm's page inside the demo's directory loads the same file, one level up.
    arm = html.write(cur, tmp_path / "extender-on-0")
    assert f'src="../{charts.PLOTLY_JS}"' in arm.read_text()
    out["arm"] = (arm, 5)
    return out


def _marked(pixels: list[list[png.Pixel]]) -> int:
    # Saturated pixels: curves and heatmap cells, never the white background, grey grid or
    # black text.
    return sum(1 for row in pixels for r, g, b in row if max(r, g, b) - min(r, g, b) > 60)


_CHART_BOXES = """JSON.stringify([...document.querySelectorAll('.js-plotly-plot')].map(d => {
  const r = d.getBoundingClientRect();
  return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
          svgs: d.querySelectorAll('svg.main-svg').length};
}))"""


@pytest.mark.parametrize("name", ["run", "compare", "experiment", "arm"])
async def test_a_report_page_loads_cleanly_and_draws_its_charts(name: str, tmp_path: Path) -> None:
    binary = cdp.find_browser()
    assert binary, "no Chromium on PATH: run hack/install-test-deps.sh"
    path, figures = _pages(tmp_path)[name]
    async with cdp.browser(binary) as page:
        await page.open(path.as_uri())
        boxes = json.loads(await page.evaluate(_CHART_BOXES))
        assert len(boxes) == figures
        assert all(b["svgs"] >= 1 and b["w"] > 300 and b["h"] > 200 for b in boxes), boxes
        await page.screenshot(tmp_path / f"{name}.png")
        for i, b in enumerate(boxes):
            shot = await page.screenshot(
                tmp_path / f"{name}-chart-{i + 1}.png", clip=(b["x"], b["y"], b["w"], b["h"])
            )
            marked = _marked(png.read(shot))
            assert marked >= _MIN_MARKED_PIXELS, f"{shot.name}: {marked} coloured pixels"
        assert page.errors == [], page.errors


async def test_the_check_sees_a_chart_that_failed_to_draw(tmp_path: Path) -> None:
    # The same page with plotly.js cut out: the browser reports the error and no chart draws,
    # so the test above can fail.
    binary = cdp.find_browser()
    assert binary, "no Chromium on PATH: run hack/install-test-deps.sh"
    text = charts.page("t", [Section("s", [charts.latency_cdfs(Series("A", [1.0], [1.0]))])])
    start = text.index('<script type="text/javascript">')
    end = text.index("</script>", start) + len("</script>")
    broken = tmp_path / "broken.html"
    broken.write_text(text[:start] + text[end:])
    async with cdp.browser(binary) as page:
        await page.open(broken.as_uri())
        assert any("Plotly is not defined" in e for e in page.errors), page.errors
        assert json.loads(await page.evaluate(_CHART_BOXES)) == []
