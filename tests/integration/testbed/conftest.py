from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.small_world import Env


@pytest.fixture
async def env(kube: Kube) -> AsyncIterator[Env]:
    e = Env()
    await kube.create(r.NAMESPACES, {"metadata": {"name": e.namespace}})
    await kube.create(
        r.DEVICE_CLASSES,
        {
            "metadata": {"name": e.device_class},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{e.driver}'"}}]},
        },
    )
    try:
        yield e
    finally:
        await kube.delete(r.NAMESPACES, e.namespace)
        await kube.delete(r.NODES, e.node)  # its ResourceSlice goes with it (owner reference)
        await kube.delete(r.DEVICE_CLASSES, e.device_class)
