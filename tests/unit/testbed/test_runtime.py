"""The shared process plumbing: loop runner, stop signal, probes, task supervision, flags."""

from __future__ import annotations

import argparse
import ast
import asyncio
import logging
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry, Counter
from rich.console import Console

from testbed import runtime
from testbed.cluster import ports


def test_run_returns_what_the_coroutine_returns() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert runtime.run(answer()) == 42


def test_until_signal_returns_once_the_signal_arrives_and_survives_a_second() -> None:
    async def main() -> bool:
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, os.kill, os.getpid(), signal.SIGUSR1)
        await runtime.until_signal((signal.SIGUSR1,))
        os.kill(os.getpid(), signal.SIGUSR1)  # still handled: clean-up is not killed
        await asyncio.sleep(0.01)
        return True

    assert runtime.run(main())


def test_stop_event_is_set_by_the_signal() -> None:
    async def main() -> bool:
        stop = runtime.stop_event((signal.SIGUSR1,))
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGUSR1)
        await asyncio.wait_for(stop.wait(), 5)
        return stop.is_set()

    assert runtime.run(main())


@pytest.mark.parametrize("run", [asyncio.run, runtime.run], ids=["asyncio", "uvloop"])
def test_wait_set_never_loses_a_cancellation_that_arrives_as_the_event_is_set(
    run: Callable[[Coroutine[Any, Any, bool]], bool],
) -> None:
    """The gang placer's tick loop, cancelled at shutdown in the same turn as a pod event
    woke it, went on ticking for ever under `asyncio.wait_for` on Python 3.11."""

    async def main() -> bool:
        wake = asyncio.Event()

        async def ticking() -> None:
            while True:
                wake.clear()
                await runtime.wait_set(wake, 1.0)

        task = asyncio.create_task(ticking())
        await asyncio.sleep(0)  # it waits on `wake`
        wake.set()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=3)
        task.cancel()  # a failing run must not leave it ticking
        await asyncio.gather(task, return_exceptions=True)
        return task in done

    assert run(main())


async def test_wait_set_says_whether_the_event_was_set_in_time() -> None:
    event = asyncio.Event()
    assert not await runtime.wait_set(event, 0.01)
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await runtime.wait_set(event, 5)
    assert await runtime.wait_set(event, -1)  # already set: no wait, even with no time left


async def test_log_exit_reports_a_failure_and_an_end_but_not_a_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("test-runtime")

    async def fail() -> None:
        raise RuntimeError("boom")

    async def end() -> None:
        return None

    async def forever() -> None:
        await asyncio.Event().wait()

    caplog.set_level(logging.INFO, logger="test-runtime")
    tasks = [
        asyncio.create_task(fail(), name="failing"),
        asyncio.create_task(end(), name="ending"),
        asyncio.create_task(forever(), name="cancelled"),
    ]
    for t in tasks:
        t.add_done_callback(runtime.log_exit(log))
    await asyncio.sleep(0)
    tasks[2].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0)  # done callbacks run on the next turn
    by_level = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("ERROR", "task failing died: RuntimeError('boom')") in by_level
    assert ("INFO", "task ending ended") in by_level
    assert not any("cancelled" in m for _, m in by_level)


async def test_probe_routes_answer_health_readiness_and_metrics() -> None:
    registry = CollectorRegistry()
    Counter("probe_test_things", "things", registry=registry).inc(3)
    ready = asyncio.Event()
    app = web.Application()
    runtime.add_probe_routes(
        app, registry=registry, not_ready=lambda _app: None if ready.is_set() else "still syncing"
    )
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    try:
        async with aiohttp.ClientSession() as http:

            async def get(path: str) -> tuple[int, str]:
                async with http.get(srv.make_url(path)) as resp:
                    return resp.status, await resp.text()

            assert await get("/healthz") == (200, "ok")
            assert await get("/readyz") == (503, "still syncing")
            ready.set()
            assert await get("/readyz") == (200, "ok")
            status, body = await get("/metrics")
            assert status == 200 and "probe_test_things_total 3.0" in body
    finally:
        await srv.close()


def test_progress_bar_has_a_detail_column_only_when_asked_and_draws_nothing_disabled() -> None:
    console = Console(force_terminal=False)
    plain = runtime.progress_bar(console)
    detailed = runtime.progress_bar(console, detail=True, enabled=False)
    assert len(detailed.columns) == len(plain.columns) + 1
    assert detailed.disable and not plain.disable


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        (runtime.non_negative_int, "0", 0),
        (runtime.positive_int, "7", 7),
        (runtime.positive_float, "0.5", 0.5),
    ],
)
def test_flag_numbers_accept_their_range(kind: object, text: str, value: float) -> None:
    assert callable(kind) and kind(text) == value


@pytest.mark.parametrize(
    ("kind", "text", "says"),
    [
        (runtime.non_negative_int, "-1", "-1 is negative; must be 0 or more"),
        (runtime.non_negative_int, "1.5", "'1.5' is not a whole number"),
        (runtime.positive_int, "0", "must be at least 1, got 0"),
        (runtime.positive_int, "-3", "must be at least 1, got -3"),
        (runtime.positive_float, "0", "must be > 0, got 0"),
        (runtime.positive_float, "nan", "must be > 0, got nan"),
        (runtime.positive_float, "fast", "'fast' is not a number"),
    ],
)
def test_flag_numbers_refuse_with_one_line(kind: object, text: str, says: str) -> None:
    assert callable(kind)
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        kind(text)


def _completed_while_not_accepting(port: int, attempts: int) -> int:
    """How many of `attempts` connections to `port` the kernel completes within 0.5 s while
    the server's loop is blocked here (so it accepts none)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(attempts)]
    try:
        for s in socks:
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
        time.sleep(0.5)
        _, writable, _ = select.select([], socks, [], 0)
        return sum(1 for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    finally:
        for s in socks:
            s.close()


@pytest.mark.parametrize("backlog", [2, 32])
async def test_listening_holds_as_many_unaccepted_connections_as_its_backlog(
    backlog: int,
) -> None:
    """Past the backlog the kernel drops connection attempts (the client retries only a second
    later); up to it, it completes them for the server to accept."""
    port = ports.free_port()
    async with runtime.listening(web.Application(), "127.0.0.1", port, backlog=backlog):
        completed = _completed_while_not_accepting(port, 16)
    # Linux completes one more than the backlog.
    assert completed == min(16, backlog + 1)


BUSY_SERVER = """
import asyncio, sys, time
from aiohttp import web
from testbed import runtime

async def slow(request):
    time.sleep(0.1)  # holds the loop, as a handler judging a large call does
    return web.Response(text="ok")

async def main():
    app = web.Application()
    app.router.add_get("/", slow)
    async with runtime.listening(app, "127.0.0.1", int(sys.argv[1]), access_log=False):
        await asyncio.sleep(60)

runtime.run(main())
"""


def _accept_queue(port: int) -> int:
    """Connections waiting in the kernel for the listener on 127.0.0.1:`port` to accept
    them (rx_queue of its LISTEN line in /proc/net/tcp)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


async def test_a_busy_server_accepts_every_waiting_connection() -> None:
    """uvloop (libuv) accepts one connection per loop iteration: with every iteration
    running a 100 ms handler, 40 new connections waited 4 s in the kernel. `listening`
    accepts all that wait each time, so none is left after a few iterations."""
    port = ports.free_port()
    server = await asyncio.create_subprocess_exec(sys.executable, "-c", BUSY_SERVER, str(port))
    stop = asyncio.Event()

    async def busy() -> None:  # always a call waiting: every loop iteration runs a handler
        async with aiohttp.ClientSession() as s:
            while not stop.is_set():
                async with s.get(f"http://127.0.0.1:{port}/") as r:
                    await r.read()

    waiting = [socket.socket() for _ in range(40)]
    clients: list[asyncio.Task[None]] = []
    try:
        async with asyncio.timeout(30):
            while True:
                try:
                    _accept_queue(port)
                    break
                except AssertionError:
                    await asyncio.sleep(0.1)
        clients += [asyncio.create_task(busy()) for _ in range(4)]
        await asyncio.sleep(0.5)
        for s in waiting:
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
        await asyncio.sleep(1.5)  # ~15 iterations of the busy loop, or fewer on a loaded box
        assert _accept_queue(port) == 0
        stop.set()
        await asyncio.gather(*clients)
    finally:
        for task in clients:
            task.cancel()
        await asyncio.gather(*clients, return_exceptions=True)
        for s in waiting:
            s.close()
        server.kill()
        await server.wait()


class _Closed(asyncio.Transport):
    """A transport already closed, as a connection closed by the server is."""

    def is_closing(self) -> bool:
        return True


async def test_connections_whose_handler_never_saw_the_close_do_not_hold_the_cap() -> None:
    """Under uvloop a connection closed while its handler started can stay on the server's
    list for ever (its handler never told of the close): a scrape flood left the admin port
    with every one of its 64 places so held, accepting nothing. Two such handlers at a cap
    of 2: a new connection is still answered."""
    servers: list[web.Server] = []

    async def ok(request: web.Request) -> web.Response:
        servers.append(request.protocol._manager)  # the server the connection belongs to
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    timeout = aiohttp.ClientTimeout(total=5)
    async with runtime.listening(app, "127.0.0.1", 0, max_connections=2) as url:
        async with aiohttp.ClientSession(timeout=timeout) as s, s.get(url) as r:
            assert r.status == 200
        server = servers[0]
        for _ in range(2):
            server.connection_made(server(), _Closed())  # seen open, then closed unseen
        async with aiohttp.ClientSession(timeout=timeout) as s, s.get(url) as r:
            assert r.status == 200


PRODUCT = ("testbed", "fleet", "extender", "loadgen", "experiment", "schedperf", "publish", "bench")


def _wait_for_in_loops(source: str) -> list[int]:
    """Lines where a loop awaits `asyncio.wait_for(<x>.wait(), ...)`: the shape that loses a
    cancellation on Python 3.11 and then never ends (`runtime.wait_set` instead)."""
    found = []
    for loop in ast.walk(ast.parse(source)):
        if not isinstance(loop, ast.While | ast.For | ast.AsyncFor):
            continue
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == "asyncio.wait_for"
                and node.args
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Attribute)
                and node.args[0].func.attr == "wait"
            ):
                found.append(node.lineno)
    return found


def test_no_loop_waits_on_an_event_through_wait_for() -> None:
    sample = "async def f(e):\n    while True:\n        await asyncio.wait_for(e.wait(), 1)\n"
    assert _wait_for_in_loops(sample) == [3]  # the check sees the shape it forbids
    root = Path(__file__).resolve().parents[3]
    offenders = [
        f"{path.relative_to(root)}:{line}"
        for package in PRODUCT
        for path in sorted((root / package).rglob("*.py"))
        for line in _wait_for_in_loops(path.read_text())
    ]
    assert offenders == [], "use testbed.runtime.wait_set in a loop"
