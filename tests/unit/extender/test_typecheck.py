"""The type check refuses what Kubernetes' CEL compiler refuses for a DRA selector, and passes
what it accepts (the expressions of real DeviceClasses and claims)."""

from __future__ import annotations

import pytest

from extender import expressions, selectors, typecheck
from tests.support import extender_objects as objects


@pytest.mark.parametrize(
    "expression",
    [
        "device.driver == 'gpu.nvidia.com'",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        "device.attributes['dra.net'].rdma",  # an attribute value: the unknown type
        "device.attributes['gpu.nvidia.com'].index in [0, 1]",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",
        "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))",
        "device.attributes['gpu.nvidia.com'].driverVersion.major() >= 550",
        "'gpu.nvidia.com' in device.attributes",
        "has(device.attributes['gpu.nvidia.com'].model)",
        "device.allowMultipleAllocations",
        "device.attributes['d'].n > 2.5 || device.attributes['d'].n < 1u",
        "[1, 2].all(x, x > 0) && {'a': 1}.exists(k, k == 'a')",
        "device.driver.startsWith('gpu') ? true : device.attributes['d'].flag",
        "size(device.attributes['d'].name + 'x') > 3",
        "!(device.driver in ['a', 'b'])",
        "device.attributes['d'].count % 2 == 0",
        "b'abc' == b'abc' && r'a\\b' != 'x' && 0x1F == 31",
    ],
)
def test_accepted(expression: str) -> None:
    assert typecheck.check(expression) is None


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("device.model == 'H100'", "undefined field 'model'"),
        ("has(device.name)", "undefined field 'name'"),
        ("device.driver", "not string"),
        ("device.capacity['gpu.nvidia.com'].memory", "not quantity"),
        ("1 + 2", "not int"),
        ("device.driver == 1", "'_==_'"),
        ("device.driver == true || false", "'_==_'"),
        ("'a' + 1 == 'a1'", "'_+_'"),
        ("!device.driver", "'!_'"),
        ("device.driver && true", "'_&&_'"),
        ("device.capacity['d'].memory.value > 1", "field selection"),
        ("device.driver[0] == 'g'", "'_[_]'"),
        ("semver('1.0.0')", "not semver"),
        ("[device.driver]", "not list"),
    ],
)
def test_refused(expression: str, says: str) -> None:
    reason = typecheck.check(expression)
    assert reason is not None and says in reason, reason


def test_syntax_it_does_not_follow_is_left_unchecked() -> None:
    assert typecheck.check("google.protobuf.Int64Value{value: 1} == 1") is None


def test_a_class_that_does_not_check_is_not_judged() -> None:
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector("device.model == 'H100'")
    assert sel.error is not None and "undefined field" in sel.error
    parsed = selectors.parse_device_class(
        objects.device_class("c", "device.model == 'H100'"), evaluator
    )
    assert parsed.not_judged == "does_not_compile"


def test_a_derived_attribute_may_give_a_scalar_or_a_list_but_nothing_else() -> None:
    for ok in (
        "device.attributes['dra.net'].numaNode",
        "device.driver",
        "device.attributes['d'].n + 1",
        "semver('1.2.3')",
        "[1, 2]",
        "device.attributes['d'].n > 1",
    ):
        assert typecheck.check(ok, derived=True) is None, ok
    for bad in ("1.5", "device.capacity['d'].memory", "{'a': 1}", "b'x'"):
        refused = typecheck.check(bad, derived=True)
        assert refused is not None and "must evaluate to a primitive scalar" in refused, bad
    # As a selector, a scalar that is not a bool is refused.
    assert typecheck.check("device.driver") is not None
