"""DRA's device shapes beyond whole GPUs: MIG partitions on shared counters, consumable
capacity, device taints; checked as pure renders (the real allocator is in integration)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fleet import drivers, layout, limits, profiles, render
from fleet.spec import SpecError, for_profile, from_data
from testbed import vocab

Obj = dict[str, Any]


def _qty(text: str) -> int:
    return profiles.quantity_bytes(text)


def _mig_node() -> tuple[list[Obj], dict[str, Obj]]:
    """The GPU slices of one dgx-h100-mig node, and its counter sets by name."""
    gpu = [
        s
        for s in render.render_profile("dgx-h100-mig", 1, name="m").slices
        if s["spec"]["driver"] == vocab.GPU_DRIVER
    ]
    sets = {cs["name"]: cs for s in gpu for cs in s["spec"].get("sharedCounters", [])}
    return gpu, sets


def _fits(devices: list[Obj], sets: dict[str, Obj]) -> bool:
    """Would the allocator let all `devices` be allocated together? (Their consumption summed
    per counter set must stay within it.)"""
    used: Counter[tuple[str, str]] = Counter()
    for d in devices:
        for c in d.get("consumesCounters", []):
            for name, v in c["counters"].items():
                used[(c["counterSet"], name)] += _qty(v["value"])
    return all(n <= _qty(sets[cs]["counters"][name]["value"]) for (cs, name), n in used.items())


def test_a_mig_node_publishes_a_counter_slice_and_one_slice_per_gpu_in_one_pool() -> None:
    gpu, sets = _mig_node()
    assert len(gpu) == 9
    assert "sharedCounters" in gpu[0]["spec"] and "devices" not in gpu[0]["spec"]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in gpu} == {9}
    assert {s["spec"]["pool"]["name"] for s in gpu} == {"m-dgx-h100-mig-0"}
    assert sorted(sets) == sorted(f"gpu-{i}-counter-set" for i in range(8))
    names = [d["name"] for d in gpu[1]["spec"]["devices"]]
    assert (
        names[0] == "gpu-0" and "gpu-0-mig-1g10gb-19-6" in names and "gpu-0-mig-7g80gb-0-0" in names
    )
    assert len(names) == 15  # full GPU + 7 + 3 + 2 + 1 + 1 placements
    for s in gpu:
        limits.check_slice(s)


def test_mig_devices_carry_nvidias_attributes() -> None:
    gpu, _ = _mig_node()
    devs = {d["name"]: d for d in gpu[1]["spec"]["devices"]}
    full, part = devs["gpu-0"], devs["gpu-0-mig-3g40gb-9-4"]
    assert full["attributes"][vocab.GPU_ATTR_TYPE] == {"string": "gpu"}
    assert part["attributes"][vocab.GPU_ATTR_TYPE] == {"string": "mig"}
    assert part["attributes"][vocab.GPU_ATTR_MIG_PROFILE] == {"string": "3g.40gb"}
    assert part["attributes"][vocab.GPU_ATTR_PARENT_UUID] == full["attributes"][vocab.GPU_ATTR_UUID]
    assert part["attributes"][vocab.ATTR_PCIE_ROOT] == full["attributes"][vocab.ATTR_PCIE_ROOT]
    assert part["capacity"][vocab.GPU_CAP_MEMORY] == {"value": "40448Mi"}
    assert part["capacity"][vocab.GPU_CAP_MULTIPROCESSORS] == {"value": "60"}


def test_the_full_gpu_consumes_its_whole_counter_set() -> None:
    gpu, sets = _mig_node()
    full = gpu[1]["spec"]["devices"][0]
    (consumed,) = full["consumesCounters"]
    assert consumed["counters"] == sets[consumed["counterSet"]]["counters"]


def test_counters_refuse_over_commit_and_overlapping_placements() -> None:
    gpu, sets = _mig_node()
    devs = {d["name"]: d for d in gpu[1]["spec"]["devices"]}
    full = devs["gpu-0"]
    for name, d in devs.items():
        if name != "gpu-0":
            assert not _fits([full, d], sets), name  # a partition and the whole GPU: never
    ones = [devs[f"gpu-0-mig-1g10gb-19-{i}"] for i in range(7)]
    assert _fits(ones, sets)
    assert not _fits([devs["gpu-0-mig-3g40gb-9-0"], devs["gpu-0-mig-4g40gb-5-0"]], sets)
    assert _fits([devs["gpu-0-mig-3g40gb-9-4"], devs["gpu-0-mig-4g40gb-5-0"]], sets)
    assert not _fits([devs["gpu-0-mig-2g20gb-14-0"], devs["gpu-0-mig-1g10gb-19-1"]], sets)
    # Another GPU's partitions draw on another counter set.
    other = {d["name"]: d for d in gpu[2]["spec"]["devices"]}
    assert _fits([full, other["gpu-1-mig-7g80gb-0-0"]], sets)


def test_slice_names_match_the_slices_for_partitionable_gpus() -> None:
    f = for_profile("dgx-h100-mig", 2)
    for node in layout.desired_nodes(f):
        assert layout.slice_names(node) == [
            s["metadata"]["name"] for s in drivers.slice_objects(f, node)
        ]


def test_more_than_8_partitionable_gpus_split_counter_sets_across_slices() -> None:
    base = profiles.builtin()["dgx-h100-mig"].model_dump(by_alias=True)
    base.update(name="mig16", roots=[{"bus": 16 * i + 1, "gpus": 1} for i in range(12)], nics={})
    f = from_data(
        {"name": "x", "pools": [{"name": "p", "profile": "mig16", "count": 1}], "profiles": [base]}
    )
    out = render.render(f)
    counters = [s for s in out.slices if "sharedCounters" in s["spec"]]
    assert [len(s["spec"]["sharedCounters"]) for s in counters] == [8, 4]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in out.slices} == {14}


def test_shared_gpus_allow_multiple_allocations_with_a_memory_request_policy() -> None:
    devs = render.render_profile("dgx-h100-shared", 1).slices[0]["spec"]["devices"]
    assert len(devs) == 8
    for d in devs:
        assert d["allowMultipleAllocations"] is True
        assert d["capacity"]["memory"] == {
            "value": "81559Mi",
            "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}},
        }
        assert d["attributes"][vocab.GPU_ATTR_TYPE] == {"string": "gpu"}


def test_gpus_and_nics_publish_the_standard_numa_node_beside_the_old_names() -> None:
    slices = render.render_profile("dgx-h100", 1).slices
    by_driver = {s["spec"]["driver"]: s["spec"]["devices"] for s in slices}
    for driver, private in (
        (vocab.GPU_DRIVER, vocab.GPU_ATTR_NUMA),
        (vocab.NIC_DRIVER, vocab.NIC_ATTR_NUMA),
    ):
        numa = [d["attributes"][vocab.ATTR_NUMA_NODE] for d in by_driver[driver]]
        assert numa == [{"int": 0}] * 4 + [{"int": 1}] * 4
        assert [d["attributes"][private] for d in by_driver[driver]] == numa
        assert all(vocab.ATTR_PCIE_ROOT in d["attributes"] for d in by_driver[driver])


def test_fractional_shared_gpus_publish_a_milli_step_compute_range_and_a_memory_cap() -> None:
    (gpu_slice, _) = render.render_profile("dgx-h100-fractional", 1).slices
    for d in gpu_slice["spec"]["devices"]:
        assert d["allowMultipleAllocations"] is True
        assert d["capacity"]["memory"]["requestPolicy"] == {
            "default": "1Gi",
            "validRange": {"min": "1Gi", "step": "1Gi", "max": "79Gi"},
        }
        assert d["capacity"][vocab.GPU_CAP_COMPUTE] == {
            "value": "1",
            "requestPolicy": {
                "default": "100m",
                "validRange": {"min": "100m", "max": "1", "step": "100m"},
            },
        }


@pytest.mark.parametrize(
    ("compute", "needle"),
    [
        ({"default": "150m"}, "whole steps above min"),
        ({"max": "2"}, r"max <= 1 and"),
        ({"step": "0.9501"}, "not a quantity like 250m"),
        ({"min": "950m", "default": "950m"}, r"min \+ step <= 1"),
    ],
)
def test_a_compute_range_the_api_server_would_refuse_is_one_line(
    compute: dict[str, str], needle: str
) -> None:
    base = profiles.builtin()["dgx-h100-fractional"].model_dump(by_alias=True, exclude_none=True)
    base["gpu"]["shared"]["compute"].update(compute)
    with pytest.raises(profiles.ProfileError, match=needle):
        profiles.parse(base, "x.yaml")


def test_milli_reads_the_forms_a_fractional_range_uses() -> None:
    assert [profiles.milli(t) for t in ("250m", "0.25", "1", "0.5")] == [250, 250, 1000, 500]


def _tainted(out: render.Rendered) -> dict[tuple[str, str], list[Obj]]:
    return {
        (s["spec"]["nodeName"], d["name"]): d["taints"]
        for s in out.slices
        for d in s["spec"].get("devices", [])
        if "taints" in d
    }


def test_a_device_taint_covers_exactly_its_share_of_gpus_the_same_ones_each_time() -> None:
    spec = {
        "name": "t",
        "seed": 3,
        "pools": [{"name": "a", "profile": "l4-4gpu", "count": 8}],
        "deviceTaints": [{"share": 0.25, "effect": "NoExecute", "value": "xid-79"}],
    }
    first = _tainted(render.render(from_data(spec)))
    assert len(first) == 8  # 25 % of 32 GPUs
    assert all(
        t == [{"key": vocab.DEVICE_TAINT_KEY, "effect": "NoExecute", "value": "xid-79"}]
        for t in first.values()
    )
    assert _tainted(render.render(from_data(spec))) == first
    assert _tainted(render.render(from_data({**spec, "seed": 4}))) != first


def test_a_tainted_mig_gpu_taints_its_partitions_and_pools_limit_the_scope() -> None:
    spec = {
        "name": "t",
        "pools": [
            {"name": "a", "profile": "dgx-h100-mig", "count": 1},
            {"name": "b", "profile": "l4-4gpu", "count": 2},
        ],
        "deviceTaints": [{"share": 0.1, "pools": ["a"]}],
    }
    tainted = _tainted(render.render(from_data(spec)))
    assert {node for node, _ in tainted} == {"t-a-0"}
    assert len(tainted) == 15  # one GPU (10 % of 8, at least one): all its devices
    assert len({dev.split("-mig-")[0] for _, dev in tainted}) == 1


def test_device_taints_name_unknown_pools_and_reject_bad_shares() -> None:
    pools = [{"name": "a", "profile": "l4-4gpu", "count": 1}]
    with pytest.raises(SpecError, match=r"deviceTaints\[0\]\.pools: no pool named 'zz'"):
        from_data({"pools": pools, "deviceTaints": [{"share": 0.5, "pools": ["zz"]}]})
    with pytest.raises(SpecError, match=r"deviceTaints\.0\.share"):
        from_data({"pools": pools, "deviceTaints": [{"share": 1.5}]})
    with pytest.raises(SpecError, match=r"deviceTaints\.0\.effect"):
        from_data({"pools": pools, "deviceTaints": [{"share": 0.5, "effect": "PreferNoSchedule"}]})


def _mig_profile(**mig: Any) -> Obj:
    base = profiles.builtin()["dgx-h100-mig"].model_dump(by_alias=True)
    base["name"] = "bad"
    base["gpu"]["mig"].update(mig)
    return base


def test_a_mig_profile_that_does_not_fit_its_gpu_is_refused_naming_the_field() -> None:
    big = _mig_profile()
    big["gpu"]["mig"]["profiles"][0]["memory"] = "90Gi"
    with pytest.raises(
        SpecError, match=r"gpu.mig.profiles\[0\]\.memory: 90Gi is more than the GPU has"
    ):
        from_data({"pools": [{"name": "p", "profile": "bad", "count": 1}], "profiles": [big]})
    past = _mig_profile()
    past["gpu"]["mig"]["profiles"][4]["placements"] = [1]
    with pytest.raises(SpecError, match=r"mig.profiles\[4\]\.placements: .* runs past"):
        from_data({"pools": [{"name": "p", "profile": "bad", "count": 1}], "profiles": [past]})
    sms = _mig_profile(multiprocessors=100)
    with pytest.raises(SpecError, match=r"multiprocessors: 132 is more than the GPU's 100"):
        from_data({"pools": [{"name": "p", "profile": "bad", "count": 1}], "profiles": [sms]})


def test_taints_on_a_big_whole_gpu_slice_break_the_64_device_limit_at_render() -> None:
    huge = profiles.builtin()["l4-4gpu"].model_dump(by_alias=True)
    huge.update(name="gpu100", roots=[{"bus": 1, "gpus": 100}], nics={})
    spec = {
        "name": "h",
        "pools": [{"name": "p", "profile": "gpu100", "count": 2}],
        "profiles": [huge],
    }
    render.render(from_data(spec))  # 100 devices: fine without taints
    with pytest.raises(
        SpecError, match=r"pools\[0\]\.profile \(gpu100\): slice .* 100 devices; the API allows 64"
    ):
        render.render(from_data({**spec, "deviceTaints": [{"share": 0.01}]}))
