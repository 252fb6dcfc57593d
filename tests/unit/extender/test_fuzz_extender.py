"""Generated bad input against the real HTTP app on a loopback socket, serving a rendered fleet.

Every call gets a 400 with a one-line error or a well-formed reply (never a 5xx), the app
keeps serving, and nothing a call sends changes what the extender knows: objects per kind
and every node's free devices are the same before and after. A CI-sized run; the 100,000-body
run is tests/fuzz/extender.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yarl
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.cache.index import Index
from extender.config import Settings
from tests.support import extender_fuzz as fz
from tests.support import served_extender

LIMIT = 64 * 1024
OBJECTS, NAMES = fz.fleet_objects()
KNOWN = set(NAMES)


def state(index: Index) -> tuple[dict[str, int], dict[str, Any]]:
    return index.counts(), {n: sorted(index.free_devices(n)) for n in sorted(index.nodes)}


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TestServer]:
    path = tmp_path_factory.mktemp("fuzz") / "fleet.json"
    path.write_text(json.dumps({"kind": "List", "items": OBJECTS}))
    app = app_mod.build(Settings(max_body_bytes=LIMIT), registry=CollectorRegistry())
    async with served_extender.served(app, path) as srv:
        yield srv


@pytest.fixture(scope="module")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def send(s: aiohttp.ClientSession, srv: TestServer, call: fz.Call) -> tuple[int, bytes]:
    url = yarl.URL(f"http://127.0.0.1:{srv.port}{call.path}", encoded=True)
    headers = {} if call.content_type is None else {"Content-Type": call.content_type}
    async with s.request(call.method, url, data=call.body or None, headers=headers) as r:
        return r.status, await r.read()


@pytest.mark.timeout(120)
@settings(
    max_examples=600,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=fz.calls(NAMES, LIMIT))
async def test_generated_calls_get_a_400_or_a_valid_reply_and_change_nothing(
    served: TestServer, session: aiohttp.ClientSession, call: fz.Call
) -> None:
    index = served.app[app_mod.STORE].index
    before = state(index)
    status, body = await send(session, served, call)
    problem = fz.check_reply(call, status, body, KNOWN)
    assert problem is None, problem
    assert state(index) == before
    gate = served.app[handlers.GATE]  # every call gives its place back, whatever it sent
    assert gate.inflight == 0 and gate.refusing() is None


@pytest.mark.timeout(60)
@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=fz.args_strategy(NAMES), verb=st.sampled_from(fz.POST_PATHS))
async def test_wrong_types_at_any_level_are_a_400_naming_the_field(
    served: TestServer, session: aiohttp.ClientSession, args: Any, verb: str
) -> None:
    body = json.dumps(args).encode("utf-8", "surrogatepass")
    names = fz.candidate_names(body) if len(body) <= LIMIT else None
    call = fz.Call("POST", verb, body, "application/json", names)
    status, reply = await send(session, served, call)
    assert fz.check_reply(call, status, reply, KNOWN) is None
    if status == 400 and len(body) <= LIMIT:
        assert json.loads(reply)["error"].startswith("invalid ExtenderArgs at ")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"Pod": {"metadata": "x"}, "NodeNames": []}, "Pod.metadata"),
        ({"Pod": {"metadata": {"labels": ["a"]}}, "NodeNames": []}, "Pod.metadata.labels"),
        ({"Pod": {"metadata": {"annotations": 1}}, "NodeNames": []}, "Pod.metadata.annotations"),
        ({"Pod": {"metadata": {"namespace": []}}, "NodeNames": []}, "Pod.metadata.namespace"),
        ({"Pod": {"metadata": {"name": "p" * 300}}, "NodeNames": []}, "Pod.metadata.name"),
        ({"Pod": {"spec": []}, "NodeNames": []}, "Pod.spec"),
        ({"Pod": {"spec": {"resourceClaims": 5}}, "NodeNames": []}, "Pod.spec.resourceClaims"),
        (
            {"Pod": {"spec": {"resourceClaims": [{"name": []}]}}, "NodeNames": []},
            "Pod.spec.resourceClaims.0.name",
        ),
        ({"Pod": {"status": 5}}, "Pod.status"),
        (
            {"Pod": {"status": {"resourceClaimStatuses": [{"name": {}}]}}},
            "Pod.status.resourceClaimStatuses.0.name",
        ),
        ({"Pod": {}, "Nodes": {"items": [{"metadata": "x"}]}}, "Nodes.items"),
        ({"Pod": {}, "Nodes": {"items": [{"metadata": {"name": 5}}]}}, "Nodes.items"),
    ],
)
@pytest.mark.parametrize("verb", fz.POST_PATHS)
async def test_found_by_the_fuzzer_wrong_pod_shapes_were_500s(
    served: TestServer, session: aiohttp.ClientSession, body: Any, field: str, verb: str
) -> None:
    call = fz.Call("POST", verb, json.dumps(body).encode(), "application/json", None)
    status, reply = await send(session, served, call)
    assert status == 400
    assert json.loads(reply)["error"].startswith(f"invalid ExtenderArgs at {field}")


async def test_made_up_and_overlong_names_are_not_all_remembered(
    served: TestServer, session: aiohttp.ClientSession
) -> None:
    heads = served.app[handlers.HEADS]
    names = [f"made-up-{i}" for i in range(4000)]
    call = fz.Call(
        "POST",
        "/prioritize",
        json.dumps({"Pod": {}, "NodeNames": names}).encode(),
        "application/json",
        names,
    )
    for _ in range(20):
        status, body = await send(session, served, call)
        assert fz.check_reply(call, status, body, KNOWN) is None
    long_name = ["n" * 10_000]
    call = fz.Call(
        "POST",
        "/prioritize",
        json.dumps({"Pod": {}, "NodeNames": long_name}).encode(),
        "application/json",
        long_name,
    )
    status, body = await send(session, served, call)
    assert fz.check_reply(call, status, body, KNOWN) is None
    assert len(heads) <= heads.limit
    assert long_name[0] not in heads
