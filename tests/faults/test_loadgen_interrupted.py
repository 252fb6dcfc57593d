"""Fault: `loadgen run` is interrupted by SIGINT or SIGTERM at a random point.

Two points per signal: while it is still creating pods, and while it waits for pods that
cannot all run (more GPUs asked for than the fleet has). Each time it exits with 128 + the
signal, writes a result.json marked interrupted with what it measured so far, and leaves
nothing of the run in the cluster. The delays after each point are seeded, so a failure
reproduces.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loadgen import templates
from loadgen.report import document
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import Fleet, make_fleet, namespace_gone, remove_fleet
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

LOADGEN = str(Path(sys.executable).parent / "loadgen")
NODES = 2  # 16 GPUs
SEED = 8
# Creating: 20 pods at 3/s take ~7 s. Waiting: 20 one-GPU pods on 16 GPUs, 4 stay Pending.
CREATING = ("creating", 20, 3)
WAITING = ("waiting", NODES * 8 + 4, 50)


@pytest.fixture(scope="module")
async def fleet(kube: Kube, kubeconfig: str) -> AsyncIterator[Fleet]:
    f = await make_fleet(kube, kubeconfig, nodes=NODES)
    try:
        yield f
    finally:
        await remove_fleet(kube, kubeconfig, f)


def _running(p: dict[str, Any]) -> bool:
    return bool(p.get("status", {}).get("phase") == "Running")


async def _leftovers(kube: Kube, run_id: str) -> list[str]:
    """Anything of the run still in the cluster, by kind/namespace/name."""
    ns = templates.namespace_name(run_id)
    out = []
    for res in (r.PODS, r.RESOURCE_CLAIMS, r.RESOURCE_CLAIM_TEMPLATES):
        for obj in (await kube.list(res)).items:
            meta = obj["metadata"]
            labels = meta.get("labels") or {}
            if meta.get("namespace") == ns or labels.get(vocab.LABEL_RUN) == run_id:
                out.append(f"{res.kind}/{meta.get('namespace')}/{meta['name']}")
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", [CREATING, WAITING], ids=["creating", "waiting"])
async def test_an_interrupted_run_reports_what_it_measured_and_leaves_nothing(
    kube: Kube,
    kubeconfig: str,
    fleet: Fleet,
    tmp_path: Path,
    sig: signal.Signals,
    point: tuple[str, int, int],
) -> None:
    where, pods, qps = point
    delay = random.Random(f"{SEED}-{sig.name}-{where}").uniform(0.0, 2.0)
    run_id = f"sig-{secrets.token_hex(3)}"
    fleet.run_ids.append(run_id)
    ns = templates.namespace_name(run_id)
    out = tmp_path / "out"
    proc = await asyncio.create_subprocess_exec(
        LOADGEN, "run", "pods", f"pods={pods}", "gpus=1",
        "--kubeconfig", kubeconfig, "--node-selector", f"{vocab.LABEL_FLEET}={fleet.suffix}",
        "--qps", str(qps), "--timeout", "3m", "--run-id", run_id, "--output-dir", str(out), "-q",
        "--allow-unschedulable",  # the waiting point asks 4 GPUs more than the fleet has
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        if where == "creating":
            # The first pod is running: creation is under way (20 pods at 3/s).
            await wait_for(kube, r.PODS, _running, namespace=ns, timeout=90)
        else:
            # Every GPU is taken; loadgen now waits for 4 pods that cannot run.
            running: set[str] = set()

            def all_gpus_used(p: dict[str, Any]) -> bool:
                if _running(p):
                    running.add(p["metadata"]["name"])
                return len(running) >= NODES * 8

            await wait_for(kube, r.PODS, all_gpus_used, namespace=ns, timeout=120)
        await asyncio.sleep(delay)
        assert proc.returncode is None, "loadgen ended before the signal"
        proc.send_signal(sig)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    print(f"{sig.name} {delay:.2f}s after the {where} point: exit {proc.returncode}")

    assert proc.returncode == 128 + sig, err.decode()
    assert "Traceback" not in err.decode()
    doc = document.load(out / "result.json")
    assert doc.interrupted and doc.cleaned_up and doc.error is None
    c = doc.counts
    if where == "creating":
        assert 1 <= c.objects_created < pods
        assert doc.latency_ms["pod_startup"].count >= 1
    else:
        assert c.objects_created == pods
        assert c.pods_running == NODES * 8
        assert doc.latency_ms["pod_startup"].count == NODES * 8
        assert doc.phases[0].timed_out is False
    assert c.pods_seen == c.objects_created
    await namespace_gone(kube, run_id, within=120)
    assert await _leftovers(kube, run_id) == []
