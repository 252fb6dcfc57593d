"""`loadgen observe` on the real cluster: it measures pods another process creates (here a
`loadgen` run), with the same report, creating and deleting nothing itself."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from loadgen import stats
from loadgen.report import document
from testbed.kube.client import Kube
from tests.support import children
from tests.support.private_fleet import FLEET_LABEL, Fleet, namespace_gone

pytestmark = pytest.mark.cluster

LOADGEN = str(Path(sys.executable).parent / "loadgen")


async def test_observe_measures_pods_another_process_creates(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"obs-{fleet.suffix}"
    fleet.run_ids.append(run_id)
    on_fleet = ["--kubeconfig", kubeconfig, "--node-selector", f"{FLEET_LABEL}={fleet.suffix}"]
    watcher = await asyncio.create_subprocess_exec(
        LOADGEN, "observe", "-n", f"loadgen-{run_id}", "-l", f"testbed.dra.io/run={run_id}",
        "--count", "6", "--timeout", "2m", *on_fleet, "--output-dir", str(tmp_path / "obs"), "-q",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert watcher.stderr is not None
        line = await asyncio.wait_for(watcher.stderr.readline(), 30)
        assert b"observing pods in" in line  # its watches have listed: nothing is missed
        creator = await asyncio.create_subprocess_exec(
            LOADGEN, "--pods", "6", "--qps", "6", *on_fleet, "--run-id", run_id,
            "--output-dir", str(tmp_path / "run"), "-q",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(creator.communicate(), 120)
        assert creator.returncode == 0, err.decode()
        out, err = await asyncio.wait_for(watcher.communicate(), 120)
    finally:
        await children.reap(watcher)
    assert watcher.returncode == 0, err.decode()
    seen = document.load(tmp_path / "obs" / "result.json")
    made = document.load(tmp_path / "run" / "result.json")
    assert seen.scenario["name"] == "observe" and seen.namespace == f"loadgen-{run_id}"
    assert seen.counts.pods_seen == 6 and seen.counts.pods_running == 6
    assert {k: v.count for k, v in seen.latency_ms.items()} == dict.fromkeys(stats.PHASES, 6)
    assert seen.claims.allocated == 6 and seen.fleet.peak_gpus_allocated == 6
    assert seen.definitions == made.definitions
    assert "pod_startup" in out.decode()
    await namespace_gone(kube, run_id)  # the creator removed its run; observe kept out


async def test_observe_by_namespace_prefix_measures_pods_of_every_matching_namespace(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    """Like ClusterLoader2's own namespaces: two runs' namespaces share a prefix and both are
    measured, pods keyed namespace/name; a third namespace outside the prefix is not."""
    prefix = f"loadgen-obs2-{fleet.suffix}-"
    ids = [f"obs2-{fleet.suffix}-a", f"obs2-{fleet.suffix}-b", f"other-{fleet.suffix}"]
    fleet.run_ids.extend(ids)
    on_fleet = ["--kubeconfig", kubeconfig, "--node-selector", f"{FLEET_LABEL}={fleet.suffix}"]
    watcher = await asyncio.create_subprocess_exec(
        LOADGEN, "observe", "--namespace-prefix", prefix, "--count", "6", "--timeout", "3m",
        *on_fleet, "--output-dir", str(tmp_path / "obs"), "-q",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert watcher.stderr is not None
        line = await asyncio.wait_for(watcher.stderr.readline(), 30)
        assert f"observing pods in namespaces {prefix}*".encode() in line
        creators = []
        for run_id, pods in zip(ids, (3, 3, 2), strict=True):
            creator = await asyncio.create_subprocess_exec(
                LOADGEN, "--pods", str(pods), "--qps", "6", *on_fleet, "--run-id", run_id,
                "--output-dir", str(tmp_path / run_id), "-q",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            creators.append(creator)
        for creator in creators:
            _, err = await asyncio.wait_for(creator.communicate(), 180)
            assert creator.returncode == 0, err.decode()
        _, err = await asyncio.wait_for(watcher.communicate(), 120)
    finally:
        await children.reap(watcher)
    assert watcher.returncode == 0, err.decode()
    seen = document.load(tmp_path / "obs" / "result.json")
    assert seen.namespace == f"{prefix}*"
    assert seen.counts.pods_seen == 6 and seen.counts.pods_running == 6
    assert {k: v.count for k, v in seen.latency_ms.items()} == dict.fromkeys(stats.PHASES, 6)
    assert seen.claims.allocated == 6
    rows = (tmp_path / "obs" / "pods.csv").read_text().splitlines()[1:]
    namespaces = sorted({row.split("/", 1)[0] for row in rows})
    assert namespaces == [f"loadgen-{ids[0]}", f"loadgen-{ids[1]}"]
    assert all(row.split(",")[11] for row in rows)  # claims joined to their pods
