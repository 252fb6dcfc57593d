"""The CEL subset: what we read, and what we refuse to judge."""

from __future__ import annotations

import pytest

from extender import selectors, topology
from tests.unit.extender import objects


def test_driver_equality_is_understood() -> None:
    m = selectors.parse_expression("device.driver == 'gpu.nvidia.com'")
    assert m == selectors.Matcher(driver="gpu.nvidia.com")


def test_rdma_class_is_understood() -> None:
    m = selectors.parse_expression(objects.RDMA_EXPR)
    assert m == selectors.Matcher(driver="dra.net", attributes=(("dra.net/rdma", True),))
    assert m.matches("dra.net", {"dra.net/rdma": True})
    assert not m.matches("dra.net", {"dra.net/rdma": False})
    assert not m.matches("dra.net", {})


@pytest.mark.parametrize(
    ("expr", "attr"),
    [
        ('device.attributes["gpu.nvidia.com"].type == "gpu"', ("gpu.nvidia.com/type", "gpu")),
        ("device.attributes['dra.net'].rdma", ("dra.net/rdma", True)),
        ("device.attributes['dra.net'].mtu == 9000", ("dra.net/mtu", 9000)),
    ],
)
def test_attribute_terms(expr: str, attr: tuple[str, object]) -> None:
    m = selectors.parse_expression(f"device.driver == 'x' && {expr}")
    assert m is not None and m.attributes == (attr,)


@pytest.mark.parametrize(
    "expr",
    [
        "device.driver == 'a' || device.driver == 'b'",
        "!device.attributes['dra.net'].virtual",
        "device.driver != 'a'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.driver.startsWith('gpu')",
        "device.driver == 'a' && device.driver == 'b'",
        "",
    ],
)
def test_anything_else_is_not_judged(expr: str) -> None:
    assert selectors.parse_expression(expr) is None


def test_class_without_driver_is_not_judged() -> None:
    obj = objects.device_class("any-rdma", "device.attributes['dra.net'].rdma == true")
    assert selectors.parse_device_class(obj) is None


def test_unqualified_attributes_live_in_the_drivers_domain() -> None:
    dev = {"attributes": {"type": {"string": "gpu"}, "dra.net/x": {"int": 3}, "bad": "raw"}}
    assert topology.device_attributes("gpu.nvidia.com", dev) == {
        "gpu.nvidia.com/type": "gpu",
        "dra.net/x": 3,
    }
