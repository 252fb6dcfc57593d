"""Pure object generation: shapes like the real drivers, deterministic, within API limits."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import crd, drivers, layout, limits, profiles, render, yamlout
from fleet.spec import SpecError, for_profile, from_data
from testbed import vocab

ROOT = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden"


def _fleet(pools: list[dict[str, Any]], **spec: Any) -> Any:
    return from_data({"name": "t", "pools": pools, **spec})


def _attr(dev: dict[str, Any], key: str) -> Any:
    (value,) = dev["attributes"][key].values()
    return value


def test_same_spec_same_objects() -> None:
    a = render.render_profile("dgx-h100", 20, name="x", seed=7)
    b = render.render_profile("dgx-h100", 20, name="x", seed=7)
    assert a.objects() == b.objects()


def test_another_seed_changes_identifiers_but_not_topology() -> None:
    a = render.render_profile("dgx-h100", 1, seed=1).slices[0]["spec"]["devices"][0]
    b = render.render_profile("dgx-h100", 1, seed=2).slices[0]["spec"]["devices"][0]
    assert _attr(a, vocab.GPU_ATTR_UUID) != _attr(b, vocab.GPU_ATTR_UUID)
    assert _attr(a, vocab.ATTR_PCIE_ROOT) == _attr(b, vocab.ATTR_PCIE_ROOT)


def test_node_names_labels_annotation_and_default_taint() -> None:
    out = render.render_profile("dgx-h100", 3, name="f1")
    assert [n["metadata"]["name"] for n in out.nodes] == [f"f1-dgx-h100-{i}" for i in range(3)]
    node = out.nodes[2]
    labels = node["metadata"]["labels"]
    assert labels[vocab.LABEL_MANAGED_BY] == vocab.FLEET_MANAGER
    assert labels[vocab.LABEL_FLEET] == "f1"
    assert labels[vocab.LABEL_POOL] == "dgx-h100"
    assert labels[vocab.LABEL_PROFILE] == "dgx-h100"
    assert labels[vocab.LABEL_HOSTNAME] == "f1-dgx-h100-2"
    assert vocab.LABEL_BLOCK in labels and vocab.LABEL_RACK in labels
    assert node["metadata"]["annotations"][vocab.KWOK_NODE_ANNOTATION] == "fake"
    assert node["spec"]["taints"] == [
        {"key": vocab.KWOK_TAINT_KEY, "value": vocab.KWOK_TAINT_VALUE, "effect": "NoSchedule"}
    ]
    assert node["status"]["capacity"]["cpu"] == "224"
    assert vocab.EXTENDED_RESOURCE_GPU not in node["status"]["capacity"]


def test_dgx_slices_are_one_per_driver_pooled_by_node_with_8_devices_each() -> None:
    out = render.render_profile("dgx-h100", 2, name="f")
    assert len(out.slices) == 4
    gpu, nic = out.slices[:2]
    assert gpu["metadata"]["name"] == "f-dgx-h100-0-gpu.nvidia.com"
    assert nic["metadata"]["name"] == "f-dgx-h100-0-dra.net"
    for s, driver in ((gpu, vocab.GPU_DRIVER), (nic, vocab.NIC_DRIVER)):
        assert s["spec"]["driver"] == driver
        assert s["spec"]["nodeName"] == "f-dgx-h100-0"
        assert s["spec"]["pool"] == {
            "name": "f-dgx-h100-0",
            "generation": 1,
            "resourceSliceCount": 1,
        }
        assert len(s["spec"]["devices"]) == 8
        assert s["metadata"]["labels"][vocab.LABEL_FLEET] == "f"
        assert "ownerReferences" not in s["metadata"]
    assert [d["name"] for d in gpu["spec"]["devices"]] == [f"gpu-{i}" for i in range(8)]


def test_gpu_devices_carry_the_nvidia_driver_attributes_and_numa() -> None:
    dev = render.render_profile("dgx-h100", 1).slices[0]["spec"]["devices"][5]
    for key in (
        "type",
        "uuid",
        "productName",
        "brand",
        "architecture",
        "addressingMode",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        vocab.ATTR_PCIE_ROOT,
        vocab.ATTR_PCI_BUS_ID,
        vocab.GPU_ATTR_NUMA,
    ):
        assert key in dev["attributes"], key
    assert dev["attributes"]["cudaComputeCapability"] == {"version": "9.0.0"}
    assert _attr(dev, vocab.GPU_ATTR_NUMA) == 1
    assert dev["capacity"] == {"memory": {"value": "81559Mi"}}
    assert _attr(dev, "uuid").startswith("GPU-")


def test_nic_devices_carry_the_dranet_attributes() -> None:
    dev = render.render_profile("dgx-h100", 1).slices[1]["spec"]["devices"][0]
    assert dev["name"].startswith("pci-0000-")
    assert dev["attributes"][vocab.NIC_ATTR_RDMA] == {"bool": True}
    assert _attr(dev, vocab.NIC_ATTR_RDMA_DEVICE) == "mlx5_0"
    assert isinstance(_attr(dev, vocab.NIC_ATTR_NUMA), int)
    assert _attr(dev, vocab.NIC_ATTR_PCI_ADDRESS).startswith("0000:")
    assert vocab.ATTR_PCIE_ROOT in dev["attributes"]


def _roots(out: render.Rendered, driver: str) -> Counter[str]:
    s = next(s for s in out.slices if s["spec"]["driver"] == driver)
    return Counter(_attr(d, vocab.ATTR_PCIE_ROOT) for d in s["spec"]["devices"])


def test_dgx_pairs_each_gpu_with_exactly_one_nic_on_its_root_and_same_numa() -> None:
    out = render.render_profile("dgx-h100", 1)
    gpus, nics = _roots(out, vocab.GPU_DRIVER), _roots(out, vocab.NIC_DRIVER)
    assert gpus == nics and set(gpus.values()) == {1} and len(gpus) == 8
    gdevs, ndevs = (s["spec"]["devices"] for s in out.slices)
    numa = {_attr(d, vocab.ATTR_PCIE_ROOT): _attr(d, vocab.GPU_ATTR_NUMA) for d in gdevs}
    assert all(numa[_attr(d, vocab.ATTR_PCIE_ROOT)] == _attr(d, vocab.NIC_ATTR_NUMA) for d in ndevs)


def test_h100_4nic_has_two_gpus_per_nic_root() -> None:
    out = render.render_profile("h100-4nic", 1)
    gpus, nics = _roots(out, vocab.GPU_DRIVER), _roots(out, vocab.NIC_DRIVER)
    assert set(gpus.values()) == {2} and set(nics.values()) == {1} and set(gpus) == set(nics)


def test_a4_nics_are_named_like_gke_and_carry_gce_placement() -> None:
    out = render.render_profile("a4-highgpu-8g", 1)
    nics = out.slices[1]["spec"]["devices"]
    names = sorted(_attr(d, vocab.NIC_ATTR_IFNAME) for d in nics)
    assert names == ["eth0", "eth1"] + [f"gpu{i}rdma0" for i in range(8)]
    assert all(drivers.GCE_ATTR_BLOCK in d["attributes"] for d in nics)
    assert sum(d["attributes"][vocab.NIC_ATTR_RDMA]["bool"] for d in nics) == 8


def test_l4_has_no_rdma_and_cpu_only_has_no_gpu_slice() -> None:
    l4 = render.render_profile("l4-4gpu", 1)
    assert not any(
        d["attributes"][vocab.NIC_ATTR_RDMA]["bool"] for d in l4.slices[1]["spec"]["devices"]
    )
    assert vocab.NIC_ATTR_RDMA_DEVICE not in l4.slices[1]["spec"]["devices"][0]["attributes"]
    cpu = render.render_profile("cpu-only", 1)
    assert [s["spec"]["driver"] for s in cpu.slices] == [vocab.NIC_DRIVER]


def test_owner_uids_make_slices_owned_by_their_node() -> None:
    f = for_profile("dgx-h100", 2, name="o")
    out = render.render(f, owner_uids={"o-dgx-h100-1": "uid-1"})
    owned = [s for s in out.slices if "ownerReferences" in s["metadata"]]
    assert len(owned) == 2
    assert owned[0]["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": "o-dgx-h100-1",
            "uid": "uid-1",
            "controller": True,
        }
    ]


def test_topology_fills_racks_then_blocks_with_configurable_keys() -> None:
    f = _fleet(
        [{"name": "p", "profile": "cpu-only", "count": 10}],
        topology={
            "hostsPerRack": 2,
            "racksPerBlock": 2,
            "blockLabel": "b.io/block",
            "rackLabel": "b.io/rack",
        },
    )
    labels = [n["metadata"]["labels"] for n in render.render(f).nodes]
    assert [lb["b.io/rack"] for lb in labels[:5]] == [
        "t-p-b0-r0",
        "t-p-b0-r0",
        "t-p-b0-r1",
        "t-p-b0-r1",
        "t-p-b1-r0",
    ]
    assert labels[9]["b.io/block"] == "t-p-b2"
    assert vocab.LABEL_BLOCK not in labels[0]


def test_extended_resources_advertise_nvidia_gpu_count() -> None:
    f = _fleet([{"name": "p", "profile": "h100-4nic", "count": 1}], extendedResources=True)
    node = render.render(f).nodes[0]
    assert node["status"]["capacity"][vocab.EXTENDED_RESOURCE_GPU] == "8"
    assert node["status"]["allocatable"][vocab.EXTENDED_RESOURCE_GPU] == "8"


def test_pool_labels_taints_and_capacity_override_fleet_defaults() -> None:
    f = _fleet(
        [
            {
                "name": "p",
                "profile": "cpu-only",
                "count": 1,
                "labels": {"x.io/a": "1"},
                "taints": [],
                "capacity": {"cpu": "96"},
            }
        ],
        labels={"x.io/a": "0", "x.io/b": "2"},
    )
    node = render.render(f).nodes[0]
    assert node["metadata"]["labels"]["x.io/a"] == "1"
    assert node["metadata"]["labels"]["x.io/b"] == "2"
    assert "taints" not in node["spec"]
    assert node["status"]["capacity"]["cpu"] == "96"


def test_kwok_shards_label_nodes_round_robin() -> None:
    f = _fleet([{"name": "p", "profile": "cpu-only", "count": 6}], kwokShards=3)
    shards = [n["metadata"]["labels"][vocab.LABEL_KWOK_SHARD] for n in render.render(f).nodes]
    assert shards == ["0", "1", "2", "0", "1", "2"]


def test_unknown_profile_names_the_pool_field() -> None:
    with pytest.raises(SpecError, match=r"pools\[0\]\.profile: unknown profile 'nope'"):
        render.render(_fleet([{"name": "p", "profile": "nope", "count": 1}]))


def test_names_past_63_characters_name_the_pool_field() -> None:
    f = from_data(
        {"name": "a" * 40, "pools": [{"name": "b" * 30, "profile": "cpu-only", "count": 1}]}
    )
    with pytest.raises(SpecError, match=r"pools\[0\]\.name: .* 63"):
        render.render(f)


def test_a_string_attribute_over_the_api_limit_names_the_profile() -> None:
    prof = {
        "name": "longif",
        "nics": {
            "n": {"rdma": False, "pciVendor": "V", "pciDevice": "D", "ifName": "x" * 70 + "{index}"}
        },
        "roots": [{"bus": 1, "nics": 1}],
    }
    f = _fleet([{"name": "p", "profile": "longif", "count": 1}], profiles=[prof])
    with pytest.raises(
        SpecError, match=r"pools\[0\]\.profile \(longif\): attribute dra.net/ifName"
    ):
        render.render(f)


def test_inline_profiles_in_the_spec_are_usable() -> None:
    prof = {
        "name": "mini",
        "nics": {"n": {"rdma": True, "pciVendor": "V", "pciDevice": "D"}},
        "roots": [{"bus": 1, "nics": 2}],
    }
    out = render.render(_fleet([{"name": "p", "profile": "mini", "count": 1}], profiles=[prof]))
    assert len(out.slices[0]["spec"]["devices"]) == 2


def test_every_builtin_profile_renders_within_every_slice_limit() -> None:
    for name in profiles.builtin():
        for s in render.render_profile(name, 1).slices:
            limits.check_slice(s)


def test_slice_names_matches_slice_objects() -> None:
    f = for_profile("l4-4gpu", 2)
    for p in layout.desired_nodes(f):
        assert layout.slice_names(p) == [s["metadata"]["name"] for s in drivers.slice_objects(f, p)]


# -- golden files ------------------------------------------------------------------------------


def _golden(path: Path, objs: list[dict[str, Any]]) -> None:
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text("".join(f"---\n{yamlout.dump(o)}" for o in objs))
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs == objs, f"{path} differs from the render; UPDATE_GOLDEN=1 rewrites it"
    # Byte for byte too: the YAML writer's speed-ups must not change a character.
    assert path.read_text() == "".join(yamlout.dump_stream(objs))


def test_deviceclass_manifests_are_the_render() -> None:
    files = {
        p.stem: yaml.safe_load(p.read_text())
        for p in (ROOT / "manifests" / "deviceclasses").glob("*.yaml")
        if p.name != "kustomization.yaml"
    }
    rendered = {d["metadata"]["name"]: d for d in render.device_classes()}
    assert files == rendered
    assert set(rendered) == {
        vocab.CLASS_GPU,
        vocab.CLASS_MIG,
        vocab.CLASS_NIC,
        vocab.CLASS_RDMA_NIC,
    }
    assert rendered[vocab.CLASS_GPU]["spec"]["extendedResourceName"] == vocab.EXTENDED_RESOURCE_GPU
    assert (
        "rdma == true"
        in rendered[vocab.CLASS_RDMA_NIC]["spec"]["selectors"][0]["cel"]["expression"]
    )


def test_crd_manifest_is_the_generated_crd() -> None:
    assert (
        yaml.safe_load((ROOT / "manifests" / "fleet" / "crd.yaml").read_text()) == crd.crd_object()
    )


def test_crd_spec_schema_is_the_models_in_structural_form() -> None:
    from fleet.spec import FleetSpec, Pool, Topology

    def aliases(model: Any) -> set[str]:
        return {f.alias or n for n, f in model.model_fields.items()}

    props = crd.SPEC_SCHEMA["properties"]
    assert set(props) == aliases(FleetSpec)
    assert set(props["pools"]["items"]["properties"]) == aliases(Pool)
    assert set(props["topology"]["properties"]) == aliases(Topology)
    # What a structural schema may not hold, or what the API server must not apply.
    text = json.dumps(crd.SPEC_SCHEMA)
    for word in ('"$ref"', '"anyOf"', '"title"', '"additionalProperties": false'):
        assert word not in text, word
    share = props["deviceTaints"]["items"]["properties"]["share"]
    assert share["minimum"] == 0 and share["exclusiveMinimum"] is True
    assert "default" not in props["seed"] and props["pools"]["minItems"] == 1
    # An optional field is its type (anyOf [T, null] in pydantic's schema).
    assert props["pools"]["items"]["properties"]["taints"]["type"] == "array"


def test_structural_inlines_refs_and_keeps_a_field_named_like_a_keyword() -> None:
    schema = {
        "$defs": {
            "X": {
                "title": "X",
                "type": "object",
                "properties": {"default": {"type": "string", "default": "a"}},
            }
        },
        "type": "object",
        "properties": {"x": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}], "default": None}},
    }
    assert crd.structural(schema) == {
        "type": "object",
        "properties": {"x": {"type": "object", "properties": {"default": {"type": "string"}}}},
    }


@pytest.mark.parametrize(
    "profile",
    [
        "dgx-h100",
        "dgx-h100-mig",
        "dgx-h100-shared",
        "dgx-h100-fractional",
        "a4-highgpu-8g",
        "h100-4nic",
        "l4-4gpu",
        "cpu-only",
    ],
)
def test_golden_render_of_one_node(profile: str) -> None:
    _golden(GOLDEN / f"{profile}.yaml", render.render_profile(profile, 1, name="golden").objects())
