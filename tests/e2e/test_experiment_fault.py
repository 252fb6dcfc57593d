"""The shipped scheduler-restart experiment, tiny, on the real local cluster: the arm of the
variant with the fault had kube-scheduler killed and repaired mid-burst, recorded the restart
and was judged beside the steady arm, which had none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed.cluster import local

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "examples" / "experiments" / "scheduler-restart.yaml"
)
PODS = 40


def test_a_scheduler_restart_mid_burst_is_measured_beside_the_same_burst_without_it(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["workloads"][0]["params"]["pods"] = PODS
    doc["qps"] = 20
    file = tmp_path / "scheduler-restart.yaml"
    file.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "testbed", "--name", cluster_config.name]
    proc = subprocess.run(
        [
            *(*cmd, "--extender-port", str(extender_port), "experiment", "run", str(file)),
            *("--nodes", "10", "--repeat", "1", "--output-dir", str(out)),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=540,
        check=False,
    )
    log = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, log

    summary = json.loads((out / "experiment.json").read_text())
    assert summary["invalid_arms"] == {}, log
    steady, restart = summary["arms"]["burst-steady-0"], summary["arms"]["burst-restart-0"]
    assert steady["valid"] and steady["restarts"] == [] and "fault" not in steady
    assert restart["valid"] and restart["accounted"], restart

    # The fault as planned and as done, on loadgen's clock beside the restart loadgen saw.
    fault = restart["fault"]
    assert fault["kill"] == "kube-scheduler" and fault["done"], fault
    assert fault["planned"] == f"at 30% of {PODS} pods bound (12)"
    assert 12 <= fault["pods_bound"] < PODS and fault["repaired_seconds"] > 0, fault
    result = json.loads((out / "burst-restart-0" / "result.json").read_text())
    seen = [r for r in result["faults"]["restarts"] if r["component"] == "scheduler"]
    assert len(seen) == 1 and seen[0]["started_seconds"] >= fault["killed_seconds"], (seen, fault)
    assert json.loads((out / "burst-restart-0" / "fault.json").read_text()) == fault
    assert result["metrics"]["scheduler"]["processes"] == 2
    steady_result = json.loads((out / "burst-steady-0" / "result.json").read_text())
    assert steady_result["faults"]["restarts"] == []

    # Judged: the pair is compared, each variant with its one repeat.
    rows = {(c["workload"], c["metric"]): c for c in summary["comparisons"]}
    startup = rows[("burst", "pod startup p99")]
    assert [len(v["values"]) for v in startup["variants"].values()] == [1, 1], startup
    assert "kube-scheduler killed" in proc.stdout
