"""`testbed perf` end to end on the default release: the scheduler_perf wrapper compiles
against the pinned module, runs a small workload of our fleet's shapes in-process and writes
a loadgen result; a workload too short for a sample reports no data.

Cost: the first run on a machine compiles the benchmark binary (`go test -c` of
tools/k8s/scheduler-perf, ~4 CPU-minutes: 3-8 min on 2 cores, sharing the control plane's
Go build cache; .ci/run builds it before the tests), then each run here takes ~10-30 s.
No cluster is needed: scheduler_perf starts its own etcd and API server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.report import document

pytestmark = pytest.mark.timeout(1800)


def _perf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed", "perf", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_fleet_workload_runs_in_process_and_writes_a_loadgen_result(tmp_path: Path) -> None:
    # 200 pods on 50 nodes of 8 GPUs: several 1 s throughput samples even on a fast machine.
    proc = _perf(
        "run", "fleet/dgx-h100", "--nodes", "50", "--pods", "200", "--output-dir", str(tmp_path)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = document.load(tmp_path / "result.json")
    assert doc.throughput.Average > 0
    assert doc.scenario["benchmark"] == "BenchmarkPerfScheduling/Fleet/dgx-h100_200pods_50nodes"
    assert doc.settings["kubernetes"] == "v1.37.2"
    # The plugin durations came from scheduler_perf's own DataItems.
    durations = doc.metrics["scheduler_perf"].summary
    assert any(
        k.startswith("scheduler_framework_extension_point_duration_seconds") for k in durations
    )
    (throughput,) = tmp_path.glob("BenchmarkPerfScheduling_benchmark_dra-testbed_*.json")
    assert "SchedulingThroughput" in throughput.read_text()


def test_a_run_without_a_throughput_sample_reports_no_data(tmp_path: Path) -> None:
    # Upstream's `fast` workload schedules 10 pods within one sampling interval.
    proc = _perf("run", "SchedulingWithResourceClaimTemplate/fast", "--output-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no data" in proc.stdout
    summary = json.loads((tmp_path / "repeats.json").read_text())
    assert summary["repeats"][0]["throughput"] is None
    assert not (tmp_path / "result.json").exists()


def test_an_unknown_workload_names_what_exists_and_exits_2(tmp_path: Path) -> None:
    proc = _perf("run", "SchedulingWithResourceClaimTemplate/nope", "--output-dir", str(tmp_path))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "SchedulingWithResourceClaimTemplate/{" in line and "fleet/dgx-h100" in line
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
