"""Consumable capacity on the real cluster: the extender and kube-scheduler agree claim by claim.

One node with one shared GPU (allowMultipleAllocations, 80Gi of memory whose requestPolicy
has an 8Gi default and a 4Gi minimum and step). Claims come one after another, each pinned
to the node: the extender says beforehand whether it fits next to the claims already
allocated there (their consumedCapacity, the policy's rounding); the real kube-scheduler
then schedules the pod or leaves it unschedulable.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from fractions import Fraction
from typing import Any

import pytest
from aiohttp import web

from extender import handlers
from testbed import vocab
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import pinned_pods as pinned

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

GPU = "gpu.nvidia.com"
Gi = 2**30
# (memory requested or None, what the pod's outcome must be): 30Gi rounds up to 32Gi.
STEPS: list[tuple[str | None, str]] = [
    ("30Gi", "scheduled"),  # 32 of 80
    ("30Gi", "scheduled"),  # 64
    ("20Gi", "unschedulable"),  # 84 > 80
    (None, "scheduled"),  # the 8Gi default: 72
    ("9Gi", "unschedulable"),  # rounds to 12Gi: 84
    ("8Gi", "scheduled"),  # 80: full
]


@pytest.fixture(scope="module")
async def extender(kube: Kube, extender_port: int) -> AsyncIterator[web.Application]:
    async with pinned.extender_on(kube, extender_port) as app:
        yield app


def _gpu() -> dict[str, Any]:
    return {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "attributes": {"type": {"string": "gpu"}},
        "capacity": {
            "memory": {
                "value": "80Gi",
                "requestPolicy": {
                    "default": "8Gi",
                    "validRange": {"min": "4Gi", "step": "4Gi"},
                },
            }
        },
    }


async def test_shared_capacity_verdicts_match_the_real_allocator(
    kube: Kube, extender: web.Application
) -> None:
    run = secrets.token_hex(3)
    prefix = f"cap-{run}"
    ns, node, cls = prefix, f"{prefix}-n0", f"{prefix}-shared"
    core = extender[handlers.CORE]
    index = core.index
    await kube.create(r.NAMESPACES, {"metadata": {"name": ns}})
    expr = f"device.driver == '{GPU}' && device.allowMultipleAllocations"
    device_class = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": cls},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }
    seen: list[dict[str, Any]] = []
    try:
        await kube.create(r.DEVICE_CLASSES, device_class)
        await kube.create(r.NODES, pinned.node(node, run))
        await kube.create(r.RESOURCE_SLICES, pinned.resource_slice(node, GPU, node, [_gpu()]))
        await pinned.until(
            "extender sees the class and node",
            lambda: cls in index.classes and node in index.nodes and index.nodes[node].devices,
        )
        await pinned.wait_ready(kube, [node])
        held = Fraction(0)
        key = ((GPU, node, "gpu-0"), f"{GPU}/memory")
        for i, (memory, expected) in enumerate(STEPS):
            request: dict[str, Any] = {"deviceClassName": cls, "count": 1}
            if memory is not None:
                request["capacity"] = {"requests": {"memory": memory}}
            spec = {"devices": {"requests": [{"name": "g", "exactly": request}]}}
            claim = f"c{i}"
            await kube.create(
                r.RESOURCE_CLAIMS, {"metadata": {"name": claim, "namespace": ns}, "spec": spec}
            )
            await pinned.until("extender sees the claim", lambda c=claim: index.claim(ns, c))
            pod = pinned.pod(ns, f"p{i}", claim, node)
            verdict = core.verdicts(core.demand(pod), [node]).get(node)
            await kube.create(r.PODS, pod)
            outcome = None
            deadline = time.monotonic() + 120
            while outcome is None and time.monotonic() < deadline:
                outcome = pinned.outcome(await kube.get(r.PODS, f"p{i}", ns))
                if outcome is None:
                    await asyncio.sleep(0.5)
            seen.append(
                {
                    "memory": memory,
                    "extender": None if verdict is None else verdict.fits,
                    "kube": outcome,
                    "expected": expected,
                }
            )
            if outcome == "scheduled":
                # The extender sees the allocation's consumedCapacity before the next claim.
                before = held
                await pinned.until(
                    "extender sees the consumed capacity",
                    lambda b=before: index.capacity_in_use.get(key, Fraction(0)) > b,
                )
                held = index.capacity_in_use[key]
        print(seen)
        assert [s["kube"] for s in seen] == [e for _, e in STEPS], seen
        assert [s["extender"] for s in seen] == [e == "scheduled" for _, e in STEPS], seen
        assert held == 80 * Gi
    finally:
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.NAMESPACES, ns)
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.NODES, node)
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.RESOURCE_SLICES, f"{node}-{GPU}")
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.DEVICE_CLASSES, cls)
