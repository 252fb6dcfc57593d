"""`testbed demo`, tiny: the whole main job runs and accounts for every pod."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.demo import project_targets
from testbed.cluster import local

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1800)]


def _no_constants(name: str) -> None:
    raise AssertionError(f"demo.json holds {name}: not valid JSON")


def test_tiny_demo_accounts_for_every_pod_and_writes_every_report(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    out = tmp_path / "demo"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # The session's cluster (named as tests/conftest.py names it), reused by the demo.
    name = cluster_config.name
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed",
            "--name",
            name,
            "--extender-port",
            str(extender_port),
            "demo",
            "--nodes",
            "50",
            "--pods",
            "100",
            # Half the default rate: created over 2 s, as 200 pods at the default were, so even
            # the batched device-plugin arm is scheduled across two 1 s samples and sustains a
            # rate for its latency arm to run below.
            "--qps",
            "50",
            # One repeat of every default-size comparison but the opt-in ones: observations.
            "--repeat",
            "1",
            "--comparisons",
            "extender,placement,fragmentation,alignment,dra",
            "--latency-arms",
            "--output-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1500,
        check=False,
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail

    doc = json.loads((out / "demo.json").read_text())
    assert doc["schema_version"] == 1 and doc["kind"] == "DemoResult"
    arms = doc["arms"]
    pairs = {
        "extender": ("on", "off"),
        "placement": ("on", "off"),
        "fragmentation": ("on", "off"),
        "alignment": ("on", "off"),
        "dra": ("claims", "device-plugin"),
    }
    # Each arm of a throughput comparison is followed by its unsaturated latency arm.
    assert sorted(arms) == sorted(
        f"{c}-{v}-0{suffix}"
        for c, vs in pairs.items()
        for v in vs
        for suffix in (("", "-latency") if c in ("extender", "dra") else ("",))
    )
    for name in arms:
        arm_dir = out / name
        result = json.loads((arm_dir / "result.json").read_text())
        assert result["counts"]["pods_seen"] == result["counts"]["expected_pods"], name
        assert result["cleaned_up"], name
        assert (arm_dir / "report.html").is_file(), name
        assert list(arm_dir.glob("PodStartupLatency_PodStartupLatency_*.json")), name
        assert list(arm_dir.glob("BenchmarkPerfScheduling_benchmark_*.json")), name
    assert all(v["accounted"] for v in arms.values()), arms
    # The extender answered every pod of every extender-on arm; none was skipped.
    assert all(v["valid"] for v in arms.values()), doc["invalid_arms"]
    assert doc["invalid_arms"] == {}
    # Each arm ran (none reuses another comparison's result: that would break alternation).
    assert all(v["seconds"] > 0 and "same_as" not in v for v in arms.values()), arms
    metrics = {(c["comparison"], c["metric"]) for c in doc["comparisons"]}
    assert ("extender", "scheduling throughput") in metrics
    # The scheduler's and the extender's own counters reached the report, in both arms.
    by_metric = {c["metric"]: c for c in doc["comparisons"] if c["comparison"] == "extender"}
    for metric in (
        "nodes DRA-filtered per pod",
        "scheduler CPU per pod",
        "extender CPU per pod",
        "scheduler + extender CPU per pod",
        "scheduling algorithm per pod",
    ):
        assert by_metric[metric]["a"]["median"] > 0 and by_metric[metric]["b"]["median"] > 0
    assert ("alignment", "aligned 8 GPU + 8 NIC pods placed") in metrics
    assert ("alignment", "aligned 4 GPU + 4 NIC pods placed") in metrics
    assert ("dra", "pod startup p99") in metrics
    assert ("dra", "pod startup p99, unsaturated") in metrics
    # One run: every ratio's interval is its point, and nothing is valid JSON's NaN.
    assert all(c["ratio_interval_95"] is None or c["ratio_interval_95"]["runs"] == 1
               for c in doc["comparisons"])  # fmt: skip
    json.loads((out / "demo.json").read_text(), parse_constant=_no_constants)
    ran = [n for n in arms if (out / n / "report.html").is_file()]
    assert (out / "index.html").read_text().count("report.html") == len(ran)
    # One run gives observations, never verdicts: nothing is met.
    verdicts = {t["goal"]: t["verdict"] for t in doc["targets"]}
    overhead = verdicts[project_targets.HEADLINE[0][0]]
    assert overhead == "observation (1 repeat), no verdict"
    # The demo is sequential; one pair at most is one look, the budget untouched.
    assert doc["design"].startswith("sequential") and doc["repeats_completed"] == 1
    assert not any(t["met"] or t["is_verdict"] for t in doc["targets"]), doc["targets"]
    assert all(verdicts.values()), verdicts
    guide = {g["aspect"]: g for g in doc["guide_matrix"]}
    assert guide["scheduling latency overhead"]["guide"].startswith("+8 %")
    assert all(g["verdict"] and g["measured"] for g in guide.values()), guide
