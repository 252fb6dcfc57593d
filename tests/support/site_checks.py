"""Helpers of the existing-site tests: one API call from synchronous code, and which of the
objects a site may create exist."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from experiment.sites import cluster_objects as co
from experiment.sites import existing_site as es
from testbed.kube import resources as r
from testbed.kube.client import Kube

T = TypeVar("T")
MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def call(kubeconfig: str | Path, step: Callable[[Kube], Awaitable[T]]) -> T:
    async def go() -> T:
        async with await Kube.connect(kubeconfig=kubeconfig) as kube:
            return await step(kube)

    return asyncio.run(go())


async def snapshot(kube: Kube) -> set[tuple[str, str]]:
    """Which of the objects a site may create exist (kind, namespace/name), and every
    variant's Deployment."""
    out: set[tuple[str, str]] = set()
    m = co.Manifests.load(MANIFESTS)
    api = es.SiteApi(Path("unused"))
    for obj in [*co.shared(m), *co.kwok(m)]:
        if obj["kind"] == "Stage":
            continue  # served only while kwok's CRD is installed; the CRD stands for them
        res = await api.resource(kube, obj)
        if await es.exists(kube, res, obj):
            out.add((res.kind, key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))))
    deployments = await kube.list(es.DEPLOYMENTS, label_selector=co.LABEL_VARIANT)
    out.update(("Deployment", r.key_of(o)) for o in deployments.items)
    return out


def key(res: r.Resource, name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if res.namespaced and namespace else name
