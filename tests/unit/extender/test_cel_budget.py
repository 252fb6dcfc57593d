"""What bounds CEL's cost: expressions judged by what they compiled to (sandboxed or inline),
a too costly one never evaluated again, a time budget per call, regular expressions this
interpreter cannot compile as Kubernetes does left not judged."""

from __future__ import annotations

import time
from pathlib import Path

import aiohttp
import cel
import pytest
import yaml
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import cel_functions, costs, expressions, topology
from extender.config import Settings
from testbed import vocab
from tests.support import extender_objects as objects
from tests.support import served_extender
from tests.support.served_extender import args, post
from tests.unit.extender.helpers import GPU, NS, cluster_objects

_L = "[" + ",".join(str(i) for i in range(25)) + "]"
COSTLY = f"{_L}.all(a, {_L}.all(b, {_L}.all(c, {_L}.all(d, {_L}.all(e, a + b + c + d + e >= 0)))))"


def _unbounded(expression: str) -> str | None:
    program = cel.compile(expression)
    return costs.unbounded(expression, program.functions(), program.variables())


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("[1, 2].all( // a comment\n device, device > 0)", "comprehension"),
        ("[1].map(device, device * 2).size() > 0", "comprehension"),
        ("[1].filter(device, device > 0).size() > 0", "comprehension"),
        ("[1].exists_one(x, x > 0)", "comprehension"),
        ("'a'.matches('b') && device.driver == 'x'", "regular expression"),
        ("matches(device.driver, '^gpu')", "regular expression"),
        ("device.driver == 'x' // [1].all(x, true)", None),
        ('"[1].all(x, x)" == device.driver', None),
        ("device.attributes['gpu.nvidia.com'].index > 2 ? true : false", None),
    ],
)
def test_what_runs_in_the_sandbox_is_judged_on_the_compiled_program(
    expression: str, why: str | None
) -> None:
    assert _unbounded(expression) == why


def test_a_comprehension_hidden_by_a_comment_runs_in_the_sandbox() -> None:
    evaluator = expressions.Evaluator()
    try:
        sel = evaluator.compile_selector(f"{_L}.all( // x\n device, device >= 0)")
        assert sel.judged and sel.sandboxed
    finally:
        evaluator.close()


def _gpu(uuid: str) -> topology.Device:
    return topology.device_of(
        vocab.GPU_DRIVER, {"name": uuid, "attributes": {"uuid": {"string": uuid}}}
    )


_TAKING = "isSemver('1.0.0') && device.attributes['gpu.nvidia.com'].uuid != ''"
"""A trivial selector but for the time its call of `isSemver` is made to take."""


def _taking(monkeypatch: pytest.MonkeyPatch, *, on_cpu: bool) -> list[None]:
    """Each evaluation of `_TAKING` takes twice MAX_EVALUATION_SECONDS, spinning on the CPU or
    asleep (its thread not running); the list returned grows by one per evaluation."""
    calls: list[None] = []
    is_semver = cel_functions.FUNCTIONS["isSemver"]
    seconds = 2 * expressions.MAX_EVALUATION_SECONDS

    def slow(text: object) -> object:
        calls.append(None)
        if on_cpu:
            end = time.thread_time() + seconds
            while time.thread_time() < end:
                pass
        else:
            time.sleep(seconds)
        return is_semver(text)

    monkeypatch.setitem(cel_functions.FUNCTIONS, "isSemver", slow)
    return calls


def test_an_expression_found_too_costly_is_never_evaluated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within the call that found it too: keyed on a GPU's uuid, each GPU is a new evaluation
    (one /filter ran a 57 ms expression on every GPU of 500 nodes, 180 s)."""
    calls = _taking(monkeypatch, on_cpu=True)
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector(_TAKING)
    assert sel.judged and not sel.sandboxed
    assert evaluator.evaluate(sel, _gpu("a")) is expressions.Outcome.MATCH  # this one counts
    assert len(calls) == 2  # once more to confirm on the CPU clock
    assert evaluator.evaluate(sel, _gpu("b")) is expressions.Outcome.ERROR  # not evaluated
    assert len(calls) == 2
    assert not evaluator.compile_selector(_TAKING).judged


def test_a_selector_that_overran_only_while_its_thread_was_not_running_is_still_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A preempted process is not a costly expression: trivial selectors took 50-98 ms of
    wall time at load 15 on 2 cores, were found too costly and verdicts changed."""
    _taking(monkeypatch, on_cpu=False)  # as if preempted, in every evaluation
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector(_TAKING)
    with evaluator.spending(expressions.Budget(10.0)) as budget:
        assert evaluator.evaluate(sel, _gpu("a")) is expressions.Outcome.MATCH
        assert evaluator.evaluate(sel, _gpu("b")) is expressions.Outcome.MATCH  # evaluated
    assert evaluator.compile_selector(_TAKING).judged
    # The call waited for each evaluation and its confirmation: its budget paid for both.
    assert budget.spent[_TAKING] >= 8 * expressions.MAX_EVALUATION_SECONDS


def test_past_the_budget_an_evaluation_is_not_made_and_what_was_cached_still_is() -> None:
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector("device.attributes['gpu.nvidia.com'].uuid != ''")
    assert evaluator.evaluate(sel, _gpu("a")) is expressions.Outcome.MATCH
    with evaluator.spending(expressions.Budget(0.0)):
        assert evaluator.evaluate(sel, _gpu("a")) is expressions.Outcome.MATCH  # cached
        with pytest.raises(expressions.OverBudget, match="CEL budget"):
            evaluator.evaluate(sel, _gpu("b"))
    assert evaluator.evaluate(sel, _gpu("b")) is expressions.Outcome.MATCH  # no budget: made


async def test_a_sandboxed_evaluation_waits_no_longer_than_the_budget_left() -> None:
    """Cut short by the call's budget, the evaluation is over budget, and its expression is
    not marked too costly (the call ran out, not it: a deadline's wait would have)."""
    evaluator = expressions.Evaluator()
    await evaluator.sandbox.warm()
    try:
        sel = evaluator.compile_selector(COSTLY)
        with (
            evaluator.spending(expressions.Budget(0.05)) as budget,
            pytest.raises(expressions.OverBudget) as e,
        ):
            evaluator.evaluate(sel, GPU)
        assert budget.costliest(1)[0][0] == COSTLY and COSTLY[:50] in str(e.value)
        assert evaluator.compile_selector(COSTLY).judged
    finally:
        evaluator.close()


async def test_a_pattern_too_large_for_this_interpreter_is_not_judged_rather_than_an_error() -> (
    None
):
    """`\\w{250}` compiles in Go's RE2 (its `\\w` is ASCII), not in the interpreter here (its
    `\\w` is Unicode): not judged, never a runtime error that would reject every node."""
    expression = "device.driver == 'gpu.nvidia.com' && 'a'.matches('\\\\w{250}|a')"
    evaluator = expressions.Evaluator()
    evaluator.sandbox.deadline = 5.0  # the pattern's compiling, ~80 ms, on a loaded machine
    await evaluator.sandbox.warm()
    try:
        sel = evaluator.compile_selector(expression)
        assert sel.judged and sel.sandboxed
        with pytest.raises(expressions.NotJudged, match="regular expression"):
            evaluator.evaluate(sel, GPU)
        with pytest.raises(expressions.NotJudged):  # at once from then on
            evaluator.evaluate(sel, _gpu("b"))
        assert not evaluator.compile_selector(expression).judged
    finally:
        evaluator.close()


async def test_a_call_past_its_budget_is_answered_not_judged_and_counted(
    tmp_path: Path,
) -> None:
    """A pod whose selector reads each GPU's PCI bus id (a new evaluation per GPU), with a
    budget that pays one evaluation: every node passes, the call is counted."""
    selector = f"device.attributes['{vocab.ATTR_PCI_BUS_ID}'].size() > 0"
    request = {"deviceClassName": vocab.CLASS_GPU, "count": 1}
    request["selectors"] = [{"cel": {"expression": selector}}]
    spec = objects.claim_spec([{"name": "gpu", "exactly": request}])
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*cluster_objects(), objects.template(NS, "bus", spec)]))
    app = app_mod.build(Settings(cel_budget_seconds=1e-9), registry=CollectorRegistry())
    pod = objects.pod(
        NS, "p", templates=["bus"], annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "numa"}
    )
    async with served_extender.served(app, path) as srv:
        status, body = await post(srv, "filter", args(pod, ["al", "un"]))
        assert status == 200 and body["NodeNames"] == ["al", "un"], body
        async with aiohttp.ClientSession() as s, s.get(srv.make_url("/metrics")) as r:
            text = await r.text()
    assert 'extender_requests_total{outcome="cel_budget",verb="filter"} 1.0' in text
