"""Process plumbing the services share, written once: the event loop, waiting for a stop
signal or for an event with a deadline, serving an aiohttp app on an address, the health and
metrics endpoints, supervised background tasks, the console progress bar and the number types
of command-line flags.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import signal
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

if TYPE_CHECKING:  # rich loads only where a bar is drawn, not in every service's start-up
    from rich.console import Console
    from rich.progress import Progress

T = TypeVar("T")
N = TypeVar("N", int, float)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
log = logging.getLogger(__name__)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on uvloop when it is installed, else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.run(coro)
    result: T = uvloop.run(coro)
    return result


def stop_event(signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> asyncio.Event:
    """An event the running loop sets when one of `signals` arrives (SIGINT or SIGTERM: a
    clean stop). The handlers stay installed, so a second signal does not kill the clean-up
    under way."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in signals:
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
            loop.add_signal_handler(sig, stop.set)
    return stop


async def until_signal(signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
    """Wait until one of `signals` arrives."""
    await stop_event(signals).wait()


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Whether `event` is set within `seconds`. Every "sleep unless stopped" and "tick unless
    woken" loop waits here, never on `asyncio.wait_for(event.wait(), ...)`: on Python 3.11 a
    wait_for whose inner wait finishes as its task is cancelled returns normally and the
    cancellation is lost (CPython gh-86296), so the loop around it never ends and the
    shutdown that cancelled it waits for ever. `asyncio.timeout` cancels in the task itself."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(max(0.0, seconds)):
            await event.wait()
    return event.is_set()


def log_exit(log: logging.Logger) -> Callable[[asyncio.Task[Any]], None]:
    """A done-callback for a background task that should run until cancelled: its failure is
    logged with the traceback, an unexpected return at info level, a cancellation not at all."""

    def report(task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("task %s died: %r", task.get_name(), exc, exc_info=exc)
        else:
            log.info("task %s ended", task.get_name())

    return report


# -- HTTP: serving an app, the probes and the scrape endpoint a Deployment and Prometheus expect


class ListenError(OSError):
    """A server could not listen on its address; the message says which and why (one line)."""


@contextlib.asynccontextmanager
async def listening(
    app: web.Application,
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    access_log: bool = True,
    backlog: int = 128,
    idle_timeout: float = 75.0,
    max_connections: int | None = None,
    connection: Callable[..., web.RequestHandler] | None = None,
) -> AsyncIterator[str]:
    """Serve `app` on `host:port` until the block ends, yielding its base URL (with the port
    bound, when `port` is 0); the runner (and with it the app's cleanup contexts) is cleaned
    up on the way out, whatever happens. Signals stay the caller's (`until_signal`).
    `backlog`: connections the kernel completes before the server accepts them (capped by
    net.core.somaxconn); beyond it the kernel drops attempts, which the client retries only
    after 1, 3, 7, 15 s.

    Connections are accepted here, every waiting one each time the socket is ready, rather
    than by the loop's own server: uvloop's libuv accepts one connection per loop iteration,
    so a loop busy answering calls left new connections (and the calls they carry) in the
    kernel's queue for seconds, unseen by any limit of the app's.

    A connection that has not sent a whole request head within `idle_timeout` seconds of
    connecting, or sits idle that long between requests, is closed (a TLS handshake gets as
    long). At `max_connections` open (default: what the descriptor limit leaves, see
    `default_max_connections`), each new connection closes the oldest one that has no
    request in progress: clients that connect and never finish a request cannot hold every
    descriptor and lock out the ones that do. A client's protocol error (a header over
    8 KiB, a malformed request line) is answered 400 and logged in one line at debug level.
    With every connection busy, new ones wait in the kernel's queue (BUSY_PAUSE_SECONDS at a
    time): a flood on one port cannot take the whole event loop from another's.

    `connection(server, **kwargs)` makes each connection's handler in place of aiohttp's own
    (`RequestHandler(server, **kwargs)`, which it subclasses)."""
    kwargs: dict[str, Any] = {
        "handle_signals": False,
        "keepalive_timeout": idle_timeout,
        "lingering_time": 1.0,
        "logger": _ClientFaults(logging.getLogger("aiohttp.server"), {}),
    }
    if not access_log:
        kwargs["access_log"] = None
    runner = web.AppRunner(app, **kwargs)
    await runner.setup()
    server = runner.server
    if server is None:
        raise RuntimeError("the app runner was not set up")
    protocols: Callable[[], web.RequestHandler] = server
    if connection is not None:
        protocols = functools.partial(connection, server, loop=server._loop, **server._kwargs)
    cap = max_connections if max_connections is not None else default_max_connections()
    try:
        with contextlib.ExitStack() as stack:
            try:
                socks = [stack.enter_context(s) for s in _listen_sockets(host, port, backlog)]
            except OSError as e:
                raise ListenError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
            for sock in socks:
                stack.enter_context(
                    _accepting(
                        sock, server, protocols, ssl_context, cap=cap, handshake=idle_timeout
                    )
                )
            bound = socks[0].getsockname()[1] if socks else port
            shown = f"[{host}]" if ":" in host else host
            yield f"{'https' if ssl_context else 'http'}://{shown}:{bound}"
    finally:
        await runner.cleanup()


class _ClientFaults(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger, with a client's protocol errors (aiohttp's
    HttpProcessingError: a header over 8 KiB, a malformed request line or body) in one line at
    debug level rather than a traceback at ERROR per request."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kw: Any) -> None:
        from aiohttp.http_exceptions import HttpProcessingError

        if isinstance(exc_info, HttpProcessingError):
            text = " ".join(f"{exc_info.code} {exc_info.message}".split())
            self.debug("client fault: %s: %s", str(msg) % args, text[:200])
            return
        self.logger.error(msg, *args, exc_info=exc_info, **kw)


CONNECTION_RESERVE = 64
"""Descriptors `default_max_connections` leaves for everything but served connections (API
server connections and watches, log files, the listening sockets)."""


def default_max_connections() -> int:
    """The most served connections a process keeps open by default: its descriptor limit
    (RLIMIT_NOFILE, soft) less CONNECTION_RESERVE, at least 16."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 65536
    return max(16, soft - CONNECTION_RESERVE)


def _listen_sockets(host: str, port: int, backlog: int) -> list[socket.socket]:
    """A listening socket on each address `host` names (`localhost`: ::1 and 127.0.0.1).
    With port 0, the first socket picks a free port and the others bind that same one."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # its IPv4 twin, if any, gets a socket of its own
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:
                address = (address[0], socks[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


@contextlib.contextmanager
def _accepting(
    sock: socket.socket,
    server: web.Server,
    protocols: Callable[[], web.RequestHandler],
    ssl_context: ssl.SSLContext | None,
    *,
    cap: int,
    handshake: float,
) -> Iterator[None]:
    """Accept every waiting connection whenever `sock` is readable and hand it to a handler
    of `server` made by `protocols`, until the block ends; past `cap` connections, make room
    first (`_make_room`)."""
    loop = asyncio.get_running_loop()
    handshakes: dict[asyncio.Task[Any], None] = {}  # in the order they began

    async def connect(conn: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(
                protocols,
                conn,
                ssl=ssl_context,
                ssl_handshake_timeout=handshake if ssl_context is not None else None,
            )
        except (OSError, ssl.SSLError, TimeoutError) as e:  # a failed TLS handshake, a client gone
            log.debug("connection dropped before it was served: %s", e)
            conn.close()

    def ready() -> None:
        room = cap - len(handshakes) - len(server.connections)
        if room <= 0:  # counted again without the closed ones (a scan: only at the cap)
            room = cap - len(handshakes) - _open_connections(server)
        if room <= 0:
            if not _make_room(server, handshakes):
                # Every connection is busy: leave the rest in the kernel's queue a moment.
                loop.remove_reader(sock.fileno())
                loop.call_later(BUSY_PAUSE_SECONDS, resume)
            # Accept on the next round: a closed connection gives its descriptor back only
            # once the loop has run its close, and accepting meanwhile ran out of them.
            return
        for _ in range(min(room, ACCEPT_BATCH)):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as e:  # out of descriptors: stop polling a while, as asyncio does
                log.warning("cannot accept a connection (%s); retrying in 1s", e)
                loop.remove_reader(sock.fileno())
                loop.call_later(1.0, resume)
                return
            conn.setblocking(False)
            task = loop.create_task(connect(conn))
            handshakes[task] = None
            task.add_done_callback(lambda t: handshakes.pop(t, None))

    def resume() -> None:
        if sock.fileno() != -1:  # still serving
            loop.add_reader(sock.fileno(), ready)

    loop.add_reader(sock.fileno(), ready)
    try:
        yield
    finally:
        loop.remove_reader(sock.fileno())
        for task in handshakes:
            task.cancel()


BUSY_PAUSE_SECONDS = 0.1
"""How long a server with every one of its `max_connections` busy stops accepting."""
ACCEPT_BATCH = 64
"""Most connections accepted in one round of the loop: the loop reads what the accepted ones
sent (a scheduler call among a flood) before accepting more."""


def _open_connections(server: web.Server) -> int:
    """The connections of `server` still open. A closed connection leaves the server's list
    only once its handler has seen the close; under uvloop some never do (a connection
    closed while its handler started), and they would count against the cap for ever:
    those are dropped here."""
    open_ = 0
    for handler in server.connections:
        transport = handler.transport
        if transport is not None and not transport.is_closing():
            open_ += 1
            continue
        task = handler._task_handler
        if transport is None and (task is None or task.done()):
            server.connection_lost(handler, None)  # what its close should have told it
    return open_


def _make_room(server: web.Server, handshakes: dict[asyncio.Task[Any], None]) -> bool:
    """Close the oldest open connection with no request in progress (one still sending its
    request head, or idle between requests), else cancel the oldest TLS handshake; False
    when every connection has a request in progress."""
    for handler in server.connections:
        transport = handler.transport
        # aiohttp marks a connection whose request is being handled (read, answered).
        busy = getattr(handler, "_request_in_progress", False)
        if transport is not None and not transport.is_closing() and not busy:
            handler.force_close()
            return True
    for task in handshakes:
        if not task.done():
            task.cancel()
            return True
    return False


def add_probe_routes(
    app: web.Application,
    *,
    registry: CollectorRegistry,
    not_ready: Callable[[web.Application], str | None],
    metrics: bool = True,
) -> None:
    """`GET /healthz` (the process answers), `/readyz` (200 while `not_ready(app)` is None, else
    503 with the reason it returns) and, unless `metrics` is False (served elsewhere, see
    `add_metrics_route`), `/metrics`."""

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        reason = not_ready(request.app)
        if reason is None:
            return web.Response(text="ok")
        return web.Response(status=503, text=reason)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if metrics:
        add_metrics_route(app, registry)


def add_metrics_route(app: web.Application, registry: CollectorRegistry) -> None:
    """`GET /metrics`: `registry` in Prometheus' text format."""

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app.router.add_get("/metrics", metrics)


# -- the console -------------------------------------------------------------------------------


def progress_bar(
    console: Console, *, detail: bool = False, transient: bool = False, enabled: bool = True
) -> Progress:
    """The CLIs' progress bar: description, bar, done of total, [a task's `detail` field,]
    elapsed time. Use it as a context manager; disabled, it draws nothing."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[ProgressColumn] = [TextColumn("{task.description}"), BarColumn()]
    columns.append(MofNCompleteColumn())
    if detail:
        columns.append(TextColumn("{task.fields[detail]}"))
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=console, transient=transient, disable=not enabled)


# -- flag number types (argparse `type=`): a bad value is a one-line usage error ---------------


def _number(text: str, kind: Callable[[str], N], what: str) -> N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def non_negative_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; must be 0 or more")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be > 0, got {value:g}")
    return value


def share(text: str) -> float:
    """A fraction of a whole, in (0, 1]: e.g. the share of GPUs a command acts on."""
    value = _number(text, float, "a number")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not a share in (0, 1]")
    return value
