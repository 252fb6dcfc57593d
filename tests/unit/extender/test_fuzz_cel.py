"""Generated CEL in DeviceClasses and claims: nothing raises, every verdict is a verdict.

A CI-sized run; tests/fuzz/cel.py sends >= 20,000 expressions through the served app."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from extender import expressions
from extender.core import Core
from tests.support import extender_objects as objects
from tests.support.cel_strategies import expressions_any
from tests.unit.extender.helpers import core_of

NS = "fz"
CORE: Core = core_of(
    [
        *objects.dgx("n0"),
        *objects.unaligned("n1"),
        objects.template(NS, "fuzzed", objects.claim_spec([objects.request("r", "fuzz", 2)])),
    ]
)


def _claim_with(expression: str) -> dict[str, Any]:
    req = objects.request("own", "gpu.nvidia.com", 1)
    req["exactly"]["selectors"] = [{"cel": {"expression": expression}}]
    return objects.claim(NS, "own", objects.claim_spec([req]))


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(expressions_any)
def test_any_expression_compiles_or_is_refused_and_evaluates_to_a_verdict(expression: str) -> None:
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector(expression)
    if sel.judged:
        for dev in CORE.index.nodes["n0"].devices.values():
            assert isinstance(evaluator.evaluate(sel, dev), expressions.Outcome)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(expressions_any)
def test_the_core_answers_any_class_or_claim_selector(expression: str) -> None:
    CORE.index.upsert("DeviceClass", objects.device_class("fuzz", expression))
    CORE.index.upsert("ResourceClaim", _claim_with(expression))
    names = ["n0", "n1", "ghost"]
    for pod in (
        objects.pod(NS, "a", templates=["fuzzed"]),
        objects.pod(
            NS, "b", claims=["own"], annotations={"testbed.dra.io/require-alignment": "numa"}
        ),
    ):
        assert len(CORE.prioritize(pod, names)) == 3
        out = CORE.filter(pod, names)
        assert sorted([*out.passed, *out.failed, *out.unresolvable]) == sorted(names)
        verdicts = CORE.verdicts(CORE.demand(pod), names)
        assert all(v.fits in (True, False, None) for v in verdicts.values())
