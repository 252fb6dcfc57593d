"""The local cluster as an existing cluster: one untainted fake node for the scheduler
Deployments' pods (and kwok's controller pod), which kwok then fakes Running."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterator

import pytest

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import small_world as w


@pytest.fixture
def host_node(kubeconfig: str) -> Iterator[str]:
    """An untainted fake node, where the Deployments' pods land (and kwok fakes them)."""
    name = f"site-host-{secrets.token_hex(3)}"
    node = w.fake_node(name)
    node["spec"] = {}

    async def make(kube: Kube) -> None:
        await kube.create(r.NODES, node)

    asyncio.run(with_kube(kubeconfig, make))
    try:
        yield name
    finally:
        asyncio.run(with_kube(kubeconfig, lambda kube: kube.delete(r.NODES, name)))


async def with_kube(kubeconfig: str, step: Callable[[Kube], Awaitable[object]]) -> None:
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        await step(kube)
