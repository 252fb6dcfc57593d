"""The extender bounds its own work: calls beyond the in-flight cap get a counted 503, a call
whose turn comes past its deadline is answered "not judged", node lists and bodies beyond
kube-scheduler's largest call are refused, and /debug/* and /metrics are served only where
asked for."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import expressions, handlers, limits
from extender.config import Settings
from tests.support import served_extender
from tests.support.served_extender import args, post
from tests.unit.extender.helpers import GPU, cluster_objects, pair_pod


def _cluster_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects()))
    return path


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[web.Application, TestServer]]:
    settings = Settings(max_inflight=3, call_deadline_seconds=0.2, max_node_names=3)
    app = app_mod.build(settings, registry=CollectorRegistry())
    async with served_extender.served(app, _cluster_file(tmp_path)) as srv:
        yield app, srv


async def _get(srv: TestServer, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(srv.make_url(path)) as r:
        return r.status, await r.text()


def _count(metrics: str, verb: str, result: str) -> float:
    found = [
        ln
        for ln in metrics.splitlines()
        if ln.startswith("extender_requests_total{")
        and f'verb="{verb}"' in ln
        and f'outcome="{result}"' in ln
    ]
    return float(found[0].split()[-1]) if found else 0.0


async def test_a_gate_admits_up_to_its_cap_and_refuses_the_next() -> None:
    gate = limits.Gate(max_inflight=2, deadline_seconds=1.0)
    async with gate.admitted(), gate.admitted():
        with pytest.raises(limits.Overloaded):
            async with gate.admitted():
                pass
    async with gate.admitted():  # places are given back
        assert gate.inflight == 1


async def test_a_turn_that_comes_past_the_deadline_is_not_judged() -> None:
    now = [0.0]
    gate = limits.Gate(max_inflight=4, deadline_seconds=1.0, clock=lambda: now[0])
    async with gate.admitted() as first, gate.admitted() as second:
        async with first.judging() as in_time:
            assert in_time
            now[0] = 1.5  # the first call's judging outlasts the second's deadline
        async with second.judging() as in_time:
            assert not in_time


async def test_a_call_behind_a_long_turn_is_answered_at_its_deadline_not_at_the_turns_end() -> None:
    """A turn judged off the event loop leaves it free: the call behind it waits for its
    turn until its own deadline at most, then is answered not judged without the turn."""
    gate = limits.Gate(max_inflight=4, deadline_seconds=0.2)
    holding = asyncio.Event()

    async def hold() -> None:
        async with gate.admitted() as turn, turn.judging():
            holding.set()
            await asyncio.sleep(3.0)  # a call judged in a thread for 3 s

    long = asyncio.create_task(hold())
    await holding.wait()
    started = gate.clock()
    async with gate.admitted(started) as turn, turn.judging() as in_time:
        assert not in_time
    assert gate.clock() - started < 1.0
    long.cancel()
    async with gate.admitted() as turn, turn.judging() as in_time:  # the turn is given back
        assert in_time


def test_a_burst_is_said_once_and_the_next_one_counts_what_went_unsaid() -> None:
    now = [0.0]
    burst = limits.Burst(1.0, clock=lambda: now[0])
    said = []
    for t in (0.0, 0.5, 0.9, 1.8, 5.0, 5.5, 9.0):
        now[0] = t
        said.append(burst.say())
    assert said == [0, None, None, None, 3, None, 1]


async def test_a_gate_refuses_a_call_that_would_wait_past_its_deadline() -> None:
    """Below the cap, a call is still refused when the calls ahead of it, at the recent time
    to judge one, would take it past its deadline; admitted again once they are done."""
    now = [0.0]
    gate = limits.Gate(max_inflight=64, deadline_seconds=2.5, clock=lambda: now[0])
    async with gate.admitted() as turn, turn.judging():
        now[0] += 1.0  # judging one call takes a second
    assert gate.judge_seconds == pytest.approx(limits.Gate.SMOOTHING * 1.0)
    for _ in range(30):  # the average settles at 1 s
        async with gate.admitted() as turn, turn.judging():
            now[0] += 1.0
    assert gate.judge_seconds == pytest.approx(1.0, rel=0.01)
    async with gate.admitted(), gate.admitted():  # 2 calls: the second judged by ~2 s
        with pytest.raises(limits.Overloaded, match=r"past the 2\.5s call deadline"):
            async with gate.admitted():  # a third would be judged by ~3 s
                pass
    async with gate.admitted(), gate.admitted():  # room again once they are answered
        assert gate.inflight == 2


async def test_a_call_not_judged_does_not_lower_the_time_to_judge() -> None:
    now = [0.0]
    gate = limits.Gate(max_inflight=4, deadline_seconds=1.0, clock=lambda: now[0])
    async with gate.admitted() as first, gate.admitted() as second:
        async with first.judging():
            now[0] = 1.5
        judged = gate.judge_seconds
        async with second.judging() as in_time:
            assert not in_time
    assert gate.judge_seconds == judged > 0


async def test_calls_beyond_the_cap_get_a_counted_503(
    served: tuple[web.Application, TestServer],
) -> None:
    app, srv = served
    gate = app[handlers.GATE]
    async with gate.admitted(), gate.admitted(), gate.admitted():
        status, body = await post(srv, "prioritize", args(pair_pod(), ["al"]))
    assert status == 503 and "overloaded" in body["error"]
    status, _ = await post(srv, "prioritize", args(pair_pod(), ["al"]))
    assert status == 200  # once the others are answered
    _, metrics = await _get(srv, "/metrics")
    assert _count(metrics, "prioritize", "overloaded") == 1


async def test_a_call_that_would_wait_past_its_deadline_gets_a_counted_503(
    served: tuple[web.Application, TestServer],
) -> None:
    app, srv = served
    gate = app[handlers.GATE]
    gate.judge_seconds = 0.15  # recent calls took 0.15 s each to judge; the deadline is 0.2 s
    async with gate.admitted():  # one call ahead: this one would be judged by ~0.3 s
        status, body = await post(srv, "prioritize", args(pair_pod(), ["al"]))
    assert status == 503 and "past the 0.2s call deadline" in body["error"]
    status, _ = await post(srv, "prioritize", args(pair_pod(), ["al"]))
    assert status == 200  # alone, it is judged in time
    _, metrics = await _get(srv, "/metrics")
    assert _count(metrics, "prioritize", "overloaded") == 1


async def test_a_call_past_its_deadline_is_answered_not_judged_and_counted(
    served: tuple[web.Application, TestServer],
) -> None:
    app, srv = served
    pod = pair_pod(annotations={"testbed.dra.io/require-alignment": "pcie-root"})
    async with app[handlers.GATE].admitted() as busy, busy.judging():
        # Another call holds the turn past both calls' 0.2 s deadline.
        scoring = asyncio.create_task(post(srv, "prioritize", args(pair_pod(), ["un", "al"])))
        filtering = asyncio.create_task(post(srv, "filter", args(pod, ["un", "al"])))
        await asyncio.sleep(0.5)
    (status, scores), (fstatus, filtered) = await asyncio.gather(scoring, filtering)
    # Not judged: no preference (a judged call scores "al" above "un"), so no node listed.
    assert status == 200 and scores == []
    # Not judged: every node passes (a judged call fails "un", which is not aligned).
    assert fstatus == 200 and filtered["NodeNames"] == ["un", "al"]
    assert not filtered["FailedNodes"]
    _, metrics = await _get(srv, "/metrics")
    assert (
        _count(metrics, "prioritize", "deadline") == 1
        and _count(metrics, "filter", "deadline") == 1
    )
    status, filtered = await post(srv, "filter", args(pod, ["un", "al"]))
    assert status == 200 and filtered["NodeNames"] == ["al"]  # judged again once in time


async def test_more_node_names_than_a_scheduler_call_can_hold_are_refused(
    served: tuple[web.Application, TestServer],
) -> None:
    _, srv = served
    status, body = await post(srv, "prioritize", args(pair_pod(), ["a", "b", "c", "d"]))
    assert status == 400 and "4 candidate nodes, over the limit of 3" in body["error"]


def test_the_default_limits_hold_kube_schedulers_largest_call() -> None:
    """5,000 names of the longest legal length and a pod at etcd's 1.5 MiB object limit fit
    the default body limit; the default cap on names is that call's."""
    settings = Settings()
    names = ["n" * 253] * settings.max_node_names
    body: dict[str, Any] = {"Pod": {"metadata": {"annotations": {"x": "y" * (3 << 19)}}}}
    body["NodeNames"] = names
    assert len(json.dumps(body)) <= settings.max_body_bytes
    assert settings.max_node_names == 5000


async def test_debug_is_off_unless_asked_and_admin_routes_can_move_apart(tmp_path: Path) -> None:
    app = app_mod.build(Settings(), registry=CollectorRegistry())
    async with served_extender.served(app, _cluster_file(tmp_path)) as srv:
        assert (await _get(srv, "/debug/decisions"))[0] == 404
        assert (await _get(srv, "/metrics"))[0] == 200

    main = app_mod.build(Settings(debug=True), registry=CollectorRegistry(), separate_admin=True)
    async with (
        served_extender.served(main, _cluster_file(tmp_path)) as srv,
        served_extender.served(app_mod.admin(main)) as admin,
    ):
        for path in ("/metrics", "/debug/decisions", "/debug/nodes/al/free"):
            assert (await _get(srv, path))[0] == 404, path
            assert (await _get(admin, path))[0] == 200, path
        assert (await _get(srv, "/readyz"))[0] == 200
        status, _ = await post(srv, "prioritize", args(pair_pod(), ["al"]))
        assert status == 200
        _, metrics = await _get(admin, "/metrics")
        assert _count(metrics, "prioritize", "ok") == 1  # the main app's calls, counted


def test_a_selector_over_kubernetes_length_limit_is_not_judged() -> None:
    long = "device.driver == 'gpu.nvidia.com' && " + " && ".join(["true"] * 3000)
    assert len(long) > expressions.MAX_EXPRESSION_BYTES
    sel = expressions.Evaluator().compile_selector(long)
    assert not sel.judged and "bytes" in str(sel.unsupported)


def test_a_selector_whose_evaluation_overran_the_limit_is_not_judged_from_then_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expression = "'a' + 'b' == 'ab' && device.driver != 'lp'"  # no comprehension: inline
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector(expression)
    assert sel.judged
    monkeypatch.setattr(expressions, "MAX_EVALUATION_SECONDS", 0.0)  # every evaluation overruns
    assert evaluator.evaluate(sel, GPU) is expressions.Outcome.MATCH  # this one still counts
    again = evaluator.compile_selector(expression)
    assert not again.judged and "cost" in str(again.unsupported)
    assert evaluator.selectors_of([{"cel": {"expression": expression}}]) == (
        (),
        "unsupported_function",
    )


_L = "[" + ",".join(str(i) for i in range(25)) + "]"
COSTLY = f"{_L}.all(a, {_L}.all(b, {_L}.all(c, {_L}.all(d, {_L}.all(e, a + b + c + d + e >= 0)))))"
"""5-deep `.all` over a 25-element list: seconds of CPU if evaluated to the end."""


def test_a_costly_comprehension_is_abandoned_at_the_deadline_and_not_judged_from_then_on() -> None:
    evaluator = expressions.Evaluator()
    evaluator.sandbox.start(spare=True)  # as `extender serve` does
    try:
        cheap = evaluator.compile_selector("[1, 2, 3].exists(x, x == 3)")
        assert cheap.sandboxed and evaluator.evaluate(cheap, GPU) is expressions.Outcome.MATCH
        costly = evaluator.compile_selector(COSTLY)
        assert costly.sandboxed and costly.judged
        # Abandoned (a runtime error for a claim already parsed), without waiting it out.
        assert evaluator.evaluate(costly, GPU) is expressions.Outcome.ERROR
        again = evaluator.compile_selector(COSTLY)
        assert not again.judged and "abandoned" in str(again.unsupported)
        # The replaced worker evaluates the next expression.
        other = evaluator.compile_selector("[4, 5].all(x, x > 3) && device.driver == 'lp'")
        assert evaluator.evaluate(other, GPU) is expressions.Outcome.NO_MATCH
    finally:
        evaluator.close()


def test_after_several_abandoned_expressions_new_ones_are_not_tried_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many distinct costly expressions cost at most MAX_ABANDONED deadlines per window: the
    next one never evaluated in time is not tried (an error this time, not remembered), while
    one evaluated in time before still is."""
    monkeypatch.setattr(expressions, "MAX_ABANDONED", 1)
    evaluator = expressions.Evaluator()
    evaluator.sandbox.start(spare=True)
    try:
        proven = evaluator.compile_selector("[1].all(x, x == 1)")
        assert evaluator.evaluate(proven, GPU) is expressions.Outcome.MATCH
        assert evaluator.evaluate(evaluator.compile_selector(COSTLY), GPU) is (
            expressions.Outcome.ERROR
        )
        second = evaluator.compile_selector(COSTLY + " && true")
        assert evaluator.evaluate(second, GPU) is expressions.Outcome.ERROR
        assert evaluator.compile_selector(COSTLY + " && true").judged  # not marked costly
        fresh = evaluator.compile_selector("[1].all(x, x == 1) && device.driver != 'lp'")
        assert evaluator.evaluate(fresh, GPU) is expressions.Outcome.ERROR  # not tried...
        assert evaluator.evaluate(proven, GPU) is expressions.Outcome.MATCH
        monkeypatch.setattr(expressions, "ABANDONED_WINDOW_SECONDS", 0.0)
        assert evaluator.evaluate(fresh, GPU) is expressions.Outcome.MATCH  # ...until later
    finally:
        evaluator.close()


async def test_a_gates_estimate_decays_so_one_costly_call_cannot_latch_it() -> None:
    now = [0.0]
    gate = limits.Gate(max_inflight=64, deadline_seconds=2.5, clock=lambda: now[0])

    async def judged(seconds: float) -> None:
        async with gate.admitted() as turn, turn.judging():
            now[0] += seconds

    await judged(13.7)
    assert gate.judge_seconds == pytest.approx(0.2 * 13.7)
    assert gate.refusing() is None

    async def two_at_once() -> bool:
        async with gate.admitted():
            try:
                async with gate.admitted():
                    return True
            except limits.Overloaded:
                return False

    assert not await two_at_once()  # refused right after the costly call...
    assert gate.refusing() is not None and "past the 2.5s call deadline" in str(gate.refusing())
    now[0] += 3 * limits.Gate.HALF_LIFE_SECONDS
    assert await two_at_once()  # ...admitted once the estimate has decayed
    assert gate.refusing() is None  # and /readyz says ready again


def test_a_rate_allows_its_burst_then_its_rate() -> None:
    now = [0.0]
    rate = limits.Rate(10.0, burst=3, clock=lambda: now[0])
    assert [rate.allow() for _ in range(4)] == [True, True, True, False]
    now[0] += 0.1  # one more token
    assert [rate.allow() for _ in range(2)] == [True, False]
    now[0] += 60.0  # never more than the burst saved up
    assert sum(rate.allow() for _ in range(10)) == 3
