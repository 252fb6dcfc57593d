"""The scheduler's calls read straight off their connection (`extender.fast_calls`), served as
`extender serve` serves them, on loopback: the same answers as aiohttp's route gives, on one
kept-alive connection, whether a call comes whole, in pieces or two at once; anything else
on the connection is aiohttp's from then on, and bad bodies are one-line 400s. Bodies that
trickle, heads never finished and the connection cap are tests/unit/extender/hostile's."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.config import Settings
from tests.support import served_extender
from tests.unit.extender.helpers import cluster_objects, pair_pod

pytestmark = pytest.mark.timeout(60)

WAIT = 5.0
"""kube-scheduler's call timeout: every read here is bounded by it."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Conn:
    app: web.Application
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self) -> Answer:
        """The next answer on the connection (bounded by WAIT)."""
        async with asyncio.timeout(WAIT):
            head = await self.reader.readuntil(b"\r\n\r\n")
            line, *fields = head.decode().split("\r\n")[:-2]
            headers = {}
            for field in fields:
                name, _, value = field.partition(":")
                headers[name.lower()] = value.strip()
            body = await self.reader.readexactly(int(headers["content-length"]))
        return Answer(int(line.split()[1]), headers, body)


@contextlib.asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[Conn]:
    """One connection to the scheduler's port of an app served as `extender serve` serves it."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects()))
    settings = Settings()
    app = app_mod.build(settings, registry=CollectorRegistry(), separate_admin=True)
    async with served_extender.listening(app, settings, path) as (main, _admin):
        host, port = main.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            yield Conn(app, reader, writer)
        finally:
            writer.close()


def call(verb: str, body: bytes, *, chunked: bool = False) -> bytes:
    """A call as kube-scheduler's Go client sends it (or in one chunk, as it never does)."""
    head = f"POST /{verb} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1\r\n"
    head += "Content-Type: application/json\r\nAccept-Encoding: gzip\r\n"
    if chunked:
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + (
            b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        )
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def args(pod: dict[str, Any] | None = None) -> bytes:
    return served_extender.args(pod or pair_pod(), ["al", "un"]).encode()


def served_by_aiohttp(answer: Answer) -> bool:
    return "server" in answer.headers  # aiohttp names itself; the fast path does not


async def test_calls_on_one_connection_answer_as_aiohttps_route(tmp_path: Path) -> None:
    async with connected(tmp_path) as conn:
        fast = {}
        for verb in ("filter", "prioritize"):
            await conn.send(call(verb, args()))
            fast[verb] = await conn.answer()
            assert fast[verb].status == 200 and not served_by_aiohttp(fast[verb]), fast[verb]
        assert "NodeNames" in json.loads(fast["filter"].body)
        # A chunked body is aiohttp's (and the connection with it): the same answers.
        for verb in ("filter", "prioritize"):
            await conn.send(call(verb, args(), chunked=True))
            slow = await conn.answer()
            assert served_by_aiohttp(slow) and (slow.status, slow.body) == (200, fast[verb].body)
        assert fast["filter"].headers["content-type"] == "application/json"


async def test_a_call_in_pieces_and_two_at_once_are_answered_in_order(tmp_path: Path) -> None:
    async with connected(tmp_path) as conn:
        whole = call("filter", args())
        for cut in (10, len(whole) - len(args()) - 2, len(whole) - 5):  # head, its end, body
            await conn.send(whole[:cut])
            await asyncio.sleep(0.05)
            await conn.send(whole[cut:])
            answer = await conn.answer()
            assert answer.status == 200 and not served_by_aiohttp(answer), (cut, answer)
        await conn.send(call("prioritize", args()) + call("filter", args()))
        first, second = await conn.answer(), await conn.answer()
        assert [first.status, second.status] == [200, 200]
        assert isinstance(json.loads(first.body), list)  # prioritize's HostPriorityList
        assert "NodeNames" in json.loads(second.body)
        # More sent ahead than a head holds: read as the answers go out, all in order.
        ahead = [call(verb, args()) for verb in ["prioritize", "filter"] * 10]
        await conn.send(b"".join(ahead))
        answers = [await conn.answer() for _ in ahead]
        assert [a.status for a in answers] == [200] * len(ahead)
        assert [isinstance(json.loads(a.body), list) for a in answers] == [True, False] * 10
        await conn.send(call("filter", args()))  # and it reads again once they are out
        assert (await conn.answer()).status == 200


async def test_a_probe_makes_the_connection_aiohttps_and_calls_still_answer(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path) as conn:
        await conn.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        probe = await conn.answer()
        assert (probe.status, probe.body) == (200, b"ok")
        await conn.send(call("filter", args()))
        answer = await conn.answer()
        assert answer.status == 200 and served_by_aiohttp(answer)


async def test_bad_bodies_are_one_line_400s_counted(tmp_path: Path) -> None:
    async with connected(tmp_path) as conn:
        for body, said in (
            (b"{not json", "invalid ExtenderArgs"),
            (b"", "empty request body"),
            (b'{"Pod": 3, "NodeNames": []}', "invalid ExtenderArgs at Pod"),
        ):
            await conn.send(call("filter", body))
            answer = await conn.answer()
            error = json.loads(answer.body)["error"]
            assert answer.status == 400 and not served_by_aiohttp(answer), answer
            assert error.startswith(said) and "\n" not in error, error
        counted = conn.app[handlers.METRICS].requests.labels("filter", "bad_request")
        assert counted._value.get() == 3
        await conn.send(call("filter", args()))  # the connection still serves
        assert (await conn.answer()).status == 200
