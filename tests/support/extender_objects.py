"""Small Kubernetes objects as plain dicts, shaped like what the fleet and DRA publish."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from testbed import vocab

Obj = dict[str, Any]
RDMA_EXPR = (
    f"device.driver == '{vocab.NIC_DRIVER}' && device.attributes['{vocab.NIC_DRIVER}'].rdma == true"
)


def device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def classes() -> list[Obj]:
    return [
        device_class(vocab.CLASS_GPU, f"device.driver == '{vocab.GPU_DRIVER}'"),
        device_class(vocab.CLASS_NIC, f"device.driver == '{vocab.NIC_DRIVER}'"),
        device_class(vocab.CLASS_RDMA_NIC, RDMA_EXPR),
    ]


def node(name: str, *, rack: str | None = "r0", block: str | None = "b0") -> Obj:
    labels = {vocab.LABEL_HOSTNAME: name}
    if rack is not None:
        labels[vocab.LABEL_RACK] = rack
    if block is not None:
        labels[vocab.LABEL_BLOCK] = block
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _slice(node_name: str, driver: str, devices: list[Obj]) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def gpu_slice(node_name: str, gpus: Sequence[tuple[str, int | None]]) -> Obj:
    """GPUs `gpu-i` on (pcieRoot, numa or None = not published)."""
    devices = []
    for i, (root, numa) in enumerate(gpus):
        attrs: Obj = {
            "type": {"string": "gpu"},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            vocab.ATTR_PCIE_ROOT: {"string": root},
            vocab.ATTR_PCI_BUS_ID: {"string": f"0000:{i:02x}:00.0"},
        }
        if numa is not None:
            attrs[vocab.GPU_ATTR_NUMA] = {"int": numa}
        devices.append({"name": f"gpu-{i}", "attributes": attrs})
    return _slice(node_name, vocab.GPU_DRIVER, devices)


def nic_slice(node_name: str, nics: Sequence[tuple[str, int, bool]]) -> Obj:
    """NICs `nic-i` on (pcieRoot, numa, rdma)."""
    devices = []
    for i, (root, numa, rdma) in enumerate(nics):
        devices.append(
            {
                "name": f"nic-{i}",
                "attributes": {
                    "dra.net/ifName": {"string": f"eth{i}"},
                    vocab.NIC_ATTR_NUMA: {"int": numa},
                    vocab.NIC_ATTR_RDMA: {"bool": rdma},
                    vocab.ATTR_PCIE_ROOT: {"string": root},
                },
            }
        )
    return _slice(node_name, vocab.NIC_DRIVER, devices)


def dgx(name: str, *, rack: str = "r0", block: str = "b0", gpu_numa: bool = True) -> list[Obj]:
    """8 GPUs + 8 RDMA NICs, one pair per PCIe root, roots 0-3 on NUMA 0 and 4-7 on NUMA 1."""
    roots = [(f"pci0000:{i:02x}", i // 4) for i in range(8)]
    return [
        node(name, rack=rack, block=block),
        gpu_slice(name, [(r, n if gpu_numa else None) for r, n in roots]),
        nic_slice(name, [(r, n, True) for r, n in roots]),
    ]


def numa_only(name: str, *, rack: str = "r0", block: str = "b0") -> list[Obj]:
    """NICs on their own PCIe roots, but NUMA-local to the GPUs."""
    return [
        node(name, rack=rack, block=block),
        gpu_slice(name, [(f"pci0000:{i:02x}", i // 4) for i in range(8)]),
        nic_slice(name, [(f"pci0000:{0x80 + i:02x}", i // 4, True) for i in range(8)]),
    ]


def two_node_file(path: Path) -> Path:
    """`path` holding a `dgx` node n1 and a `numa_only` node n2 as YAML (for --from-files)."""
    path.write_text(yaml.safe_dump_all([*dgx("n1"), *numa_only("n2")]))
    return path


def unaligned(name: str, *, rack: str = "r0", block: str = "b0") -> list[Obj]:
    """GPUs all on NUMA 0, NICs all on NUMA 1, no shared root."""
    return [
        node(name, rack=rack, block=block),
        gpu_slice(name, [(f"pci0000:{i:02x}", 0) for i in range(8)]),
        nic_slice(name, [(f"pci0000:{0x80 + i:02x}", 1, True) for i in range(8)]),
    ]


def request(name: str, device_class: str, count: int = 1) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": device_class, "count": count}}


def claim_spec(requests: Iterable[Obj], aligned: Iterable[list[str]] = ()) -> Obj:
    spec: Obj = {"devices": {"requests": list(requests)}}
    constraints = [{"requests": r, "matchAttribute": vocab.ATTR_PCIE_ROOT} for r in aligned]
    if constraints:
        spec["devices"]["constraints"] = constraints
    return spec


def claim(
    namespace: str,
    name: str,
    spec: Obj,
    *,
    allocated: Sequence[tuple[str, str, str]] = (),
) -> Obj:
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if allocated:
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": d, "pool": p, "device": dev}
                        for d, p, dev in allocated
                    ]
                }
            }
        }
    return obj


def template(namespace: str, name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": spec},
    }


def pod(
    namespace: str,
    name: str,
    *,
    templates: Sequence[str] = (),
    claims: Sequence[str] = (),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    node_name: str | None = None,
    phase: str = "Pending",
) -> Obj:
    refs: list[Obj] = [
        {"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)
    ]
    refs += [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    spec: Obj = {"containers": [{"name": "main", "image": "busybox"}], "resourceClaims": refs}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def routed_to_filter(resources: Obj, annotations: dict[str, str] | None) -> Obj:
    """A container's `resources` with the placement resource a pod that requires a placement
    asks for, which routes it to the extender's filter (`vocab.PLACEMENT_RESOURCE`)."""
    if any(k in (annotations or {}) for k in vocab.REQUIRE_ANNOTATIONS):
        return {**resources, "limits": {vocab.PLACEMENT_RESOURCE: "1"}}
    return resources


def pair_spec(pairs: int, nic_class: str = vocab.CLASS_RDMA_NIC, aligned: bool = False) -> Obj:
    """`pairs` GPU requests and `pairs` NIC requests; with `aligned`, one matchAttribute
    constraint per (gpu-i, nic-i)."""
    reqs = [request(f"gpu-{i}", vocab.CLASS_GPU) for i in range(pairs)]
    reqs += [request(f"nic-{i}", nic_class) for i in range(pairs)]
    groups = [[f"gpu-{i}", f"nic-{i}"] for i in range(pairs)] if aligned else []
    return claim_spec(reqs, groups)
