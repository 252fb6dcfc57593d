"""Fault: a control-plane component (kube-apiserver, kube-controller-manager, etcd, kwok)
SIGKILLed mid-run and repaired by `testbed up`: the restart is in the run's result, and a
counter figure of the component is the sum over its two processes read from its own /metrics
(before the run, before the kill and after the run), not the end minus the start across them
(test_scheduler_restart_figures does the same for kube-scheduler). loadgen finds every one of
them by itself (`testbed.cluster.discovery`).

The kill lands in an idle stretch: the Jobs' first pods Running out their run time, after
loadgen's scrape of the component (every 10 s for one it does not sample every 2 s) has read
that state. What each process counted is then known exactly: kube-apiserver's pod creations
(the Jobs' first pods through the old process; the Jobs' second pods, where there are any, and
the bare pods after through the new one); kube-controller-manager's Job pod creations (the
first pods by the old process, the second by the new one). etcd's writes and kwok's CPU go on
while the pods run, so theirs are held within what the stretches only one side read add.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadgen import scrape, series
from testbed import vocab
from testbed.cluster import discovery, local, supervision
from testbed.kube.client import Kube
from tests.support import children, waiting

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

NODES = 10  # 80 GPUs
JOBS = 30  # Jobs of one GPU: their first pods Running for RUN_TIME are the idle stretch
AFTER = 20  # bare pods of one GPU, created through the API server after the kill
RUN_TIME = 45
OTHERS_SCRAPED = 14.0  # loadgen's scrape of a component it does not sample (10 s), and slack


def _pod_creates(key: str) -> bool:
    return key.startswith("apiserver_request_total{") and all(
        label in key for label in ('resource="pods"', 'verb="POST"', 'subresource=""')
    )


def _job_pod_creates(key: str) -> bool:
    return key.startswith("job_controller_job_pods_creation_total")


@dataclass(frozen=True)
class Case:
    component: str
    """As the cluster names it (its pid file)."""
    scraped: str
    """loadgen's name for it (`--scrape NAME=URL`, its result's metrics and faults)."""
    counter: Callable[[str], bool]
    """The series of its /metrics the checked figure sums."""
    completions: int
    """Pods per Job, one after the other: 2 has the new process make the second ones."""
    counted: int
    """What the run makes it count at least (retries may add to it)."""
    exact: bool = True
    """Whether the counter stands still while the run's pods run (the test's reads then equal
    loadgen's); etcd's writes and kwok's CPU go on (leases, heartbeats), so theirs is held
    within what they counted in the stretches only one side read."""


CASES = [
    Case("kube-apiserver", "apiserver", _pod_creates, 1, JOBS + AFTER),
    Case("kube-controller-manager", "controller-manager", _job_pod_creates, 2, 2 * JOBS),
    Case("etcd", "etcd", lambda k: k == "etcd_mvcc_put_total", 1, JOBS + AFTER, exact=False),
    Case("kwok-controller", "kwok", lambda k: k == "process_cpu_seconds_total", 1, 0, exact=False),
]
UNREAD_SECONDS = 2 * OTHERS_SCRAPED + 10
"""The stretches one side read and the other did not: before loadgen's first scrape, between
its last scrape of the old process and the kill, after its last scrape."""


def _scenario(path: Path, completions: int) -> Path:
    path.write_text(
        "name: restart\n"
        "phases:\n"
        f"  - {{name: held, kind: jobs, count: {JOBS}, completions: {completions},"
        f" run_time: {RUN_TIME}s, wait: complete, claim: {{gpus: 1}}}}\n"
        f"  - {{name: after, kind: pods, count: {AFTER}, claim: {{gpus: 1}}}}\n"
    )
    return path


def _total(samples: series.Samples, counter: Callable[[str], bool]) -> float:
    return sum(v for k, v in samples.items() if counter(k))


def _kill(cluster: local.LocalCluster, component: str) -> None:
    pid = supervision.read_pid(cluster.config.cluster_dir / "pids" / f"{component}.pid")
    assert pid is not None, f"{component} is not running"
    os.kill(pid, signal.SIGKILL)
    supervision.wait_exited(pid)


@pytest.mark.parametrize("case", CASES, ids=[c.component for c in CASES])
async def test_a_control_plane_component_killed_mid_run_is_a_fact_and_its_figure_sums_its_processes(
    case: Case, kube: Kube, kubeconfig: str, local_cluster: local.LocalCluster, tmp_path: Path
) -> None:
    urls = discovery.endpoints(kube.host)
    assert case.scraped in urls, f"the local cluster's {case.component} was not found: {urls}"

    async def read() -> series.Samples:
        got = await scrape.fetch({case.scraped: urls[case.scraped]}, kube=kube)
        assert case.scraped in got.samples, got.failed
        return got.samples[case.scraped]

    fleet = f"restart-{secrets.token_hex(3)}"
    run_id = f"restart-{secrets.token_hex(3)}"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    out = tmp_path / "run"
    apply = ("apply", "--profile", "dgx-h100", "--nodes", str(NODES), "--name", fleet)
    fleet_log = tmp_path / "fleet.log"
    assert await children.run_tool(env, "fleet", *apply, log=fleet_log) == 0, fleet_log.read_text()
    loadgen_log = tmp_path / "loadgen.log"
    try:
        before, began = await read(), time.monotonic()
        loadgen = asyncio.create_task(
            children.run_tool(
                env,
                "loadgen",
                "run",
                str(_scenario(tmp_path / "restart.yaml", case.completions)),
                *("--node-selector", f"{vocab.LABEL_FLEET}={fleet}"),
                *(arg for name, url in urls.items() for arg in ("--scrape", f"{name}={url}")),
                *("--run-id", run_id, "--output-dir", str(out), "-q"),
                log=loadgen_log,
                within=540,
            )
        )
        await asyncio.wait_for(waiting.pods_bound(kube, f"loadgen-{run_id}", JOBS), 180)
        await asyncio.sleep(OTHERS_SCRAPED)
        assert not loadgen.done(), loadgen_log.read_text()[-3000:]
        old, killed = await read(), time.monotonic()
        await asyncio.to_thread(_kill, local_cluster, case.component)
        await asyncio.sleep(3)  # a scrape may meet nothing
        await asyncio.to_thread(local_cluster.up, build=False)
        assert await loadgen == 0, loadgen_log.read_text()[-3000:]
        new = await read()
    finally:
        await children.run_tool(env, "loadgen", "cleanup", run_id)
        await children.run_tool(env, "fleet", "delete", "--name", fleet)

    doc = json.loads((out / "result.json").read_text())
    restarts = [r for r in doc["faults"]["restarts"] if r["component"] == case.scraped]
    assert len(restarts) == 1, doc["faults"]
    figures = doc["metrics"][case.scraped]
    assert figures["processes"] == 2 and figures["partial"] is None, figures

    # The figure is the sum over the two processes (the new one counts from 0).
    over_segments = (
        _total(old, case.counter) - _total(before, case.counter) + _total(new, case.counter)
    )
    figure = _total(figures["deltas"], case.counter)
    if case.exact:
        assert figure == over_segments, (figure, over_segments)
    else:
        # At the old process's rate at most, in the stretches only the test read.
        unread = (_total(old, case.counter) - _total(before, case.counter)) / (killed - began)
        slack = unread * UNREAD_SECONDS
        assert over_segments - slack <= figure <= over_segments + slack, (
            figure,
            over_segments,
            slack,
        )
    assert figure >= case.counted  # end minus start would read far fewer
    print(
        f"{case.component}: {figure:.0f} counted over 2 processes; restart seen "
        f"{restarts[0]['seen_seconds']:.1f}s into the run"
    )
