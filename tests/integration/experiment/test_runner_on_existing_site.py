"""A tiny experiment end to end through the experiment runner, on the local cluster used as
an existing cluster: two variants, each on its own second scheduler made in the cluster
(its pod's containers run by `LocalPods`), every arm accounted for and valid, and nothing of
the site left afterwards."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from experiment.run import runner
from experiment.sites import cluster_objects as co
from experiment.sites import existing_site as es
from experiment.spec import spec as specs
from tests.support.pod_stand_in import LocalPods
from tests.support.site_checks import call, snapshot

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1200)]


def test_a_two_variant_experiment_runs_on_the_existing_site(
    kubeconfig: str, host_node: str, tmp_path: Path
) -> None:
    exp = specs.parse(
        {
            "name": "tiny-existing",
            "fleet": {"profile": "dgx-h100", "nodes": 4},
            "variants": [
                {"name": "shipped"},
                {
                    "name": "tuned",
                    "extenderFlags": {"weight-packing": 4},
                    "scheduler": {"percentageOfNodesToScore": 50},
                },
            ],
            "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 8, "gpus": 1}}],
            "repeats": 1,
            "qps": 20,
        },
        source="test",
    )
    before = call(kubeconfig, snapshot)
    pods = LocalPods()
    opened: list[es.ExistingSite] = []

    @contextlib.contextmanager
    def stand_in_site(key: es.ClusterKey, workdir: Path) -> Iterator[es.ExistingSite]:
        with es.opened(kubeconfig_path=kubeconfig, stand_in=pods, ready_timeout=180) as site:
            opened.append(site)
            yield site

    out = tmp_path / "out"
    text = io.StringIO()
    code = runner.run(
        exp, runner.RunConfig(output_dir=out), stand_in_site, Console(file=text, width=120)
    )
    assert code == 0, text.getvalue()[-3000:]

    doc = json.loads((out / "experiment.json").read_text())
    assert doc["invalid_arms"] == {}
    assert any("existing cluster" in s for s in doc["sites"]), doc["sites"]
    for name, arm in doc["arms"].items():
        result = json.loads((out / name / "result.json").read_text())
        assert result["counts"]["pods_seen"] == result["counts"]["expected_pods"] == 8, name
        assert result["cleaned_up"] and arm["accounted"] and arm["valid"], (name, arm)
        assert "scheduler" in result["metrics"] and "extender" in result["metrics"], name
    # Each variant had its own in-cluster scheduler (the shipped one too: an existing
    # cluster's own scheduler does not call the extender).
    assert len(set(pods.started)) == 2
    assert all(n.startswith(co.SCHEDULER + "-") for n in pods.started)
    assert len(opened) == 1 and opened[0].created
    assert call(kubeconfig, snapshot) == before
