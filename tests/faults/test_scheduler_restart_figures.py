"""Fault: kube-scheduler SIGKILLed mid-run and repaired by `testbed up`; the run's figures
must be the sum over its two processes, not the end minus the start across them.

The kill lands while the scheduler is idle (the first phase's Jobs all Running, waiting out
their run time; the second phase not begun), after loadgen's sampler has read that idle
state: so what the old process counted is known exactly, here and to loadgen, and every
counter figure of the result must equal the sum over the process segments read from
kube-scheduler's own /metrics before the run, before the kill and after the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from pathlib import Path

import pytest

from loadgen import scrape, series
from testbed import vocab
from testbed.cluster import discovery, local, supervision
from testbed.kube.client import Kube
from tests.support import children, waiting

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

NODES = 20  # 160 GPUs
HELD = 60  # Jobs of one GPU, Running for RUN_TIME: the idle stretch the kill lands in
AFTER = 90  # pods of one GPU, scheduled by the new process
RUN_TIME = 60
ATTEMPTS = "scheduler_schedule_attempts_total"
ATTEMPT_COUNT = "scheduler_scheduling_attempt_duration_seconds_count"


def _scenario(path: Path) -> Path:
    path.write_text(
        "name: restart\n"
        "phases:\n"
        f"  - {{name: held, kind: jobs, count: {HELD}, run_time: {RUN_TIME}s, wait: complete,"
        " claim: {gpus: 1}}\n"
        f"  - {{name: after, kind: pods, count: {AFTER}, claim: {{gpus: 1}}}}\n"
    )
    return path


async def _read(url: str) -> series.Samples:
    got = await scrape.fetch({"scheduler": url}, prefixes=(ATTEMPTS, ATTEMPT_COUNT))
    assert "scheduler" in got.samples, got.failed
    return got.samples["scheduler"]


def _total(samples: series.Samples, prefix: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(prefix))


def _kill_scheduler(cluster: local.LocalCluster) -> None:
    pid = supervision.read_pid(cluster.config.cluster_dir / "pids" / "kube-scheduler.pid")
    assert pid is not None, "kube-scheduler is not running"
    os.kill(pid, signal.SIGKILL)


async def test_a_scheduler_killed_mid_run_is_a_fact_and_its_figures_sum_its_processes(
    kube: Kube, kubeconfig: str, local_cluster: local.LocalCluster, tmp_path: Path
) -> None:
    url = discovery.endpoints(kube.host).get("scheduler")
    assert url, "the local cluster's kube-scheduler was not found"
    fleet = f"restart-{secrets.token_hex(3)}"
    run_id = f"restart-{secrets.token_hex(3)}"
    namespace = f"loadgen-{run_id}"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    out = tmp_path / "run"
    apply = ("apply", "--profile", "dgx-h100", "--nodes", str(NODES), "--name", fleet)
    fleet_log = tmp_path / "fleet.log"
    assert await children.run_tool(env, "fleet", *apply, log=fleet_log) == 0, fleet_log.read_text()
    try:
        before = await _read(url)
        loadgen = asyncio.create_task(
            children.run_tool(
                env,
                "loadgen",
                "run",
                str(_scenario(tmp_path / "restart.yaml")),
                *("--node-selector", f"{vocab.LABEL_FLEET}={fleet}"),
                *("--run-id", run_id, "--output-dir", str(out), "-q"),
                log=tmp_path / "loadgen.log",
                within=540,
            )
        )
        await asyncio.wait_for(waiting.pods_bound(kube, namespace, HELD), 180)
        await asyncio.sleep(6)  # loadgen's sampler (every 2 s) reads the idle scheduler
        assert not loadgen.done(), (tmp_path / "loadgen.log").read_text()[-3000:]
        old = await _read(url)
        await asyncio.to_thread(_kill_scheduler, local_cluster)
        await asyncio.sleep(3)  # a scrape or two meets nothing
        await asyncio.to_thread(local_cluster.up, build=False)
        assert await loadgen == 0, (tmp_path / "loadgen.log").read_text()[-3000:]
        new = await _read(url)
    finally:
        await children.run_tool(env, "loadgen", "cleanup", run_id)
        await children.run_tool(env, "fleet", "delete", "--name", fleet)

    doc = json.loads((out / "result.json").read_text())
    restarts = [f for f in doc["faults"]["restarts"] if f["component"] == "scheduler"]
    assert len(restarts) == 1, doc["faults"]
    assert restarts[0]["started_seconds"] is not None and restarts[0]["started_seconds"] > 0

    # Every counter figure is the sum over the two processes (the new one counts from 0).
    def over_segments(prefix: str) -> float:
        return _total(old, prefix) - _total(before, prefix) + _total(new, prefix)

    scheduler = doc["metrics"]["scheduler"]
    assert scheduler["processes"] == 2 and scheduler["partial"] is None, scheduler
    attempts = scheduler["summary"]["schedule_attempts"]
    assert attempts == over_segments(ATTEMPTS), (attempts, before, old, new)
    assert attempts >= HELD + AFTER  # end minus start would read far fewer
    view = doc["explanation"]["scheduler"]["totals"]
    assert view["attempts"] == over_segments(ATTEMPT_COUNT)
    assert len(view["restarts"]) == 1
    # Profiling resumed once the new process answered.
    profile = doc["explanation"]["cpu"]["scheduler"]
    assert profile["unanswered"] and profile["unanswered"][0][1] is not None, profile
    assert profile["run_share"] is not None
    assert "restarted" in (out / "report.html").read_text()
    print(
        f"schedule attempts {attempts:.0f} over 2 processes; restart at "
        f"{restarts[0]['started_seconds']:.1f}s; profiles cover "
        f"{profile['run_share']:.0%} of the run"
    )
