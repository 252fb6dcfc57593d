"""Fault: `testbed demo` is stopped (SIGTERM) in the middle of an arm.

The demo passes one SIGINT to the running loadgen (its children run in their own process
group), so the arm's partial report is written and its namespace removed; then it deletes the
fleet, stops the extender and the second scheduler, and exits 143.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiment.demo import plan
from testbed import vocab
from testbed.cluster import local
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if text.encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _terminate_mid_arm(cmd: list[str], arm_dir: Path) -> tuple[int, str]:
    """Run the demo, SIGTERM it a few seconds into its first arm; its exit code and output."""
    demo = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
    )
    assert demo.stdout is not None
    seen = []
    for line in demo.stdout:  # bounded by the test's timeout
        seen.append(line)
        if "arm 1/" in line:
            break
    # Into the arm: loadgen is creating pods (60 at 2/s take 30 s).
    deadline = time.monotonic() + 120
    while not arm_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(8)
    demo.send_signal(signal.SIGTERM)
    rest, _ = demo.communicate(timeout=600)
    return demo.returncode, "".join(seen) + rest


async def test_a_terminated_demo_writes_what_it_measured_and_leaves_nothing(
    kube: Kube,
    kubeconfig: str,
    extender_port: int,
    cluster_config: local.ClusterConfig,
    tmp_path: Path,
) -> None:
    out = tmp_path / "demo"
    arm_dir = out / "extender-on-0"
    name = cluster_config.name
    cmd = [
        *(sys.executable, "-m", "testbed", "--name", name),
        *("--extender-port", str(extender_port), "demo", "--nodes", "20"),
        *("--pods", "60", "--qps", "2", "--comparisons", "extender"),
        *("--output-dir", str(out)),
    ]
    code, log = await asyncio.to_thread(_terminate_mid_arm, cmd, arm_dir)
    assert code == 143, log[-3000:]
    assert "interrupted by SIGTERM" in log, log[-3000:]

    result = json.loads((arm_dir / "result.json").read_text())
    assert result["interrupted"] and result["cleaned_up"], result
    assert result["counts"]["pods_seen"] <= 60
    deadline = time.monotonic() + 120
    with pytest.raises(errors.NotFound):  # deleted by loadgen; gone once its pods are
        while time.monotonic() < deadline:
            await kube.get(r.NAMESPACES, result["namespace"])
            await asyncio.sleep(1)
    selector = f"{vocab.LABEL_FLEET}={plan.FLEET_NAME}"
    assert (await kube.list(r.NODES, label_selector=selector)).items == []
    assert _processes_mentioning(str(out)) == []
