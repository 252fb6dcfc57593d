"""A bug inside a handler is a counted 500 with a one-line body, and the app keeps serving."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.config import Settings
from tests.support import extender_objects as objects
from tests.support.served_extender import served


def _broken(*args: Any) -> NoReturn:
    raise RuntimeError("a bug the middleware must contain")


async def test_an_exception_in_a_handler_is_a_counted_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    app = app_mod.build(Settings(), registry=registry)
    core = app[handlers.CORE]
    core.filter = _broken  # type: ignore[method-assign]
    core.prioritize = _broken  # type: ignore[method-assign]
    body = json.dumps({"Pod": objects.pod("ns", "p"), "NodeNames": ["a"]})
    async with served(app) as srv, aiohttp.ClientSession() as s:
        for verb in ("filter", "prioritize", "filter"):
            async with s.post(srv.make_url(f"/{verb}"), data=body) as r:
                assert r.status == 500
                assert (await r.json()) == {"error": "internal error; see the extender log"}
        async with s.get(srv.make_url("/healthz")) as r:
            assert r.status == 200

    def count(verb: str, outcome: str) -> float | None:
        labels = {"verb": verb, "outcome": outcome}
        return registry.get_sample_value("extender_requests_total", labels)

    assert count("filter", "error") == 2
    assert count("prioritize", "error") == 1
    assert count("filter", "ok") == 0  # born at zero, never counted
    assert "a bug the middleware must contain" in caplog.text
