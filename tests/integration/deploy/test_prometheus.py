"""A real Prometheus (Debian's package) on loopback scrapes the running extender, fleet service
and the local cluster's kube-scheduler; after a small load every dashboard panel query and
every alert expression runs without error, every metric they name is one a component really
exports, and the panels the load exercises are not empty. A failure names the file and the
panel or alert."""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.integration.deploy import cluster as c
from tests.support import deploy as s
from tests.support import small_world as w
from tests.support.waiting import condition, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

Obj = dict[str, Any]
SCRAPE = "1s"
RATE_WINDOW = "1m"
PLAIN_PODS = 60  # kube-scheduler times plugins in 10 % of cycles: 60 pods miss with p < 0.2 %
FILTER_CALLS = 20
# Panels whose series only appear after events a small local load does not produce: GPU+NIC
# claim allocations (placements), require-* annotations (rejections), watch restarts, and
# fleet reconciles (the test's fleet service may not write; see fleet_identity). Their queries
# must still run and name only exported metrics.
MAY_BE_EMPTY = (
    "Filter rejections",
    "Placement alignment",
    "Aligned fraction",
    "watch restarts",
    "Fleet objects written",
    "Fleet nodes by state",
    "Fleet write errors",
    # Not scraped here (only the extender, fleet and kube-scheduler are; the local cluster's
    # own Prometheus scrapes the rest: tests/integration/testbed/test_local_prometheus.py).
    "API server request rate",
    'Pod startup SLI" target C',
    # No loadgen run here (test_local_prometheus runs one and sees its annotation).
    'annotation "loadgen run',
)
NOT_SCRAPED_HERE = ("apiserver_", "kubelet_")


@dataclass
class Stack:
    prometheus: str
    """Base URL of the Prometheus HTTP API."""
    log_dir: Path

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.prometheus}{path}?{urllib.parse.urlencode(params)}"
        status, body = s.http_get(url, timeout=10)
        reply = json.loads(body)
        assert status == 200 and reply["status"] == "success", f"{path} {params}: {body[:500]}"
        return reply["data"]

    def query(self, expr: str) -> tuple[str | None, list[Obj]]:
        return s.prometheus_query(self.prometheus, expr)

    def known_metrics(self) -> set[str]:
        names = set(self.get("/api/v1/label/__name__/values"))
        return names | set(self.get("/api/v1/metadata"))


def scheduler_metrics_address(kubeconfig: str) -> str:
    """host:port of the local kube-scheduler's secure port, from the kwokctl cluster config
    beside the kubeconfig."""
    config = Path(kubeconfig).parent / "kwok.yaml"
    assert config.is_file(), f"{config} missing: this test needs the local kwokctl cluster"
    for doc in yaml.safe_load_all(config.read_text()):
        for comp in (doc or {}).get("components") or []:
            if comp["name"] == "kube-scheduler":
                return str(comp["metric"]["host"])
    raise AssertionError(f"{config} names no kube-scheduler")


def prometheus_config(extender: int, fleet: int, scheduler: str, rules: Path) -> Obj:
    return {
        "global": {"scrape_interval": SCRAPE, "evaluation_interval": SCRAPE},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "extender", "static_configs": [{"targets": [f"127.0.0.1:{extender}"]}]},
            {"job_name": "fleet", "static_configs": [{"targets": [f"127.0.0.1:{fleet}"]}]},
            {
                "job_name": "kube-scheduler",
                "scheme": "https",
                "tls_config": {"insecure_skip_verify": True},
                "static_configs": [{"targets": [scheduler]}],
            },
        ],
    }


async def fleet_identity(kube: Kube, kubeconfig: str, namespace: str, path: Path) -> list[Obj]:
    """A read-only identity for the test's `fleet serve`: it watches Fleets cluster-wide, and
    on a shared cluster it must not reconcile other tests' Fleets. It serves its metrics all
    the same; its writes are Forbidden (and counted in fleet_errors_total)."""
    suffix = secrets.token_hex(3)
    name = f"deploy-fleet-reader-{suffix}"
    role = {
        "metadata": {"name": name},
        "rules": [
            {
                "apiGroups": ["testbed.dra.io"],
                "resources": ["fleets"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "fleet-reader", "namespace": namespace}],
    }
    await kube.create(
        r.SERVICE_ACCOUNTS, {"metadata": {"name": "fleet-reader", "namespace": namespace}}
    )
    await kube.create(c.CLUSTER_ROLES, role)
    await kube.create(c.CLUSTER_ROLE_BINDINGS, binding)
    token = await c.service_account_token(kube, namespace, "fleet-reader")
    c.token_kubeconfig(kubeconfig, token, "fleet-reader", path)
    return [role, binding]


async def warm_up(kube: Kube, env: w.Env, extender: int) -> bytes:
    """The first of each series before Prometheus's baseline scrape: a counter child that is
    born during the load would show no increase. Returns the filter body for the load."""
    await w.ready_node_with_gpus(kube, env, gpus=1)
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, w.claim_template(env, "one-gpu", 1))
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, w.claim_template(env, "two-gpus", 2))
    await kube.create(r.PODS, w.pod(env, "fits", "one-gpu"))
    await wait_for(
        kube,
        r.PODS,
        lambda p: p["status"].get("phase") == "Running",
        name="fits",
        namespace=env.namespace,
    )
    # An unschedulable attempt too: the load's own (cannot-allocate) must be an increase.
    await cannot_allocate(kube, env, "cannot-allocate-first")
    pod = await kube.get(r.PODS, "fits", env.namespace)
    body = json.dumps({"Pod": pod, "NodeNames": [env.node]}).encode()
    await asyncio.to_thread(_post_many, extender, body, 1)
    return body


async def cannot_allocate(kube: Kube, env: w.Env, name: str) -> None:
    """A pod whose claim (two GPUs on a one-GPU node) cannot be allocated, once the scheduler
    has tried it."""
    await kube.create(r.PODS, w.pod(env, name, "two-gpus"))
    await wait_for(
        kube,
        r.PODS,
        lambda p: condition(p, "PodScheduled") == "False",
        name=name,
        namespace=env.namespace,
    )


async def small_load(kube: Kube, env: w.Env, extender: int, body: bytes) -> None:
    """Pods through the real kube-scheduler (plain ones and one whose claim cannot be
    allocated), and filter/prioritize calls (plus a bad one) to the extender."""
    for i in range(PLAIN_PODS):
        plain = w.pod(env, f"plain-{i}", "unused")
        del plain["spec"]["resourceClaims"]
        del plain["spec"]["containers"][0]["resources"]
        await kube.create(r.PODS, plain)
    await cannot_allocate(kube, env, "cannot-allocate")
    await asyncio.to_thread(_post_many, extender, body, FILTER_CALLS)


def _post_many(port: int, body: bytes, calls: int) -> None:
    import urllib.request

    for verb in ("filter", "prioritize"):
        for _ in range(calls):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/{verb}", data=body)
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.status == 200
    bad = urllib.request.Request(f"http://127.0.0.1:{port}/filter", data=b"{not json")
    try:
        urllib.request.urlopen(bad, timeout=10)
    except urllib.error.HTTPError as e:
        assert e.code == 400
    else:
        raise AssertionError("a malformed filter call was accepted")


def wait_for_query(stack: Stack, expr: str, limit: float = 60) -> None:
    """Until `expr` returns a non-empty, non-zero result (bounded polling of Prometheus)."""
    import time

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        _, result = stack.query(expr)
        if result and any(float(v["value"][1]) > 0 for v in result):
            return
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never saw {expr!r} within {limit}s (logs: {stack.log_dir})")


@pytest.fixture(scope="module")
async def stack(
    kube: Kube, kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    tmp = tmp_path_factory.mktemp("prometheus")
    env = w.Env()
    await kube.create(r.NAMESPACES, {"metadata": {"name": env.namespace}})
    await kube.create(
        r.DEVICE_CLASSES,
        {
            "metadata": {"name": env.device_class},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{env.driver}'"}}]},
        },
    )
    rbac: list[Obj] = []
    try:
        rbac = await fleet_identity(kube, kubeconfig, env.namespace, tmp / "fleet.kubeconfig")
        ports = {name: s.free_port() for name in ("extender", "fleet")}
        rules = tmp / "alerts.rules.yaml"
        shutil.copy(s.ALERT_RULES, rules)
        cfg = prometheus_config(
            ports["extender"], ports["fleet"], scheduler_metrics_address(kubeconfig), rules
        )
        with ExitStack() as procs:
            await asyncio.to_thread(
                procs.enter_context,
                s.serving_extender(kubeconfig, ports["extender"], tmp / "extender.log"),
            )
            fleet = procs.enter_context(
                s.running(
                    [
                        "fleet",
                        "serve",
                        "--kubeconfig",
                        str(tmp / "fleet.kubeconfig"),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(ports["fleet"]),
                    ],
                    tmp / "fleet.log",
                    s.venv_env(),
                )
            )
            await asyncio.to_thread(
                s.wait_http, f"http://127.0.0.1:{ports['fleet']}/metrics", fleet, limit=60
            )
            url = await asyncio.to_thread(procs.enter_context, s.serving_prometheus(cfg, tmp))
            stack = Stack(url, tmp)
            # Every target scraped once before the load, so rates see the load as increase.
            await asyncio.to_thread(
                wait_for_query, stack, 'sum(up{job=~"extender|fleet|kube-scheduler"}) == 3'
            )
            body = await warm_up(kube, env, ports["extender"])
            for expr in (
                'sum(extender_requests_total{outcome="bad_request"})',
                'sum(scheduler_schedule_attempts_total{result="scheduled"})',
                'sum(scheduler_schedule_attempts_total{result="unschedulable"})',
            ):
                await asyncio.to_thread(wait_for_query, stack, expr)
            await small_load(kube, env, ports["extender"], body)
            # The load's bad call comes last: a scrape taken mid-load already shows a rate,
            # but not the error the alerts must see.
            for expr in (
                f'sum(rate(extender_requests_total{{outcome="bad_request"}}[{RATE_WINDOW}]))',
                f"sum(rate(extender_requests_total[{RATE_WINDOW}]))",
                f'sum(rate(scheduler_schedule_attempts_total{{result="scheduled"}}[{RATE_WINDOW}]))',
                f'sum(rate(scheduler_schedule_attempts_total{{result!="scheduled"}}[{RATE_WINDOW}]))',
                'sum(scheduler_unschedulable_pods{plugin="DynamicResources"})',
            ):
                await asyncio.to_thread(wait_for_query, stack, expr)
            yield stack
    finally:
        for obj in rbac:
            res = c.CLUSTER_ROLES if "rules" in obj else c.CLUSTER_ROLE_BINDINGS
            await kube.delete(res, obj["metadata"]["name"])
        await kube.delete(r.NAMESPACES, env.namespace)
        await kube.delete(r.NODES, env.node)
        await kube.delete(r.DEVICE_CLASSES, env.device_class)


def all_queries() -> list[s.Query]:
    return [*s.dashboard_queries(), *s.alert_queries()]


def test_every_panel_and_alert_query_runs(stack: Stack) -> None:
    problems = []
    for q in all_queries():
        error, _ = stack.query(s.grafana_to_promql(q.expr, RATE_WINDOW))
        if error:
            problems.append(f"{q.where}: {error}")
    assert not problems, "\n".join(problems)


def test_every_metric_named_is_exported_by_a_running_component(stack: Stack) -> None:
    known = stack.known_metrics()
    problems = []
    for q in all_queries():
        missing = sorted(
            n
            for n in s.metric_names(s.grafana_to_promql(q.expr))
            if s.family(n, known) is None and not n.startswith(NOT_SCRAPED_HERE)
        )
        if missing:
            problems.append(f"{q.where}: names metrics no scraped component exports: {missing}")
    assert not problems, "\n".join(problems)


def test_panels_the_load_exercises_show_data(stack: Stack) -> None:
    empty = []
    for q in s.dashboard_queries():
        if any(part in q.where for part in MAY_BE_EMPTY):
            continue
        _, result = stack.query(s.grafana_to_promql(q.expr, RATE_WINDOW))
        if not result:
            empty.append(f"{q.where}: no data: {q.expr}")
    assert not empty, "\n".join(empty)


def test_alert_rules_load_into_prometheus(stack: Stack) -> None:
    groups = stack.get("/api/v1/rules")["groups"]
    loaded = {rule["name"] for g in groups for rule in g["rules"]}
    expected = {q.where.rsplit(" ", 1)[1] for q in s.alert_queries()}
    assert loaded == expected
    for g in groups:
        for rule in g["rules"]:
            assert rule["health"] in ("ok", "unknown"), f"{rule['name']}: {rule.get('lastError')}"


# The load makes these two alerts' conditions true: one pod whose claim cannot be allocated,
# and one bad call in 41 (above the 1 % error threshold). Their expressions must select it.
TRIGGERED_BY_THE_LOAD = ("DRATestbedClaimAllocationFailures", "DRATestbedExtenderErrors")


def test_alerts_the_load_triggers_select_it(stack: Stack) -> None:
    by_name = {q.where.rsplit(" ", 1)[1]: q for q in s.alert_queries()}
    for name in TRIGGERED_BY_THE_LOAD:
        q = by_name[name]
        error, result = stack.query(q.expr)
        assert error is None and result, f"{q.where}: no series under a load that breaks it"
