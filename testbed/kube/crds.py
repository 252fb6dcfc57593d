"""CustomResourceDefinitions: waiting until the API server serves a kind it was just given."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from testbed.kube.client import Kube
from testbed.kube.resources import CRDS


def is_established(crd: dict[str, Any]) -> bool:
    """The CRD's `Established` condition is True: its kind is served (pure)."""
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def wait_established(kube: Kube, name: str, *, within: float = 60.0) -> bool:
    """Wait until CRD `name` is Established; False if it is not after `within` seconds (the
    caller says so in its own words)."""
    deadline = time.monotonic() + within
    while True:
        if is_established(await kube.get(CRDS, name)):
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
