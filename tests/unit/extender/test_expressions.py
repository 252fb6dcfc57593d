"""DRA's CEL environment: quantities, semver, attribute maps, and kube-scheduler's error rule."""

from __future__ import annotations

from fractions import Fraction

import pytest

from extender import cel_functions, expressions, topology
from extender.expressions import Outcome
from tests.unit.extender.helpers import GPU


def run(expression: str, device: topology.Device = GPU) -> Outcome:
    evaluator = expressions.Evaluator()
    return evaluator.evaluate(evaluator.compile_selector(expression), device)


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        ("device.driver == 'gpu.nvidia.com'", Outcome.MATCH),
        (
            "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')",
            Outcome.MATCH,
        ),
        ("device.attributes['gpu.nvidia.com'].index in [0, 1]", Outcome.MATCH),
        ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", Outcome.MATCH),
        (
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
            Outcome.MATCH,
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))",
            Outcome.NO_MATCH,
        ),
        ("device.capacity['gpu.nvidia.com'].memory == quantity('85899345920')", Outcome.MATCH),
        ("device.capacity['gpu.nvidia.com'].memory.asInteger() == 85899345920", Outcome.MATCH),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))",
            Outcome.MATCH,
        ),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion.isLessThan(semver('550.54.15-rc.1'))",
            Outcome.NO_MATCH,
        ),
        ("device.attributes['gpu.nvidia.com'].driverVersion.major() == 550", Outcome.MATCH),
        ("semver('v1.2', true) == semver('1.2.0')", Outcome.MATCH),
        ("!device.allowMultipleAllocations", Outcome.MATCH),
        # A domain the device lacks is an empty map; a name it lacks is an error.
        ("!has(device.attributes['dra.net'].rdma)", Outcome.MATCH),
        ("device.attributes['dra.net'].rdma == true", Outcome.ERROR),
        ("device.attributes['gpu.nvidia.com'].missing == 1", Outcome.ERROR),
        (
            "device.driver == 'x' && device.attributes['gpu.nvidia.com'].missing == 1",
            Outcome.NO_MATCH,
        ),
        ("device.attributes['gpu.nvidia.com'].missing == 1 || true", Outcome.MATCH),
        ("quantity('nonsense') == quantity('1')", Outcome.ERROR),
        ("1", Outcome.ERROR),  # not a bool
    ],
)
def test_dra_environment(expression: str, outcome: Outcome) -> None:
    assert run(expression) is outcome


@pytest.mark.parametrize(
    ("text", "value"),
    [("80Gi", 80 * 2**30), ("500m", Fraction(1, 2)), ("1e3", 1000), ("1.5k", 1500), ("2", 2)],
)
def test_quantities_parse_as_kubernetes_does(text: str, value: Fraction) -> None:
    assert cel_functions.parse_quantity(text) == value


def test_results_are_cached_per_value_read_not_per_device() -> None:
    expr = "device.attributes['gpu.nvidia.com'].index == 7 && device.driver == 'gpu.nvidia.com'"
    evaluator = expressions.Evaluator()
    sel = evaluator.compile_selector(expr)
    assert sel.refs == (("attributes", "gpu.nvidia.com", "index"),)
    assert evaluator.compile_selector(expr) is sel  # compiled once


def test_an_expression_that_walks_the_device_is_not_projected() -> None:
    sel = expressions.Evaluator().compile_selector(
        "device.attributes.exists(d, d == 'gpu.nvidia.com')"
    )
    assert sel.judged and sel.refs is None
    assert run(sel.expression) is Outcome.MATCH


def test_unsupported_functions_and_syntax_errors_are_told_apart() -> None:
    evaluator = expressions.Evaluator()
    assert evaluator.compile_selector("device.driver.lowerAscii() == 'x'").unsupported
    broken = evaluator.compile_selector("device.driver ==")
    assert broken.error and not broken.judged
    assert evaluator.compile_selector("nothing == 1").error  # undeclared reference


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        # `in` and has() see only the domains the device has, even where the expression also
        # indexes the missing domain (which reads as an empty map), as in kube-scheduler.
        ("'dra.net' in device.attributes", Outcome.NO_MATCH),
        (
            "'dra.net' in device.attributes && device.attributes['dra.net'].rdma == true",
            Outcome.NO_MATCH,
        ),
        ("!('dra.net' in device.attributes) || device.attributes['dra.net'].rdma", Outcome.MATCH),
        ("'dra.net' in device.capacity || size(device.capacity['dra.net']) == 0", Outcome.MATCH),
        ("size(device.attributes['dra.net']) == 0", Outcome.MATCH),
        ("'gpu.nvidia.com' in device.attributes", Outcome.MATCH),
    ],
)
def test_membership_sees_only_the_domains_the_device_has(expression: str, outcome: Outcome) -> None:
    assert run(expression) is outcome
