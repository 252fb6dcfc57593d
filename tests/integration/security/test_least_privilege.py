"""fleet (its commands and `fleet serve`'s controller), loadgen and the extender under their
own ServiceAccounts, as manifests/ grants them (RBAC and the ValidatingAdmissionPolicies),
against the real API server, in both directions: what each one does succeeds, and a sample of
what it must not do is Forbidden.

Each test installs the component's RBAC and policies from the rendered manifests, moved into
a namespace of its own (the cluster-scoped objects renamed with a random suffix), and
authenticates with a token of the component's ServiceAccount (TokenRequest API). The writes
that must fail are sent as server-side dry runs: if one were allowed, nothing would change.

If writes are allowed, check that kube-apiserver runs with --authorization-mode including RBAC
and the ValidatingAdmissionPolicy admission plugin (both defaults of the local cluster)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from extender import runs
from extender.cache.store import KINDS
from fleet import crd, layout, render, service
from fleet.metrics import FleetMetrics
from fleet.reconcile import Reconciler, ReconcileSettings
from fleet.record import record_name
from fleet.spec import for_profile
from loadgen import access, scenarios, templates
from testbed import vocab
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import CRDS
from testbed.kube.watching import Liveness
from tests.integration.deploy import cluster as c
from tests.support import deploy as s
from tests.support import fleet_objects
from tests.support import private_fleet as pf
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

Obj = dict[str, Any]
HOME = c.HOME_NAMESPACE
RBAC = "rbac.authorization.k8s.io"
ADMISSION = "admissionregistration.k8s.io"
ROLES = r.Resource(RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = r.Resource(RBAC, "v1", "rolebindings", "RoleBinding", True)
POLICIES = r.Resource(
    ADMISSION, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False
)
POLICY_BINDINGS = r.Resource(
    ADMISSION,
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    False,
)
KIND_RESOURCES = {
    "ServiceAccount": r.SERVICE_ACCOUNTS,
    "ClusterRole": c.CLUSTER_ROLES,
    "ClusterRoleBinding": c.CLUSTER_ROLE_BINDINGS,
    "Role": ROLES,
    "RoleBinding": ROLE_BINDINGS,
    "ValidatingAdmissionPolicy": POLICIES,
    "ValidatingAdmissionPolicyBinding": POLICY_BINDINGS,
}


@dataclass
class Identity:
    kube: Kube
    kubeconfig: Path
    namespace: str
    suffix: str
    """Of the cluster-scoped objects installed for it (`dra-testbed-loadgen-<suffix>`)."""


def _installed(manifests: str, names: set[str], namespace: str, suffix: str) -> list[Obj]:
    """The ServiceAccount, RBAC and policies called `names` in manifests/`manifests`, moved to
    `namespace` (a role's resourceNames of the home namespace too), cluster-scoped ones
    renamed with `suffix`."""
    out = []
    for obj in s.render(manifests):
        if obj["kind"] not in KIND_RESOURCES or obj["metadata"]["name"] not in names:
            continue
        moved = c.retarget(obj, namespace)
        for rule in moved.get("rules") or []:
            if rule.get("resourceNames") == [HOME]:
                rule["resourceNames"] = [namespace]
            elif rule.get("resources") == ["clusterroles"]:  # renamed below, as all of them
                rule["resourceNames"] = [f"{n}-{suffix}" for n in rule["resourceNames"]]
        out.append(_renamed(moved, suffix))
    assert {o["metadata"]["name"].removesuffix(f"-{suffix}") for o in out} == names
    return out


def _renamed(obj: Obj, suffix: str) -> Obj:
    """A cluster-scoped object (and what it names: its ClusterRole, its policy) renamed with
    `suffix`, so that tests never share or remove the manifests' own; others as they are."""
    if KIND_RESOURCES[obj["kind"]].namespaced:
        return obj
    obj["metadata"]["name"] += f"-{suffix}"
    if "roleRef" in obj and obj["roleRef"]["kind"] == "ClusterRole":
        obj["roleRef"]["name"] += f"-{suffix}"
    if "policyName" in obj.get("spec", {}):
        obj["spec"]["policyName"] += f"-{suffix}"
    return obj


@pytest.fixture
async def namespace(kube: Kube) -> AsyncIterator[str]:
    name = f"lp-{secrets.token_hex(3)}"
    await kube.create(r.NAMESPACES, {"metadata": {"name": name}})
    try:
        yield name
    finally:
        await kube.delete(r.NAMESPACES, name)


async def _identity(
    kube: Kube,
    kubeconfig: str,
    namespace: str,
    tmp_path: Path,
    manifests: str,
    sa: str,
    names: set[str],
) -> AsyncIterator[Identity]:
    suffix = secrets.token_hex(3)
    objs = _installed(manifests, {sa, *names}, namespace, suffix)
    made: list[Obj] = []
    try:
        for obj in objs:
            made.append(await kube.create(KIND_RESOURCES[obj["kind"]], obj))
        token = await c.service_account_token(kube, namespace, sa)
        path = c.token_kubeconfig(kubeconfig, token, sa, tmp_path / f"{sa}.kubeconfig")
        client = await Kube.connect(kubeconfig=str(path), settings=ClientSettings(max_retries=2))
        try:
            yield Identity(client, path, namespace, suffix)
        finally:
            await client.close()
    finally:
        for obj in reversed(made):
            res = KIND_RESOURCES[obj["kind"]]
            ns = obj["metadata"].get("namespace") if res.namespaced else None
            await kube.delete(res, obj["metadata"]["name"], ns)


@pytest.fixture
async def as_fleet(
    kube: Kube, kubeconfig: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Identity]:
    async for identity in _identity(
        kube,
        kubeconfig,
        namespace,
        tmp_path,
        "fleet-service",
        "dra-testbed-fleet",
        {"dra-testbed-fleet-records", "dra-testbed-fleet-owns-what-it-writes"},
    ):
        yield identity


@pytest.fixture
async def as_loadgen(
    kube: Kube, kubeconfig: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Identity]:
    async for identity in _identity(
        kube,
        kubeconfig,
        namespace,
        tmp_path,
        "loadgen",
        "dra-testbed-loadgen",
        {
            "dra-testbed-loadgen-run-reader",
            "dra-testbed-loadgen-own-namespaces",
            "dra-testbed-loadgen-pod-security",
            "dra-testbed-loadgen-admin-access",
            "dra-testbed-loadgen-pod-shapes",
        },
    ):
        yield identity


@pytest.fixture
async def as_extender(
    kube: Kube, kubeconfig: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Identity]:
    async for identity in _identity(
        kube, kubeconfig, namespace, tmp_path, "base", "dra-testbed-extender", set()
    ):
        yield identity


def _dry(query: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    return [("dryRun", "All"), *(query or [])]


async def _forbidden(
    attempts: list[tuple[str, Callable[[], Awaitable[Any]]]],
) -> list[str]:
    """The attempts that were not Forbidden."""
    allowed = []
    for what, call in attempts:
        try:
            await call()
            allowed.append(what)
        except errors.Forbidden:
            pass
        except errors.KubeError as e:
            allowed.append(f"{what} (not forbidden but {type(e).__name__}: {e})")
    return allowed


async def _policy_in_force(probe: Callable[[], Awaitable[Any]], within: float = 60.0) -> None:
    """Admission policies take effect a moment after they are created: wait until `probe`
    (a dry-run write the policy denies) is Forbidden."""
    deadline = time.monotonic() + within
    while True:
        try:
            await probe()
        except errors.Forbidden:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the admission policy was not in force after {within:.0f}s")
        await asyncio.sleep(0.5)


def _node(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


async def test_fleet_writes_its_own_fleet_and_nothing_else(
    kube: Kube, as_fleet: Identity, tmp_path: Path
) -> None:
    fleet_kube, ns = as_fleet.kube, as_fleet.namespace
    suffix = secrets.token_hex(3)
    foreign = f"lp-foreign-{suffix}"
    await kube.create(r.NODES, _node(foreign, {"team": "theirs"}))
    try:
        await _policy_in_force(
            lambda: fleet_kube.request(
                "POST", r.NODES.path(None), body=_node(f"lp-probe-{suffix}"), query=_dry()
            )
        )
        # Everything `fleet apply`, `status`, a changed re-apply and `delete` do.
        rec = Reconciler(fleet_kube, settings=ReconcileSettings(record_namespace=ns))
        name = f"lp-{suffix}"
        await rec.apply(render.validate(for_profile("dgx-h100", 2, name=name)))
        status = await rec.status(name)
        assert status.recorded and not status.problems, status
        await rec.apply(render.validate(for_profile("dgx-h100", 3, name=name)))  # marks, edits
        assert (await rec.status(name)).recorded
        await rec.delete(name)
        with pytest.raises(errors.NotFound):
            await kube.get(r.CONFIG_MAPS, record_name(name), ns)

        label = {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER}
        take_over = {"metadata": {"labels": label}}
        allowed = await _forbidden(
            [
                (
                    "create a node without the fleet's label",
                    lambda: fleet_kube.request(
                        "POST", r.NODES.path(None), body=_node(f"lp-x-{suffix}"), query=_dry()
                    ),
                ),
                (
                    "label a foreign node as the fleet's",
                    lambda: fleet_kube.request(
                        "PATCH",
                        r.NODES.path(None, foreign),
                        body=take_over,
                        content_type="application/merge-patch+json",
                        query=_dry(),
                    ),
                ),
                (
                    "delete a foreign node",
                    lambda: fleet_kube.request("DELETE", r.NODES.path(None, foreign), query=_dry()),
                ),
                (
                    "delete every node",
                    lambda: fleet_kube.request("DELETE", r.NODES.path(None), query=_dry()),
                ),
                (
                    "write a ConfigMap in kube-system",
                    lambda: fleet_kube.request(
                        "POST",
                        r.CONFIG_MAPS.path("kube-system"),
                        body={"metadata": {"name": f"lp-{suffix}", "labels": label}},
                        query=_dry(),
                    ),
                ),
                (
                    "write an unlabelled ConfigMap in its namespace",
                    lambda: fleet_kube.request(
                        "POST",
                        r.CONFIG_MAPS.path(ns),
                        body={"metadata": {"name": f"lp-{suffix}"}},
                        query=_dry(),
                    ),
                ),
                (
                    "create a pod",
                    lambda: fleet_kube.request(
                        "POST", r.PODS.path(ns), body=_pod(f"lp-{suffix}"), query=_dry()
                    ),
                ),
                ("list secrets", lambda: fleet_kube.request("GET", "/api/v1/secrets")),
                ("read another namespace", lambda: fleet_kube.get(r.NAMESPACES, "kube-system")),
            ]
        )
        assert not allowed, f"allowed with the fleet's token: {allowed}"
        node = await kube.get(r.NODES, foreign)
        assert node["metadata"]["labels"] == {"team": "theirs"}
    finally:
        await kube.delete(r.NODES, foreign)


async def test_the_fleet_service_runs_fleet_objects_under_its_own_account(
    kube: Kube, as_fleet: Identity
) -> None:
    """`fleet serve`'s controller with the fleet's token: a Fleet object created, grown and
    deleted by a user is reconciled to Ready each time (finalizer, status, record, nodes),
    and cleaned up; the Fleet objects themselves it may only patch."""
    fleet_kube, ns = as_fleet.kube, as_fleet.namespace
    await service.install_crd(kube)
    controller = service.FleetController(
        fleet_kube,
        Reconciler(fleet_kube, settings=ReconcileSettings(record_namespace=ns)),
        FleetMetrics(CollectorRegistry()),
        service.ControllerSettings(ready_timeout=120, retry_max=5),
        liveness=Liveness(fleet_kube),
    )
    name = f"lp-svc-{secrets.token_hex(3)}"
    sel = layout.fleet_selector(name)
    running = asyncio.create_task(controller.run())
    try:
        await asyncio.wait_for(controller.synced.wait(), 60)
        await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 2))
        obj = await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(1, 2), name=name, timeout=180)
        assert vocab.FLEET_FINALIZER in obj["metadata"]["finalizers"]
        await kube.get(r.CONFIG_MAPS, record_name(name), ns)
        await kube.patch(
            crd.FLEETS,
            name,
            {"spec": {"pools": [{"name": "h", "profile": "dgx-h100", "count": 3}]}},
        )
        await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(2, 3), name=name, timeout=180)
        assert len((await kube.list(r.NODES, label_selector=sel)).items) == 3

        allowed = await _forbidden(
            [
                (
                    "create a Fleet",
                    lambda: fleet_kube.request(
                        "POST",
                        crd.FLEETS.path(None),
                        body=fleet_objects.fleet_object(f"{name}-x", 1),
                        query=_dry(),
                    ),
                ),
                (
                    "delete a Fleet",
                    lambda: fleet_kube.request("DELETE", crd.FLEETS.path(None, name), query=_dry()),
                ),
                (
                    "delete every Fleet",
                    lambda: fleet_kube.request("DELETE", crd.FLEETS.path(None), query=_dry()),
                ),
                (
                    "edit the Fleet CRD",
                    lambda: fleet_kube.request(
                        "PATCH",
                        CRDS.path(None, crd.CRD_NAME),
                        body={"metadata": {"labels": {"x": "y"}}},
                        content_type="application/merge-patch+json",
                        query=_dry(),
                    ),
                ),
                (
                    "list ConfigMaps in kube-system",
                    lambda: fleet_kube.list(r.CONFIG_MAPS, namespace="kube-system"),
                ),
            ]
        )
        assert not allowed, f"allowed with the fleet's token: {allowed}"

        await kube.delete(crd.FLEETS, name)
        deadline = time.monotonic() + 120
        while True:  # the finalizer holds the object until its nodes are deleted
            try:
                await kube.get(crd.FLEETS, name)
            except errors.NotFound:
                break
            assert time.monotonic() < deadline, "the Fleet object was not released in 120 s"
            await asyncio.sleep(0.5)
        assert (await kube.list(r.NODES, label_selector=sel)).items == []
        with pytest.raises(errors.NotFound):
            await kube.get(r.CONFIG_MAPS, record_name(name), ns)
        assert not running.done(), "the controller stopped"
    finally:
        controller.stop.set()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await Reconciler(kube, settings=ReconcileSettings(record_namespace=ns)).delete(name)
        with contextlib.suppress(errors.NotFound):
            await kube.patch(crd.FLEETS, name, {"metadata": {"finalizers": None}})
            await kube.delete(crd.FLEETS, name)


def _pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


def _namespace(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


async def test_loadgen_runs_in_its_own_namespaces_and_writes_nothing_else(
    kube: Kube, kubeconfig: str, as_loadgen: Identity, tmp_path: Path
) -> None:
    lg, ns = as_loadgen.kube, as_loadgen.namespace
    suffix = secrets.token_hex(3)
    await _policy_in_force(
        lambda: lg.request(
            "POST", r.NAMESPACES.path(None), body=_namespace(f"lp-{suffix}"), query=_dry()
        )
    )
    fleet = await pf.make_fleet(kube, kubeconfig, nodes=2)
    try:
        # A whole run under loadgen's token, heartbeats every second, then the inventory.
        run_id = f"lp-{suffix}"
        reader = ["--pod-reader-role", f"dra-testbed-loadgen-run-reader-{as_loadgen.suffix}"]
        code, _, err = await pf.run_loadgen(
            "--pods", "4", "--qps", "4", "--heartbeat-interval", "1s", *reader,
            *pf.loadgen_args(fleet, str(as_loadgen.kubeconfig), tmp_path / "run", run_id),
        )  # fmt: skip
        assert code == 0, err
        assert "heartbeat" not in err and "Forbidden" not in err, err
        doc = json.loads((tmp_path / "run" / "result.json").read_text())
        assert doc["counts"]["pods_running"] == 4 and doc["cleaned_up"], doc["counts"]
        kept = f"lp-kept-{suffix}"
        code, _, err = await pf.run_loadgen(
            "--pods", "1", "--keep", *reader,
            *pf.loadgen_args(fleet, str(as_loadgen.kubeconfig), tmp_path / "kept", kept),
        )  # fmt: skip
        assert code == 0, err
        code, out, err = await pf.run_loadgen(
            "runs", "--kubeconfig", str(as_loadgen.kubeconfig), "-o", "json"
        )
        assert code == 0, err
        (listed,) = [r for r in json.loads(out) if r["run_id"] == kept]
        assert listed["pods"] == 1, listed  # read in its namespace, not cluster-wide
        code, _, err = await pf.run_loadgen(
            "cleanup", kept, "--kubeconfig", str(as_loadgen.kubeconfig)
        )
        assert code == 0 and f"removed run {kept}" in err, err

        own = templates.namespace_name(f"lp-x-{suffix}")
        managed = {vocab.LABEL_MANAGED_BY: vocab.LOADGEN_MANAGED_BY}
        allowed = await _forbidden(
            [
                (
                    "create a namespace not named loadgen-*",
                    lambda: lg.request(
                        "POST",
                        r.NAMESPACES.path(None),
                        body=_namespace(f"lp-y-{suffix}", managed),
                        query=_dry(),
                    ),
                ),
                (
                    "create an unlabelled loadgen-* namespace",
                    lambda: lg.request(
                        "POST", r.NAMESPACES.path(None), body=_namespace(own), query=_dry()
                    ),
                ),
                (
                    "create a pod outside its namespaces",
                    lambda: lg.request(
                        "POST", r.PODS.path(ns), body=_pod(f"lp-{suffix}"), query=_dry()
                    ),
                ),
                (
                    "annotate kube-system",
                    lambda: lg.request(
                        "PATCH",
                        r.NAMESPACES.path(None, "kube-system"),
                        body={"metadata": {"annotations": {"x": "y"}}},
                        content_type="application/merge-patch+json",
                        query=_dry(),
                    ),
                ),
                (
                    "delete another namespace",
                    lambda: lg.request("DELETE", r.NAMESPACES.path(None, ns), query=_dry()),
                ),
                (
                    "delete a pod",
                    lambda: lg.request("DELETE", r.PODS.path(ns), query=_dry()),
                ),
                (
                    "delete a node",
                    lambda: lg.request("DELETE", r.NODES.path(None, fleet.nodes[0]), query=_dry()),
                ),
                ("list secrets", lambda: lg.request("GET", "/api/v1/secrets")),
                ("list every pod", lambda: lg.request("GET", "/api/v1/pods")),
                ("list pods in kube-system", lambda: lg.list(r.PODS, namespace="kube-system")),
            ]
        )
        assert not allowed, f"allowed with loadgen's token: {allowed}"
    finally:
        await pf.remove_fleet(kube, kubeconfig, fleet)


async def _all_forbidden(
    attempts: list[tuple[str, Callable[[], Awaitable[Any]]]], within: float = 60.0
) -> list[str]:
    """`_forbidden`, tried again until every attempt is refused or `within` seconds passed:
    each admission policy (and a new param) takes effect a moment after it is created."""
    deadline = time.monotonic() + within
    while True:
        allowed = await _forbidden(attempts)
        if not allowed or time.monotonic() > deadline:
            return allowed
        await asyncio.sleep(0.5)


def _shaped_pod(name: str, **spec: Any) -> Obj:
    """A pod as loadgen makes it (no token, pause), with `spec` on top."""
    pod = _pod(name)
    pod["spec"] |= {"automountServiceAccountToken": False, **spec}
    return pod


async def test_loadgen_creates_only_the_shapes_it_makes(kube: Kube, as_loadgen: Identity) -> None:
    """Inside its own namespaces, loadgen's token may create what loadgen makes (every pod
    and Job shape of its scenarios passes) and nothing else: no privileged, hostPath or
    host-network pod, no other image, no Pod Security override, no admin-access label unless
    an admin grants it, no RoleBinding of another role. Pod Security baseline holds even an
    admin's privileged pod out of a loadgen namespace."""
    lg, ns = as_loadgen.kube, as_loadgen.namespace
    run_id = f"lp-{secrets.token_hex(3)}"
    own = templates.namespace_name(run_id)
    await _policy_in_force(
        lambda: lg.request(
            "POST",
            r.NAMESPACES.path(None),
            body=_namespace(f"{own}-x", {vocab.LABEL_MANAGED_BY: vocab.LOADGEN_MANAGED_BY}),
            query=_dry(),
        )
    )
    await lg.create(r.NAMESPACES, templates.namespace(run_id))
    try:
        gang = scenarios.load("gang", {"gangs": "1", "size": "2"}).phases[0]
        pod = _shaped_pod
        managed = {vocab.LABEL_MANAGED_BY: vocab.LOADGEN_MANAGED_BY}
        privileged_job = templates.build(gang, 0, run_id, templates.pod_spec(gang, {}))
        privileged_job["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {
            "privileged": True
        }

        def post(res: r.Resource, namespace: str | None, body: Obj) -> Callable[[], Any]:
            return lambda: lg.request("POST", res.path(namespace), body=body, query=_dry())

        def label(labels: dict[str, str | None]) -> Callable[[], Any]:
            return lambda: lg.request(
                "PATCH",
                r.NAMESPACES.path(None, own),
                body={"metadata": {"labels": labels}},
                content_type="application/merge-patch+json",
                query=_dry(),
            )

        admin_ns = templates.namespace(f"{run_id}-adm", admin_access=True)
        host_path = [{"name": "h", "hostPath": {"path": "/"}}]
        allowed = await _all_forbidden(
            [
                (
                    "create a privileged pod",
                    post(
                        r.PODS,
                        own,
                        pod(
                            "p1",
                            containers=[
                                {
                                    "name": "c",
                                    "image": templates.POD_IMAGE,
                                    "securityContext": {"privileged": True},
                                }
                            ],
                        ),
                    ),
                ),
                ("create a hostPath pod", post(r.PODS, own, pod("p2", volumes=host_path))),
                ("create a host-network pod", post(r.PODS, own, pod("p3", hostNetwork=True))),
                ("create a pod bound to a node", post(r.PODS, own, pod("p4", nodeName="n"))),
                (
                    "create a pod of another image",
                    post(r.PODS, own, pod("p5", containers=[{"name": "c", "image": "busybox"}])),
                ),
                (
                    "create a pod with the ServiceAccount token",
                    post(r.PODS, own, pod("p6", automountServiceAccountToken=True)),
                ),
                ("create a Job of privileged pods", post(r.JOBS, own, privileged_job)),
                (
                    "override Pod Security to privileged",
                    label({templates.LABEL_POD_SECURITY_ENFORCE: "privileged"}),
                ),
                ("drop Pod Security", label({templates.LABEL_POD_SECURITY_ENFORCE: None})),
                (
                    "add a Pod Security warn label",
                    label({"pod-security.kubernetes.io/warn": "baseline"}),
                ),
                (
                    "create a namespace enforcing privileged",
                    post(
                        r.NAMESPACES,
                        None,
                        _namespace(
                            f"{own}-p",
                            {**managed, templates.LABEL_POD_SECURITY_ENFORCE: "privileged"},
                        ),
                    ),
                ),
                (
                    "create a namespace without Pod Security",
                    post(r.NAMESPACES, None, _namespace(f"{own}-q", managed)),
                ),
                ("label its namespace admin-access", label({templates.LABEL_ADMIN_ACCESS: "true"})),
                ("create an admin-access namespace", post(r.NAMESPACES, None, admin_ns)),
                (
                    "bind cluster-admin in its namespace",
                    post(r.ROLE_BINDINGS, own, access.binding(own, "cluster-admin", "x", managed)),
                ),
                (
                    "bind its pod reader in another namespace",
                    post(
                        r.ROLE_BINDINGS,
                        ns,
                        access.binding(
                            ns, f"dra-testbed-loadgen-run-reader-{as_loadgen.suffix}", "x", managed
                        ),
                    ),
                ),
            ]
        )
        assert not allowed, f"allowed with loadgen's token: {allowed}"
        # Every policy is in force now: what loadgen makes still passes (pods of several
        # claim shapes, device-plugin pods, a gang's Job).
        made = []
        for params in ({}, {"shared_by": "2"}, {"device_plugin": "true"}):
            phase = scenarios.load("pods", {"pods": "2", **params}).phases[0]
            made.append(templates.build(phase, 0, run_id, templates.pod_spec(phase, {})))
        made.append(templates.build(gang, 0, run_id, templates.pod_spec(gang, {"a": "b"})))
        for obj in made:
            res = r.JOBS if obj["kind"] == "Job" else r.PODS
            await lg.request("POST", res.path(own), body=obj, query=_dry())
        # Pod Security itself, whoever asks: the admin's privileged pod is refused there too.
        with pytest.raises(errors.Forbidden, match="baseline"):
            await kube.request(
                "POST",
                r.PODS.path(own),
                body=_pod_with(privileged=True),
                query=_dry(),
            )

        # An admin's grant (manifests/loadgen/admin-access-grant.yaml, for this namespace's
        # ServiceAccount): then, and only then, loadgen may make its admin-access namespace.
        grant = [
            _renamed(c.retarget(doc, ns), as_loadgen.suffix)
            for doc in yaml.safe_load_all(s.ADMIN_ACCESS_GRANT.read_text())
        ]
        made_grant: list[Obj] = []
        try:
            for obj in grant:
                made_grant.append(await kube.create(KIND_RESOURCES[obj["kind"]], obj))
            deadline = time.monotonic() + 60
            while True:
                try:
                    await lg.request("POST", r.NAMESPACES.path(None), body=admin_ns, query=_dry())
                    break
                except errors.Forbidden:
                    assert time.monotonic() < deadline, "the grant did not take effect in 60 s"
                    await asyncio.sleep(0.5)
        finally:
            for obj in reversed(made_grant):
                await kube.delete(KIND_RESOURCES[obj["kind"]], obj["metadata"]["name"])
        assert not await _all_forbidden(
            [
                (
                    "create an admin-access namespace, grant withdrawn",
                    post(r.NAMESPACES, None, admin_ns),
                )
            ]
        )
    finally:
        await kube.delete(r.NAMESPACES, own)


def _pod_with(**security: Any) -> Obj:
    pod = _shaped_pod("lp-admin")
    pod["spec"]["containers"][0]["securityContext"] = security
    return pod


async def test_the_extender_reads_what_it_watches_and_writes_nothing(
    as_extender: Identity,
) -> None:
    ext, ns = as_extender.kube, as_extender.namespace
    for kind, res in [*KINDS.items(), (runs.KIND, runs.RESOURCE)]:
        listed = await ext.list(res)
        async for _ in ext.stream(res, resource_version=listed.resource_version, timeout_seconds=1):
            pass
        assert listed.resource_version, kind
    allowed = await _forbidden(
        [
            (
                "create a pod",
                lambda: ext.request("POST", r.PODS.path(ns), body=_pod("lp"), query=_dry()),
            ),
            (
                "bind a pod",
                lambda: ext.request(
                    "POST",
                    r.PODS.path(ns, "lp") + "/binding",
                    body={"target": {"kind": "Node", "name": "lp"}, "metadata": {"name": "lp"}},
                    query=_dry(),
                ),
            ),
            (
                "delete a node",
                lambda: ext.request("DELETE", r.NODES.path(None, "lp"), query=_dry()),
            ),
            (
                "delete every slice",
                lambda: ext.request("DELETE", r.RESOURCE_SLICES.path(None), query=_dry()),
            ),
            ("list secrets", lambda: ext.request("GET", "/api/v1/secrets")),
        ]
    )
    assert not allowed, f"allowed with the extender's token: {allowed}"
