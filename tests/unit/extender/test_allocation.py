"""DRA's request semantics on one node: count, All, firstAvailable, admin access, constraints,
request selectors, shared counters and consumable capacity."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from extender import allocation, claims, consumable, expressions, selectors, topology
from extender.cache.index import Index
from extender.config import Settings
from extender.topology import DeviceKey
from tests.support import extender_objects as objects

EVALUATOR = expressions.Evaluator()
CLASSES = {
    c["metadata"]["name"]: selectors.parse_device_class(c, EVALUATOR)
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
    pod = claims.parse_claims([spec], CLASSES, EVALUATOR)
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
    # Up to 1.36 the allocator keeps one value per request (its last device's): devices of
    # one request only need to differ from the one before, and from the other requests'.
    distinct = [{"requests": ["a"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}]
    old = {"distinct_all": False}
    assert judge([exactly("a", 2)], gpus(4), constraints=distinct, **old).fits is True
    assert judge([exactly("a", 3)], gpus(4), constraints=distinct, **old).fits is True
    assert judge([exactly("a", 2)], gpus(4, roots=1), constraints=distinct, **old).fits is False
    both = [{"requests": ["a", "b"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert judge([exactly("a"), exactly("b")], gpus(4), constraints=both, **old).fits is True
    assert (
        judge([exactly("a"), exactly("b")], gpus(4, roots=1), constraints=both, **old).fits is False
    )
    # From 1.37 every device differs from all values taken (gpus(4): two PCIe roots).
    assert judge([exactly("a", 2)], gpus(4), constraints=distinct).fits is True
    assert judge([exactly("a", 3)], gpus(4), constraints=distinct).fits is False
    assert judge([exactly("a"), exactly("b")], gpus(4), constraints=both).fits is True
    assert judge([exactly("a", 2), exactly("b")], gpus(4), constraints=both).fits is False


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


def shared_gpu(policy: dict[str, Any] | None) -> dict[DeviceKey, topology.Device]:
    memory: dict[str, Any] = {"value": "80Gi"}
    if policy is not None:
        memory["requestPolicy"] = policy
    raw = {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": memory}}
    return {("gpu.nvidia.com", "pool", "gpu-0"): topology.device_of("gpu.nvidia.com", raw)}


def test_request_policies_round_what_a_request_consumes() -> None:
    G = Fraction(2**30)
    ranged = consumable.Policy(default=8 * G, min=4 * G, step=4 * G, ranged=True)
    assert consumable.consumed_capacity(None, 80 * G, ranged) == 8 * G  # the default
    assert consumable.consumed_capacity(None, 80 * G, None) == 80 * G  # no policy: all
    assert consumable.consumed_capacity(1 * G, 80 * G, ranged) == 4 * G  # up to min
    assert consumable.consumed_capacity(9 * G, 80 * G, ranged) == 12 * G  # up to a step
    assert consumable.consumed_capacity(12 * G, 80 * G, ranged) == 12 * G
    values = consumable.Policy(values=(10 * G, 20 * G, 40 * G))
    assert consumable.consumed_capacity(11 * G, 80 * G, values) == 20 * G
    assert consumable.consumed_capacity(50 * G, 80 * G, values) == 50 * G
    assert consumable.violates(50 * G, values)
    capped = consumable.Policy(min=4 * G, max=16 * G, ranged=True)
    assert consumable.violates(20 * G, capped) and not consumable.violates(16 * G, capped)


def test_a_fractional_range_steps_in_milli_units_only_with_the_gate() -> None:
    m = Fraction(1, 1000)
    tenths = consumable.Policy(
        default=100 * m, min=100 * m, max=Fraction(1), step=100 * m, ranged=True
    )
    one = Fraction(1)
    # DRAFractionalCapacityRange on: 250m rounds up to 300m; 300m is a valid step.
    assert consumable.consumed_capacity(250 * m, one, tenths, fractional=True) == 300 * m
    assert not consumable.violates(300 * m, tenths, fractional=True)
    assert consumable.violates(250 * m, tenths, fractional=True)
    # Off: Quantity.Value() rounds request, min and step up to 1 each: a whole unit.
    assert consumable.consumed_capacity(250 * m, one, tenths) == one
    assert consumable.consumed_capacity(None, one, tenths) == 100 * m  # the default either way


def test_shared_capacity_counts_other_claims_consumption_and_the_policy() -> None:
    policy = {"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}
    devices = shared_gpu(policy)
    key = next(iter(devices))
    name = "gpu.nvidia.com/memory"
    G = Fraction(2**30)

    def fits(*requests: dict[str, Any], held: Fraction = Fraction(0)) -> bool | None:
        return judge(list(requests), devices, capacity_in_use={(key, name): held}).fits

    want = {"requests": {"memory": "30Gi"}}  # rounds up to 32Gi
    assert fits(exactly("a", capacity=want), exactly("b", capacity=want))  # 64 of 80
    assert not fits(exactly("a", capacity=want), exactly("b", capacity=want), held=20 * G)
    assert fits(exactly("a", capacity=want), held=48 * G)  # 48 + 32 = 80
    assert not fits(exactly("a", capacity=want), held=49 * G)
    assert fits(exactly("a"), held=72 * G)  # no request: the 8Gi default
    assert not fits(exactly("a"), held=73 * G)
    capped = shared_gpu({"validRange": {"min": "4Gi", "max": "16Gi"}})
    big = {"requests": {"memory": "20Gi"}}
    assert not judge([exactly("a", capacity=big)], capped).fits  # over the policy's max


def test_the_index_tracks_consumed_capacity_of_allocated_claims() -> None:
    index = Index(Settings())
    claim = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "driver": "gpu.nvidia.com",
                            "pool": "pool",
                            "device": "gpu-0",
                            "request": "a",
                            "consumedCapacity": {"memory": "32Gi"},
                            "shareID": "x",
                        }
                    ]
                }
            }
        },
    }
    index.upsert("ResourceClaim", claim)
    key = (("gpu.nvidia.com", "pool", "gpu-0"), "gpu.nvidia.com/memory")
    assert index.capacity_in_use == {key: Fraction(32 * 2**30)}
    index.upsert("ResourceClaim", claim)  # the same claim again: counted once
    assert index.capacity_in_use == {key: Fraction(32 * 2**30)}
    index.delete("ResourceClaim", claim)
    assert index.capacity_in_use == {}


def dgx_devices() -> dict[DeviceKey, topology.Device]:
    """A dgx's 8 GPUs and 8 RDMA NICs (NUMA 0: 0-3, 1: 4-7), each NUMA node under its own
    driver's name only (`testbed.dra.io/numaNode`, `dra.net/numaNode`): no standard one."""
    out = {}
    for s in objects.dgx("n")[1:]:
        driver = s["spec"]["driver"]
        for d in s["spec"]["devices"]:
            out[(driver, "n", d["name"])] = topology.device_of(driver, d)
    return out


NUMA_GPU = "device.attributes['testbed.dra.io'].numaNode"
NUMA_NIC = "device.attributes['dra.net'].numaNode"


def derived_pair(
    gpus_: int, nics: int, gpu_expr: str = NUMA_GPU, nic_expr: str = NUMA_NIC
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def req(name: str, cls: str, count: int, expr: str) -> dict[str, Any]:
        body = {"deviceClassName": cls, "count": count}
        body["derivedAttributes"] = [{"name": "derived/numa", "expression": expr}]
        return {"name": name, "exactly": body}

    requests = [
        req("g", "gpu.nvidia.com", gpus_, gpu_expr),
        req("n", "rdma.dra.net", nics, nic_expr),
    ]
    return requests, [{"requests": ["g", "n"], "matchAttribute": "derived/numa"}]


def test_a_derived_attribute_aligns_two_drivers_numa_attributes() -> None:
    devices = dgx_devices()
    assert judge(*derived_pair(4, 4)[:1], devices, constraints=derived_pair(4, 4)[1]).fits
    requests, constraints = derived_pair(5, 1)
    assert judge(requests, devices, constraints=constraints).fits is False  # 4 GPUs per NUMA
    requests, constraints = derived_pair(4, 4)
    # NUMA 0 one GPU short, NUMA 1 whole: fits there; one short on both: no fit.
    assert judge(requests, devices, {"gpu-0"}, constraints).fits is True
    assert judge(requests, devices, {"gpu-0", "nic-5"}, constraints).fits is False
    # The same constraint on the standard name, which these drivers do not publish: never.
    plain = [{"requests": ["g", "n"], "matchAttribute": "resource.kubernetes.io/numaNode"}]
    assert judge(requests, devices, constraints=plain).fits is False


def test_derived_attribute_errors_fail_the_node_and_lists_are_not_judged() -> None:
    devices = dgx_devices()
    # The GPUs have no dra.net domain: a runtime error on the first GPU tried.
    requests, constraints = derived_pair(1, 1, gpu_expr=NUMA_NIC)
    verdict = judge(requests, devices, constraints=constraints)
    assert verdict.fits is False and "CEL runtime error" in verdict.reason
    requests, constraints = derived_pair(1, 1, gpu_expr=f"[{NUMA_GPU}]")
    verdict = judge(requests, devices, constraints=constraints)
    assert verdict.fits is None and verdict.unjudged == "derived_value"
    # A double is refused when the claim is written.
    requests, constraints = derived_pair(1, 1, gpu_expr="1.5")
    assert judge(requests, devices, constraints=constraints).unjudged == "does_not_compile"
    # A derived value of another type than the other request's: no match.
    requests, constraints = derived_pair(1, 1, gpu_expr=f"string({NUMA_GPU})")
    assert judge(requests, devices, constraints=constraints).fits is False
    requests, constraints = derived_pair(
        1, 1, gpu_expr=f"{NUMA_GPU} + 1", nic_expr=f"{NUMA_NIC} + 1"
    )
    assert judge(requests, devices, constraints=constraints).fits is True
