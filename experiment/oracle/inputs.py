"""The oracle's inputs as plain data: a fleet's nodes by hardware shape and labels, read from
its ResourceSlices and Nodes, and a workload's phases, read from an arm's record (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from experiment.measure.arm_record import ArmRecord, ScenarioPhase
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


def _demand(phase: ScenarioPhase) -> Demand:
    claim, name = phase.claim, phase.name
    for key in _UNMODELLED:
        if getattr(claim, key):
            raise Unsupported(f"phase {name}: the oracle does not model claims with {key}")
    if claim.first_available:
        raise Unsupported(f"phase {name}: the oracle does not model firstAvailable claims")
    if claim.shared_by > 1:
        raise Unsupported(f"phase {name}: the oracle does not model shared claims")
    if not claim.gpus and not claim.nics:
        raise Unsupported(f"phase {name}: pods without devices fit anywhere: nothing to place")
    return Demand(
        gpus=claim.gpus, nics=claim.nics, align=claim.align and claim.nics > 0, numa=claim.numa
    )


def asks_placement(rec: ArmRecord) -> bool:
    """Whether an arm's workload asks a placement question: a probe phase (`wait:
    settled`), gangs, or claims with NICs. Others (pods that all fit, throughput arms) are
    not held against an optimum."""
    scenario = rec.scenario
    return scenario is not None and any(
        p.wait == "settled" or p.gang or p.claim.nics for p in scenario.phases
    )


def workload_of(rec: ArmRecord) -> Workload:
    """The phases of an arm (its `scenario` as run, sizes resolved, and each phase's counts).
    Pods never leave in the modelled runs: a phase whose pods complete and are replaced
    (Jobs with completions > parallelism) is refused."""
    scenario = rec.scenario
    if scenario is None:
        raise Unsupported("the result has no scenario phases")
    phases = []
    for p in scenario.phases:
        if p.kind == "jobs" and p.completions > p.parallelism:
            raise Unsupported(f"phase {p.name}: pods that leave and are replaced are not modelled")
        ran = rec.phase(p.name)
        phases.append(
            Phase(
                name=p.name,
                demand=_demand(p),
                pods=ran.counts.expected_pods if ran else 0,
                placed=ran.counts.pods_scheduled if ran else 0,
                refusable=p.wait == "settled",
                gang_size=p.parallelism if p.kind == "jobs" and p.gang else 0,
            )
        )
    workload = Workload(tuple(phases), dict(scenario.node_selector))
    if workload.gangs and not all(p.gang_size for p in phases):
        raise Unsupported("the oracle models gangs only in runs of gangs alone")
    return workload
