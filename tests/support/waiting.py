"""Wait on a watch, never on sleep: tests block until an object satisfies a predicate."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from testbed import runtime
from testbed.kube import resources as r
from testbed.kube.client import Kube
from testbed.kube.resources import Resource
from testbed.kube.watching import Change, Snapshot, informer

Obj = dict[str, Any]


async def wait_for(
    kube: Kube,
    res: Resource,
    predicate: Callable[[Obj], bool],
    *,
    name: str | None = None,
    namespace: str | None = None,
    label_selector: str | None = None,
    timeout: float = 60.0,  # noqa: ASYNC109 (one deadline for list and watch)
) -> Obj:
    """The first object (by name, or any matching the selector) for which `predicate` holds."""
    field_selector = f"metadata.name={name}" if name else None

    async def watch() -> Obj:
        async for ev in informer(
            kube,
            res,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        ):
            objs = ev.items if isinstance(ev, Snapshot) else [ev.object]
            if isinstance(ev, Change) and ev.type == "DELETED":
                continue
            for obj in objs:
                if predicate(obj):
                    return obj
        raise AssertionError("watch ended")

    try:
        return await asyncio.wait_for(watch(), timeout)
    except TimeoutError:
        what = name or label_selector or res.plural
        raise AssertionError(
            f"{res.kind} {what} did not reach the expected state in {timeout}s"
        ) from None


def condition(obj: Obj, kind: str) -> str | None:
    """The status of condition `kind` ("True"/"False"/"Unknown"), or None."""
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


async def pods_bound(kube: Kube, namespace: str, count: int) -> None:
    """Return once `count` pods in `namespace` have a node (seen on a watch)."""
    bound: set[str] = set()
    async for ev in informer(kube, r.PODS, namespace=namespace):
        for pod in ev.items if isinstance(ev, Snapshot) else [ev.object]:
            if (pod.get("spec") or {}).get("nodeName"):
                bound.add(pod["metadata"]["name"])
        if len(bound) >= count:
            return


async def until_changed(
    changed: asyncio.Event,
    predicate: Callable[[], bool],
    what: str,
    timeout: float = 120.0,  # noqa: ASYNC109 (one deadline over many short waits)
    state: Callable[[], object] = lambda: None,
) -> None:
    """Re-check `predicate` after each `changed` (a watch event applied) or each second (a
    relist applies without events), until `timeout`; on failure the message carries
    `state()`. The deadline is the loop's clock, checked after every short wait."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"never reached in {timeout:.0f} s: {what} (now {state()!r})")
        changed.clear()
        await runtime.wait_set(changed, min(1.0, left))
