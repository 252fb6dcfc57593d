"""List, then watch from the list's resourceVersion, forever; and tell a hung API server.

`informer()` yields a `Snapshot` after every (re)list, then `Change`s. A consumer replaces
its store for that kind on a snapshot and applies changes incrementally. It relists on 410
Gone, resumes the watch from the last seen resourceVersion when a stream ends, and backs off
on errors; `stop` ends it (the test hook).

A watch cannot tell a quiet API server from a hung one (a stopped process still accepts TCP
connections; its streams just go silent until the read timeout, minutes later). client-go
finds out with HTTP/2 pings every 30 s of silence; over HTTP/1.1 `Liveness` does the same
with a periodic cheap read (GET /version, answered without storage). When enough probes in
a row get no answer it marks the server down with the reason, cuts the open watches, and the
informers sharing it wait for it to answer again, then relist: what happened meanwhile is
read afresh rather than trusted to a stream that stalled.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from testbed import runtime
from testbed.kube import errors
from testbed.kube.client import Kube, ObjectList
from testbed.kube.resources import Resource

log = logging.getLogger(__name__)

RestartReason = Literal["gone", "error", "closed", "hung"]
"""Why a watch restarted: 410 Gone (relist), an error (retry), the server ended the stream
(resume), or the API server stopped answering (relist once it answers again)."""


Snapshot = ObjectList
"""Every object of the kind as of `resource_version` (the list itself): replace what you had."""


@dataclass(slots=True)
class Change:
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class LivenessSettings:
    interval: float = 5.0
    """Seconds between probes. With the defaults a hung server is marked down within about
    interval + failures * (interval + timeout) = 25 s (client-go: 30 s idle + 15 s ping)."""
    timeout: float = 5.0
    """Seconds a probe may take; GET /version answers in milliseconds on a live server."""
    failures: int = 2
    """Probes in a row without an answer before the server is marked down (one slow answer
    on a busy machine is not an outage)."""
    path: str = "/version"
    """What to read: served from memory, allowed to every client by default RBAC."""


LivenessObserver = Callable[[bool, str], None]
"""Called with (up, reason) whenever the API server goes down or comes back."""


class Liveness:
    """Whether the API server answers, shared by every informer of a process.

    `run()` probes forever; `record()` is the state machine (public, so tests drive it with
    plain values). While down, `up` is False and `reason` says why; `outages` counts the
    transitions to down, which informers compare to relist after each one."""

    def __init__(
        self,
        kube: Kube,
        settings: LivenessSettings | None = None,
        *,
        on_change: LivenessObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.settings = settings or LivenessSettings()
        self.on_change = on_change
        self.clock = clock
        self.up = True
        self.reason = ""
        self.outages = 0
        self.since = clock()
        """When `up` last changed."""
        self.streams: set[Callable[[], None]] = set()
        """Closers of the open watch streams (see Kube.stream); called when the server goes
        down, so no informer waits minutes on a silent stream."""
        self._failures = 0
        self._answered = asyncio.Event()
        self._answered.set()

    def record(self, answered: bool, detail: str = "") -> None:
        """One probe's outcome."""
        if answered:
            self._failures = 0
            if not self.up:
                down_for = self.clock() - self.since
                log.warning("API server answers again after %.1fs; relisting", down_for)
                self._set(True, "")
            return
        self._failures += 1
        if self._failures < self.settings.failures:
            return
        if self.up:
            reason = (
                f"API server {self.kube.host} not answering: {self._failures} probes of "
                f"{self.settings.path} in a row failed (last: {detail})"
            )
            log.warning("%s; cutting watches until it answers", reason)
            self.outages += 1
            self._set(False, reason)
        # Every failed probe while down cuts again: a watch opened in between would stall.
        for close in list(self.streams):
            close()

    def _set(self, up: bool, reason: str) -> None:
        self.up = up
        self.reason = reason
        self.since = self.clock()
        if up:
            self._answered.set()
        else:
            self._answered.clear()
        if self.on_change is not None:
            self.on_change(up, reason)

    async def wait_up(self) -> None:
        await self._answered.wait()

    async def probe(self) -> None:
        """One cheap read, recorded. Any HTTP answer counts as alive (a 403 is an answer)."""
        try:
            await self.kube.request(
                "GET", self.settings.path, retry=False, attempt_timeout=self.settings.timeout
            )
        except errors.Unreachable as e:
            timed_out = isinstance(e.__cause__, TimeoutError)
            self.record(False, f"no answer in {self.settings.timeout:g}s" if timed_out else str(e))
            return
        except errors.KubeError:
            pass
        self.record(True)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Probe every `interval` seconds until `stop` (or cancelled)."""
        while stop is None or not stop.is_set():
            await self.probe()
            await _sleep_or_stop(self.settings.interval, stop)


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
    liveness: Liveness | None = None,
) -> AsyncIterator[Snapshot | Change]:
    """With `liveness`, a watch is cut when the API server stops answering, and the kind is
    relisted once it answers again."""
    rv = ""
    failures = 0
    outages = liveness.outages if liveness is not None else 0
    closers = liveness.streams if liveness is not None else None
    while stop is None or not stop.is_set():
        if liveness is not None:
            if not liveness.up:
                await _wait_or_stop(liveness.wait_up(), stop)
                continue
            if liveness.outages != outages:
                outages = liveness.outages
                rv = ""  # the server stalled since our last list: read everything afresh
                if on_restart:
                    on_restart("hung")
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
                yield listed
            async for event in kube.stream(
                res,
                resource_version=rv,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                timeout_seconds=timeout_seconds,
                closers=closers,
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
            if liveness is not None and not liveness.up:
                log.info("watch of %s cut: %s", res.plural, liveness.reason)
                continue  # wait for the server at the top, then relist
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
    await runtime.wait_set(stop, delay)


async def _wait_or_stop(waiting: Awaitable[None], stop: asyncio.Event | None) -> None:
    if stop is None:
        await waiting
        return
    waiter = asyncio.ensure_future(waiting)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for fut in (waiter, stopper):
            fut.cancel()


async def until_deleted(kube: Kube, res: Resource, name: str, seconds: float) -> bool:
    """Wait until the cluster-scoped object `name` is gone (True), at most `seconds` (False)."""

    async def gone() -> None:
        async for ev in informer(kube, res, field_selector=f"metadata.name={name}"):
            if isinstance(ev, Snapshot) and not ev.items:
                return
            if isinstance(ev, Change) and ev.type == "DELETED":
                return

    try:
        await asyncio.wait_for(gone(), seconds)
    except TimeoutError:
        return False
    return True
