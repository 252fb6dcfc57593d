"""The oracle's inputs as plain data: a fleet's nodes by hardware shape and labels, read from
its ResourceSlices and Nodes, and a workload's phases, read from a loadgen result (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from testbed import vocab


class Unsupported(ValueError):
    """A workload or fleet the oracle does not model; the message names what."""


@dataclass(frozen=True, order=True)
class Root:
    """One PCIe root of a node: its NUMA node, GPUs and RDMA NICs."""

    numa: int
    gpus: int
    nics: int


Hardware = tuple[Root, ...]
"""A node's device shape: its roots, sorted (nodes of one shape are interchangeable)."""


@dataclass(frozen=True)
class Fleet:
    hardware: Mapping[str, Hardware]
    """Per node with GPUs or RDMA NICs, its shape."""
    labels: Mapping[str, Mapping[str, str]]
    """Per node, its labels (block and rack, pool)."""

    def classes(
        self, selector: Mapping[str, str] | None = None, level: str | None = None
    ) -> Counter[tuple[Hardware, str]]:
        """Nodes per (shape, value of label `level`) among those matching `selector`; the
        group is "" without a level, and a node without the label is its own group."""
        out: Counter[tuple[Hardware, str]] = Counter()
        for node, shape in self.hardware.items():
            labels = self.labels.get(node, {})
            if any(labels.get(k) != v for k, v in (selector or {}).items()):
                continue
            group = "" if level is None else labels.get(level, f"node:{node}")
            out[(shape, group)] += 1
        return out


def _value(device: Mapping[str, Any], name: str) -> Any:
    attribute = (device.get("attributes") or {}).get(name) or {}
    return next(iter(attribute.values()), None)


_UNUSABLE = ("NoSchedule", "NoExecute")


def fleet_of(
    slices: Iterable[Mapping[str, Any]], node_labels: Mapping[str, Mapping[str, str]]
) -> Fleet:
    """Each node's roots from its GPU slices (whole GPUs: `type` gpu) and DRANet slices
    (RDMA NICs: the `rdma.dra.net` class's devices), keyed by `resource.kubernetes.io/pcieRoot`;
    a device without a root is a root of its own, a device tainted NoSchedule is left out."""
    roots: dict[str, dict[str, list[int]]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node, driver = spec.get("nodeName") or "", spec.get("driver")
        for i, device in enumerate(spec.get("devices") or []):
            if any(t.get("effect") in _UNUSABLE for t in device.get("taints") or []):
                continue  # no claim the testbed makes tolerates a device taint
            if driver == vocab.GPU_DRIVER and _value(device, "type") == "gpu":
                slot = 1
            elif driver == vocab.NIC_DRIVER and _value(device, vocab.NIC_ATTR_RDMA) is True:
                slot = 2
            else:
                continue
            root = _value(device, vocab.ATTR_PCIE_ROOT) or f"{driver}/{device.get('name', i)}"
            numa = _value(device, vocab.ATTR_NUMA_NODE)
            if numa is None:
                numa = _value(device, vocab.NIC_ATTR_NUMA)
            entry = roots.setdefault(node, {}).setdefault(str(root), [-1, 0, 0])
            entry[0] = int(numa) if numa is not None else -1
            entry[slot] += 1
    hardware = {
        node: tuple(sorted(Root(*entry) for entry in by_root.values()))
        for node, by_root in roots.items()
    }
    return Fleet(hardware, {n: dict(node_labels.get(n, {})) for n in hardware})


@dataclass(frozen=True, order=True)
class Demand:
    """One pod's claim as the oracle models it."""

    gpus: int
    nics: int
    align: bool
    """Each GPU with its own NIC on one PCIe root (a `matchAttribute` per pair)."""
    numa: bool
    """All of the claim's GPUs and NICs on one NUMA node."""

    @property
    def pairs(self) -> int:
        """GPU-NIC pairs loadgen counts for this claim (`claims.gpu_nic_pairs`)."""
        return min(self.gpus, self.nics)


@dataclass(frozen=True)
class Phase:
    name: str
    demand: Demand
    pods: int
    """Pods the phase asked for."""
    placed: int
    """Pods of it the arm's scheduler placed."""
    refusable: bool
    """A placeability probe (`wait: settled`): its pods may be refused by design. Every
    other phase is load the optimum must place in full."""
    gang_size: int = 0
    """Pods per gang (all at once), 0: no gangs."""

    @property
    def gangs(self) -> int:
        return self.pods // self.gang_size if self.gang_size else 0


@dataclass(frozen=True)
class Workload:
    phases: tuple[Phase, ...]
    node_selector: Mapping[str, str]
    """Labels the pods' nodes must have beyond the fleet's (a pool)."""

    @property
    def gangs(self) -> bool:
        return any(p.gang_size for p in self.phases)


_UNMODELLED = (
    "min_memory",
    "device_plugin",
    "all_gpus",
    "memory",
    "compute",
    "mig_profile",
    "admin_access",
)


def _demand(phase: Mapping[str, Any]) -> Demand:
    claim = phase.get("claim") or {}
    name = phase.get("name")
    for key in _UNMODELLED:
        if claim.get(key):
            raise Unsupported(f"phase {name}: the oracle does not model claims with {key}")
    if claim.get("first_available"):
        raise Unsupported(f"phase {name}: the oracle does not model firstAvailable claims")
    if int(claim.get("shared_by") or 1) > 1:
        raise Unsupported(f"phase {name}: the oracle does not model shared claims")
    nics = int(claim.get("nics") or 0)
    if not int(claim.get("gpus", 1)) and not nics:
        raise Unsupported(f"phase {name}: pods without devices fit anywhere: nothing to place")
    return Demand(
        gpus=int(claim.get("gpus", 1)),
        nics=nics,
        align=bool(claim.get("align", True)) and nics > 0,
        numa=bool(claim.get("numa")),
    )


def asks_placement(result: Mapping[str, Any]) -> bool:
    """Whether a loadgen result's workload asks a placement question: a probe phase
    (`wait: settled`), gangs, or claims with NICs. Others (pods that all fit, throughput
    arms) are not held against an optimum."""
    return any(
        p.get("wait") == "settled" or p.get("gang") or (p.get("claim") or {}).get("nics")
        for p in (result.get("scenario") or {}).get("phases") or []
    )


def workload_of(result: Mapping[str, Any]) -> Workload:
    """The phases of a loadgen result (its `scenario` as run, sizes resolved, and each phase's
    counts). Pods never leave in the modelled runs: a phase whose pods complete and are
    replaced (Jobs with completions > parallelism) is refused."""
    scenario = result.get("scenario") or {}
    counts = {p.get("name"): p.get("counts") or {} for p in result.get("phases") or []}
    phases = []
    for p in scenario.get("phases") or []:
        name = str(p.get("name"))
        parallelism, completions = int(p.get("parallelism") or 1), int(p.get("completions") or 1)
        if p.get("kind") == "jobs" and completions > parallelism:
            raise Unsupported(f"phase {name}: pods that leave and are replaced are not modelled")
        c = counts.get(name) or {}
        pods = int(c.get("expected_pods") or 0)
        gang = parallelism if p.get("kind") == "jobs" and p.get("gang") else 0
        phases.append(
            Phase(
                name=name,
                demand=_demand(p),
                pods=pods,
                placed=int(c.get("pods_scheduled") or 0),
                refusable=p.get("wait") == "settled",
                gang_size=gang,
            )
        )
    if not phases:
        raise Unsupported("the result has no scenario phases")
    workload = Workload(tuple(phases), dict(scenario.get("node_selector") or {}))
    if workload.gangs and not all(p.gang_size for p in phases):
        raise Unsupported("the oracle models gangs only in runs of gangs alone")
    return workload
