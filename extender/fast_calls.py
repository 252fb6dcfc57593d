"""The scheduler's calls answered straight off their connection, past aiohttp's request path.

kube-scheduler calls /filter and /prioritize on connections it keeps alive, one call at a
time. aiohttp spends more CPU on such a call than the extender's own work on it (its request
and response objects, the router, the middleware chain, its header handling: ~0.2 ms a call
on a 2-core machine against ~0.04 ms for reading the head here). So each connection's handler
(an aiohttp `RequestHandler`, as the server's bookkeeping counts it: the connection cap,
idle timeouts, shutdown) reads a call that is plainly one itself: `POST /filter` or
`/prioritize`, HTTP/1.1, its head well-formed and under aiohttp's 8 KiB, a Content-Length
within the body limit, no Transfer-Encoding, Expect, Upgrade, Content-Encoding or
`Connection: close`. It is judged as aiohttp's route judges it (`handlers.filtered`,
`handlers.prioritized`: the gate, its deadline from the call's arrival, the CEL budget, the
same metrics) and answered in one write, headers and body together.

Anything else on the connection (a probe, a scrape, a body sent in chunks, a head that is not
plainly a call, bad bytes) is handed to aiohttp with every byte read so far, and the
connection is aiohttp's from then on: what is refused, and how, stays aiohttp's. A body that
has not arrived within the call's deadline is answered 408 and the connection closed, as
aiohttp's route answers it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Final

import msgspec
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from extender import arrival, handlers

log = logging.getLogger(__name__)

MAX_HEAD: Final = 8190
"""aiohttp's limit on a request line or header; a longer head is handed to it (a 400)."""
_CALLS: Final = {
    b"POST /filter HTTP/1.1": "filter",
    b"POST /prioritize HTTP/1.1": "prioritize",
}
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([\x20-\x7e\t]*?)[ \t]*")
"""A header field as RFC 9110 has it (a token, a colon, visible ASCII); anything else in a
head (obs-fold, bytes over 0x7e) is aiohttp's to judge."""
_HANDED: Final = frozenset(
    {b"transfer-encoding", b"expect", b"upgrade", b"content-encoding", b"connection"}
)
_REASONS: Final = {
    200: b"OK",
    400: b"Bad Request",
    408: b"Request Timeout",
    500: b"Internal Server Error",
    503: b"Service Unavailable",
}
_encode = msgspec.json.Encoder().encode


def _head(head: bytes) -> tuple[str, int] | None:
    """The verb and Content-Length of a head that is plainly a scheduler call, else None."""
    line, _, fields = head.partition(b"\r\n")
    verb = _CALLS.get(line)
    if verb is None:
        return None
    length = None
    for field in fields.split(b"\r\n") if fields else ():
        m = _FIELD.fullmatch(field)
        if m is None:
            return None
        name = m.group(1).lower()
        if name == b"content-length":
            value = m.group(2)
            if length is not None or not value.isdigit() or len(value) > 15:
                return None
            length = int(value)
        elif name in _HANDED and not (
            name == b"connection" and m.group(2).lower() == b"keep-alive"
        ):
            return None
    return None if length is None else (verb, length)


def connections(app: web.Application) -> Callable[..., RequestHandler]:
    """A factory of the connections' handlers of the scheduler's port serving `app`, for
    `testbed.runtime.listening`."""

    def make(manager: web.Server, **kwargs: Any) -> RequestHandler:
        return Connection(app, manager, **kwargs)

    return make


class Connection(RequestHandler):
    def __init__(self, app: web.Application, manager: web.Server, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._app = app
        self._held = bytearray()
        """Bytes of the next call not read whole yet (its head, or its head and some body)."""
        self._aiohttp = False
        """The connection is aiohttp's for good."""
        self._answering = False
        self._call: tuple[str, int, int, float, float] | None = None
        """The call whose body is being read: verb, head's end, whole length, arrival (gate's
        clock, perf_counter)."""
        self._slow: asyncio.TimerHandle | None = None
        self._paused = False
        """Reading paused while a call is answered (see `data_received`)."""
        self._sock: Any = False
        """The connection's TCP socket to date its calls by (`extender.arrival`; None: not
        TCP), once a call asked for it."""
        self._gate = app[handlers.GATE]

    def data_received(self, data: bytes) -> None:
        if self._aiohttp:
            super().data_received(data)
            return
        if self._force_close or self._close:
            return
        self._held += data
        if not self._answering:
            self._next()
        self._hold_back()

    def _hold_back(self) -> None:
        """Calls sent ahead while one is answered wait in the kernel, not in memory: reading
        pauses past a head's worth of them, until the answer is out."""
        if self._answering and len(self._held) > MAX_HEAD and not self._paused:
            self._paused = True
            if self.transport is not None:
                self.transport.pause_reading()

    def _next(self) -> None:
        """Read the calls held whole, one at a time (the next once the last is answered)."""
        held = self._held
        while held and not self._answering:
            if self._call is None:
                end = held.find(b"\r\n\r\n", 0, MAX_HEAD + 4)
                if end < 0:
                    if len(held) > MAX_HEAD or not _may_be_call(held):
                        self._hand_over()
                    return  # the rest of the head to come (aiohttp's idle timeout applies)
                parsed = _head(bytes(held[:end]))
                settings = self._app[handlers.CORE].settings
                if parsed is None or parsed[1] > settings.max_body_bytes:
                    self._hand_over()
                    return
                verb, length = parsed
                if self._sock is False:
                    self._sock = arrival.tcp_socket(self.transport)
                arrived = self._gate.clock() - arrival.age_of(self._sock)
                self._call = (verb, end + 4, end + 4 + length, arrived, time.perf_counter())
                self._request_in_progress = True  # the connection cap does not close it now
            verb, start, whole, arrived, started = self._call
            if len(held) < whole:
                if self._slow is None:
                    within = self._gate.deadline_seconds
                    self._slow = self._loop.call_later(within, self._too_slow, verb, within)
                return
            body = bytes(held[start:whole])
            del held[:whole]
            self._call = None
            if self._slow is not None:
                self._slow.cancel()
                self._slow = None
            self._answering = True
            if self._answered_at_once(self._answer(verb, body, arrived, started)) and held:
                # Calls sent ahead are answered one a round of the loop, as they were as
                # tasks: a client that queues many does not hold the loop for all of them.
                self._loop.call_soon(self._read_on)
                return

    def _answered_at_once(self, answer: Coroutine[Any, Any, None]) -> bool:
        """Start answering a call here, not in a task: a call that never waits (the gate
        free, judged inline: nearly every call) is answered before this returns (True),
        without a task's allocations and the loop's extra round before it runs. One that
        waits (for its turn, the CEL sandbox, a breather) goes on in a task (False)."""
        try:
            waited = answer.send(None)
        except StopIteration:
            self._answered(None)
            return True
        except BaseException:
            self._answered(None)
            raise
        task = self._loop.create_task(_resumed(answer, waited))
        task.add_done_callback(self._answered)
        return False

    def _read_on(self) -> None:
        if self._answering or self.transport is None or self._force_close or self._close:
            return
        self._next()
        self._hold_back()

    def _hand_over(self) -> None:
        """The connection becomes aiohttp's, with what was read of it."""
        self._aiohttp = True
        held, self._held = bytes(self._held), bytearray()
        super().data_received(held)

    async def _answer(self, verb: str, body: bytes, arrived: float, started: float) -> None:
        app = self._app
        try:
            call = handlers.decoded(app, body)
            answer = handlers.filtered if verb == "filter" else handlers.prioritized
            reply = await answer(app, call, arrived, started, self.transport)
            self._write(200, reply)
        except Exception as e:
            self._refuse(verb, e)

    def _answered(self, task: asyncio.Task[None] | None) -> None:
        """The call is answered: the connection idles (its keep-alive timer armed) and the
        next call is read; `task` is the task it went on in (None: answered at once, and the
        caller reads on)."""
        self._answering = False
        self._request_in_progress = False
        if self._handler_waiter is not None and not self._handler_waiter.done():
            self._handler_waiter.set_result(None)  # a shutdown waits for the call's answer
        if self.transport is None or self._force_close or self._close:
            return
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        # Idle from now: aiohttp's keep-alive timer closes the connection after its timeout.
        self._next_keepalive_close_time = self._loop.time() + self._keepalive_timeout
        if self._keepalive_handle is None and self._keepalive_timeout > 0:
            close_at = self._next_keepalive_close_time
            self._keepalive_handle = self._loop.call_at(close_at, self._process_keepalive)
        if task is not None:
            self._next()
            self._hold_back()

    def _refuse(self, verb: str, e: Exception) -> None:
        """Answer as `extender.app`'s middleware answers a call that raised `e`."""
        refused = handlers.refusal(e)
        error: str | None
        if refused is None:
            log.error("unexpected error answering POST /%s", verb, exc_info=e)
            status, outcome, error = 500, "error", "internal error; see the extender log"
        else:
            status, outcome, error = refused
        self._app[handlers.METRICS].requests.labels(verb, outcome).inc()
        self._write(status, b"" if error is None else _encode({"error": error}))
        if isinstance(e, handlers.SlowBody):
            self.force_close()  # the rest of the body is not waited for

    def _too_slow(self, verb: str, within: float) -> None:
        self._slow = None
        self._call = None
        self._answering = True  # nothing more is read on this connection
        self._refuse(verb, handlers.SlowBody.after(within))

    def _write(self, status: int, body: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return  # the scheduler hung up (counted late by the handler)
        head = b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        transport.write(head % (status, _REASONS.get(status, b""), len(body)) + body)

    def _process_keepalive(self) -> None:
        if self._call is not None or self._answering:
            self._keepalive_handle = None  # a call is read or answered: `_answered` re-arms it
            return
        super()._process_keepalive()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._slow is not None:
            self._slow.cancel()
            self._slow = None
        if self._call is not None:  # gone before its body arrived: counted as aiohttp's route
            self._app[handlers.METRICS].requests.labels(self._call[0], "bad_request").inc()
            self._call = None
        super().connection_lost(exc)


class _Waited:
    """What a coroutine started outside a task waited on, awaited again by the task it goes
    on in (`_resumed`), so that task waits for it as it would have."""

    __slots__ = ("waited",)

    def __init__(self, waited: Any) -> None:
        self.waited = waited

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.waited)


async def _resumed(started: Coroutine[Any, Any, None], waited: Any) -> None:
    """The rest of the coroutine `started`, which began outside a task and now waits on
    `waited`, driven as a task drives a coroutine: what it waited on awaited first, then
    each result sent (or exception thrown, a cancellation too) into it."""
    while True:
        try:
            sent = await _Waited(waited)
        except GeneratorExit:
            started.close()
            raise
        except BaseException as e:
            try:
                waited = started.throw(e)
            except StopIteration:
                return
        else:
            try:
                waited = started.send(sent)
            except StopIteration:
                return


def _may_be_call(held: bytearray) -> bool:
    """The start of a head that may still turn out a scheduler call."""
    first = bytes(held[:26]).partition(b"\r\n")[0]
    return any(line.startswith(first) or first.startswith(line) for line in _CALLS)
