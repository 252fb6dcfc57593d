from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from testbed.kube import resources as r
from testbed.kube.client import Kube


@pytest.fixture
async def namespace(kube: Kube) -> AsyncIterator[str]:
    """A namespace of our own (random suffix), deleted afterwards."""
    name = f"deploy-{secrets.token_hex(3)}"
    await kube.create(r.NAMESPACES, {"metadata": {"name": name, "labels": {"test": "deploy"}}})
    try:
        yield name
    finally:
        await kube.delete(r.NAMESPACES, name, propagation="Background")
