"""Pure object generation: a Fleet in, Nodes, ResourceSlices and DeviceClasses out (dicts).

No I/O and no clock: the same spec (and seed) always yields the same objects, byte for byte,
which is what makes re-applies idempotent and golden files possible. Slices look like the
NVIDIA GPU DRA driver's and DRANet's (one slice per driver per node, pool = node name, owned by
the Node when its uid is known).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleet import drivers, layout, limits
from fleet.layout import DesiredFleet, DesiredNode
from fleet.profiles import Profile
from fleet.record import record_text
from fleet.spec import Fleet, SpecError, Taint, for_profile
from testbed import vocab

Obj = dict[str, Any]


@dataclass(slots=True)
class Rendered:
    device_classes: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)

    def objects(self) -> list[Obj]:
        """All objects in apply order: classes, then nodes, then slices."""
        return [*self.device_classes, *self.nodes, *self.slices]


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
        **layout.fleet_labels(fleet.name),
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
    known = dict(profiles) if profiles is not None else layout.resolve_profiles(fleet)
    record = record_text(fleet, known)
    nodes = layout.desired_nodes(fleet, known)
    check_limits(fleet, nodes)
    return DesiredFleet(fleet=fleet, profiles=known, nodes=nodes, record=record)


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
            out.slices.extend(drivers.slice_objects(desired.fleet, node, uids.get(node.name)))
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
        for s in drivers.slice_objects(fleet, node, None):
            try:
                limits.check_slice(s)
            except limits.LimitError as e:
                raise SpecError(f"{pool}.profile ({node.profile.name}): {e}") from None


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
