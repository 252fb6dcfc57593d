"""PFN's release-to-release table."""

from __future__ import annotations

from pathlib import Path

from loadgen.report import document
from schedperf import dataitems, result, runner, table, workloads
from schedperf.build import Build

SELECTED = workloads.Selected(
    name="w",
    benchmark="BenchmarkPerfScheduling/C/w",
    config="c.yaml",
    workdir="/",
    topic="dra",
    allocator="",
)


def _doc(average: float) -> document.ResultDoc | None:
    outcome = runner.Outcome(
        figures=dataitems.Figures(throughput=dict.fromkeys(dataitems.THROUGHPUT_STATS, average)),
        log=Path("log"),
        dataitems_file=None,
        returncode=0,
        started=0.0,
        seconds=1.0,
        command=[],
    )
    return result.doc(outcome, SELECTED, Build(Path("/x")), "r", {})


def test_each_release_and_the_change_to_the_next_and_no_data_is_not_zero() -> None:
    text = table.markdown([("v1.35.8", _doc(50.0)), ("v1.36.4", _doc(40.0)), ("v1.37.2", None)])
    lines = text.splitlines()
    assert lines[0] == (
        "| Metric | v1.35.8 | v1.36.4 | v1.37.2 | v1.35.8 → v1.36.4 | v1.36.4 → v1.37.2 |"
    )
    assert lines[2] == (
        "| SchedulingThroughput Average (pods/s) | 50.0 | 40.0 | no data | -20.0 % | n/a |"
    )
