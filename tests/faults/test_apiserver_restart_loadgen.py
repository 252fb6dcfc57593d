"""Fault: kube-apiserver is stopped and started again while loadgen is measuring.

loadgen's watches break and resume (from their resourceVersion, or by a relist after 410):
every pod is counted exactly once, none is lost, and the reports mark the interval the
watches were broken, so readers know which latencies include the outage.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import secrets
from pathlib import Path

import pytest

from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import children, waiting
from tests.support.faults import RestartApiServer

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

NODES = 20  # 160 GPUs
PODS = 150  # one GPU each: all fit, so every pod must run


async def test_loadgen_counts_every_pod_once_across_an_api_server_restart(
    kube: Kube, kubeconfig: str, restart_apiserver: RestartApiServer, tmp_path: Path
) -> None:
    fleet = f"fault-{secrets.token_hex(3)}"
    run_id = f"fault-{secrets.token_hex(3)}"
    namespace = f"loadgen-{run_id}"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    out = tmp_path / "run"
    apply = ("apply", "--profile", "dgx-h100", "--nodes", str(NODES), "--name", fleet)
    assert await children.run_tool(env, "fleet", *apply) == 0
    try:
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
                "10",  # 15 s of creates: the restart lands among them
                "-q",
                log=tmp_path / "loadgen.log",
            )
        )
        # Restart once the scheduler is demonstrably placing this run's pods, with more
        # still to come and some in flight.
        await asyncio.wait_for(waiting.pods_bound(kube, namespace, PODS // 4), 120)
        assert not loadgen.done(), "loadgen finished early: not a mid-run fault"
        outage = await restart_apiserver()
        assert not loadgen.done(), "loadgen gave up during the outage"
        assert await loadgen == 0, (tmp_path / "loadgen.log").read_text()[-3000:]

        doc = json.loads((out / "result.json").read_text())
        counts = doc["counts"]
        assert counts["pods_seen"] == counts["pods_running"] == PODS, counts
        assert counts["objects_created"] == PODS and counts["create_failures"] == 0, counts
        with (out / "pods.csv").open() as f:
            rows = list(csv.DictReader(f))
        names = [row["pod"] for row in rows]
        assert len(names) == len(set(names)) == PODS
        assert all(row["running"] for row in rows)
        # The cluster agrees: exactly PODS pods, all Running.
        pods = (await kube.list(r.PODS, namespace=namespace)).items
        assert sorted(p["metadata"]["name"] for p in pods) == sorted(names)

        gaps = doc["watch_gaps"]
        pod_gaps = [g for g in gaps if g["watch"] == "pods"]
        assert pod_gaps, gaps
        gap = pod_gaps[0]
        assert gap["reason"] in ("error", "gone") and gap["end_seconds"] is not None, gap
        assert gap["end_seconds"] > gap["start_seconds"] >= 0
        assert "Watch gaps" in (out / "report.html").read_text()
        print(
            f"API down {outage:.1f}s; pods watch gap "
            f"{gap['end_seconds'] - gap['start_seconds']:.1f}s ({gap['reason']}), "
            f"{gap['pods_straddling']} pods straddle it; pod_startup p99 "
            f"{doc['latency_ms']['pod_startup']['Perc99']:.0f}ms; "
            f"{len(gaps)} gaps, {doc['watch_restarts']} watch restarts"
        )
    finally:
        await kube.delete(r.NAMESPACES, namespace)
        await children.run_tool(env, "fleet", "delete", "--name", fleet)
