"""scheduler_perf runs as loadgen result files."""

from __future__ import annotations

from pathlib import Path

from loadgen import compare
from loadgen.report import document
from schedperf import dataitems, result, runner, workloads
from schedperf.build import Build

SELECTED = workloads.Selected(
    name="SchedulingWithResourceClaimTemplate/5000pods_500nodes",
    benchmark="BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/5000pods_500nodes",
    config="performance-config.yaml",
    workdir="/m/dra",
    topic="dra",
    allocator="incubating",
    params={"nodesWithDRA": 500, "measurePods": 2500},
)
BUILD = Build(Path("/cache/bin/scheduler-perf-v1.37.2_etcd-v3.7.3_0123456789ab"))


def _outcome(average: float | None, tmp: Path) -> runner.Outcome:
    throughput = (
        None
        if average is None
        else {
            "Average": average,
            "Perc50": average,
            "Perc90": average,
            "Perc95": average,
            "Perc99": average,
        }
    )
    return runner.Outcome(
        figures=dataitems.Figures(throughput=throughput, durations={"x/Perc99": 1.0}),
        log=tmp / "benchmark.log",
        dataitems_file=None,
        returncode=0,
        started=1_800_000_000.0,
        seconds=53.0,
        command=["scheduler_perf.test"],
    )


def test_a_run_with_a_sample_is_a_loadgen_result_that_compare_reads(tmp_path: Path) -> None:
    doc = result.doc(_outcome(69.4, tmp_path), SELECTED, BUILD, "r1", {"cpus": 2})
    assert doc is not None
    path = result.write_run(doc, tmp_path)
    loaded = document.load(path)
    assert loaded.throughput.Average == 69.4
    assert loaded.settings["kubernetes"] == "v1.37.2"
    assert loaded.fleet.nodes == 500
    assert any(p.name.startswith("BenchmarkPerfScheduling_benchmark_") for p in tmp_path.iterdir())
    faster = result.doc(_outcome(80.0, tmp_path), SELECTED, BUILD, "r2", {})
    assert faster is not None
    rows = {r[0]: r for r in compare.rows(loaded, faster)}
    assert rows["throughput Average (pods/s)"][1:3] == (69.4, 80.0)
    # Only what both measured: no latency rows from empty loadgen-side figures.
    assert not any("ms)" in name for name in rows)


def test_a_run_without_a_sample_has_no_result(tmp_path: Path) -> None:
    assert result.doc(_outcome(None, tmp_path), SELECTED, BUILD, "r1", {}) is None
    assert "no SchedulingThroughput sample" in (_outcome(None, tmp_path).problem or "")


def test_the_median_repeat_is_a_real_run_and_skips_those_without_data(tmp_path: Path) -> None:
    repeats = []
    for i, avg in enumerate([70.0, None, 60.0, 90.0]):
        out = _outcome(avg, tmp_path)
        repeats.append(
            result.Repeat(
                dir=tmp_path / f"run-{i}",
                outcome=out,
                result=result.doc(out, SELECTED, BUILD, f"r{i}", {}),
            )
        )
    chosen = result.median(repeats)
    assert chosen is not None and chosen.result is not None
    assert chosen.result.throughput.Average == 70.0
    assert result.median([repeats[1]]) is None
