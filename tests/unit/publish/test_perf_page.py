"""docs/results/scheduler-perf.md against the kept curves and baselines: the page and its chart
are the ones the documents give, each document is its source's, and every figure on the page
is derived again here independently (statistics, numpy's least squares, scipy's t)."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from publish import kept, kept_baselines, kept_curves, perf_page, results_page
from tests.support import children

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "docs" / "results"
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _curves() -> list[kept_curves.Curve]:
    return kept_curves.load_all(RESULTS / "curves")


def _baselines() -> list[kept_baselines.Baseline]:
    return kept_baselines.load_all(RESULTS / "baselines")


def _numbers(cell: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(cell)]


def _close(printed: float, exact: float) -> bool:
    """Equal as the page prints three significant digits (whole numbers from 100 up)."""
    return abs(printed - exact) <= max(0.005 * abs(exact), 0.5 if abs(exact) >= 100 else 0.0)


def _section(text: str, heading: str) -> list[str]:
    part = text.split(f"\n{heading}\n", 1)[1]
    return part.split("\n### ", 1)[0].split("\n## ", 1)[0].splitlines()


def test_the_page_and_chart_are_the_ones_the_kept_documents_give() -> None:
    assert _curves() and _baselines()
    front, pages = results_page.written(RESULTS)
    against = kept.load_all(RESULTS / perf_page.AGAINST)
    where = f"docs/results/{perf_page.AGAINST}"
    runs = [ln for d in against for ln in results_page.section(d, where)]
    assert pages == {
        RESULTS / perf_page.PAGE: perf_page.page(_curves(), _baselines(), runs),
        RESULTS / perf_page.CHART: perf_page.chart(_curves()),
    }
    for path, text in pages.items():
        assert path.read_text() == text, f"{path.name} is stale: run `testbed results`"
    assert f"(docs/results/{perf_page.PAGE})" in front


def test_each_kept_curve_is_its_source_file_s_runs() -> None:
    for c in _curves():
        source = json.loads((ROOT / c.source).read_text())
        meta = {k: getattr(c, k) for k in ("id", "commit", "date", "machine", "source")}
        assert kept_curves.keep(source, **meta) == c
        assert len(c.runs) == len(source["points"])


def _growth(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares from scratch: the slope and its 95 % interval."""
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    mx = statistics.fmean(xs)
    se = math.sqrt(residual / (len(xs) - 2) / sum((x - mx) ** 2 for x in xs))
    half = float(stats.t.ppf(0.975, len(xs) - 2)) * se
    return float(slope), float(slope) - half, float(slope) + half


def test_every_curve_figure_on_the_page_is_derived_again_from_the_runs() -> None:
    text = (RESULTS / perf_page.PAGE).read_text()
    for c in _curves():
        lines = _section(text, f"### Kubernetes {c.release}")
        rows = [ln for ln in lines if re.match(r"\| \d", ln)]
        sizes = sorted({r.nodes for r in c.runs})
        assert len(rows) == len(sizes)
        for row, n in zip(rows, sizes, strict=True):
            runs = sorted((r for r in c.runs if r.nodes == n), key=lambda r: r.repeat)
            nodes, count, load, cpu, tput = row.strip("| ").split(" | ")
            assert _numbers(nodes) == [n] and _numbers(count) == [len(runs)]
            assert _numbers(load) == pytest.approx([r.load_1m for r in runs], abs=0.05)
            for cell, values in (
                (cpu, [r.cpu_ms_per_pod for r in runs]),
                (tput, [r.throughput for r in runs if r.throughput is not None]),
            ):
                expected = [statistics.median(values)]
                if len(values) > 1:
                    expected += [min(values), max(values)]
                printed = _numbers(cell.replace(")-", ") ").replace("-", " "))
                assert all(_close(p, e) for p, e in zip(printed, expected, strict=True)), cell
        for figure, (name, _) in kept_curves.FIGURES.items():
            pts = [(r.nodes, getattr(r, figure)) for r in c.runs if getattr(r, figure)]
            slope, low, high = _growth([float(x) for x, _ in pts], [float(y) for _, y in pts])
            g = c.growth[figure]
            assert (g.per_node, g.low, g.high) == pytest.approx((slope, low, high), rel=1e-5)
            (said,) = [ln for ln in lines if ln.startswith(f"- {name}:")]
            printed = _numbers(said.split(":", 1)[1].replace("1,000 nodes", ""))[:3]
            assert all(
                _close(p, e * 1000) for p, e in zip(printed, (slope, low, high), strict=True)
            ), said


def test_the_page_says_how_many_runs_each_point_has() -> None:
    text = " ".join((RESULTS / perf_page.PAGE).read_text().split())
    for c in _curves():
        counts = [sum(r.nodes == n for r in c.runs) for n in {r.nodes for r in c.runs}]
        assert f"{c.release} {min(counts)}-{max(counts)} (" in text
    assert "three at every point is the target" in text


def test_a_kept_curve_whose_growth_is_not_its_runs_is_refused(tmp_path: Path) -> None:
    c = _curves()[0]
    doc: dict[str, Any] = c.model_dump(mode="json")
    doc["growth"]["cpu_ms_per_pod"]["per_node"] *= 2
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(kept.KeptError, match="growth is not the runs' least squares"):
        kept_curves.load(tmp_path / "c.json")


def _threshold(averages: list[float]) -> float:
    """The rule from scratch: min(0.8 x median, lowest), two significant digits, down."""
    v = min(0.8 * statistics.median(averages), min(averages))
    digits = 1 - math.floor(math.log10(v))
    return float(math.floor(v * 10**digits + 1e-9) / 10**digits)


@pytest.mark.parametrize(
    ("averages", "expected"),
    [([70.0, 72.0, 80.0], 57.0), ([10.1, 8.6, 9.0], 7.2), ([5.0, 1.5, 5.2], 1.5), ([130.0], 100)],
)
def test_a_threshold_is_the_lower_of_four_fifths_of_the_median_and_the_lowest(
    averages: list[float], expected: float
) -> None:
    assert kept_baselines.threshold(averages) == pytest.approx(expected)
    assert _threshold(averages) == pytest.approx(expected)


def test_the_kept_baselines_and_the_page_agree() -> None:
    text = (RESULTS / perf_page.PAGE).read_text()
    for b in _baselines():
        lines = _section(text, f"### Thresholds for Kubernetes {b.release}")
        rows = {ln.split(" | ")[0].strip("| "): ln for ln in lines if re.match(r"\| [A-Z]", ln)}
        assert set(rows) == {w.name for w in b.workloads}
        for w in b.workloads:
            averages = [r.average for r in w.runs]
            assert w.threshold == pytest.approx(_threshold(averages))
            _, count, _, average, _, threshold = rows[w.name].strip("| ").split(" | ")
            assert _numbers(count) == [len(w.runs)]
            assert _close(_numbers(average)[0], statistics.median(averages))
            assert float(threshold) == pytest.approx(w.threshold)
            # ... and the YAML to paste into upstream's file says the same
            yaml = f"  - name: {w.name.split('/', 1)[1]}  # {w.name.split('/')[0]}\n"
            assert f"{yaml}    threshold:\n      {w.topic}: {w.threshold:g} #" in text
        for name in b.not_measured:  # listed, and given no threshold
            assert any(ln.startswith(f"- {name}: ") for ln in lines)
            assert name not in rows


def _perf_result(workload: str, average: float, **settings: Any) -> dict[str, Any]:
    return {
        "run_id": "r",
        "scenario": {"source": "scheduler_perf", "workload": workload},
        "settings": {
            "kubernetes": "v1.37.2",
            "gomaxprocs": 2,
            "load_average_1m_5m_15m": [3.0, 2.0, 1.0],
            "command": ["scheduler_perf.test", "-topic=dra_partitionabledevices"],
            **settings,
        },
        "throughput": {"Average": average, "Perc50": average},
        "duration_seconds": 30.0,
    }


META: dict[str, Any] = {"id": "b", "command": "c", "commit": "abc1234", "date": "2026-11-27"}
META |= {"machine": "m", "source": "s"}


def test_keep_baseline_groups_the_runs_per_workload_and_refuses_a_mixture() -> None:
    results = [_perf_result("Partitionable/empty_500nodes", v) for v in (10.0, 8.0, 9.0)]
    doc = kept_baselines.keep(results, **META)
    (w,) = doc.workloads
    assert [r.average for r in w.runs] == [10.0, 8.0, 9.0] and w.threshold == 7.2
    assert w.file == "dra/partitionabledevices/performance-config.yaml"
    with pytest.raises(kept.KeptError, match="one release and GOMAXPROCS"):
        kept_baselines.keep([*results, _perf_result("x/y", 1.0, gomaxprocs=4)], **META)
    with pytest.raises(kept.KeptError, match="not a `testbed perf run` result"):
        kept_baselines.keep([{"scenario": {"source": "loadgen"}}], **META)


def test_keep_curve_refuses_what_is_not_a_curve_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"kind": "LoadgenResult"}')
    flags = ("--id", "x", "--commit", "c", "--date", "d", "--machine", "m")
    out = children.testbed(
        "results",
        "--kept",
        str(tmp_path / "k"),
        "curve",
        str(tmp_path / "x.json"),
        *flags,
        home=tmp_path,
    )
    assert out.returncode == 2 and "not a cost curve" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "k").exists()
