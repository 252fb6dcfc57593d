"""Creates a phase's objects at a controlled rate: open loop (fixed, Poisson) or closed loop.

Names are deterministic, so a create whose answer was lost and that is retried finds
`AlreadyExists` and counts once: never more objects than requested. The shared client
already retries 429/5xx with backoff (honouring Retry-After); when it gives up, the driver
backs off and tries the same object again a few more times before counting it as failed.
A pod refused because its new namespace has no `default` ServiceAccount yet waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from loadgen import outcome, plan
from testbed import runtime
from testbed.kube import errors, resources
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

Build = Callable[[int], dict[str, Any]]
Gate = Callable[[], Awaitable[None]]


class DriverError(Exception):
    """A create failed in a way retrying cannot fix (invalid object, forbidden, no namespace)."""


@dataclass(kw_only=True)
class Pacing:
    qps: float
    """Objects per second (open loop); <= 0 means as fast as `max_in_flight` allows."""
    arrival: plan.Arrival = "fixed"
    max_in_flight: int = 100
    """Open loop: create requests outstanding at once. Closed loop: objects created whose
    pods are not Running yet (enforced by the caller's gate)."""
    seed: int = 0
    give_up_after: int = 4
    """Extra attempts, after the client's own retries, before an object counts as failed."""


async def create_objects(
    kube: Kube,
    res: resources.Resource,
    build: Build,
    indices: range,
    pacing: Pacing,
    *,
    stats: outcome.CreateStats,
    stop: asyncio.Event,
    gate: Gate | None = None,
) -> None:
    """Create `build(i)` for each i in `indices`, paced; returns when all answered or stopped.

    `gate` (closed loop) is awaited before each create. `stop` ends creation early; creates
    already sent are still awaited so their objects are counted.
    """
    schedule = plan.offsets(len(indices), pacing.qps, pacing.arrival, seed=pacing.seed)
    slots = asyncio.Semaphore(max(1, pacing.max_in_flight))
    fatal: list[BaseException] = []
    inflight: set[asyncio.Task[None]] = set()
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def one(i: int) -> None:
        try:
            await _create_one(kube, res, build(i), pacing, stats, stop)
        except DriverError as e:
            fatal.append(e)
        finally:
            slots.release()

    for n, i in enumerate(indices):
        if stop.is_set() or fatal:
            break
        if gate is not None:
            try:
                await until_stopped(gate(), stop)
            except Exception as e:  # the gate gave up (a stalled phase): stop creating
                fatal.append(e)
                break
        elif schedule is not None:
            delay = start + schedule[n] - loop.time()
            if delay > 0:
                await _sleep(delay, stop)
        if stop.is_set() or fatal:
            break
        await slots.acquire()  # freed as soon as an outstanding create is answered
        if stop.is_set() or fatal:
            slots.release()
            break
        stats.requested += 1
        task = asyncio.create_task(one(i))
        inflight.add(task)
        task.add_done_callback(inflight.discard)
    if inflight:
        await asyncio.gather(*inflight)
    if fatal:
        raise DriverError(str(fatal[0]))


NO_SERVICE_ACCOUNT = "error looking up service account"
"""The API server refuses a pod in a namespace whose `default` ServiceAccount
kube-controller-manager has not made yet (403 with this text)."""
SERVICE_ACCOUNT_WAIT = 60.0
"""How long a pod create waits for that ServiceAccount: seconds normally, longer while
kube-controller-manager is loaded or restarting."""


async def _create_one(
    kube: Kube,
    res: resources.Resource,
    body: dict[str, Any],
    pacing: Pacing,
    stats: outcome.CreateStats,
    stop: asyncio.Event,
) -> None:
    attempt = 0
    no_account_until = time.monotonic() + SERVICE_ACCOUNT_WAIT
    while True:
        t0 = time.perf_counter()
        try:
            await kube.create(res, body)
        except errors.AlreadyExists:
            # Our own earlier attempt got through after all: it counts once.
            stats.already_existed += 1
            return
        except errors.KubeError as e:
            if (
                isinstance(e, errors.Forbidden)
                and NO_SERVICE_ACCOUNT in str(e)
                and time.monotonic() < no_account_until
                and not stop.is_set()
            ):
                stats.retries += 1
                await _sleep(1.0, stop)
                continue
            if not errors.is_retriable(e):
                stats.failed += 1
                stats.first_error = stats.first_error or str(e)
                raise DriverError(f"creating {res.kind} {body['metadata']['name']}: {e}") from e
            if attempt == pacing.give_up_after or stop.is_set():
                stats.failed += 1
                stats.first_error = stats.first_error or str(e)
                log.warning("giving up on %s %s: %s", res.kind, body["metadata"]["name"], e)
                return
            stats.retries += 1
            await _sleep(min(10.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0), stop)
            attempt += 1
            continue
        stats.request_seconds.append(time.perf_counter() - t0)
        stats.created += 1
        return


async def _sleep(delay: float, stop: asyncio.Event) -> None:
    if delay < 0.2:  # short pacing gaps: a plain sleep is cheaper than a stop-aware wait
        await asyncio.sleep(delay)
        return
    await runtime.wait_set(stop, delay)


async def until_stopped(aw: Awaitable[Any], stop: asyncio.Event) -> None:
    """Await `aw` unless `stop` is set first (then `aw` is cancelled)."""
    task = asyncio.ensure_future(aw)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([task, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if not task.cancelled():
        task.result()  # its exception, if it failed
