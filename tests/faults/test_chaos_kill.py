"""Fault: loadgen, `fleet apply` and the extender each SIGKILLed once mid-run, beside a
witness run that is never killed (one repetition of `bench/chaos_kill.py`).

After converging (`fleet apply` again, `loadgen cleanup --abandoned`), nothing may be left
behind and no run harmed: the bench checks that after its repetition and after its
teardown, and this test checks the cluster once more itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from testbed import vocab
from testbed.cluster import local
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import children

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "chaos_kill.py"


async def test_killed_loadgen_fleet_and_extender_leave_nothing_and_harm_no_run(
    kube: Kube, kubeconfig: str, extender_port: int, tmp_path: Path
) -> None:
    summary_file = tmp_path / "summary.json"
    argv = [
        sys.executable,
        str(BENCH),
        *("--kubeconfig", kubeconfig, "--extender-port", str(extender_port)),
        *("--repetitions", "1", "--max-kills", "1", "--seed", "7"),
        *("--out", str(tmp_path / "out"), "--json", str(summary_file)),
    ]
    log = tmp_path / "bench.log"
    code = await children.run_argv(argv, dict(os.environ), log=log, within=840)
    assert summary_file.exists(), f"no summary (exit {code}): {log.read_text()[-2000:]}"
    summary = json.loads(summary_file.read_text())
    assert summary["kills_planned"] == {"loadgen": 1, "fleet": 1, "extender": 1}, summary
    # The extender and loadgen kills land by construction (a server; a run with pods to
    # wait for); a small `fleet apply` may finish first on a quiet machine, which harms
    # nothing but kills nothing either.
    assert summary["kills_landed_mid_run"]["extender"] == 1, summary
    assert summary["kills_landed_mid_run"]["loadgen"] == 1, summary
    assert summary["objects_left"] == 0, summary["details"]
    assert summary["runs_harmed"] == 0, summary["details"]
    assert summary["left_after_teardown"] == [], summary
    assert code == 0, log.read_text()[-2000:]

    # Independently of the bench's own checks: no run, pod or claim of loadgen, and no
    # object of the bench's fleets.
    namespaces = (await kube.list(r.NAMESPACES)).items
    assert not [n for n in namespaces if n["metadata"]["name"].startswith("loadgen-chaos-")]
    managed = f"{vocab.LABEL_MANAGED_BY}=dra-testbed-loadgen"
    assert not (await kube.list(r.PODS, label_selector=managed)).items
    claims = (await kube.list(r.RESOURCE_CLAIMS)).items
    assert not [c for c in claims if c["metadata"]["namespace"].startswith("loadgen-chaos-")]
    for kind in (r.NODES, r.RESOURCE_SLICES):
        left = [
            o["metadata"]["name"]
            for o in (await kube.list(kind, label_selector=vocab.LABEL_FLEET)).items
            if o["metadata"]["labels"][vocab.LABEL_FLEET].startswith("chaos-")
        ]
        assert not left, left


async def test_killed_control_plane_components_are_repaired_and_harm_no_run(
    kube: Kube,
    kubeconfig: str,
    extender_port: int,
    local_cluster: local.LocalCluster,
    tmp_path: Path,
) -> None:
    """kube-scheduler, etcd or kube-apiserver SIGKILLed mid-run beside the other kills, and
    `testbed up` repairing the cluster: still nothing left and no run harmed."""
    summary_file = tmp_path / "summary.json"
    argv = [
        sys.executable,
        str(BENCH),
        *("--kubeconfig", kubeconfig, "--extender-port", str(extender_port)),
        *("--cluster", local_cluster.config.name, "--control-plane"),
        *("--repetitions", "1", "--max-kills", "2", "--seed", "11"),
        *("--out", str(tmp_path / "out"), "--json", str(summary_file)),
    ]
    log = tmp_path / "bench.log"
    code = await children.run_argv(argv, dict(os.environ), log=log, within=840)
    assert summary_file.exists(), f"no summary (exit {code}): {log.read_text()[-2000:]}"
    summary = json.loads(summary_file.read_text())
    assert summary["kills_landed_mid_run"]["control-plane"] >= 1, summary
    assert summary["components_killed"], summary
    assert summary["objects_left"] == 0, summary["details"]
    assert summary["runs_harmed"] == 0, summary["details"]
    assert summary["left_after_teardown"] == [], summary
    assert code == 0, log.read_text()[-2000:]
    assert local_cluster.status().healthy, local_cluster.status().problems()
