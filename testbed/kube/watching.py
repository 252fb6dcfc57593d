"""List, then watch from the list's resourceVersion, forever (kopf's stacked generators).

`informer()` yields a `Snapshot` after every (re)list, then `Change`s. A consumer replaces
its store for that kind on a snapshot and applies changes incrementally. It relists on 410
Gone, resumes the watch from the last seen resourceVersion when a stream ends, and backs off
on errors; `stop` ends it (the test hook).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

from testbed.kube import errors
from testbed.kube.client import Kube
from testbed.kube.resources import Resource

log = logging.getLogger(__name__)

RestartReason = Literal["gone", "error", "closed"]


@dataclass(slots=True)
class Snapshot:
    """Every object of the kind as of `resource_version`: replace what you had."""

    items: list[dict[str, Any]]
    resource_version: str


@dataclass(slots=True)
class Change:
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: dict[str, Any]


async def informer(
    kube: Kube,
    res: Resource,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout_seconds: int = 300,
    backoff_max: float = 10.0,
    on_restart: Callable[[RestartReason], None] | None = None,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[Snapshot | Change]:
    rv = ""
    failures = 0
    while stop is None or not stop.is_set():
        try:
            if not rv:
                listed = await kube.list(
                    res,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                )
                rv = listed.resource_version
                failures = 0
                yield Snapshot(items=listed.items, resource_version=rv)
            async for event in kube.stream(
                res,
                resource_version=rv,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                timeout_seconds=timeout_seconds,
            ):
                rv = event.object.get("metadata", {}).get("resourceVersion", rv)
                failures = 0
                if event.type != "BOOKMARK":
                    yield Change(type=event.type, object=event.object)
                if stop is not None and stop.is_set():
                    return
            # The server ended the stream (its timeout): resume from rv, no relist.
            if on_restart:
                on_restart("closed")
        except errors.Gone:
            log.info("watch of %s expired (410 Gone); relisting", res.plural)
            rv = ""
            if on_restart:
                on_restart("gone")
        except (errors.KubeError, ValueError) as e:
            failures += 1
            delay = min(backoff_max, 0.2 * 2**failures) * random.uniform(0.5, 1.0)
            log.warning("watch of %s failed (%s); retrying in %.1fs", res.plural, e, delay)
            if on_restart:
                on_restart("error")
            # An outage (no answer, 5xx, 429) keeps rv, however long: the restarted server
            # resumes from it or says 410 (relist above), as client-go's reflector does. Other
            # repeated failures start over from a fresh list.
            if failures > 1 and not errors.is_retriable(e):
                rv = ""
            await _sleep_or_stop(delay, stop)


async def _sleep_or_stop(delay: float, stop: asyncio.Event | None) -> None:
    if stop is None:
        await asyncio.sleep(delay)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), delay)
