"""Pure object generation: a Fleet in, Nodes, ResourceSlices and DeviceClasses out (dicts).

No I/O and no clock: the same spec (and seed) always yields the same objects, byte for byte,
which is what makes re-applies idempotent and golden files possible. Slices look like the
NVIDIA GPU DRA driver's and DRANet's (one slice per driver per node, pool = node name, owned by
the Node when its uid is known).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleet import limits
from fleet import profiles as profiles_mod
from fleet.profiles import (
    GpuModel,
    MigEngines,
    MigModel,
    NicModel,
    PcieRoot,
    Profile,
    mig_device_suffix,
)
from fleet.spec import DeviceTaint, Fleet, SpecError, Taint, for_profile
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
    gpu_taints: Mapping[int, tuple[DeviceTaint, ...]] = field(default_factory=dict)
    """Taints on the node's GPUs by GPU index (the spec's `deviceTaints`, GPUs chosen by seed)."""


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
    """A node's only slice of `driver` (pool = node name, one slice)."""
    return f"{node}-{driver}"


def gpu_slice_names(node: str, gpus: int, mig: bool) -> list[str]:
    """The GPU driver's slices of a node. Partitionable GPUs take one slice per physical GPU
    (its full device and partitions) plus slices of shared counters, 8 counter sets each, as
    the NVIDIA driver publishes them since Kubernetes 1.35 (counters and devices never share a
    slice)."""
    if not gpus:
        return []
    base = slice_name(node, vocab.GPU_DRIVER)
    if not mig:
        return [base]
    chunks = -(-gpus // limits.MAX_COUNTER_SETS_PER_SLICE)
    return [f"{base}-counters-{k}" for k in range(chunks)] + [
        f"{base}-gpu-{i}" for i in range(gpus)
    ]


def slice_names(node: DesiredNode) -> list[str]:
    """Names of the slices `slice_objects` makes for `node`, without building them."""
    p = node.profile
    mig = p.gpu is not None and p.gpu.mig is not None
    nics = [slice_name(node.name, vocab.NIC_DRIVER)] if p.nic_count else []
    return gpu_slice_names(node.name, p.gpu_count, mig) + nics


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
    return _with_device_taints(fleet, out) if spec.device_taints else out


def _with_device_taints(fleet: Fleet, nodes: list[DesiredNode]) -> list[DesiredNode]:
    """Each device taint on exactly round(share x GPUs in scope) GPUs (at least one), chosen
    by ranking a hash of seed, taint and GPU: the same spec taints the same GPUs."""
    chosen: dict[str, dict[int, list[DeviceTaint]]] = {}
    for taint in fleet.spec.device_taints:
        scope = set(taint.pools)
        gpus = [
            (n.name, i)
            for n in nodes
            if not scope or n.pool in scope
            for i in range(n.profile.gpu_count)
        ]
        if not gpus:
            continue
        want = max(1, round(taint.share * len(gpus)))
        tag = f"{fleet.spec.seed}\x00{taint.key}\x00{taint.value}\x00{taint.effect}"

        def rank(g: tuple[str, int], tag: str = tag) -> bytes:
            return hashlib.blake2b(f"{tag}\x00{g[0]}\x00{g[1]}".encode(), digest_size=8).digest()

        for node, index in sorted(gpus, key=rank)[:want]:
            chosen.setdefault(node, {}).setdefault(index, []).append(taint)
    return [
        dataclasses.replace(n, gpu_taints={i: tuple(t) for i, t in chosen[n.name].items()})
        if n.name in chosen
        else n
        for n in nodes
    ]


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
    extended = (
        spec.extended_resources if pool.extended_resources is None else pool.extended_resources
    )
    if extended and profile.gpu_count:
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
    """The node's slices: gpu.nvidia.com if it has GPUs (one, or a partitionable GPUs'
    pool of several), dra.net if it has NICs."""
    out = _gpu_slices(fleet, node, owner_uid)
    nics = list(_nic_devices(fleet, node))
    if nics:
        name = slice_name(node.name, vocab.NIC_DRIVER)
        out.append(_slice(fleet, node, vocab.NIC_DRIVER, name, {"devices": nics}, 1, owner_uid))
    return out


def device_classes() -> list[Obj]:
    """The DeviceClasses (also in manifests/deviceclasses/, golden-tested against this), as
    the NVIDIA driver's chart and DRANet define them: `gpu.nvidia.com` selects whole GPUs and
    serves pods asking `nvidia.com/gpu` on nodes that do not advertise it themselves (DRA
    extended resources); `mig.nvidia.com` selects MIG partitions."""
    gpu = f"device.driver == '{vocab.GPU_DRIVER}'"
    typed = f"{gpu} && device.attributes['{vocab.GPU_DRIVER}'].{vocab.GPU_ATTR_TYPE} == "
    nic = f"device.driver == '{vocab.NIC_DRIVER}'"
    rdma = f"{nic} && device.attributes['{vocab.NIC_DRIVER}'].rdma == true"
    return [
        _device_class(
            vocab.CLASS_GPU,
            f"{typed}'{vocab.GPU_TYPE_GPU}'",
            extended_resource=vocab.EXTENDED_RESOURCE_GPU,
        ),
        _device_class(vocab.CLASS_MIG, f"{typed}'{vocab.GPU_TYPE_MIG}'"),
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
        # Worst case: every GPU carries every taint that may reach this pool.
        taints = tuple(t for t in fleet.spec.device_taints if not t.pools or node.pool in t.pools)
        if taints:
            every = dict.fromkeys(range(node.profile.gpu_count), taints)
            node = dataclasses.replace(node, gpu_taints=every)
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
    names = gpu_slice_names(node.name, len(gpus), model.mig is not None)
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
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": count},
            "nodeName": node.name,
            **body,
        },
    }


def _device_class(name: str, expression: str, *, extended_resource: str = "") -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource:
        spec["extendedResourceName"] = extended_resource
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER}},
        "spec": spec,
    }
