"""Pure object generation: a Fleet in, Nodes, ResourceSlices and DeviceClasses out (dicts).

No I/O and no clock: the same spec (and seed) always yields the same objects, byte for byte,
which is what makes re-applies idempotent and golden files possible. Slices look like the
NVIDIA GPU DRA driver's and DRANet's (one slice per driver per node, pool = node name, owned by
the Node when its uid is known).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleet import limits
from fleet import profiles as profiles_mod
from fleet.profiles import NicModel, Profile
from fleet.spec import Fleet, SpecError, Taint, for_profile
from testbed import validation, vocab

Obj = dict[str, Any]

MAX_NAME = limits.MAX_DNS_LABEL  # node names are hostnames and label values

GCE_ATTR_BLOCK = "gce.dra.net/block"
GCE_ATTR_SUBBLOCK = "gce.dra.net/subblock"
GCE_ATTR_HOST = "gce.dra.net/host"


@dataclass(frozen=True, slots=True)
class DesiredNode:
    """One node the fleet wants: where it sits and what it is."""

    name: str
    pool: str
    pool_index: int
    index: int
    profile: Profile
    block: str
    rack: str
    shard: int


@dataclass(frozen=True, slots=True)
class DesiredFleet:
    """A fleet checked against every API limit, with the profiles it uses and its nodes in a
    stable order: computed once by `validate`, then rendered, applied and waited on."""

    fleet: Fleet
    profiles: Mapping[str, Profile]
    nodes: list[DesiredNode]
    record: str
    """The spec as the fleet's record keeps it (JSON, with every non-built-in profile it uses
    inlined, so `fleet status` can check the cluster against it without profile files)."""

    @property
    def name(self) -> str:
        return self.fleet.name


@dataclass(slots=True)
class Rendered:
    device_classes: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)

    def objects(self) -> list[Obj]:
        """All objects in apply order: classes, then nodes, then slices."""
        return [*self.device_classes, *self.nodes, *self.slices]


def fleet_labels(name: str) -> dict[str, str]:
    """The labels that mark an object as this fleet's (and only this fleet's)."""
    return {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER, vocab.LABEL_FLEET: name}


def fleet_selector(name: str) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(fleet_labels(name).items()))


def slice_name(node: str, driver: str) -> str:
    return f"{node}-{driver}"


def slice_names(node: DesiredNode) -> list[str]:
    """Names of the slices `slice_objects` makes for `node`, without building them."""
    drivers = (
        (vocab.GPU_DRIVER, node.profile.gpu_count),
        (vocab.NIC_DRIVER, node.profile.nic_count),
    )
    return [slice_name(node.name, d) for d, n in drivers if n]


def resolve_profiles(
    fleet: Fleet, extra: Mapping[str, Profile] | None = None
) -> dict[str, Profile]:
    """Built-ins, then `extra` (profile files), then the spec's inline profiles."""
    return profiles_mod.catalogue(extra, fleet.spec.profiles)


def desired_nodes(fleet: Fleet, profiles: Mapping[str, Profile] | None = None) -> list[DesiredNode]:
    """Every node of the fleet, in a stable order; raises SpecError on bad input."""
    known = dict(profiles) if profiles is not None else resolve_profiles(fleet)
    spec = fleet.spec
    topo = spec.topology
    out: list[DesiredNode] = []
    for pi, pool in enumerate(spec.pools):
        profile = known.get(pool.profile)
        if profile is None:
            names = ", ".join(sorted(known))
            shown = validation.shown(pool.profile)
            raise SpecError(f"pools[{pi}].profile: unknown profile {shown} (known: {names})")
        prefix = f"{fleet.name}-{pool.name}"
        if pool.count:
            last = pool.count - 1
            blocks = last // (topo.hosts_per_rack * topo.racks_per_block)
            longest = max(
                f"{prefix}-{last}", f"{prefix}-b{blocks}-r{topo.racks_per_block - 1}", key=len
            )
            if len(longest) > MAX_NAME:
                raise SpecError(
                    f"pools[{pi}].name: node/topology name {longest!r} is {len(longest)} "
                    f"characters; names and label values allow {MAX_NAME} (shorten the fleet or "
                    "pool name)"
                )
        for i in range(pool.count):
            rack_no = i // topo.hosts_per_rack
            block_no = rack_no // topo.racks_per_block
            block = f"{prefix}-b{block_no}"
            out.append(
                DesiredNode(
                    name=f"{prefix}-{i}",
                    pool=pool.name,
                    pool_index=pi,
                    index=i,
                    profile=profile,
                    block=block,
                    rack=f"{block}-r{rack_no % topo.racks_per_block}",
                    shard=(len(out)) % spec.kwok_shards,
                )
            )
    return out


def node_object(fleet: Fleet, node: DesiredNode) -> Obj:
    spec = fleet.spec
    pool = spec.pools[node.pool_index]
    profile = node.profile
    labels: dict[str, str] = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "type": "kwok",
        **profile.node.labels,
        **spec.labels,
        **pool.labels,
        vocab.LABEL_HOSTNAME: node.name,
        spec.topology.block_label: node.block,
        spec.topology.rack_label: node.rack,
        vocab.LABEL_POOL: node.pool,
        vocab.LABEL_PROFILE: profile.name,
        **fleet_labels(fleet.name),
    }
    if spec.kwok_shards > 1:
        labels[vocab.LABEL_KWOK_SHARD] = str(node.shard)
    capacity = {
        "cpu": profile.node.cpu,
        "memory": profile.node.memory,
        "pods": profile.node.pods,
        "ephemeral-storage": profile.node.ephemeral_storage,
        **pool.capacity,
    }
    if spec.extended_resources and profile.gpu_count:
        capacity[vocab.EXTENDED_RESOURCE_GPU] = str(profile.gpu_count)
    taints: list[Taint] = pool.taints if pool.taints is not None else spec.taints
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": labels,
            # Not node.alpha.kubernetes.io/ttl: the TTL controller owns it (it changes with
            # cluster size, and a re-apply would fight it).
            "annotations": {
                **spec.annotations,
                vocab.KWOK_NODE_ANNOTATION: vocab.KWOK_NODE_ANNOTATION_VALUE,
            },
        },
        "spec": {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }
    if taints:
        obj["spec"]["taints"] = [t.to_api() for t in taints]
    return obj


def slice_objects(fleet: Fleet, node: DesiredNode, owner_uid: str | None = None) -> list[Obj]:
    """The node's slices: gpu.nvidia.com if it has GPUs, dra.net if it has NICs."""
    out: list[Obj] = []
    gpus = list(_gpu_devices(fleet, node))
    if gpus:
        out.append(_slice(fleet, node, vocab.GPU_DRIVER, gpus, owner_uid))
    nics = list(_nic_devices(fleet, node))
    if nics:
        out.append(_slice(fleet, node, vocab.NIC_DRIVER, nics, owner_uid))
    return out


def device_classes() -> list[Obj]:
    """The three DeviceClasses (also in manifests/deviceclasses/, golden-tested against this)."""
    nic = f"device.driver == '{vocab.NIC_DRIVER}'"
    rdma = f"{nic} && device.attributes['{vocab.NIC_DRIVER}'].rdma == true"
    return [
        _device_class(vocab.CLASS_GPU, f"device.driver == '{vocab.GPU_DRIVER}'"),
        _device_class(vocab.CLASS_NIC, nic),
        _device_class(vocab.CLASS_RDMA_NIC, rdma),
    ]


def validate(fleet: Fleet, profiles: Mapping[str, Profile] | None = None) -> DesiredFleet:
    """The fleet's nodes, checked against the API's limits before anything is written;
    raises SpecError naming the field that breaks one."""
    known = dict(profiles) if profiles is not None else resolve_profiles(fleet)
    record = record_text(fleet, known)
    nodes = desired_nodes(fleet, known)
    check_limits(fleet, nodes)
    return DesiredFleet(fleet=fleet, profiles=known, nodes=nodes, record=record)


def record_text(fleet: Fleet, profiles: Mapping[str, Profile]) -> str:
    """The record's JSON; a SpecError naming the largest spec field if it cannot fit the
    ConfigMap that keeps it."""
    builtin = profiles_mod.builtin()
    used = {pool.profile for pool in fleet.spec.pools}
    inline = [p for name, p in sorted(profiles.items()) if name in used and builtin.get(name) != p]
    doc = fleet.to_object(inline=inline)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    if len(text) > limits.MAX_CONFIGMAP_BYTES:
        sizes = {k: limits.json_bytes(v) for k, v in doc["spec"].items()}
        field = max(sizes, key=lambda k: sizes[k])
        raise SpecError(
            f"spec.{field}: {limits.human(sizes[field])}; the fleet's record (a ConfigMap, "
            f"{limits.human(limits.MAX_CONFIGMAP_BYTES)} at most) would be "
            f"{limits.human(len(text))}"
        )
    return text


def render(
    fleet: Fleet | DesiredFleet,
    profiles: Mapping[str, Profile] | None = None,
    *,
    owner_uids: Mapping[str, str] | None = None,
) -> Rendered:
    """All objects of the fleet (validated first unless it already is). Slices get
    ownerReferences only for nodes in `owner_uids` (a Node's uid exists only once the API
    server made it)."""
    desired = fleet if isinstance(fleet, DesiredFleet) else validate(fleet, profiles)
    out = Rendered(device_classes=device_classes())
    uids = owner_uids or {}
    with gc_paused():
        for node in desired.nodes:
            out.nodes.append(node_object(desired.fleet, node))
            out.slices.extend(slice_objects(desired.fleet, node, uids.get(node.name)))
    return out


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a 5,000-node render allocates millions of small,
    acyclic dicts, and the collector's repeated passes over them tripled the render time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def render_profile(profile: str, nodes: int, *, name: str = "fleet", seed: int = 0) -> Rendered:
    """Shorthand for tests: the objects of `fleet render --profile P --nodes N --name NAME`."""
    return render(for_profile(profile, nodes, name=name, seed=seed))


def check_limits(fleet: Fleet, nodes: list[DesiredNode]) -> None:
    """Render the first node of each pool and check its Node and slices against the API's
    limits, so a spec the API server would refuse fails here, naming the field responsible."""
    seen: set[int] = set()
    for node in nodes:
        if node.pool_index in seen:
            continue
        seen.add(node.pool_index)
        pool = f"pools[{node.pool_index}]"
        try:
            limits.check_object(node_object(fleet, node))
        except limits.LimitError as e:
            raise SpecError(f"{pool} (labels, annotations, taints, capacity): {e}") from None
        for s in slice_objects(fleet, node, None):
            try:
                limits.check_slice(s)
            except limits.LimitError as e:
                raise SpecError(f"{pool}.profile ({node.profile.name}): {e}") from None


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


def _gpu_devices(fleet: Fleet, node: DesiredNode) -> Iterator[Obj]:
    gpu = node.profile.gpu
    if gpu is None:
        return
    raw = _entropy(fleet.spec.seed, node.name, "gpu", 16 * node.profile.gpu_count)
    index = 0
    for root in node.profile.roots:
        for g in range(root.gpus):
            bus = root.bus + root.nics + 1 + g
            yield {
                "name": f"gpu-{index}",
                "attributes": {
                    vocab.GPU_ATTR_TYPE: _s("gpu"),
                    vocab.GPU_ATTR_UUID: _s(_uuid(raw[16 * index : 16 * index + 16])),
                    "index": _i(index),
                    "minor": _i(index),
                    vocab.GPU_ATTR_PRODUCT: _s(gpu.product_name),
                    vocab.GPU_ATTR_BRAND: _s(gpu.brand),
                    vocab.GPU_ATTR_ARCH: _s(gpu.architecture),
                    vocab.GPU_ATTR_ADDRESSING: _s(gpu.addressing_mode),
                    vocab.GPU_ATTR_CUDA_CC: {"version": gpu.cuda_compute_capability},
                    vocab.GPU_ATTR_DRIVER_VERSION: {"version": gpu.driver_version},
                    vocab.GPU_ATTR_CUDA_DRIVER_VERSION: {"version": gpu.cuda_driver_version},
                    vocab.ATTR_PCIE_ROOT: _s(f"pci0000:{root.bus:02x}"),
                    vocab.ATTR_PCI_BUS_ID: _s(f"0000:{bus:02x}:00.0"),
                    vocab.GPU_ATTR_NUMA: _i(root.numa_node),
                },
                "capacity": {vocab.GPU_CAP_MEMORY: {"value": gpu.memory}},
            }
            index += 1


def _nic_devices(fleet: Fleet, node: DesiredNode) -> Iterator[Obj]:
    per_model: dict[str, int] = {}  # templates count NICs per model: gpu0rdma0.., eth0..
    entropy = _entropy(fleet.spec.seed, node.name, "nic", 8 * node.profile.nic_count)
    index = 0
    for root in node.profile.roots:
        if not root.nics:
            continue
        model_name = node.profile.nic_model_name(root)
        model = node.profile.nics[model_name]
        for n in range(root.nics):
            k = per_model.get(model_name, 0)
            per_model[model_name] = k + 1
            bus = root.bus + 1 + n
            raw = entropy[8 * index : 8 * index + 8]
            yield {
                "name": f"pci-0000-{bus:02x}-00-0",
                "attributes": _nic_attributes(node, model, root.bus, root.numa_node, bus, k, raw),
            }
            index += 1


def _nic_attributes(
    node: DesiredNode, nic: NicModel, root_bus: int, numa: int, bus: int, k: int, raw: bytes
) -> Obj:
    fmt = {"index": k, "bus": f"{bus:02x}", "busdec": bus}
    attrs: Obj = {
        vocab.NIC_ATTR_IFNAME: _s(nic.if_name.format(**fmt)),
        vocab.NIC_ATTR_PCI_ADDRESS: _s(f"0000:{bus:02x}:00.0"),
        vocab.NIC_ATTR_MAC: _s(_mac(raw)),
        vocab.NIC_ATTR_PCI_VENDOR: _s(nic.pci_vendor),
        vocab.NIC_ATTR_PCI_DEVICE: _s(nic.pci_device),
        vocab.NIC_ATTR_NUMA: _i(numa),
        vocab.NIC_ATTR_MTU: _i(nic.mtu),
        vocab.NIC_ATTR_ENCAPSULATION: _s(nic.encapsulation),
        vocab.NIC_ATTR_STATE: _s("up"),
        vocab.NIC_ATTR_TYPE: _s("device"),
        vocab.NIC_ATTR_VIRTUAL: {"bool": False},
        vocab.NIC_ATTR_RDMA: {"bool": nic.rdma},
        vocab.NIC_ATTR_SRIOV: {"bool": nic.sriov},
        vocab.ATTR_PCIE_ROOT: _s(f"pci0000:{root_bus:02x}"),
    }
    if nic.ipv4:
        attrs[vocab.NIC_ATTR_IPV4] = _s(f"10.{raw[5]}.{raw[6]}.{raw[7] or 1}")
    if nic.rdma and nic.rdma_device:
        attrs[vocab.NIC_ATTR_RDMA_DEVICE] = _s(nic.rdma_device.format(**fmt))
    if node.profile.gce_topology:
        attrs[GCE_ATTR_BLOCK] = _s(node.block)
        attrs[GCE_ATTR_SUBBLOCK] = _s(node.rack)
        attrs[GCE_ATTR_HOST] = _s(node.name)
    return attrs


def _slice(
    fleet: Fleet, node: DesiredNode, driver: str, devices: list[Obj], owner_uid: str | None
) -> Obj:
    meta: Obj = {
        "name": slice_name(node.name, driver),
        "labels": {
            vocab.LABEL_POOL: node.pool,
            vocab.LABEL_PROFILE: node.profile.name,
            **fleet_labels(fleet.name),
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
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node.name,
            "devices": devices,
        },
    }


def _device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER}},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }
