"""The extender's app served in-process on loopback for a test (aiohttp's TestServer), with
cluster objects loaded from files as `extender serve --from-files` loads them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from extender import app as app_mod
from extender import fast_calls, warmup
from extender.cache import files
from extender.config import Settings
from testbed import runtime


@contextlib.asynccontextmanager
async def served(app: web.Application, *objects: Path) -> AsyncIterator[TestServer]:
    """`app`, with the cluster objects in the files `objects` loaded into its store, listening
    on 127.0.0.1 for the block; with objects, once warm (ready, as /readyz would say)."""
    if objects:
        files.load(app[app_mod.STORE], list(objects))
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    try:
        if objects:
            await app[warmup.WARM].wait()
        yield srv
    finally:
        await srv.close()


async def post(srv: TestServer, verb: str, body: str | bytes) -> tuple[int, Any]:
    """POST `body` to the served app's `/verb`: the status and the decoded JSON answer."""
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            srv.make_url(f"/{verb}"), data=body, headers={"Content-Type": "application/json"}
        ) as r,
    ):
        return r.status, json.loads(await r.read())


def args(pod: dict[str, Any], names: list[str]) -> str:
    """kube-scheduler's ExtenderArgs for `pod` with node names only (its nodeCacheCapable call)."""
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})


@contextlib.asynccontextmanager
async def listening(
    app: web.Application, settings: Settings, *objects: Path
) -> AsyncIterator[tuple[str, str]]:
    """`app` (built with `separate_admin`) served as `extender serve --port 0 --admin-port 0`
    serves it (`runtime.listening`: its accept loop, idle timeout and connection cap) on
    127.0.0.1, with the objects in the files `objects` loaded: the scheduler's and the admin
    port's base URLs, for the block."""
    if objects:
        files.load(app[app_mod.STORE], list(objects))
    # The CEL sandbox's workers started before serving, as `extender serve` starts them.
    await app[app_mod.STORE].index.evaluator.sandbox.warm()
    async with (
        runtime.listening(
            app,
            "127.0.0.1",
            0,
            access_log=False,
            idle_timeout=settings.idle_timeout_seconds,
            max_connections=settings.max_connections,
            connection=fast_calls.connections(app),
        ) as main,
        runtime.listening(
            app_mod.admin(app),
            "127.0.0.1",
            0,
            access_log=False,
            idle_timeout=settings.idle_timeout_seconds,
            max_connections=app_mod.ADMIN_MAX_CONNECTIONS,
        ) as admin,
    ):
        yield main, admin
