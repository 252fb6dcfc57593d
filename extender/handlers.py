"""HTTP handlers: decode the scheduler's JSON, call the core, encode the reply. Nothing else.

Bad input (undecodable JSON, wrong types, no `Pod`, a body over the size limit) is a 400
with a one-line message; it never reaches the core and changes nothing. A body not received
within the call's deadline is a 408 (`SlowBody`) and closes the connection: a client that
trickles its body holds neither a place at the gate nor the connection for longer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import time
from collections.abc import Awaitable, Callable
from itertools import compress, repeat
from typing import Any, Final, TypeVar

import msgspec
from aiohttp import web
from pydantic import ValidationError

from extender import arrival, decoding, expressions, judging, limits, startup, warmup
from extender.core import Core, FilterOutcome
from extender.metrics import Metrics
from testbed import validation
from testbed.kube.watching import Liveness
from testbed.wire import MAX_PRIORITY, MIN_PRIORITY

log = logging.getLogger(__name__)
CORE: Final = web.AppKey("core", Core)
METRICS: Final = web.AppKey("metrics", Metrics)
LIVENESS: Final = web.AppKey("liveness", Liveness)
"""Present when the app watches a cluster (not offline)."""
API_WAIT: Final = web.AppKey("api_wait", startup.ApiWait)
"""Present when the app watches a cluster: the start-up's wait for the API server."""
GATE: Final = web.AppKey("gate", limits.Gate)
"""Admits scheduler calls (`extender.limits`)."""

_JSON = "application/json"
T = TypeVar("T")
# A HostPriority as two pre-encoded halves: `{"Host":"<name>","Score":` (per node name, kept
# in a bounded cache) and `<score>}` (one per possible score).
_SCORE_TAIL = [f"{s}}}" for s in range(MAX_PRIORITY + 1)]
_SHIFTED_TAILS = [
    [""] * low + _SCORE_TAIL[: MAX_PRIORITY + 1 - low] for low in range(MAX_PRIORITY + 1)
]
"""`_SHIFTED_TAILS[low][s]`: the tail of score `s - low` (for s >= low)."""
_NAME_MAX = 253  # a Node name is a DNS subdomain
_encode_str = json.encoder.encode_basestring_ascii
_encode = msgspec.json.Encoder().encode


class HostHeads:
    """The pre-encoded head `{"Host":"<name>","Score":` of each node name, kept in a bounded
    cache: one per app (`HEADS`), so a test or bench starts from an empty one."""

    def __init__(self, limit: int = 65536) -> None:
        self.limit = limit
        self._cache: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, name: object) -> bool:
        return name in self._cache

    def of(self, names: list[str]) -> list[str]:
        """The head of each name; the C string encoder escapes as json.dumps does."""
        cache = self._cache
        try:
            return list(map(cache.__getitem__, names))
        except KeyError:
            if len(cache) + len(names) > self.limit:
                cache.clear()
            heads = []
            for n in names:
                head = cache.get(n)
                if head is None:
                    head = '{"Host":' + _encode_str(n) + ',"Score":'
                    # Only names a node can have, and never past the limit: a call with a
                    # million made-up (or megabyte-long) names must not leave them all in memory.
                    if len(n) <= _NAME_MAX and len(cache) < self.limit:
                        cache[n] = head
                heads.append(head)
            return heads


HEADS: Final = web.AppKey("heads", HostHeads)


def encode_above_lowest(names: list[str], scores: list[int], heads: HostHeads) -> str:
    """The answer to a prioritize call, kube-scheduler's HostPriorityList (a bare array of
    {"Host", "Score"}): the nodes scoring above the call's lowest score, in order, each score
    less that lowest. Hand-joined from pre-encoded halves: the hot path at 5,000 nodes (3x
    faster than json.dumps of dicts).

    kube-scheduler adds an extender's score to each node it lists and nothing to a node it
    does not (prioritizeNodes), then takes the highest total: taking the same amount off
    every candidate's score leaves every difference, so its choice, as it was. Leaving out
    the nodes then at 0 spares both sides the bulk of the list: most candidates share the
    lowest score (the empty nodes a pod's packing ranks last, every node for a pod without
    claims). Ties between unlisted nodes are broken as kube-scheduler breaks them without
    an extender."""
    if len(names) != len(scores):
        raise ValueError(f"{len(names)} names but {len(scores)} scores")
    lowest = min(scores, default=0)
    if scores.count(lowest) == len(scores):
        return "[]"
    above = list(map(operator.ne, scores, repeat(lowest)))
    listed = heads.of(list(compress(names, above)))
    tails = map(_SHIFTED_TAILS[lowest].__getitem__, compress(scores, above))
    return "[" + ",".join(map(operator.add, listed, tails)) + "]"


class BadRequest(Exception):
    """Input the extender refuses; the message goes to the client as is."""


class SlowBody(Exception):
    """The request body did not arrive within the call's deadline."""

    @classmethod
    def after(cls, within: float) -> SlowBody:
        return cls(f"request body not received within {within:g}s")


class ClientGone(Exception):
    """The client closed its connection before its body had arrived."""


def refusal(e: Exception) -> tuple[int, str, str | None] | None:
    """How a call that raised `e` is answered: its status, its `outcome` label in
    `extender_requests_total` and its one-line error (None: no body); None when `e` is
    unexpected (a logged 500). Both ways of serving a call (`extender.app`'s middleware,
    `extender.fast_calls`) answer with this."""
    if isinstance(e, BadRequest):
        return 400, "bad_request", str(e)
    if isinstance(e, ClientGone):  # nobody to answer: a client's doing, not the extender's
        return 400, "bad_request", None
    if isinstance(e, SlowBody):  # the connection is closed: the rest of the body not waited for
        return 408, "slow_body", str(e)
    if isinstance(e, limits.Overloaded):
        return 503, "overloaded", f"overloaded: {e}"
    return None


async def _call(request: web.Request, within: float) -> decoding.Call:
    """The call in `request`'s body, read within `within` seconds."""
    try:
        async with asyncio.timeout(within):
            body = await request.read()
    except TimeoutError as e:
        raise SlowBody.after(within) from e
    except ConnectionResetError as e:  # aiohttp's "Connection lost", and its subclasses
        raise ClientGone("the client closed the connection before its body arrived") from e
    except web.HTTPRequestEntityTooLarge as e:
        limit = request.app[CORE].settings.max_body_bytes
        raise BadRequest(f"request body over the {limit}-byte limit") from e
    return decoded(request.app, body)


def decoded(app: web.Application, body: bytes) -> decoding.Call:
    """The call in `body` (timed as the `decode` stage); BadRequest when it is no call."""
    if not body:
        raise BadRequest("empty request body; expected ExtenderArgs JSON")
    stages = app[CORE].stages
    t = stages.start()
    try:
        call = decoding.call(body)
    except ValidationError as e:
        where, msg = validation.first_error(e)
        raise BadRequest(f"invalid ExtenderArgs at {where or 'body'}: {msg}") from e
    finally:
        stages.lap("decode", t)
    limit = app[CORE].settings.max_node_names
    if len(call.names) > limit:
        raise BadRequest(f"{len(call.names)} candidate nodes, over the limit of {limit}")
    return call


def _observe(
    app: web.Application,
    verb: str,
    started: float,
    candidates: int,
    transport: asyncio.BaseTransport | None,
) -> None:
    ready = app[CORE].ready()
    # The scheduler hangs up at its httpTimeout: an answer to a closed connection is late.
    gone = transport is None or transport.is_closing()
    seconds = time.perf_counter() - started
    app[METRICS].answered(verb, ready, seconds, candidates, gone=gone)


def arrived_at(app: web.Application, transport: asyncio.BaseTransport | None) -> float:
    """When the call whose head was just read on `transport` arrived, on the gate's clock: as
    the kernel saw its last byte, which may be well before its handler started
    (`extender.arrival`)."""
    return app[GATE].clock() - arrival.age(transport)


async def _in_turn(
    app: web.Application,
    verb: str,
    judge: Callable[[dict[str, Any], list[str]], T],
    not_judged: Callable[[list[str]], T],
    call: decoding.Call,
    arrived: float,
) -> tuple[T, bool]:
    """The call judged (`judge(pod, names)`) in its turn at the gate, and whether in time: a
    call whose deadline (from `arrived`, on the gate's clock) passed before its turn came
    (`extender.limits`) is not judged but answered with `not_judged(names)` at once, counted
    and logged once per burst. The body is read before the gate admits the call, within the
    call's deadline."""
    gate = app[GATE]
    async with gate.admitted(arrived) as turn, turn.judging() as in_time:
        if in_time:
            out, in_time = await _within_budget(app, verb, judge, not_judged, call)
        else:
            out = not_judged(call.names)
            _late(app, verb, gate.clock() - arrived)
    return out, in_time


def _late(app: web.Application, verb: str, waited: float) -> None:
    """Count a call answered not judged past its deadline; log the first of a burst."""
    metrics = app[METRICS]
    metrics.requests.labels(verb, "deadline").inc()
    metrics.not_judged("deadline")
    unsaid = app[GATE].late.say()
    if unsaid is not None:
        log.warning(
            "%s not judged: %.2fs since it arrived, past the %gs call deadline before its "
            "turn came (calls queued behind a slow one, or a stalled extender); the rest of "
            'this burst is counted, not logged (extender_requests_total{outcome="deadline"})'
            "%s",
            verb,
            waited,
            app[GATE].deadline_seconds,
            f"; {unsaid} more since the last such line" if unsaid else "",
        )


async def _within_budget(
    app: web.Application,
    verb: str,
    judge: Callable[[dict[str, Any], list[str]], T],
    not_judged: Callable[[list[str]], T],
    call: decoding.Call,
) -> tuple[T, bool]:
    """`judge(pod, names)` within the call's CEL budget (inline, or off the event loop when
    it waits on the CEL sandbox: `extender.judging`), and whether it was judged: past the
    budget, or on an expression not judged here (`expressions.NotJudged`), the answer is
    `not_judged(names)`, logged with the expressions that spent it, and counted."""
    core = app[CORE]
    budget = expressions.Budget(core.settings.cel_budget_seconds)
    # What the judging finds not judged is counted once it is done: an attempt inline
    # abandoned for the sandbox is judged again in full, and would count twice.
    held: list[str] = []

    def attempt() -> T:
        held.clear()
        counting, core.on_unjudged = core.on_unjudged, held.append  # not a context: ~3 µs
        try:
            return judge(call.pod, call.names)
        finally:
            core.on_unjudged = counting

    try:
        return await judging.judged(core.index, budget, attempt), True
    except expressions.NotJudged as e:
        log.warning("%s not judged: %s", verb, str(e)[:600])
        metrics = app[METRICS]
        metrics.requests.labels(verb, e.reason).inc()
        metrics.not_judged(e.reason)
        return not_judged(call.names), False
    finally:
        if core.on_unjudged is not None:
            for reason in held:
                core.on_unjudged(reason)


async def filter_nodes(request: web.Request) -> web.Response:
    return await _routed(request, filtered)


async def prioritize_nodes(request: web.Request) -> web.Response:
    return await _routed(request, prioritized)


async def _routed(request: web.Request, answer: Callable[..., Awaitable[bytes]]) -> web.Response:
    """A call through aiohttp's route (extender.fast_calls reads the plain ones itself)."""
    started = time.perf_counter()
    arrived = arrived_at(request.app, request.transport)
    call = await _call(request, request.app[GATE].deadline_seconds)
    body = await answer(request.app, call, arrived, started, request.transport)
    return web.Response(body=body, content_type=_JSON)


async def filtered(
    app: web.Application,
    call: decoding.Call,
    arrived: float,
    started: float,
    transport: asyncio.BaseTransport | None,
) -> bytes:
    """The answer to a filter call (ExtenderFilterResult), judged in its turn; `arrived`
    (the gate's clock) and `started` (perf_counter) when it arrived, `transport` its
    connection (answered once it is closed: late)."""
    # Not judged: every node passes.
    out, in_time = await _in_turn(
        app, "filter", app[CORE].filter, lambda names: FilterOutcome(passed=names), call, arrived
    )
    names = call.names
    stages = app[CORE].stages
    t = stages.start()
    reply: dict[str, Any] = {}
    if call.nodes is None:
        reply["NodeNames"] = out.passed
    else:  # not nodeCacheCapable: hand back the node objects that passed
        keep = set(out.passed)
        items = [n for n in call.nodes if (n.get("metadata") or {}).get("name") in keep]
        reply["Nodes"] = {"items": items}
    # ExtenderFilterResult's fields, in its order, None left out.
    reply["FailedNodes"] = out.failed
    reply["FailedAndUnresolvableNodes"] = out.unresolvable
    reply["Error"] = ""
    body = _encode(reply)
    stages.lap("encode", t)
    metrics = app[METRICS]
    if out.failed:
        metrics.rejections.labels("alignment").inc(len(out.failed))
    if out.unresolvable:
        metrics.rejections.labels("locality").inc(len(out.unresolvable))
    if in_time:
        _observe(app, "filter", started, len(names), transport)
    return body


async def prioritized(
    app: web.Application,
    call: decoding.Call,
    arrived: float,
    started: float,
    transport: asyncio.BaseTransport | None,
) -> bytes:
    """The answer to a prioritize call (HostPriorityList), as `filtered` answers a filter:
    the nodes above the call's lowest score (`encode_above_lowest`)."""
    # Not judged: no preference.
    scores, in_time = await _in_turn(
        app,
        "prioritize",
        app[CORE].prioritize,
        lambda names: [MIN_PRIORITY] * len(names),
        call,
        arrived,
    )
    stages = app[CORE].stages
    t = stages.start()
    body = encode_above_lowest(call.names, scores, app[HEADS]).encode()
    stages.lap("encode", t)
    if in_time:
        _observe(app, "prioritize", started, len(call.names), transport)
    return body


def not_ready(app: web.Application) -> str | None:
    """Why /readyz answers 503: the cache has not synced (the API server not answering yet) or
    is warming up, the API server stopped answering, or the gate is refusing scheduler calls
    (overloaded)."""
    if not app[CORE].ready():
        wait = app.get(API_WAIT)
        return (wait.reason() if wait is not None else None) or "cache not synced yet"
    if not app[warmup.WARM].is_set():
        return "cache synced; warming up (extender.warmup)"
    liveness = app.get(LIVENESS)
    if liveness is not None and not liveness.up:
        return f"{liveness.reason} (for {liveness.clock() - liveness.since:.0f}s)"
    return app[GATE].refusing()


async def decisions(request: web.Request) -> web.Response:
    """Recent per-pod decisions with each term's value; `?pod=namespace/name` narrows."""
    pod = request.query.get("pod")
    await request.app[CORE].index.loan.back()  # not while a thread judges (appends)
    items: list[dict[str, Any]] = [
        d for d in request.app[CORE].decisions if pod is None or d["pod"] == pod
    ]
    return web.json_response(items)


async def judge(request: web.Request) -> web.Response:
    """Per candidate node, whether the pod's unallocated claims fit its devices as allocated
    now (DRA's request semantics): `fits` true, false, or null when not judged. Takes the
    body of a scheduler call (ExtenderArgs); for checks against the real allocator."""
    gate = request.app[GATE]
    arrived = arrived_at(request.app, request.transport)
    call = await _call(request, gate.deadline_seconds)
    async with gate.admitted(arrived) as turn:
        core = request.app[CORE]

        def judged(pod: dict[str, Any], names: list[str]) -> Any:
            d = core.demand(pod)
            return d, core.verdicts(d, names)

        async with turn.judging() as in_time:
            if not in_time:
                return web.json_response(
                    {"error": "not judged: past the call deadline"}, status=503
                )
            (d, verdicts), in_budget = await _within_budget(
                request.app, "other", judged, lambda _names: (None, None), call
            )
            if not in_budget:
                return web.json_response({"error": "not judged: CEL budget"}, status=503)
    nodes = {
        name: {"fits": v.fits, "reason": v.reason, "unjudged": v.unjudged}
        for name, v in verdicts.items()
    }
    return web.json_response({"nodes": nodes, "notes": list(d.notes)})


async def free_devices(request: web.Request) -> web.Response:
    """The devices the extender believes free on one node (for checks and debugging)."""
    node = request.match_info["node"]
    index = request.app[CORE].index
    await index.loan.back()  # not while a thread judges on it (`extender.cache.loan`)
    if node not in index.nodes:
        return web.json_response({"error": f"node {node} unknown"}, status=404)
    free = sorted(index.free_devices(node))
    return web.json_response([{"driver": d, "pool": p, "device": n} for d, p, n in free])
