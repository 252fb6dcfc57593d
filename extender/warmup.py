"""Readiness that means warm: what the first scheduler calls would pay is paid at start-up,
after the first full sync and before /readyz says ready (`WARM`).

Without it the first calls after a (re)start paid it: at 500 nodes the first /prioritize of a
pod shape took up to 250 ms on an idle machine, against a steady p99 under a millisecond.
The warm-up, in order:
- every node's summary: which devices each DeviceClass selects (the devices' CEL work);
- for each pod shape the cache already knows, the claim templates and the claims not yet
  allocated (what pending pods ask), `Core.warm`: its claims parsed, their expressions
  compiled, judged on every node, its scores remembered; a few nodes at a time, so that the
  probes still answer meanwhile, and within a bound (`SHAPES`, `JUDGEMENTS`): a shape past
  it is paid by its first calls, as before;
- a full garbage collection, then every object so far (millions at 5,000 nodes) frozen out of
  the collector's sight, so that its collections stop walking them inside scheduler calls.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from aiohttp import web

from extender import expressions, judging
from extender.cache.index import Index
from extender.cache.store import Store
from extender.core import Core
from extender.topology import NodeView

log = logging.getLogger(__name__)

WARM: Final = web.AppKey("warm", asyncio.Event)
"""Set once the warm-up is done: /readyz answers 200 only then."""

SHAPES = 32
"""At most this many pod shapes are warmed (a bound on the start-up, whatever the cache)..."""
JUDGEMENTS = 20_000
"""...and at most this many node verdicts in all: a shape judged on 5,000 nodes costs ~3 s
of CPU (2026-11-27), so 4 shapes are warmed there and 32 at 500 nodes."""
_NODES_PER_STEP = 64
"""Nodes judged between two yields to the event loop (the probes answer meanwhile)."""


def stand_ins(index: Index, limit: int = SHAPES) -> list[dict[str, Any]]:
    """Pods asking what the cache's claim templates and unallocated claims ask, one per
    distinct claim spec (thousands of pending claims of one template are one shape), up to
    `limit`: templates first, each group by namespace and name."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    refs = [
        (key, (obj.get("spec") or {}).get("spec"), "resourceClaimTemplateName")
        for key, obj in sorted(index.templates.items())
    ] + [
        (key, obj.get("spec"), "resourceClaimName")
        for key, obj in sorted(index.claims.items())
        if not (obj.get("status") or {}).get("allocation")
    ]
    for key, spec, field in refs:
        shape = json.dumps(spec, sort_keys=True, default=str)
        if shape in seen:
            continue
        seen.add(shape)
        namespace, name = key.split("/", 1)
        out.append(
            {
                "metadata": {"namespace": namespace, "name": f"warm-up-{name}"},
                "spec": {"resourceClaims": [{"name": "warm-up", field: name}]},
            }
        )
        if len(out) == limit:
            break
    return out


async def warm(core: Core, index: Index) -> None:
    """The warm-up (see the module), yielding to the event loop as it goes. The summaries,
    and each pod shape, spend at most the CEL time of one call (`cel_budget_seconds`): what
    is past it is paid by the first calls, within theirs. A step that waits on the CEL
    sandbox runs off the loop, as a call would (`extender.judging`)."""
    started = time.monotonic()
    views = [v for v in index.nodes.values() if v.known]
    seconds = core.settings.cel_budget_seconds
    budget = expressions.Budget(seconds)
    try:
        for at in range(0, len(views), _NODES_PER_STEP):
            step = views[at : at + _NODES_PER_STEP]
            await judging.judged(index, budget, functools.partial(_summarise, index, step))
            await asyncio.sleep(0)
    except expressions.NotJudged as e:
        log.warning("warm: node summaries left to the first calls: %s", str(e)[:600])
    names = [v.name for v in views]
    pods = stand_ins(index, limit=max(1, min(SHAPES, JUDGEMENTS // max(1, len(names)))))
    for pod in pods:
        budget = expressions.Budget(seconds)
        try:
            for at in range(0, len(names), _NODES_PER_STEP):
                some = names[at : at + _NODES_PER_STEP]
                await judging.judged(index, budget, functools.partial(core.warm, pod, some))
                await asyncio.sleep(0)
        except expressions.NotJudged as e:
            name = pod["metadata"]["name"].removeprefix("warm-up-")
            log.warning("warm: the shape of %s left to its first calls: %s", name, str(e)[:600])
    gc.collect()
    gc.freeze()
    log.info(
        "warm: %d nodes, %d pod shapes in %.1fs; %d objects frozen for the garbage collector",
        len(names),
        len(pods),
        time.monotonic() - started,
        gc.get_freeze_count(),
    )


def _summarise(index: Index, views: list[NodeView]) -> None:
    for view in views:
        index.summary(view)


def after_sync(
    core: Core, store: Store, warmed: asyncio.Event
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context: once the store has synced, warm up, then set `warmed`."""

    async def run() -> None:
        await store.ready.wait()
        try:
            await warm(core, store.index)
        except Exception:  # a cold extender still answers right: never hold readiness back
            log.exception("warm-up failed; ready without it")
        warmed.set()

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(run(), name="warm-up")
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return ctx
