"""The extender's RBAC from manifests/extender, enforced by the real API server: with the
extender ServiceAccount's own token, list and watch of everything it reads succeed, writes are
Forbidden, and the real extender under that identity syncs its cache and turns ready.

If this fails with writes allowed, check that kube-apiserver runs with
--authorization-mode including RBAC (kwokctl: --kube-authorization, the default)."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from extender import runs
from extender.cache.store import KINDS
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import ClientSettings, Kube
from tests.integration.deploy import cluster as c
from tests.support import deploy as s

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

Obj = dict[str, Any]
SA = "dra-testbed-extender"
NOTHING = "deploy-rbac-nothing"


def extender_rbac(namespace: str, suffix: str) -> tuple[Obj, Obj, Obj]:
    """The extender's ServiceAccount, ClusterRole and ClusterRoleBinding as rendered, moved to
    `namespace`, the cluster-scoped two renamed with `suffix` (the shared cluster may hold
    other copies)."""
    objs = {(o["kind"], o["metadata"]["name"]): o for o in s.render("base")}
    sa = c.retarget(objs[("ServiceAccount", SA)], namespace)
    role = c.retarget(objs[("ClusterRole", SA)], namespace)
    binding = c.retarget(objs[("ClusterRoleBinding", SA)], namespace)
    role["metadata"]["name"] = f"{SA}-{suffix}"
    binding["metadata"]["name"] = f"{SA}-{suffix}"
    binding["roleRef"]["name"] = role["metadata"]["name"]
    return sa, role, binding


@pytest.fixture
async def extender_identity(
    kube: Kube, kubeconfig: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Path]:
    """A kubeconfig authenticating as the extender's ServiceAccount (TokenRequest API)."""
    sa, role, binding = extender_rbac(namespace, secrets.token_hex(3))
    await kube.create(r.SERVICE_ACCOUNTS, sa)
    await kube.create(c.CLUSTER_ROLES, role)
    await kube.create(c.CLUSTER_ROLE_BINDINGS, binding)
    try:
        token = await c.service_account_token(kube, namespace, SA)
        yield c.token_kubeconfig(kubeconfig, token, SA, tmp_path / "extender.kubeconfig")
    finally:
        await kube.delete(c.CLUSTER_ROLE_BINDINGS, binding["metadata"]["name"])
        await kube.delete(c.CLUSTER_ROLES, role["metadata"]["name"])


@pytest.fixture
async def as_extender(extender_identity: Path) -> AsyncIterator[Kube]:
    client = await Kube.connect(
        kubeconfig=str(extender_identity), settings=ClientSettings(max_retries=0)
    )
    try:
        yield client
    finally:
        await client.close()


async def test_extender_can_list_and_watch_everything_it_reads(as_extender: Kube) -> None:
    for kind, res in [*KINDS.items(), (runs.KIND, runs.RESOURCE)]:
        listed = await as_extender.list(res)
        events = as_extender.stream(
            res, resource_version=listed.resource_version, timeout_seconds=1
        )
        async for _ in events:  # a watch that opens and closes cleanly; events are fine too
            pass
        assert listed.resource_version, kind


async def test_extender_cannot_write(as_extender: Kube, namespace: str) -> None:
    # Each write would be harmless even if allowed: names and selectors match nothing.
    attempts: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("create pod", lambda: as_extender.create(r.PODS, _pod(namespace))),
        ("create node", lambda: as_extender.create(r.NODES, {"metadata": {"name": NOTHING}})),
        (
            "create deviceclass",
            lambda: as_extender.create(r.DEVICE_CLASSES, {"metadata": {"name": NOTHING}}),
        ),
        ("delete node", lambda: as_extender.delete(r.NODES, NOTHING)),
        (
            "delete resourceslices",
            lambda: as_extender.delete_collection(
                r.RESOURCE_SLICES, label_selector=f"{NOTHING}=none"
            ),
        ),
        ("list secrets", lambda: as_extender.request("GET", "/api/v1/secrets")),
    ]
    allowed = []
    for what, call in attempts:
        try:
            await call()
            allowed.append(what)
        except errors.Forbidden:
            pass
    assert not allowed, (
        f"allowed with the extender's token: {allowed}; is RBAC enforced "
        "(kube-apiserver --authorization-mode=...,RBAC)?"
    )


def _pod(namespace: str) -> Obj:
    return {
        "metadata": {"name": NOTHING, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


async def test_real_extender_under_its_service_account_becomes_ready(
    extender_identity: Path, tmp_path: Path
) -> None:
    port = s.free_port()
    argv = ["extender", "serve", "--kubeconfig", str(extender_identity)]
    argv += ["--address", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PATH": f"{s.REPO / '.venv/bin'}:{os.environ.get('PATH', '')}"}
    with s.running(argv, tmp_path / "extender.log", env) as proc:
        await asyncio.to_thread(s.wait_http, f"http://127.0.0.1:{port}/readyz", proc, limit=120)
        log = (tmp_path / "extender.log").read_text()
        assert "Forbidden" not in log and "403" not in log, log[-2000:]
        # The API server's gates, read with that token (the session cluster runs without it).
        assert "the API server reports DRAFractionalCapacityRange off" in log, log[-2000:]
