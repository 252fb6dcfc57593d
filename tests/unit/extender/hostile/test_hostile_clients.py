"""The extender against hostile clients, on loopback: one costly call, bodies that trickle,
connections that never finish their request head or sit idle, a flood of scrapes, a costly
CEL selector. In every case a scheduler call (/filter) is answered within kube-scheduler's
5 s timeout (`httpTimeout`), not refused, and the extender is back to admitting calls within
10 s of the attack ending.

The app is served as `extender serve` serves it (`runtime.listening`: its accept loop,
timeouts and connection cap), with its limits scaled down where the property shows the
same: a connection cap of 40 rather than a descriptor limit of thousands, a 1 s idle
timeout rather than 30 s. Every loop is bounded; the waits are the protocol's own 5 s and
the target's 10 s, generous against a loaded machine, never a micro-timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.config import Settings
from testbed import vocab
from tests.support import extender_objects as objects
from tests.support import served_extender
from tests.unit.extender.helpers import NS, cluster_objects, pair_pod

pytestmark = pytest.mark.timeout(120)

SCHEDULER_TIMEOUT = 5.0
"""kube-scheduler's default extender httpTimeout: a later answer is no answer."""
RECOVERY = 10.0
"""The target: back to normal within this many seconds of an attack ending."""
CAP = 40
"""The connection cap of the served app (in place of a descriptor limit)."""

_L = "[" + ",".join(str(i) for i in range(25)) + "]"
COSTLY = (
    f"{_L}.all(a, {_L}.all(b, {_L}.all(c, {_L}.all(d, {_L}.all(e, a + b + c + d + e >= 0)))))"
    " && device.driver == 'gpu.nvidia.com'"
)
"""5-deep `.all` over a 25-element list: ~10 million steps, seconds of CPU if evaluated."""


class Served:
    def __init__(self, app: aiohttp.web.Application, main: str, admin: str) -> None:
        self.app = app
        self.main = main
        self.admin = admin
        host, port = main.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, **settings: Any) -> AsyncIterator[Served]:
    costly = objects.template(
        NS,
        "costly",
        objects.claim_spec(
            [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": vocab.CLASS_GPU,
                        "count": 1,
                        "selectors": [{"cel": {"expression": COSTLY}}],
                    },
                }
            ]
        ),
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*cluster_objects(), costly]))
    config = Settings(
        **{"idle_timeout_seconds": 1.0, "max_connections": CAP, "max_inflight": 8, **settings}
    )
    app = app_mod.build(config, registry=CollectorRegistry(), separate_admin=True)
    async with served_extender.listening(app, config, path) as (main, admin):
        yield Served(app, main, admin)


async def _filter(srv: Served, pod: dict[str, Any] | None = None) -> tuple[int, Any]:
    """A scheduler call as kube-scheduler makes it: a new connection, its 5 s timeout."""
    body = json.dumps({"Pod": pod or pair_pod(), "Nodes": None, "NodeNames": ["al", "un"]})
    timeout = aiohttp.ClientTimeout(total=SCHEDULER_TIMEOUT)
    async with (
        aiohttp.ClientSession(timeout=timeout) as s,
        s.post(f"{srv.main}/filter", data=body) as r,
    ):
        return r.status, json.loads(await r.read())


async def _get(url: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=SCHEDULER_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as s, s.get(url) as r:
        return r.status, await r.text()


def _answered(status: int, body: Any) -> bool:
    return status == 200 and "NodeNames" in body


async def _back_to_normal(srv: Served) -> None:
    """Within RECOVERY seconds, /filter is judged and /readyz is ready (bounded loop)."""
    until = time.monotonic() + RECOVERY
    last: Any = None
    while time.monotonic() < until:
        status, body = await _filter(srv)
        ready, why = await _get(f"{srv.admin}/readyz")
        last = (status, body, ready, why)
        if _answered(status, body) and ready == 200:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not back to normal within {RECOVERY:g}s: {last}")


async def _open(srv: Served, count: int, first_bytes: bytes) -> list[socket.socket]:
    """`count` connections to the scheduler's port, each having sent `first_bytes`."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(srv.address, timeout=SCHEDULER_TIMEOUT)
        sock.sendall(first_bytes)
        socks.append(sock)
        await asyncio.sleep(0)  # let the server accept it
    return socks


def _closed_by_server(sock: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing `sock`, or None if it kept it open `within`."""
    sock.settimeout(within)
    got = b""
    with contextlib.suppress(ConnectionResetError):
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except TimeoutError:
            return None
    return got


async def test_one_costly_call_does_not_latch_the_gate(tmp_path: Path) -> None:
    """After a call that took 13.7 s to judge (the gate's moving average then says 2.74 s, as
    in the report that found the latch), the gate admits again: alone, a call is always
    admitted; with a call in flight it is refused only while the estimate decays, and
    /readyz says it is refusing meanwhile."""
    async with serving(tmp_path) as srv:
        # Warmed up first (its costly selector waits on the sandbox off the event loop, so
        # the calls below may come before): /readyz then names the gate alone.
        await _back_to_normal(srv)
        gate = srv.app[handlers.GATE]
        gate.judge_seconds = 2.74
        assert _answered(*await _filter(srv))  # nothing in flight: admitted
        async with gate.admitted():  # a call in flight
            status, body = await _filter(srv)
            assert status == 503 and "overloaded" in body["error"]
            ready, why = await _get(f"{srv.admin}/readyz")
            assert ready == 503 and "refusing scheduler calls" in why
        # The costly call is over: concurrent calls are admitted again as the estimate decays.
        until = time.monotonic() + RECOVERY
        while True:
            async with gate.admitted():
                status, _ = await _filter(srv)
            if status == 200:
                break
            assert time.monotonic() < until, "the gate still refuses with one call in flight"
            await asyncio.sleep(0.5)
        await _back_to_normal(srv)


async def test_bodies_that_trickle_hold_no_place_at_the_gate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """More slow bodies than the gate has places: a scheduler call is still answered; a slow
    one whose client gives up is no error of the extender's, and each one still there gets a
    408 once the call deadline has passed."""
    async with serving(tmp_path) as srv:
        head = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n{"
        socks = await _open(srv, 20, head)  # max_inflight is 8
        try:
            assert _answered(*await _filter(srv))
            for s in socks[10:]:
                s.close()  # gone mid-body
            reply = await asyncio.to_thread(_closed_by_server, socks[0], RECOVERY)
            assert reply is not None and reply.startswith(b"HTTP/1.1 408"), reply
        finally:
            for s in socks:
                s.close()
        await _back_to_normal(srv)
    errors = [r.getMessage() for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert not errors, errors


async def test_unfinished_request_heads_cannot_hold_every_connection(tmp_path: Path) -> None:
    """Three times the connection cap of connections that never finish their request head
    (the idle timeout long, so only the cap can close them): a scheduler call is answered,
    and the oldest of them were closed to make room."""
    async with serving(tmp_path, idle_timeout_seconds=60.0) as srv:
        socks = await _open(srv, 3 * CAP, b"POST /filter HTTP/1.1\r\nHost: x\r\n")
        try:
            assert _answered(*await _filter(srv))
            assert await asyncio.to_thread(_closed_by_server, socks[0], RECOVERY) is not None
        finally:
            for s in socks:
                s.close()
        await _back_to_normal(srv)


async def test_an_unfinished_request_head_is_closed_after_the_idle_timeout(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as srv:
        sock = (await _open(srv, 1, b"POST /filter HTTP/1.1\r\nHost: x\r\n"))[0]
        try:
            assert await asyncio.to_thread(_closed_by_server, sock, RECOVERY) is not None
        finally:
            sock.close()


async def test_idle_keep_alive_connections_are_closed(tmp_path: Path) -> None:
    """Connections that made one call and stay open, idle, past the cap: a scheduler call
    is answered, and an idle one is closed by the server."""
    async with serving(tmp_path) as srv:
        socks = await _open(srv, 2 * CAP, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            assert _answered(*await _filter(srv))
            reply = await asyncio.to_thread(_closed_by_server, socks[-1], RECOVERY)
            assert reply is not None and reply.startswith(b"HTTP/1.1 200"), reply
        finally:
            for s in socks:
                s.close()
        await _back_to_normal(srv)


async def test_a_flood_of_scrapes_on_the_admin_port_leaves_filter_answered(
    tmp_path: Path,
) -> None:
    """The admin port shares the event loop: scrapes past its rate get a 429 (measured on
    2026-11-27 with 2,000 concurrent scrapes from another process: /filter answered in at
    most 2.2 s with the rate, 48.8 s without)."""
    async with serving(tmp_path) as srv:
        timeout = aiohttp.ClientTimeout(total=60)
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as s:

            async def scrape() -> int:
                async with s.get(f"{srv.admin}/metrics") as r:
                    await r.read()
                    return r.status

            flood = [asyncio.create_task(scrape()) for _ in range(300)]
            await asyncio.sleep(0)
            assert _answered(*await _filter(srv))
            statuses = await asyncio.gather(*flood, return_exceptions=True)
        # Scrapes past the admin port's rate are refused at once, before any rendering.
        assert statuses.count(200) > 0 and statuses.count(429) > 0, statuses
        # /metrics is not on the scheduler's port at all.
        assert (await _get(f"{srv.main}/metrics"))[0] == 404
        await _back_to_normal(srv)


async def test_a_costly_selector_is_abandoned_while_probes_and_cheap_calls_are_answered(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as srv:
        # Requiring alignment, so /filter judges the pod's claims (and their selector).
        costly_pod = objects.pod(
            NS,
            "costly",
            templates=["costly"],
            annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"},
        )
        costly = asyncio.create_task(_filter(srv, costly_pod))
        probes = [asyncio.create_task(_get(f"{srv.admin}/healthz")) for _ in range(3)]
        cheap = asyncio.create_task(_filter(srv))
        assert [status for status, _ in await asyncio.gather(*probes)] == [200, 200, 200]
        assert _answered(*await cheap)
        status, body = await costly
        assert _answered(status, body)  # answered, the costly selector not evaluated to the end
        evaluator = srv.app[app_mod.STORE].index.evaluator
        refused = evaluator.compile_selector(COSTLY)
        assert not refused.judged and "cost" in str(refused.unsupported)
        # From then on the pod's claim is not judged: every node passes, answered at once.
        status, body = await _filter(srv, costly_pod)
        assert _answered(status, body) and body["NodeNames"] == ["al", "un"], body
        await _back_to_normal(srv)


async def test_a_header_over_8_kib_is_a_400_and_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(tmp_path) as srv:
        with caplog.at_level("DEBUG"):
            big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
            sock = (await _open(srv, 1, big))[0]
            reply = await asyncio.to_thread(_closed_by_server, sock, RECOVERY)
            sock.close()
        assert reply is not None and b" 400 " in reply.split(b"\r\n")[0], reply
        faults = [r for r in caplog.records if r.name == "aiohttp.server"]
        assert faults and all(r.levelname == "DEBUG" and not r.exc_info for r in faults)
        assert all("\n" not in r.getMessage() for r in faults)
        await _back_to_normal(srv)
