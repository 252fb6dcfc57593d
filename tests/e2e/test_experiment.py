"""`testbed experiment run`, tiny, on the real local cluster: variants x a workload, and the
release axis (one cluster per Kubernetes release, in turn)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.cluster import local

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1800)]


def _run(file: Path, out: Path, name: str, extender_port: int) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "testbed", "--name", name, "--extender-port", str(extender_port)]
    return subprocess.run(
        [*cmd, "experiment", "run", str(file), "--output-dir", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=1500,
        check=False,
    )


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _tiny(tmp_path: Path, name: str, variants: list[dict[str, Any]], **more: Any) -> Path:
    """A file of `variants` on 10 dgx-h100 nodes, 16 one-GPU pods an arm at 20/s."""
    doc = {
        "name": name,
        "fleet": {"profile": "dgx-h100", "nodes": 10},
        "variants": variants,
        "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 16, "gpus": 1}}],
        "qps": 20,
        **more,
    }
    return _write(tmp_path, doc)


def _arms_accounted(out: Path, doc: dict[str, Any]) -> None:
    for name, arm in doc["arms"].items():
        result = json.loads((out / name / "result.json").read_text())
        assert result["counts"]["pods_seen"] == result["counts"]["expected_pods"], name
        assert result["cleaned_up"], name
        assert arm["accounted"] and arm["valid"], (name, arm)


def test_two_variants_run_alternately_on_their_own_schedulers_and_are_compared(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    tuned = {
        "name": "tuned",
        "extenderFlags": {"weight-packing": 4},
        "scheduler": {"percentageOfNodesToScore": 50},
    }
    file = _tiny(tmp_path, "tiny", [{"name": "shipped"}, tuned], repeats=2)
    out = tmp_path / "out"
    proc = _run(file, out, cluster_config.name, extender_port)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]

    doc = json.loads((out / "experiment.json").read_text())
    assert doc["kind"] == "ExperimentResult" and doc["invalid_arms"] == {}
    # Alternating: A B, then B A.
    assert list(doc["arms"]) == ["gpus-shipped-0", "gpus-tuned-0", "gpus-tuned-1", "gpus-shipped-1"]
    _arms_accounted(out, doc)
    # The tuned variant ran on a second scheduler with its overrides, calling its own extender
    # started with its flags; its arms' extender counters come from that extender.
    config = yaml.safe_load((out / "tuned-scheduler" / "tuned-scheduler.yaml").read_text())
    assert config["percentageOfNodesToScore"] == 50
    # An arm ran on the cluster's own scheduler, which runs throughout: so did the second one
    # (every arm beside the same idle scheduler), not started per arm.
    assert not (out / "gpus-tuned-0" / "tuned-scheduler.log").exists()
    assert config["profiles"][0]["schedulerName"] == "tuned-scheduler"
    tuned = json.loads((out / "gpus-tuned-0" / "result.json").read_text())
    assert tuned["metrics"]["extender"]["deltas"], tuned["metrics"]["extender"]
    rows = {(c["workload"], c["metric"]): c for c in doc["comparisons"]}
    # Pod startup, not throughput: scheduler_perf's throughput skips the first 1 s sample, so
    # 16 pods scheduled within a second or two may have none (then no ratio, rightly).
    startup = rows[("gpus", "pod startup p50")]
    assert startup["baseline"] == "shipped"
    assert [len(v["values"]) for v in startup["variants"].values()] == [2, 2]
    assert startup["variants"]["shipped"]["ratio_to_baseline"] == 1.0
    index = (out / "index.html").read_text()
    assert index.count("report.html") == 4 and "Variants side by side" in index


def test_two_releases_run_one_cluster_each_and_the_report_compares_them(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    file = _write(
        tmp_path,
        {
            "name": "releases",
            "fleet": {"profile": "dgx-h100", "nodes": 10},
            "variants": [
                {"name": "old", "kubernetes": "1.35", "extender": False},
                {"name": "new", "kubernetes": "1.37", "extender": False},
            ],
            "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 16, "gpus": 1}}],
            "qps": 20,
        },
    )
    out = tmp_path / "out"
    proc = _run(file, out, cluster_config.name, extender_port)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]

    doc = json.loads((out / "experiment.json").read_text())
    _arms_accounted(out, doc)
    # One cluster per release, in turn; each torn down after its arms.
    assert [s.split(", ")[1] for s in doc["sites"]] == ["Kubernetes 1.35", "Kubernetes 1.37"]
    name = cluster_config.name
    for suffix in ("k135", "k137"):
        cluster = local.LocalCluster(local.ClusterConfig(name=f"{name}-{suffix}"))
        assert not cluster.status().exists, suffix
    # Each release's second scheduler ran that release's kube-scheduler, started for its arm
    # (no arm runs on the cluster's own scheduler, so none idles beside another's arm): its
    # log is kept in the arm's directory.
    for variant, version in (("old", "v1.35."), ("new", "v1.37.")):
        sched_log = (out / f"gpus-{variant}-0" / f"{variant}-scheduler.log").read_text()
        assert f'"Starting Kubernetes Scheduler" version="{version}' in sched_log, variant
    releases = {r["metric"]: r for r in doc["releases"]}
    row = releases["pod startup p50"]  # always > 0 (see the test above on throughput)
    assert (row["previous"]["variant"], row["current"]["variant"]) == ("old (1.35)", "new (1.37)")
    prev, cur = row["previous"]["median"], row["current"]["median"]
    assert row["change"] == pytest.approx((cur - prev) / prev)
    assert "Release to release" in (out / "index.html").read_text()


def test_a_sequential_file_stops_at_the_look_that_decides_its_targets(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    # Every pod placed in both variants: the target (a count, no spread) is decided at the
    # first look, after 4 pairs, so the run stops there and not at its 10.
    target = {"metric": "pods placed", "variant": "on", "baseline": "off", "atLeast": 0.5}
    variants: list[dict[str, Any]] = [{"name": "off", "extender": False}, {"name": "on"}]
    file = _tiny(tmp_path, "tiny-seq", variants, repeats=10, design="sequential",
                 budgetMinutes=20, metrics=["pods placed"], targets=[target])  # fmt: skip
    out = tmp_path / "out"
    proc = _run(file, out, cluster_config.name, extender_port)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "every headline target decided at the look after 4 pairs" in proc.stdout
    doc = json.loads((out / "experiment.json").read_text())
    assert doc["repeats_completed"] == 4 and len(doc["arms"]) == 8, doc["arms"]
    (judged,) = doc["targets"]
    assert judged["verdict"] == "met", judged
