"""Which nodes a fleet has, and the names of what each publishes: pure, no objects built.

Nodes come in a stable order (pool by pool), each with its place in the topology (block,
rack), its kwok shard and the GPUs its device taints chose; the labels that mark a fleet's
objects and the names of each node's slices follow from them. `render` builds the objects,
`audit` and the reconciler compare the cluster against these names.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from fleet import limits
from fleet import profiles as profiles_mod
from fleet.profiles import Profile
from fleet.spec import DeviceTaint, Fleet, SpecError
from testbed import validation, vocab

MAX_NAME = limits.MAX_DNS_LABEL  # node names are hostnames and label values


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
