"""Fault: the extender answers too slowly (past kube-scheduler's `httpTimeout`) or with 500s.

The extender entry is `ignorable`, so the real kube-scheduler schedules every pod anyway; the
cost shows in loadgen's figures. One run, three modes on the same small fleet, in order:
the real extender (healthy), then a stand-in bound to the cluster's extender port that
sleeps past `httpTimeout` on /filter and /prioritize (slow), then one that answers 500
(failing). loadgen's pods require no placement, so as shipped the scheduler only asks them
scored (prioritize), never filtered. The faults live in this test, not in the product.
Figures are printed (run with `-s`), never asserted against the clock.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from loadgen.report import document
from loadgen.scenarios.model import parse_duration
from testbed import vocab
from testbed.cluster import local
from testbed.kube.client import Kube
from tests.support import children
from tests.support.private_fleet import make_fleet, namespace_gone, remove_fleet

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

BIN = Path(sys.executable).parent
NODES = 2  # 16 GPUs: two feasible nodes, so the scheduler calls prioritize too
PODS = 6  # one GPU each: all fit, so every pod must run
# What kube-scheduler logs (at its default verbosity) when an ignorable extender's filter fails.
SKIPPED = "Skipping extender as it returned error and has ignorable flag set"


def http_timeout(cluster: local.LocalCluster, port: int) -> float:
    """`httpTimeout` of the extender entry the test cluster's kube-scheduler runs with."""
    config = cluster.component_flag("kube-scheduler", "config")
    assert config, "kube-scheduler runs without --config"
    entries = yaml.safe_load(Path(config).read_text())["extenders"]
    (timeout,) = {e.get("httpTimeout", "5s") for e in entries}
    for entry in entries:
        assert entry["ignorable"] is True and entry["urlPrefix"] == f"http://127.0.0.1:{port}"
    return parse_duration(timeout)


@asynccontextmanager
async def stand_in(port: int, mode: str, calls: Counter[str], delay: float) -> AsyncIterator[None]:
    """A fake extender on the cluster's extender port: `slow` sleeps `delay` (past
    httpTimeout), `failing` answers 500. `calls` counts the scheduler's calls by verb."""

    async def handle(request: web.Request) -> web.Response:
        verb = request.path.strip("/")
        calls[verb] += 1
        await request.read()
        if mode == "slow":
            await asyncio.sleep(delay)
            names = json.loads(await request.read()).get("NodeNames") or []
            if verb == "filter":
                return web.json_response({"NodeNames": names})
            return web.json_response([{"Host": n, "Score": 0} for n in names])
        return web.json_response({"error": "injected failure"}, status=500)

    app = web.Application()
    app.router.add_post("/filter", handle)
    app.router.add_post("/prioritize", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield
    finally:
        await runner.cleanup()


def extender_calls(port: int) -> dict[tuple[str, str], float]:
    """extender_requests_total by (verb, outcome), from the real extender's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("extender_requests_total{"):
            labels, value = line.removeprefix("extender_requests_total{").split("} ")
            kv = dict(p.split("=") for p in labels.split(","))
            out[(kv["verb"].strip('"'), kv["outcome"].strip('"'))] = float(value)
    return out


class SchedulerLog:
    """New lines of the local kube-scheduler's log."""

    def __init__(self, cluster: local.LocalCluster) -> None:
        self.path = cluster.config.cluster_dir / "logs" / "kube-scheduler.log"
        assert self.path.is_file(), f"no scheduler log at {self.path}"
        self.offset = self.path.stat().st_size

    def new_lines(self) -> list[str]:
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        return data.decode(errors="replace").splitlines()


async def loadgen(env: dict[str, str], fleet: str, out: Path) -> document.ResultDoc:
    run_id = f"slow-{secrets.token_hex(3)}"
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "loadgen"), "run", "pods", f"pods={PODS}", "gpus=1",
        "--node-selector", f"{vocab.LABEL_FLEET}={fleet}", "--qps", "50",
        "--timeout", "5m", "--run-id", run_id, "--output-dir", str(out), "-q",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 360)
    assert proc.returncode == 0, err.decode()
    return document.load(out / "result.json")


async def test_a_slow_or_failing_extender_costs_time_but_every_pod_runs(
    kube: Kube,
    kubeconfig: str,
    extender_port: int,
    local_cluster: local.LocalCluster,
    tmp_path: Path,
) -> None:
    timeout = http_timeout(local_cluster, extender_port)
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    fleet = await make_fleet(kube, kubeconfig, nodes=NODES)
    figures: dict[str, tuple[document.ResultDoc, int]] = {}
    try:
        sched_log = SchedulerLog(local_cluster)
        for mode in ("healthy", "slow", "failing"):
            calls: Counter[str] = Counter()  # seen by the stand-in
            seen: dict[tuple[str, str], float] = {}  # counted by the real extender
            if mode == "healthy":
                with children.extender(env, tmp_path / "extender.log", extender_port):
                    sched_log.new_lines()  # calls refused before it listened are not its own
                    doc = await loadgen(env, fleet.suffix, tmp_path / mode)
                    seen = extender_calls(extender_port)
                # loadgen's pods require no placement: scored, never filtered (as shipped).
                assert seen.get(("filter", "ok"), 0) == 0, seen
                assert seen.get(("prioritize", "ok"), 0) >= 1, seen
                assert not any(o == "error" for _, o in seen), seen
            else:
                async with stand_in(extender_port, mode, calls, timeout + 1.0):
                    doc = await loadgen(env, fleet.suffix, tmp_path / mode)
                # The scheduler did call and went on without the answers (a failed
                # prioritize is logged only at -v=5, so the log shows no skip for it).
                assert calls["filter"] == 0 and calls["prioritize"] >= 1, calls
            skipped = [ln for ln in sched_log.new_lines() if SKIPPED in ln]
            assert skipped == [], skipped[:3]  # skips are logged for filter calls alone
            assert doc.error is None and not doc.interrupted
            assert doc.counts.pods_running == doc.counts.pods_seen == PODS
            await namespace_gone(kube, doc.run_id)  # free the GPUs for the next mode
            figures[mode] = doc, len(skipped)
            print(f"{mode}: calls {dict(calls) or seen}")
    finally:
        await remove_fleet(kube, kubeconfig, fleet)
    print(
        f"\n{'mode':8} {'run s':>6} {'pods/s avg':>10} {'startup p50':>12} {'p99':>8} "
        f"{'sched p99':>10} {'scheduler skipped extender':>27}"
    )
    for mode, (doc, skips) in figures.items():
        startup, sched = doc.latency_ms["pod_startup"], doc.latency_ms["create_to_schedule"]
        print(
            f"{mode:8} {doc.duration_seconds:6.1f} {doc.throughput.Average:10.2f} "
            f"{startup.Perc50:10.0f}ms {startup.Perc99:6.0f}ms {sched.Perc99:8.0f}ms {skips:27d}"
        )
    # Not a performance bound: the scheduler cannot place a pod on one of two feasible nodes
    # before its prioritize call to the slow stand-in has timed out, so this only proves the
    # fault was in the path.
    assert figures["slow"][0].latency_ms["create_to_schedule"].Perc99 > timeout * 1000
