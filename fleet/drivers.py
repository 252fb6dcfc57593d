"""A node's ResourceSlices, as the NVIDIA GPU DRA driver and DRANet publish them (pure).

One slice per driver per node (pool = node name), or, for partitionable GPUs, one slice per
physical GPU plus slices of shared counters; owned by the Node when its uid is known. What
every node of a profile publishes alike is built once per profile and shared (never
mutated); what differs by node (GPU uuids, MACs, IPv4s) comes from a hash of seed and node
name, so the same spec always yields the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fleet import layout, limits
from fleet.layout import DesiredNode
from fleet.profiles import (
    GpuModel,
    MigEngines,
    MigModel,
    NicModel,
    PcieRoot,
    Profile,
    mig_device_suffix,
)
from fleet.spec import Fleet
from testbed import vocab

Obj = dict[str, Any]

GCE_ATTR_BLOCK = "gce.dra.net/block"
GCE_ATTR_SUBBLOCK = "gce.dra.net/subblock"
GCE_ATTR_HOST = "gce.dra.net/host"


def slice_objects(fleet: Fleet, node: DesiredNode, owner_uid: str | None = None) -> list[Obj]:
    """The node's slices: gpu.nvidia.com if it has GPUs (one, or a partitionable GPUs'
    pool of several), dra.net if it has NICs."""
    out = _gpu_slices(fleet, node, owner_uid)
    nics = list(_nic_devices(fleet, node))
    if nics:
        name = layout.slice_name(node.name, vocab.NIC_DRIVER)
        out.append(_slice(fleet, node, vocab.NIC_DRIVER, name, {"devices": nics}, 1, owner_uid))
    return out


# -- devices ---------------------------------------------------------------------------------


def _entropy(seed: int, node: str, kind: str, size: int) -> bytes:
    """`size` deterministic bytes for one node's identifiers (one hash per node and driver)."""
    return hashlib.shake_128(f"{seed}\x00{node}\x00{kind}".encode()).digest(size)


def _uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _mac(raw: bytes) -> str:
    # Locally administered, unicast: first octet 0x02.
    return ":".join(f"{b:02x}" for b in (0x02, *raw[:5]))


def _s(value: str) -> Obj:
    return {"string": value}


def _i(value: int) -> Obj:
    return {"int": value}


@dataclass(frozen=True, slots=True)
class _Gpu:
    """One physical GPU of a node: what its devices' attributes are made from."""

    index: int
    uuid: str
    root_bus: int
    bus: int
    numa: int


@dataclass(frozen=True, slots=True)
class _Shapes:
    """What every node of one profile publishes alike, built once per profile rather than
    once per node: shared by every node's objects, never mutated (a 5,000-node fleet would
    otherwise build 1.2 million identical attribute values)."""

    gpu_common: list[Obj]
    """By GPU index: the attributes every device of that GPU carries (`_gpu_attributes`)."""
    whole_gpu: list[Obj]
    """By GPU index: the whole GPU's attributes, its uuid a placeholder to overwrite."""
    gpu_capacity: Obj
    """The whole GPU's capacity (the same on every GPU of the profile)."""
    nics: list[tuple[str, Obj]]
    """By NIC: the device name and its attributes, MAC, IPv4 and GCE topology placeholders."""


_SHAPES: dict[int, tuple[Profile, _Shapes]] = {}
_PLACEHOLDER: Obj = {"string": ""}


def _shapes(profile: Profile) -> _Shapes:
    hit = _SHAPES.get(id(profile))
    if hit is not None and hit[0] is profile:
        return hit[1]
    if len(_SHAPES) >= 256:  # a long-lived fleet service parses profiles again: stay bounded
        _SHAPES.clear()
    gpu_common: list[Obj] = []
    whole_gpu: list[Obj] = []
    model = profile.gpu
    capacity: Obj = {}
    if model is not None:
        for g in _gpu_positions(profile, b""):
            common = _gpu_attributes(model, g)
            gpu_common.append(common)
            whole_gpu.append(
                {
                    vocab.GPU_ATTR_TYPE: _s(vocab.GPU_TYPE_GPU),
                    vocab.GPU_ATTR_UUID: _PLACEHOLDER,
                    vocab.GPU_ATTR_INDEX: _i(g.index),
                    "minor": _i(g.index),
                    **common,
                }
            )
        capacity = _whole_gpu_capacity(model)
    nics = [
        (f"pci-0000-{bus:02x}-00-0", _nic_attributes(profile, nic, root, bus, k))
        for root, nic, bus, k in _nic_positions(profile)
    ]
    shapes = _Shapes(gpu_common, whole_gpu, capacity, nics)
    _SHAPES[id(profile)] = (profile, shapes)
    return shapes


def _gpu_positions(profile: Profile, raw: bytes) -> list[_Gpu]:
    """The profile's GPUs in index order, with uuids from `raw` (16 bytes each; empty: none)."""
    out: list[_Gpu] = []
    for root in profile.roots:
        for g in range(root.gpus):
            i = len(out)
            uuid = _uuid(raw[16 * i : 16 * i + 16]) if raw else ""
            out.append(_Gpu(i, uuid, root.bus, root.bus + root.nics + 1 + g, root.numa_node))
    return out


def _gpus(fleet: Fleet, node: DesiredNode) -> list[_Gpu]:
    raw = _entropy(fleet.spec.seed, node.name, "gpu", 16 * node.profile.gpu_count)
    return _gpu_positions(node.profile, raw)


def _gpu_slices(fleet: Fleet, node: DesiredNode, owner_uid: str | None) -> list[Obj]:
    model = node.profile.gpu
    if model is None or not node.profile.gpu_count:
        return []
    gpus = _gpus(fleet, node)
    shapes = _shapes(node.profile)
    names = layout.gpu_slice_names(node.name, len(gpus), model.mig is not None)
    if model.mig is None:
        devices = [_whole_gpu(model, shapes, node, g) for g in gpus]
        return [_slice(fleet, node, vocab.GPU_DRIVER, names[0], {"devices": devices}, 1, owner_uid)]
    mig = model.mig
    chunks = len(names) - len(gpus)
    bodies: list[Obj] = []
    per = limits.MAX_COUNTER_SETS_PER_SLICE
    for k in range(chunks):
        sets = [_counter_set(model, mig, g) for g in gpus[k * per : (k + 1) * per]]
        bodies.append({"sharedCounters": sets})
    for g in gpus:
        whole = _whole_gpu(model, shapes, node, g)
        devices = [whole, *_mig_devices(mig, shapes.gpu_common[g.index], node, g)]
        bodies.append({"devices": sorted(devices, key=lambda d: str(d["name"]))})
    return [
        _slice(fleet, node, vocab.GPU_DRIVER, name, body, len(names), owner_uid)
        for name, body in zip(names, bodies, strict=True)
    ]


def _gpu_attributes(model: GpuModel, g: _Gpu) -> Obj:
    """What the NVIDIA driver publishes on every device of a GPU, whole or partition."""
    return {
        vocab.GPU_ATTR_PRODUCT: _s(model.product_name),
        vocab.GPU_ATTR_BRAND: _s(model.brand),
        vocab.GPU_ATTR_ARCH: _s(model.architecture),
        vocab.GPU_ATTR_ADDRESSING: _s(model.addressing_mode),
        vocab.GPU_ATTR_CUDA_CC: {"version": model.cuda_compute_capability},
        vocab.GPU_ATTR_DRIVER_VERSION: {"version": model.driver_version},
        vocab.GPU_ATTR_CUDA_DRIVER_VERSION: {"version": model.cuda_driver_version},
        vocab.ATTR_PCIE_ROOT: _s(f"pci0000:{g.root_bus:02x}"),
        vocab.ATTR_PCI_BUS_ID: _s(f"0000:{g.bus:02x}:00.0"),
        vocab.ATTR_NUMA_NODE: _i(g.numa),
        vocab.GPU_ATTR_NUMA: _i(g.numa),
    }


def _whole_gpu(model: GpuModel, shapes: _Shapes, node: DesiredNode, g: _Gpu) -> Obj:
    attrs = dict(shapes.whole_gpu[g.index])
    attrs[vocab.GPU_ATTR_UUID] = _s(g.uuid)  # in the placeholder's place: same key order
    dev: Obj = {"name": f"gpu-{g.index}", "attributes": attrs, "capacity": shapes.gpu_capacity}
    if model.shared is not None:
        dev["allowMultipleAllocations"] = True
    if model.mig is not None:
        dev["consumesCounters"] = [
            {"counterSet": _counter_set_name(g.index), "counters": _gpu_counters(model, model.mig)}
        ]
    _taint(dev, node, g)
    return dev


def _whole_gpu_capacity(model: GpuModel) -> Obj:
    """A whole GPU's capacity: its memory (with request policies when it is shared) and, when
    it is partitionable, its engines."""
    memory: Obj = {"value": model.memory}
    capacity: Obj = {vocab.GPU_CAP_MEMORY: memory}
    if (sh := model.shared) is not None:
        valid = {"min": sh.memory_min, "step": sh.memory_step}
        if sh.memory_max is not None:
            valid["max"] = sh.memory_max
        memory["requestPolicy"] = {"default": sh.memory_default, "validRange": valid}
        if (c := sh.compute) is not None:
            capacity[vocab.GPU_CAP_COMPUTE] = {
                "value": "1",
                "requestPolicy": {
                    "default": c.default,
                    "validRange": {"min": c.min, "max": c.max, "step": c.step},
                },
            }
    if model.mig is not None:
        capacity.update(_engine_capacity(model.mig))
    return capacity


@dataclass(frozen=True, slots=True)
class _MigShape:
    """What every node's MIG device of one profile placement on GPU `index` has in common
    (shared, never mutated: a 1,000-node render reuses them instead of rebuilding 120,000)."""

    name: str
    profile: str
    capacity: Obj
    consumes: list[Obj]


_MIG_SHAPES: dict[tuple[int, int], tuple[MigModel, list[_MigShape]]] = {}


def _mig_shapes(mig: MigModel, index: int) -> list[_MigShape]:
    key = (id(mig), index)
    hit = _MIG_SHAPES.get(key)
    if hit is not None and hit[0] is mig:
        return hit[1]
    shapes: list[_MigShape] = []
    counter_set = _counter_set_name(index)
    for prof in mig.profiles:
        engines = _engine_capacity(prof)
        counters = {_counter_name(k): v for k, v in engines.items()}
        counters[vocab.GPU_COUNTER_MEMORY] = {"value": prof.memory}
        capacity = {vocab.GPU_CAP_MEMORY: {"value": prof.memory}, **engines}
        for start in prof.placements:
            slices = {
                f"{vocab.GPU_COUNTER_MEMORY_SLICE_PREFIX}{k}": {"value": "1"}
                for k in range(start, start + prof.memory_slices)
            }
            shapes.append(
                _MigShape(
                    name=f"gpu-{index}-mig-{mig_device_suffix(prof.name)}-{prof.id}-{start}",
                    profile=prof.name,
                    capacity=capacity,
                    consumes=[{"counterSet": counter_set, "counters": {**counters, **slices}}],
                )
            )
    _MIG_SHAPES[key] = (mig, shapes)
    return shapes


def _mig_devices(mig: MigModel, common: Obj, node: DesiredNode, g: _Gpu) -> Iterator[Obj]:
    parent = _s(g.uuid)
    by_profile: dict[str, Obj] = {}  # placements of one profile have the same attributes
    for shape in _mig_shapes(mig, g.index):
        attrs = by_profile.get(shape.profile)
        if attrs is None:
            attrs = by_profile[shape.profile] = {
                vocab.GPU_ATTR_TYPE: _MIG_TYPE,
                vocab.GPU_ATTR_PARENT_UUID: parent,
                vocab.GPU_ATTR_MIG_PROFILE: _s(shape.profile),
                **common,
            }
        dev: Obj = {
            "name": shape.name,
            "attributes": attrs,
            "capacity": shape.capacity,
            "consumesCounters": shape.consumes,
        }
        _taint(dev, node, g)
        yield dev


_MIG_TYPE = {"string": vocab.GPU_TYPE_MIG}


def _taint(dev: Obj, node: DesiredNode, g: _Gpu) -> None:
    taints = node.gpu_taints.get(g.index)
    if taints:
        dev["taints"] = [t.to_api() for t in taints]


_ENGINE_CAPACITIES = (
    ("multiprocessors", vocab.GPU_CAP_MULTIPROCESSORS),
    ("copy_engines", vocab.GPU_CAP_COPY_ENGINES),
    ("decoders", vocab.GPU_CAP_DECODERS),
    ("encoders", vocab.GPU_CAP_ENCODERS),
    ("jpeg_engines", vocab.GPU_CAP_JPEG_ENGINES),
    ("ofa_engines", vocab.GPU_CAP_OFA_ENGINES),
)


def _engine_capacity(engines: MigEngines) -> Obj:
    return {name: {"value": str(getattr(engines, field))} for field, name in _ENGINE_CAPACITIES}


@functools.cache
def _counter_name(capacity: str) -> str:
    """Counters are DNS labels: copyEngines -> copy-engines (as the NVIDIA driver derives them)."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity).lower()


def _counter_set_name(index: int) -> str:
    return f"gpu-{index}{vocab.GPU_COUNTER_SET_SUFFIX}"


_GPU_COUNTERS: dict[int, tuple[GpuModel, Obj]] = {}


def _gpu_counters(model: GpuModel, mig: MigModel) -> Obj:
    """Everything one GPU has: the counter set's totals, and what its full device consumes
    (one shared, never mutated map per GPU model)."""
    hit = _GPU_COUNTERS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    counters = {_counter_name(k): v for k, v in _engine_capacity(mig).items()}
    counters[vocab.GPU_COUNTER_MEMORY] = {"value": model.memory}
    for k in range(mig.memory_slices):
        counters[f"{vocab.GPU_COUNTER_MEMORY_SLICE_PREFIX}{k}"] = {"value": "1"}
    _GPU_COUNTERS[id(model)] = (model, counters)
    return counters


def _counter_set(model: GpuModel, mig: MigModel, g: _Gpu) -> Obj:
    return {"name": _counter_set_name(g.index), "counters": _gpu_counters(model, mig)}


def _nic_positions(profile: Profile) -> Iterator[tuple[PcieRoot, NicModel, int, int]]:
    """The profile's NICs in order: root, model, PCI bus, and index among NICs of its model
    (templates count NICs per model: gpu0rdma0.., eth0..)."""
    per_model: dict[str, int] = {}
    for root in profile.roots:
        if not root.nics:
            continue
        model_name = profile.nic_model_name(root)
        model = profile.nics[model_name]
        for n in range(root.nics):
            k = per_model.get(model_name, 0)
            per_model[model_name] = k + 1
            yield root, model, root.bus + 1 + n, k


def _nic_devices(fleet: Fleet, node: DesiredNode) -> Iterator[Obj]:
    """The node's NICs: each from its profile's shape, with the node's own MAC, IPv4 and
    GCE topology in their placeholders' places (the same key order)."""
    nics = _shapes(node.profile).nics
    entropy = _entropy(fleet.spec.seed, node.name, "nic", 8 * len(nics))
    gce = node.profile.gce_topology
    if gce:
        block, rack, host = _s(node.block), _s(node.rack), _s(node.name)
    for index, (name, shape) in enumerate(nics):
        raw = entropy[8 * index : 8 * index + 8]
        attrs = dict(shape)
        attrs[vocab.NIC_ATTR_MAC] = _s(_mac(raw))
        if vocab.NIC_ATTR_IPV4 in attrs:
            attrs[vocab.NIC_ATTR_IPV4] = _s(f"10.{raw[5]}.{raw[6]}.{raw[7] or 1}")
        if gce:
            attrs[GCE_ATTR_BLOCK], attrs[GCE_ATTR_SUBBLOCK], attrs[GCE_ATTR_HOST] = (
                block,
                rack,
                host,
            )
        yield {"name": name, "attributes": attrs}


def _nic_attributes(profile: Profile, nic: NicModel, root: PcieRoot, bus: int, k: int) -> Obj:
    """What DRANet publishes of one NIC; what differs by node (MAC, IPv4, GCE topology) as
    placeholders, in their places."""
    fmt = {"index": k, "bus": f"{bus:02x}", "busdec": bus}
    attrs: Obj = {
        vocab.NIC_ATTR_IFNAME: _s(nic.if_name.format(**fmt)),
        vocab.NIC_ATTR_PCI_ADDRESS: _s(f"0000:{bus:02x}:00.0"),
        vocab.NIC_ATTR_MAC: _PLACEHOLDER,
        vocab.NIC_ATTR_PCI_VENDOR: _s(nic.pci_vendor),
        vocab.NIC_ATTR_PCI_DEVICE: _s(nic.pci_device),
        vocab.NIC_ATTR_NUMA: _i(root.numa_node),
        vocab.ATTR_NUMA_NODE: _i(root.numa_node),
        vocab.NIC_ATTR_MTU: _i(nic.mtu),
        vocab.NIC_ATTR_ENCAPSULATION: _s(nic.encapsulation),
        vocab.NIC_ATTR_STATE: _s("up"),
        vocab.NIC_ATTR_TYPE: _s("device"),
        vocab.NIC_ATTR_VIRTUAL: {"bool": False},
        vocab.NIC_ATTR_RDMA: {"bool": nic.rdma},
        vocab.NIC_ATTR_SRIOV: {"bool": nic.sriov},
        vocab.ATTR_PCIE_ROOT: _s(f"pci0000:{root.bus:02x}"),
    }
    if nic.ipv4:
        attrs[vocab.NIC_ATTR_IPV4] = _PLACEHOLDER
    if nic.rdma and nic.rdma_device:
        attrs[vocab.NIC_ATTR_RDMA_DEVICE] = _s(nic.rdma_device.format(**fmt))
    if profile.gce_topology:
        attrs[GCE_ATTR_BLOCK] = attrs[GCE_ATTR_SUBBLOCK] = attrs[GCE_ATTR_HOST] = _PLACEHOLDER
    return attrs


def _slice(
    fleet: Fleet,
    node: DesiredNode,
    driver: str,
    name: str,
    body: Obj,
    count: int,
    owner_uid: str | None,
) -> Obj:
    """One slice of the node's pool of `driver` (pool name = node name; `count` slices)."""
    meta: Obj = {
        "name": name,
        "labels": {
            vocab.LABEL_POOL: node.pool,
            vocab.LABEL_PROFILE: node.profile.name,
            **layout.fleet_labels(fleet.name),
        },
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": node.name,
                "uid": owner_uid,
                "controller": True,
            }
        ]
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceSlice",
        "metadata": meta,
        "spec": {
            "driver": driver,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": count},
            "nodeName": node.name,
            **body,
        },
    }
