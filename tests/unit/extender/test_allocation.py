"""DRA's request semantics on one node: count, All, firstAvailable, admin access, constraints,
request selectors, shared counters and consumable capacity."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from extender import allocation, selectors, topology
from extender.topology import DeviceKey
from tests.support import extender_objects as objects

CLASSES = {
    c["metadata"]["name"]: selectors.parse_device_class(c)
    for c in [
        *objects.classes(),
        objects.device_class("mig", "device.driver == 'gpu.nvidia.com'"),
    ]
}


def gpus(n: int, roots: int = 2) -> dict[DeviceKey, topology.Device]:
    out = {}
    for i in range(n):
        raw = {
            "name": f"gpu-{i}",
            "attributes": {
                "index": {"int": i},
                "resource.kubernetes.io/pcieRoot": {"string": f"root-{i % roots}"},
                "productName": {"string": "H100" if i % 2 == 0 else "A100"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        out[("gpu.nvidia.com", "pool", f"gpu-{i}")] = topology.device_of("gpu.nvidia.com", raw)
    return out


def judge(
    requests: list[dict[str, Any]],
    devices: dict[DeviceKey, topology.Device],
    used: set[str] = frozenset(),  # type: ignore[assignment]
    constraints: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> allocation.Verdict:
    spec = {"devices": {"requests": requests, "constraints": constraints or []}}
    pod = allocation.parse_claims([spec], CLASSES)
    return allocation.judge(pod, devices, in_use=lambda k: k[2] in used, classes=CLASSES, **kw)


def exactly(name: str, count: int = 1, **kw: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count, **kw}}


def test_count_fits_free_devices_only() -> None:
    assert judge([exactly("a", 4)], gpus(4)).fits is True
    assert judge([exactly("a", 4)], gpus(4), used={"gpu-0"}).fits is False
    assert judge([exactly("a", 2), exactly("b", 2)], gpus(4)).fits is True
    assert judge([exactly("a", 3), exactly("b", 2)], gpus(4)).fits is False


def test_request_selectors_narrow_the_class() -> None:
    h100 = [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'H100'"}}]
    assert judge([exactly("a", 2, selectors=h100)], gpus(4)).fits is True
    assert judge([exactly("a", 3, selectors=h100)], gpus(4)).fits is False
    big = [
        {
            "cel": {
                "expression": "device.capacity['gpu.nvidia.com'].memory"
                ".isGreaterThan(quantity('90Gi'))"
            }
        }
    ]
    assert judge([exactly("a", 1, selectors=big)], gpus(4)).fits is False


def test_all_mode_wants_every_matching_device_free() -> None:
    req = [{"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]
    assert judge(req, gpus(4)).fits is True
    assert judge(req, gpus(4), used={"gpu-3"}).fits is False


def test_first_available_takes_the_first_alternative_that_fits() -> None:
    req = {
        "name": "a",
        "firstAvailable": [
            {"name": "eight", "deviceClassName": "gpu.nvidia.com", "count": 8},
            {"name": "four", "deviceClassName": "gpu.nvidia.com", "count": 4},
        ],
    }
    assert judge([req], gpus(4)).fits is True
    assert judge([req], gpus(4), used={"gpu-0"}).fits is False


def test_admin_access_may_use_devices_in_use() -> None:
    assert judge([exactly("a", 4, adminAccess=True)], gpus(4), used={"gpu-0", "gpu-1"}).fits
    assert judge([exactly("a", 5, adminAccess=True)], gpus(4)).fits is False


def test_match_attribute_needs_enough_devices_on_one_root() -> None:
    same_root = [{"requests": ["a"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert judge([exactly("a", 2)], gpus(4), constraints=same_root).fits is True
    assert judge([exactly("a", 3)], gpus(4), constraints=same_root).fits is False
    assert (
        judge([exactly("a", 2)], gpus(4), used={"gpu-0", "gpu-1"}, constraints=same_root).fits
        is False
    )


def test_distinct_attribute_as_the_allocator_checks_it() -> None:
    # The allocator keeps one value per request (its last device's): devices of one request
    # only need to differ from the one before, and from the other requests' values.
    distinct = [{"requests": ["a"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert judge([exactly("a", 2)], gpus(4), constraints=distinct).fits is True
    assert judge([exactly("a", 3)], gpus(4), constraints=distinct).fits is True
    assert judge([exactly("a", 2)], gpus(4, roots=1), constraints=distinct).fits is False
    both = [{"requests": ["a", "b"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert judge([exactly("a"), exactly("b")], gpus(4), constraints=both).fits is True
    assert judge([exactly("a"), exactly("b")], gpus(4, roots=1), constraints=both).fits is False


def test_all_mode_with_no_matching_device_does_not_fit() -> None:
    big = [
        {
            "cel": {
                "expression": "device.capacity['gpu.nvidia.com'].memory"
                ".isGreaterThan(quantity('1Ti'))"
            }
        }
    ]
    req = [
        {
            "name": "a",
            "exactly": {
                "deviceClassName": "gpu.nvidia.com",
                "allocationMode": "All",
                "selectors": big,
            },
        }
    ]
    assert judge(req, gpus(4)).fits is False


def test_partitions_share_their_counters() -> None:
    devices = {}
    for i in range(7):
        raw = {
            "name": f"mig-{i}",
            "attributes": {"profile": {"string": "1g.10gb"}},
            "consumesCounters": [
                {"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}
            ],
        }
        devices[("gpu.nvidia.com", "pool", f"mig-{i}")] = topology.device_of("gpu.nvidia.com", raw)
    counters = {("gpu.nvidia.com", "pool", "gpu-0"): {"memory": Fraction(40 * 2**30)}}
    assert judge([exactly("a", 4)], devices, counters=counters).fits is True
    assert judge([exactly("a", 5)], devices, counters=counters).fits is False
    held = {(("gpu.nvidia.com", "pool", "gpu-0"), "memory"): Fraction(30 * 2**30)}
    assert judge([exactly("a", 1)], devices, counters=counters, counters_in_use=held).fits
    assert not judge([exactly("a", 2)], devices, counters=counters, counters_in_use=held).fits


def test_shared_devices_take_several_requests_within_their_capacity() -> None:
    raw = {
        "name": "nic",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "100G"}},
    }
    devices = {("gpu.nvidia.com", "pool", "nic"): topology.device_of("gpu.nvidia.com", raw)}
    want = {"requests": {"bandwidth": "10G"}}
    assert judge([exactly("a", capacity=want), exactly("b", capacity=want)], devices).fits
    assert not judge([exactly("a", capacity={"requests": {"bandwidth": "200G"}})], devices).fits
    half = {"requests": {"bandwidth": "60G"}}
    assert not judge([exactly("a", capacity=half), exactly("b", capacity=half)], devices).fits
    assert not judge([exactly("a"), exactly("b", capacity=want)], devices).fits  # a takes all


def test_unknown_classes_and_runtime_errors() -> None:
    unknown = [{"name": "a", "exactly": {"deviceClassName": "nope"}}]
    verdict = judge(unknown, gpus(2))
    assert verdict.fits is None and verdict.unjudged == "unknown_class"
    missing = [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].nope == 1"}}]
    verdict = judge([exactly("a", 1, selectors=missing)], gpus(2))
    assert verdict.fits is False and "CEL runtime error" in verdict.reason
