"""The HTTP app over a real socket: kube-scheduler's calls, bad input, health, metrics."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.config import Settings
from testbed import vocab, wire
from tests.support import extender_objects as objects
from tests.support.served_extender import args, post, served
from tests.unit.extender.helpers import cluster_objects, core_of, pair_pod


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[TestServer]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects()))
    app = app_mod.build(
        Settings(max_body_bytes=64 * 1024, debug=True), registry=CollectorRegistry()
    )
    async with served(app, path) as srv:
        yield srv


async def test_prioritize_answers_the_nodes_above_the_lowest_in_input_order(
    server: TestServer,
) -> None:
    names = ["un", "al", "ghost"]
    status, body = await post(server, "prioritize", args(pair_pod(), names))
    assert status == 200
    # Each listed node's score less the call's lowest (the unknown ghost's 0): the
    # differences, all kube-scheduler's choice reads, are the scores' own.
    scored = core_of(cluster_objects()).prioritize(pair_pod(), names)
    absolute = dict(zip(names, scored, strict=True))
    assert absolute["al"] > absolute["un"] > absolute["ghost"] == 0
    assert body == [
        {"Host": "un", "Score": absolute["un"]},
        {"Host": "al", "Score": absolute["al"]},
    ]


async def test_prioritize_lists_no_node_when_every_node_scores_alike(server: TestServer) -> None:
    status, body = await post(server, "prioritize", args(pair_pod(), ["al", "al"]))
    assert status == 200 and body == []


def test_the_answer_above_the_lowest_keeps_every_difference_so_the_schedulers_choice() -> None:
    # kube-scheduler's total is its plugins' sum plus 10 x the extender's score, 0 for a node
    # the extender does not list: the best nodes are the same either way.
    rng = random.Random(7)
    heads = handlers.HostHeads()
    for _ in range(500):
        n = rng.randint(1, 12)
        names = [f"n{i}" for i in range(n)]
        scores = [rng.randint(0, 10) for _ in names]
        plugins = [rng.randint(0, 300) for _ in names]
        answer = json.loads(handlers.encode_above_lowest(names, scores, heads))
        listed = {h["Host"]: h["Score"] for h in answer}
        assert [h["Host"] for h in answer] == [
            m for m, s in zip(names, scores, strict=True) if s > min(scores)
        ]
        assert all(
            listed[m] == s - min(scores) for m, s in zip(names, scores, strict=True) if m in listed
        )
        full = [p + 10 * s for p, s in zip(plugins, scores, strict=True)]
        sparse = [p + 10 * listed.get(m, 0) for p, m in zip(plugins, names, strict=True)]
        assert {i for i, t in enumerate(full) if t == max(full)} == {
            i for i, t in enumerate(sparse) if t == max(sparse)
        }
    assert handlers.encode_above_lowest([], [], heads) == "[]"


async def test_filter_answers_with_capitalised_keys(server: TestServer) -> None:
    pod = pair_pod(annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    status, body = await post(server, "filter", args(pod, ["un", "al"]))
    assert status == 200
    assert body["NodeNames"] == ["al"]
    assert set(body["FailedNodes"]) == {"un"}
    assert body["FailedAndUnresolvableNodes"] == {} and body["Error"] == ""


async def test_filter_always_sets_node_names_even_when_empty(server: TestServer) -> None:
    pod = pair_pod(annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    _, body = await post(server, "filter", args(pod, ["un"]))
    assert body["NodeNames"] == []


async def test_filter_without_node_cache_returns_node_objects(server: TestServer) -> None:
    pod = pair_pod(annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    nodes = {"items": [objects.node("un"), objects.node("al")]}
    _, body = await post(server, "filter", json.dumps({"Pod": pod, "Nodes": nodes}))
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["al"]
    assert "NodeNames" not in body


def test_names_are_escaped_like_json() -> None:
    odd = 'we"ird\\nämé'
    encoded = handlers.encode_above_lowest(["low", odd, "n"], [0, 3, 10], handlers.HostHeads())
    assert json.loads(encoded) == [{"Host": odd, "Score": 3}, {"Host": "n", "Score": 10}]
    assert encoded == json.dumps(json.loads(encoded), separators=(",", ":"))


def test_names_remembered_stay_within_the_limit() -> None:
    heads = handlers.HostHeads(limit=100)
    made_up = [f"made-up-{i}" for i in range(4000)]
    answer = handlers.encode_above_lowest(["low", *made_up], [0] + [1] * 4000, heads)
    assert len(json.loads(answer)) == 4000
    long_name = "n" * 10_000
    handlers.encode_above_lowest(["low", long_name], [0, 1], heads)
    assert len(heads) <= heads.limit and long_name not in heads


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "invalid ExtenderArgs"),
        (b"", "empty request body"),
        (b'{"NodeNames": ["a"]}', "Pod"),
        (b'{"Pod": {}, "NodeNames": "a"}', "NodeNames"),
        (b"x" * (65 * 1024), "limit"),
    ],
)
@pytest.mark.parametrize("verb", ["filter", "prioritize"])
async def test_bad_input_is_a_400_with_a_clear_message(
    server: TestServer, verb: str, body: bytes, says: str
) -> None:
    before = server.app[app_mod.STORE].index.counts()
    status, reply = await post(server, verb, body)
    assert status == 400 and says in reply["error"]
    assert server.app[app_mod.STORE].index.counts() == before
    status, _ = await post(server, verb, args(pair_pod(), ["al"]))
    assert status == 200  # still serving


async def test_health_readiness_metrics_and_debug(server: TestServer) -> None:
    await post(server, "prioritize", args(pair_pod(), ["al", "un"]))
    await post(server, "filter", args(pair_pod(), ["al", "un"]))
    await post(server, "filter", b"{")
    async with aiohttp.ClientSession() as s:
        async with s.get(server.make_url("/healthz")) as r:
            assert r.status == 200
        async with s.get(server.make_url("/readyz")) as r:
            assert r.status == 200
        async with s.get(server.make_url("/metrics")) as r:
            text = await r.text()
        async with s.get(server.make_url("/debug/decisions"), params={"pod": "ns/p"}) as r:
            decisions = await r.json()
        async with s.get(server.make_url("/debug/nodes/al/free")) as r:
            free = await r.json()
    assert 'extender_requests_total{outcome="ok",verb="prioritize"} 1.0' in text
    assert 'extender_requests_total{outcome="bad_request",verb="filter"} 1.0' in text
    assert 'extender_request_duration_seconds_count{verb="filter"} 1.0' in text
    assert 'extender_cache_objects{kind="Node"} 2.0' in text
    assert "extender_cache_ready 1.0" in text
    assert "process_cpu_seconds_total " in text  # the extender's CPU, for per-pod figures
    assert decisions[-1]["top"][0]["node"] == "al"
    assert len(free) == 16


async def test_scrapes_on_the_scheduler_port_are_throttled_and_its_calls_never(
    server: TestServer,
) -> None:
    """Without an admin port, /metrics shares the scheduler's port: past the admin port's rate
    it is a 429 there too (a scrape flood held /filter 2-3 s unthrottled), while the
    scheduler's calls and the probes are never refused."""
    statuses = []
    async with aiohttp.ClientSession() as s:
        for _ in range(int(3 * app_mod.ADMIN_RATE)):
            async with s.get(server.make_url("/metrics")) as r:
                statuses.append(r.status)
        async with s.get(server.make_url("/healthz")) as r:
            assert r.status == 200
    assert 429 in statuses and 200 in statuses, statuses
    for _ in range(int(3 * app_mod.ADMIN_RATE)):
        status, body = await post(server, "filter", args(pair_pod(), ["al", "un"]))
        assert status == 200 and "NodeNames" in body


async def test_not_ready_until_synced() -> None:
    async with served(app_mod.build(Settings(), registry=CollectorRegistry())) as srv:
        async with aiohttp.ClientSession() as s, s.get(srv.make_url("/readyz")) as r:
            assert r.status == 503
        status, body = await post(srv, "prioritize", args(pair_pod(), ["a"]))
        assert status == 200 and body == []  # every node at 0: none above the lowest


# -- against real Go encoding/json -----------------------------------------------------------
# golden/args_*.json are what kube-scheduler's encoding/json makes of ExtenderArgs (written by
# golden/goenc with k8s.io/kube-scheduler v0.36.3's types); golden/*_reply_*.go.json are our
# replies decoded into its ExtenderFilterResult / HostPriorityList and encoded again by Go.
# Regenerate: cd golden/goenc && go build -o goenc . (the module cache suffices), then
# `./goenc args-names > ../args_node_names.json`, `./goenc args-nodes > ../args_nodes.json`, and
# pipe each reply of the `server` fixture below into `./goenc decode-filter|decode-prioritize`
# (delete the binary afterwards).

GOLDEN = Path(__file__).parent / "golden"


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("verb", "request_file", "go_reply"),
    [
        ("filter", "args_node_names.json", "filter_reply_to_node_names.go.json"),
        ("prioritize", "args_node_names.json", "prioritize_reply_to_node_names.go.json"),
        ("filter", "args_nodes.json", "filter_reply_to_nodes.go.json"),
    ],
)
async def test_go_encoded_requests_get_replies_go_reads_back_identically(
    server: TestServer, verb: str, request_file: str, go_reply: str
) -> None:
    status, ours = await post(server, verb, (GOLDEN / request_file).read_bytes())
    assert status == 200
    go = _without_nulls(json.loads((GOLDEN / go_reply).read_text()))
    if isinstance(go, dict) and "Nodes" in go:
        go["Nodes"].pop("metadata", None)  # Go writes the NodeList's empty ListMeta
    assert ours == go


def test_go_encoded_pod_yields_its_demand() -> None:
    args = wire.ExtenderArgs.model_validate_json((GOLDEN / "args_node_names.json").read_bytes())
    d = core_of(cluster_objects()).demand(args.Pod)
    assert (d.gpus, d.nics, d.require_alignment, d.job) == (8, 8, "pcie-root", "ns/train")
