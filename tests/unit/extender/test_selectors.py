"""DeviceClass selectors over the CEL evaluator: judged, not judged, and per-device verdicts."""

from __future__ import annotations

from extender import expressions, selectors, topology
from extender.expressions import Outcome
from tests.support import extender_objects as objects


def _device(driver: str, **attrs: dict[str, object]) -> topology.Device:
    return topology.device_of(driver, {"name": "d", "attributes": attrs})


def test_the_standard_classes_are_judged_and_name_their_driver() -> None:
    parsed = {
        c["metadata"]["name"]: selectors.parse_device_class(c, expressions.Evaluator())
        for c in objects.classes()
    }
    assert all(p.not_judged is None for p in parsed.values())
    assert {p.driver for p in parsed.values()} == {"gpu.nvidia.com", "dra.net"}


def test_rdma_class_matches_rdma_nics_only() -> None:
    klass = selectors.parse_device_class(
        objects.device_class("rdma", objects.RDMA_EXPR), expressions.Evaluator()
    )
    assert klass.matches(_device("dra.net", rdma={"bool": True})) is Outcome.MATCH
    assert klass.matches(_device("dra.net", rdma={"bool": False})) is Outcome.NO_MATCH
    assert klass.matches(_device("gpu.nvidia.com")) is Outcome.NO_MATCH
    # kube-scheduler: a NIC without the attribute is a runtime error ("no such key").
    assert klass.matches(_device("dra.net")) is Outcome.ERROR


def test_a_class_with_a_function_outside_the_environment_is_not_judged() -> None:
    obj = objects.device_class("x", "device.driver.lowerAscii() == 'dra.net'")
    assert (
        selectors.parse_device_class(obj, expressions.Evaluator()).not_judged
        == "unsupported_function"
    )


def test_a_class_that_does_not_compile_is_marked_so() -> None:
    obj = objects.device_class("x", "device.driver ==")
    assert (
        selectors.parse_device_class(obj, expressions.Evaluator()).not_judged == "does_not_compile"
    )


def test_a_class_without_a_driver_literal_is_judged_but_has_no_role() -> None:
    obj = objects.device_class("any-rdma", "device.attributes['dra.net'].rdma == true")
    klass = selectors.parse_device_class(obj, expressions.Evaluator())
    assert klass.not_judged is None and klass.driver is None
    assert klass.matches(_device("gpu.nvidia.com")) is Outcome.ERROR  # an empty domain map


def test_unqualified_attributes_live_in_the_drivers_domain() -> None:
    dev = {"attributes": {"type": {"string": "gpu"}, "dra.net/x": {"int": 3}, "bad": "raw"}}
    assert topology.device_attributes("gpu.nvidia.com", dev) == {
        "gpu.nvidia.com/type": "gpu",
        "dra.net/x": 3,
    }
