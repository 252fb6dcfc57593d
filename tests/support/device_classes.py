"""The testbed's shared DeviceClasses for tests that run without a fleet, on the session cluster.

Created only where missing, and deleted again afterwards: a class no fleet manages (no
app.kubernetes.io/managed-by) would make a later `fleet apply` on that cluster refuse to take
it over, failing whichever test happens to run next.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import extender_objects


@contextlib.asynccontextmanager
async def present(kube: Kube) -> AsyncIterator[None]:
    created = []
    try:
        for cls in extender_objects.classes():
            with contextlib.suppress(errors.AlreadyExists):
                await kube.create(r.DEVICE_CLASSES, cls)
                created.append(cls["metadata"]["name"])
        yield
    finally:
        for name in created:
            with contextlib.suppress(errors.NotFound):
                await kube.delete(r.DEVICE_CLASSES, name)
