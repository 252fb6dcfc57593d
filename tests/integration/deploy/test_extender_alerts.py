"""The alerts that say whether the extender is in the loop, against a real Prometheus, a real
kube-scheduler calling the real extender, and a real fault: the extender stopped (SIGSTOP),
so its scrapes fail and the scheduler's calls time out while, the extender being ignorable,
pods keep being scheduled. Before the fault neither alert selects anything; after it,
DRATestbedExtenderDown names the extender's target and DRATestbedExtenderBypassed fires
on the scheduler's side (windows shortened from minutes to seconds for the test)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.cluster import second_scheduler
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import deploy as s
from tests.support import small_world as w
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

SCHEDULER = "alerts-scheduler"
# The rules' windows, shortened so a test sees in seconds what production sees in minutes.
SHORTER = {"[5m]": "[20s]", "[15m]": "[1m]"}


def rule_expr(alert: str, *, shorten: bool = False) -> str:
    rules = yaml.safe_load(s.ALERT_RULES.read_text())
    (rule,) = [x for g in rules["groups"] for x in g["rules"] if x.get("alert") == alert]
    expr = str(rule["expr"])
    if shorten:
        for long, short in SHORTER.items():
            expr = expr.replace(long, short)
    return expr


@dataclass
class Prometheus:
    url: str
    log_dir: Path

    def query(self, expr: str) -> list[dict[str, Any]]:
        error, result = s.prometheus_query(self.url, expr)
        assert error is None, f"{expr}: {error}"
        return result

    def wait_until(self, expr: str, *, present: bool = True, limit: float = 90) -> list[Any]:
        """Until `expr` selects something (or, with present=False, nothing)."""
        deadline = time.monotonic() + limit
        while True:
            result = self.query(expr)
            if bool(result) == present:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{expr!r} {'never selected' if present else 'still selects'} anything "
                    f"within {limit}s: {result} (logs: {self.log_dir})"
                )
            time.sleep(0.5)


@dataclass
class Loop:
    prometheus: Prometheus
    extender_pid: int
    extender_target: str
    env: w.Env


def plain_pod(env: w.Env, name: str) -> dict[str, Any]:
    pod = w.pod(env, name, "unused")
    del pod["spec"]["resourceClaims"]
    del pod["spec"]["containers"][0]["resources"]
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


async def schedule(kube: Kube, env: w.Env, names: list[str]) -> None:
    for name in names:
        await kube.create(r.PODS, plain_pod(env, name))
    for name in names:
        await wait_for(
            kube,
            r.PODS,
            lambda p: bool(p["spec"].get("nodeName")),
            name=name,
            namespace=env.namespace,
        )


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="module")
async def loop(
    kube: Kube, kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Loop]:
    tmp = tmp_path_factory.mktemp("extender-alerts")
    env = w.Env()
    await kube.create(r.NAMESPACES, {"metadata": {"name": env.namespace}})
    try:
        await w.ready_node_with_gpus(kube, env, gpus=1)
        ext_port = s.free_port()
        with ExitStack() as procs:
            ext = await asyncio.to_thread(
                procs.enter_context, s.serving_extender(kubeconfig, ext_port, tmp / "extender.log")
            )
            sched = procs.enter_context(
                second_scheduler.running(
                    Path(kubeconfig),
                    tmp,
                    scheduler_name=SCHEDULER,
                    extenders=[
                        {
                            "urlPrefix": f"http://127.0.0.1:{ext_port}",
                            "filterVerb": "filter",
                            "prioritizeVerb": "prioritize",
                            "weight": 1,
                            "nodeCacheCapable": True,
                            "ignorable": True,
                            "httpTimeout": "1s",  # a stopped extender costs 1 s per call
                        }
                    ],
                )
            )
            rules = tmp / "alerts.rules.yaml"
            shutil.copy(s.ALERT_RULES, rules)
            config = {
                "global": {
                    "scrape_interval": "1s",
                    "scrape_timeout": "1s",
                    "evaluation_interval": "1s",
                },
                "rule_files": [str(rules)],
                "scrape_configs": [
                    {
                        "job_name": "extender",
                        "static_configs": [{"targets": [f"127.0.0.1:{ext_port}"]}],
                    },
                    {
                        "job_name": "kube-scheduler",
                        "scheme": "https",
                        "tls_config": {"insecure_skip_verify": True},
                        "static_configs": [{"targets": [f"127.0.0.1:{sched.port}"]}],
                    },
                ],
            }
            url = await asyncio.to_thread(procs.enter_context, s.serving_prometheus(config, tmp))
            prometheus = Prometheus(url, tmp)
            await asyncio.to_thread(
                prometheus.wait_until, 'sum(up{job=~"extender|kube-scheduler"}) == 2'
            )
            yield Loop(prometheus, ext.pid, f"127.0.0.1:{ext_port}", env)
    finally:
        await kube.delete(r.NAMESPACES, env.namespace)
        await kube.delete(r.NODES, env.node)


async def test_a_stopped_extender_is_down_and_bypassed_and_a_live_one_is_neither(
    kube: Kube, loop: Loop
) -> None:
    p = loop.prometheus
    down = rule_expr("DRATestbedExtenderDown")
    bypassed = rule_expr("DRATestbedExtenderBypassed", shorten=True)

    # A first pod gives birth to the counters (a counter born during the check would show
    # no increase), then the check: the scheduler's calls reach the extender.
    await schedule(kube, loop.env, ["first"])
    for born in (
        'sum(extender_requests_total{verb="filter"}) > 0',
        'sum(scheduler_schedule_attempts_total{result="scheduled"}) > 0',
    ):
        await asyncio.to_thread(p.wait_until, born)
    await schedule(kube, loop.env, [f"before-{i}" for i in range(3)])
    for rising in (
        'sum(rate(extender_requests_total{verb="filter"}[20s])) > 0',
        'sum(rate(scheduler_schedule_attempts_total{result="scheduled"}[20s])) > 0',
    ):
        await asyncio.to_thread(p.wait_until, rising)
    assert p.query(down) == []
    assert p.query(bypassed) == []

    with stopped(loop.extender_pid):
        (series,) = await asyncio.to_thread(p.wait_until, down)
        assert series["metric"]["instance"] == loop.extender_target
        # The scheduler's calls time out; ignorable, it schedules without the extender.
        await schedule(kube, loop.env, [f"during-{i}" for i in range(3)])
        (fired,) = await asyncio.to_thread(p.wait_until, bypassed)
        assert float(fired["value"][1]) > 0

    # Back in the loop: the extender answers scrapes again.
    await asyncio.to_thread(p.wait_until, down, present=False)
