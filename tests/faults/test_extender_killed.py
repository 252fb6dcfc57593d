"""Fault: the extender is SIGKILLed while loadgen is measuring.

kube-scheduler treats it as `ignorable`, so scheduling goes on without it; every pod still
runs. Restarted, the extender is ready only after a full relist, and its view of free devices
equals what the claims' allocation results leave free.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import admin_http, children
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

NODES = 50  # 400 GPUs
PODS = 300  # one GPU each: all fit, so every pod must run


async def test_scheduling_survives_a_killed_extender_and_a_restart_resyncs(
    kube: Kube, kubeconfig: str, extender_port: int, tmp_path: Path
) -> None:
    fleet = f"fault-{secrets.token_hex(3)}"
    run_id = f"fault-{secrets.token_hex(3)}"
    namespace = f"loadgen-{run_id}"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    out = tmp_path / "run"
    apply = ("apply", "--profile", "dgx-h100", "--nodes", str(NODES), "--name", fleet)
    assert await children.run_tool(env, "fleet", *apply) == 0
    try:
        with children.extender(env, tmp_path / "extender-1.log", extender_port) as first:
            loadgen = asyncio.create_task(
                children.run_tool(
                    env,
                    "loadgen",
                    "run",
                    "pods",
                    f"pods={PODS}",
                    "gpus=1",
                    "--node-selector",
                    f"{vocab.LABEL_FLEET}={fleet}",
                    "--run-id",
                    run_id,
                    "--output-dir",
                    str(out),
                    "--keep",
                    "--qps",
                    "50",
                    "-q",
                )
            )
            # Kill it once the scheduler is demonstrably placing this run's pods.
            await wait_for(
                kube,
                r.PODS,
                lambda p: bool(p.get("spec", {}).get("nodeName")),
                namespace=namespace,
                timeout=120,
            )
            first.send_signal(signal.SIGKILL)
            assert await loadgen == 0
        counts = json.loads((out / "result.json").read_text())["counts"]
        assert counts["pods_seen"] == counts["pods_running"] == PODS, counts

        started = time.monotonic()
        with children.extender(env, tmp_path / "extender-2.log", extender_port):
            ready_after = time.monotonic() - started
            claims = (await kube.list(r.RESOURCE_CLAIMS, namespace=namespace)).items
            allocated = {
                (x["driver"], x["pool"], x["device"])
                for c in claims
                for x in c["status"]["allocation"]["devices"]["results"]
            }
            assert len(allocated) == PODS
            selector = f"{vocab.LABEL_FLEET}={fleet}"
            nodes = (await kube.list(r.NODES, label_selector=selector)).items
            free = {
                (d["driver"], d["pool"], d["device"])
                for n in nodes
                for d in admin_http.get_json(
                    extender_port, f"/debug/nodes/{n['metadata']['name']}/free"
                )
            }
            free_gpus = {f for f in free if f[0] == vocab.GPU_DRIVER}
            assert not free_gpus & allocated
            assert len(free_gpus) == NODES * 8 - PODS
        print(f"extender ready after restart in {ready_after:.2f}s")
    finally:
        await kube.delete(r.NAMESPACES, namespace)
        await children.run_tool(env, "fleet", "delete", "--name", fleet)
