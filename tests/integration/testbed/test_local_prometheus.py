"""`testbed up --prometheus-port` on the test session's cluster: its own Prometheus scrapes
every component, and after a tiny fleet (made by `fleet serve` from a Fleet object) and a few
loadgen pods through kube-scheduler and the extender, every panel query of the shipped Grafana
dashboard returns data from it over the load's time range, as Grafana asks (range queries,
the dashboard's variables at All) -- but for the few in NEEDS_WHAT_THIS_LOAD_LACKS, which
say why -- and its run annotation marks both loadgen runs, each while it ran. A failure names
the panel and its query."""

from __future__ import annotations

import asyncio
import json
import math
import re
import secrets
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import crd
from testbed import vocab
from testbed.cluster import local, prometheus, second_scheduler
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import deploy as s
from tests.support import fleet_objects
from tests.support.children import testbed as run_testbed
from tests.support.private_fleet import run_loadgen
from tests.support.waiting import condition, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

Obj = dict[str, Any]
RATE_WINDOW = "1m"
NODES = 8  # dgx-h100: 64 GPUs
JOBS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
JOBS |= {"extender", "fleet", prometheus.SECOND_SCHEDULER_JOB}
PLAIN = "plain-scheduler"
# GPU+NIC pods (the extender observes their placements) and one-GPU pods (enough scheduling
# cycles that kube-scheduler, timing plugins in 10 % of them, times DynamicResources).
SCENARIO = {
    "name": "dashboard",
    "phases": [
        {
            "name": "aligned",
            "kind": "pods",
            "count": 8,
            "claim": {"gpus": 2, "nics": 2, "align": True},
        },
        {"name": "single", "kind": "pods", "count": 40, "claim": {"gpus": 1}},
    ],
}
NEEDS_WHAT_THIS_LOAD_LACKS = {
    'panel "Pod startup SLI" target C': "kubelet_pod_start_sli_duration_seconds comes from "
    "a kubelet; kwok's nodes have none (kind's have)",
}


@dataclass
class Stack:
    url: str
    """Base URL of the cluster's Prometheus."""
    start: float
    """When the load began (the dashboard's time range starts here)."""
    log_dir: Path
    runs: dict[str, tuple[float, float]] = field(default_factory=dict)
    """loadgen's runs: run id -> when its command started and ended."""

    def get(self, path: str, **params: str) -> Any:
        status, body = s.http_get(f"{self.url}{path}?{urllib.parse.urlencode(params)}", 10)
        reply = json.loads(body)
        assert status == 200 and reply["status"] == "success", f"{path} {params}: {body[:500]}"
        return reply["data"]

    def time_range(self) -> str:
        return f"{math.ceil((time.time() - self.start) / 60) + 1}m"

    def has_data(self, expr: str) -> tuple[str | None, bool]:
        """A range query over the load as Grafana runs it: (its error, any finite value)."""
        error, result = self.range_query(expr)
        values = [float(v) for series in result for _, v in series["values"]]
        return error, any(math.isfinite(v) for v in values)

    def range_query(self, expr: str) -> tuple[str | None, list[Obj]]:
        """(its error, its series) over the load, every 5 s, as Grafana asks."""
        params = {
            "query": s.grafana_to_promql(expr, RATE_WINDOW, self.time_range()),
            "start": f"{self.start:.3f}",
            "end": f"{time.time():.3f}",
            "step": "5",
        }
        status, body = s.http_get(
            f"{self.url}/api/v1/query_range?{urllib.parse.urlencode(params)}", 10
        )
        reply = json.loads(body)
        if status != 200 or reply.get("status") != "success":
            return f"{reply.get('errorType')}: {reply.get('error')}", []
        return None, list(reply["data"]["result"])


def lacks(where: str) -> str | None:
    return next((why for key, why in NEEDS_WHAT_THIS_LOAD_LACKS.items() if key in where), None)


def unplaceable(namespace: str, fleet: str) -> list[Obj]:
    """A pod whose claim (16 GPUs) no node can hold: DynamicResources keeps it unschedulable."""
    template = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "sixteen-gpus", "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": vocab.CLASS_GPU, "count": 16},
                        }
                    ]
                }
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": namespace},
        "spec": {
            "nodeSelector": {vocab.LABEL_FLEET: fleet},
            "tolerations": [{"key": vocab.KWOK_TAINT_KEY, "operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "sixteen-gpus"}],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1",
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    return [template, pod]


def prometheus_up(cluster: local.ClusterConfig, port: int, fleet_port: int) -> str:
    """`testbed up --prometheus-port` on the session's cluster (or the Prometheus it already
    has, from an earlier run kept with DRA_TESTBED_KEEP_CLUSTER); its URL."""
    if not cluster.prometheus.configured():
        out = run_testbed(
            "--name", cluster.name, "--extender-port", str(cluster.extender_port),
            "up", "--no-build", "--prometheus-port", str(port), "--fleet-port", str(fleet_port),
            home=cluster.home,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert f"prometheus: {prometheus.url(port)}" in out.stdout, out.stdout
    again = run_testbed("--name", cluster.name, "up", "--no-build", home=cluster.home)
    assert again.returncode == 0 and "already running" in again.stdout, again.stderr
    status = run_testbed("--name", cluster.name, "status", "-o", "json", home=cluster.home)
    assert status.returncode == 0, status.stdout + status.stderr
    doc = json.loads(status.stdout)
    (component,) = [c for c in doc["components"] if c["name"] == prometheus.COMPONENT]
    assert component["healthy"], component
    assert doc["prometheus"] == prometheus.url(cluster.prometheus.port() or 0)
    return str(doc["prometheus"])


def service_ports(cluster: local.ClusterConfig) -> dict[str, int]:
    """The extender and fleet ports the cluster's Prometheus scrapes."""
    config = yaml.safe_load(cluster.prometheus.config.read_text())
    return {
        job["job_name"]: int(job["static_configs"][0]["targets"][0].rsplit(":", 1)[1])
        for job in config["scrape_configs"]
        if job["job_name"] in ("extender", "fleet")
    }


def wait_for_query(stack: Stack, expr: str, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        error, result = s.prometheus_query(stack.url, expr)
        if not error and result and any(float(v["value"][1]) > 0 for v in result):
            return
        time.sleep(1)
    raise AssertionError(f"Prometheus never saw {expr!r} within {limit}s (logs: {stack.log_dir})")


@pytest.fixture(scope="module")
async def stack(
    kube: Kube,
    kubeconfig: str,
    cluster_config: local.ClusterConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Stack]:
    if not local.LocalCluster(cluster_config).status().exists:
        pytest.fail("this test needs the local cluster (not DRA_TESTBED_KUBECONFIG)")
    tmp = tmp_path_factory.mktemp("local-prometheus")
    url = await asyncio.to_thread(prometheus_up, cluster_config, s.free_port(), s.free_port())
    ports = service_ports(cluster_config)
    name = f"dash-{secrets.token_hex(3)}"
    namespace = f"dash-{secrets.token_hex(3)}"
    stack = Stack(url, time.time(), tmp)
    await kube.create(r.NAMESPACES, {"metadata": {"name": namespace}})
    try:
        with ExitStack() as procs:
            await asyncio.to_thread(
                procs.enter_context,
                s.serving_extender(kubeconfig, ports["extender"], tmp / "extender.log"),
            )
            argv = ["fleet", "serve", "--kubeconfig", kubeconfig, "--install-crd"]
            argv += ["--port", str(ports["fleet"])]
            fleet = procs.enter_context(s.running(argv, tmp / "fleet.log", s.venv_env()))
            await asyncio.to_thread(
                s.wait_http, f"http://127.0.0.1:{ports['fleet']}/readyz", fleet, limit=60
            )
            # A second scheduler, as the demo runs one: scraped while it runs.
            second = await asyncio.to_thread(
                procs.enter_context,
                second_scheduler.running(Path(kubeconfig), tmp / "second", scheduler_name=PLAIN),
            )
            procs.enter_context(
                prometheus.scraped(
                    cluster_config.cluster_dir, prometheus.SECOND_SCHEDULER_JOB, second.port
                )
            )
            # Every target scraped before the load, so rates see the load as an increase.
            await asyncio.to_thread(wait_for_query, stack, f"count(up == 1) >= {len(JOBS)}")
            await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, NODES))
            try:
                await load(kube, kubeconfig, stack, name, namespace)
                yield stack
            finally:
                # While the fleet service runs: it removes the nodes, then its finalizer.
                await kube.delete(r.NAMESPACES, namespace)
                await kube.delete(crd.FLEETS, name)
                await gone(kube, name)
    finally:
        await kube.delete(r.NAMESPACES, namespace)


async def gone(kube: Kube, fleet: str, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while (await kube.list(crd.FLEETS, field_selector=f"metadata.name={fleet}")).items:
        assert time.monotonic() < deadline, f"Fleet {fleet} still exists after {limit}s"
        await asyncio.sleep(1)


async def load(kube: Kube, kubeconfig: str, stack: Stack, name: str, namespace: str) -> None:
    """A ready fleet, one pod DRA cannot place, and loadgen's pods through the scheduler and
    the extender; returns once Prometheus has their series."""
    tmp = stack.log_dir
    await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(1, NODES), name=name, timeout=300)
    for obj in unplaceable(namespace, name):
        res = r.PODS if obj["kind"] == "Pod" else r.RESOURCE_CLAIM_TEMPLATES
        await kube.create(res, obj)
    scenario = tmp / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    run = f"dash-{secrets.token_hex(3)}"
    began = time.time()
    code, out, err = await run_loadgen(
        "run", str(scenario), "--kubeconfig", kubeconfig, "-q", "--run-id", run,
        "--node-selector", f"{vocab.LABEL_FLEET}={name}",
        "--output-dir", str(tmp / "results"),
    )  # fmt: skip
    assert code == 0, out + err
    stack.runs[run] = (began, time.time())
    # kube-scheduler's SLI histogram is born at its first observation: a run that ends within
    # one scrape leaves no increase for rate(). A few more pods once the series exists give
    # the SLI panel its increase whatever the machine's load.
    sli = "sum(scheduler_pod_scheduling_sli_duration_seconds_count)"
    await asyncio.to_thread(wait_for_query, stack, sli)
    run = f"more-{secrets.token_hex(3)}"
    began = time.time()
    code, out, err = await run_loadgen(
        "--pods", "4", "--gpus", "0", "--kubeconfig", kubeconfig, "-q", "--run-id", run,
        "--node-selector", f"{vocab.LABEL_FLEET}={name}", "--output-dir", str(tmp / "more"),
    )  # fmt: skip
    assert code == 0, out + err
    stack.runs[run] = (began, time.time())
    run = f"plain-{secrets.token_hex(3)}"
    began = time.time()
    code, out, err = await run_loadgen(
        "--pods", "4", "--gpus", "0", "--scheduler-name", PLAIN, "--kubeconfig", kubeconfig,
        "-q", "--run-id", run, "--node-selector", f"{vocab.LABEL_FLEET}={name}",
        "--output-dir", str(tmp / "plain"),
    )  # fmt: skip
    assert code == 0, out + err
    stack.runs[run] = (began, time.time())
    await wait_for(
        kube,
        r.PODS,
        lambda p: condition(p, "PodScheduled") == "False",
        name="too-big",
        namespace=namespace,
    )
    for expr in (
        "sum(extender_observed_placements_total)",
        'sum(scheduler_unschedulable_pods{plugin="DynamicResources"})',
        f"sum(rate(scheduler_pod_scheduling_sli_duration_seconds_count[{RATE_WINDOW}])) > 0",
        f'sum(scheduler_schedule_attempts_total{{profile="{PLAIN}"}})',
    ):
        await asyncio.to_thread(wait_for_query, stack, expr)
    await asyncio.sleep(10)  # two more scrapes: the last pods' series in every rate


def test_prometheus_scrapes_every_component_with_the_alert_rules(stack: Stack) -> None:
    targets = stack.get("/api/v1/targets")["activeTargets"]
    health = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in targets}
    assert set(health) == JOBS
    assert all(h == "up" for h, _ in health.values()), health
    assert all(
        t["scrapeUrl"].startswith(("http://127.0.0.1:", "https://127.0.0.1:")) for t in targets
    )
    loaded = {rule["name"] for g in stack.get("/api/v1/rules")["groups"] for rule in g["rules"]}
    assert loaded == {q.where.rsplit(" ", 1)[1] for q in s.alert_queries()}


def test_the_scheduler_variable_tells_the_two_schedulers_apart(stack: Stack) -> None:
    (variable,) = [
        v
        for v in json.loads(s.DASHBOARDS[0].read_text())["templating"]["list"]
        if v["name"] == "scheduler"
    ]
    found = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["definition"])
    assert found, variable["definition"]
    metric, label = found.groups()
    values = stack.get(
        f"/api/v1/label/{label}/values",
        **{"match[]": s.grafana_to_promql(metric)},
        start=f"{stack.start:.0f}",
    )
    assert {"default-scheduler", PLAIN} <= set(values), values


def test_every_dashboard_panel_shows_data_but_the_ones_this_load_cannot_feed(
    stack: Stack,
) -> None:
    problems, skipped = [], []
    for q in s.dashboard_queries():
        error, data = stack.has_data(q.expr)
        if error:
            problems.append(f"{q.where}: {error}")
        elif lacks(q.where):
            skipped.append(q.where)
        elif not data:
            problems.append(f"{q.where}: no data: {q.expr}")
    assert not problems, "\n".join(problems)
    # Each exception names a real panel (a renamed panel must not leave a stale excuse).
    for key in NEEDS_WHAT_THIS_LOAD_LACKS:
        assert any(key in w for w in skipped), f"no panel matches {key!r}"


def test_the_run_annotations_mark_each_loadgen_runs_start_and_end(stack: Stack) -> None:
    """Grafana takes each value of these series as an event's time in milliseconds: each of
    the load's loadgen runs gets a start and an end within its command's run time (the
    namespace's timestamps have 1 s resolution), however short the run."""
    marks = [q for q in s.dashboard_queries() if 'annotation "loadgen run' in q.where]
    assert len(marks) == 2, marks
    for mark in marks:
        error, series = stack.range_query(mark.expr)
        assert error is None, error
        seen: dict[str, set[float]] = {}
        for one in series:
            seen.setdefault(one["metric"].get("run", ""), set()).update(
                float(v) / 1000 for _, v in one["values"]
            )
        assert set(stack.runs) <= set(seen), f"{mark.where}: {sorted(seen)} lacks {stack.runs}"
        for run, (began, ended) in stack.runs.items():
            (at,) = seen[run]
            assert began - 1 <= at <= ended, f"{mark.where}: {run} at {at}, ran {began}-{ended}"
