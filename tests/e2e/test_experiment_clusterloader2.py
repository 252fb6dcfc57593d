"""`harness: clusterloader2` end to end on the real local cluster, at its smallest: the shipped
examples/experiments/cl2-agreement.yaml's ClusterLoader2 variant alone, on 2 nodes with 1 s
churn pods (14 fill pods, 2 churn Jobs of 10 completions): ClusterLoader2 built from its pinned
module (.ci/run builds it before the tests; tools/k8s/clusterloader2.sh) and run on its adapted
DRA test while loadgen observes the same pods: 96-139 s after the build on 2 cores at load
10-14 (2026-11-29; the arm itself ~70 s, ClusterLoader2's test 30 s of it).

What it holds: both tools measured every pod, each of the 18 rows has a figure from each, and
the report shows them. Not whether the rows agree: on a shared 2-core machine a p99 of 14 pods
is one pod's value and moves with each client's event delivery (the agreement's figures are
in docs/results/narrative/clusterloader2.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiment.sites import clusterloader2
from testbed.cluster import local

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1800)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "experiments" / "cl2-agreement.yaml"


def test_clusterloader2_and_loadgen_observe_measure_the_same_pods(
    kubeconfig: str, extender_port: int, cluster_config: local.ClusterConfig, tmp_path: Path
) -> None:
    try:  # built by .ci/run; here on first use (minutes), named in one line if it cannot be
        clusterloader2.build()
    except clusterloader2.BuildError as e:
        if e.no_source:
            # The Go module proxy refused k8s.io/perf-tests/clusterloader2 (403, 2026-11-22 and
            # 2026-11-29) and no checkout was given: nothing of ours is untested by this skip,
            # ClusterLoader2 itself is missing. A build that fails is a failure.
            pytest.skip(f"{e} (set DRA_TESTBED_CL2_SOURCE to a perf-tests checkout)")
        pytest.fail(f"{e} (tools/k8s/clusterloader2.sh --help says where it comes from)")
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["fleet"]["nodes"] = 2
    doc["workloads"][0]["params"]["run_time"] = "1s"
    doc["variants"] = [v for v in doc["variants"] if v.get("harness") == "clusterloader2"]
    file = tmp_path / "cl2.yaml"
    file.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    testbed = [sys.executable, "-m", "testbed", "--name", cluster_config.name]
    testbed += ["--extender-port", str(extender_port)]
    proc = subprocess.run(
        [*testbed, "experiment", "run", str(file), "--output-dir", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=1500,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]

    result = json.loads((out / "experiment.json").read_text())
    assert result["invalid_arms"] == {}
    section = result["clusterloader2"]["cl2-dra-cl2-0"]
    assert section["pods"] == {
        "FastFillPodStartupLatency": {"expected": 14, "observed": 14, "measured": 14},
        "ChurnPodStartupLatency": {"expected": 20, "observed": 20, "measured": 20},
    }
    rows = section["rows"]
    assert len(rows) == 18
    assert all(r["loadgen_ms"] is not None and r["cl2_ms"] is not None for r in rows), rows
    assert sorted(section["perfdata"])[0].startswith("PodStartupLatency_ChurnPodStartupLatency_")
    # The adapted test ran in the arm's own namespaces, which are gone again.
    config = (out / "cl2-dra-cl2-0" / "cl2-config" / "config.yaml").read_text()
    assert "dependencies:" not in config and "prefix: cl2-" in config
    assert section["cleaned_up"]
    rows_by_metric = {c["metric"]: c for c in result["comparisons"]}
    agreement = rows_by_metric["loadgen observe within tolerance of ClusterLoader2"]
    assert agreement["variants"]["cl2"]["median"] == section["within"] / 18
    assert rows_by_metric["churn pod startup p50"]["variants"]["cl2"]["median"] > 0
    assert "ClusterLoader2 agreement" in (out / "index.html").read_text()
    assert "ClusterLoader2 agreement" in proc.stdout
    print(proc.stdout[-3000:])  # the run's own timings, with -s
