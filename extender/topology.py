"""The topology value types: devices, per-class free figures of a node, a node's view.

Pure data the index builds and the policies read; no cache, no I/O. A `Summary` is immutable
once built (the index shares one between nodes in the same state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from testbed import vocab

AttrValue = int | bool | str
"""A device attribute's plain value (a version attribute is its string)."""

DeviceKey = tuple[str, str, str]
"""(driver, pool, device): how an allocation result names a device."""

Outcome = Literal["aligned", "numa", "unaligned"]
"""How a fresh allocation paired its GPUs with NICs."""


@dataclass(slots=True, eq=False)
class Device:
    driver: str
    attributes: dict[str, AttrValue]
    """Fully qualified attribute names (`<domain>/<name>`) to plain values."""
    capacity: dict[str, str] = field(default_factory=dict)
    """Fully qualified capacity names to quantity strings."""
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Fully qualified capacity names to their `requestPolicy` (a shared device's rule for
    how much of it a request consumes), as the slice gives it."""
    versions: frozenset[str] = frozenset()
    """The attributes that are versions (semver in CEL), not plain strings."""
    multi: bool = False
    """allowMultipleAllocations: several claims may share it (consumable capacity)."""
    consumes: tuple[tuple[str, str, str], ...] = ()
    """(counter set, counter, quantity) this device consumes of its slice's shared counters
    (a partition of a partitionable device)."""
    classes: dict[str, Any] | None = None
    """Memo of selector verdicts on this device, by key (DeviceClass name...); a device is
    rebuilt when its slice changes, which drops the memo with it."""

    @property
    def root(self) -> str | None:
        value = self.attributes.get(vocab.ATTR_PCIE_ROOT)
        return value if isinstance(value, str) else None

    def own_numa(self) -> int | None:
        # The standard attribute (1.37 drivers) first, then the older per-driver names.
        for key in (vocab.ATTR_NUMA_NODE, vocab.GPU_ATTR_NUMA, vocab.NIC_ATTR_NUMA):
            value = self.attributes.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


@dataclass(frozen=True, slots=True)
class ClassSummary:
    """One DeviceClass on one node."""

    total: int
    free: int
    root_free: dict[str, int]
    """Free devices per PCIe root (devices without a root are not counted here)."""
    numa_free: dict[int, int]
    """Free devices per NUMA node (devices with unknown NUMA are not counted here)."""


@dataclass(slots=True, eq=False)
class Summary:
    """Free-device figures of one node, per DeviceClass; pair capacities memoised."""

    classes: dict[str, ClassSummary]
    _pairs: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    memo: dict[object, Any] = field(default_factory=dict)
    """Per-demand-shape results of the policies (see policies.scoring); valid as long as the
    summary, which is immutable once built."""

    def pairs(self, gpu_class: str, nic_class: str) -> tuple[int, int]:
        """(root_pairs, numa_pairs): how many free GPUs of `gpu_class` can each get a free
        NIC of `nic_class` on the same PCIe root, and on the same NUMA node (at least)."""
        key = (gpu_class, nic_class)
        hit = self._pairs.get(key)
        if hit is not None:
            return hit
        g = self.classes.get(gpu_class)
        n = self.classes.get(nic_class)
        if g is None or n is None:
            out = (0, 0)
        else:
            root = sum(min(c, n.root_free.get(r, 0)) for r, c in g.root_free.items())
            numa = sum(min(c, n.numa_free.get(k, 0)) for k, c in g.numa_free.items())
            out = (root, max(root, numa))
        self._pairs[key] = out
        return out


@dataclass(slots=True)
class NodeView:
    name: str
    known: bool = False
    """A Node object exists (slices alone do not make a node schedulable)."""
    block: str | None = None
    rack: str | None = None
    host: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    """All of the Node's labels (the gang placer matches a pod's nodeSelector on them)."""
    devices: dict[DeviceKey, Device] = field(default_factory=dict)
    summary: Summary | None = None
    """None when stale; the index recomputes it when it is next read."""
    layout: dict[str, tuple[Member, ...]] | None = None
    """Per DeviceClass, the node's devices it matches: what a summary counts. Depends on the
    devices and classes only, so an allocation (the common change) keeps it; None when stale."""
    erring: frozenset[str] = frozenset()
    """The DeviceClasses whose selectors fail with a runtime error on one of the node's
    devices (which fails any allocation of them there), found with `layout`."""


Member = tuple[DeviceKey, str | None, int | None]
"""A device in a node's layout: its key, PCIe root and (resolved) NUMA node."""


def device_of(driver: str, device: Mapping[str, Any]) -> Device:
    """A ResourceSlice device (resource.k8s.io/v1 fields) as the index keeps it."""
    raw = device.get("attributes") or {}
    versions = frozenset(
        (n if "/" in n else f"{driver}/{n}")
        for n, t in (raw.items() if isinstance(raw, dict) else ())
        if isinstance(t, dict) and "version" in t
    )
    capacity: dict[str, str] = {}
    policies: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        value = cap.get("value") if isinstance(cap, dict) else None
        if isinstance(value, str | int) and not isinstance(value, bool):
            qualified = name if "/" in name else f"{driver}/{name}"
            capacity[qualified] = str(value)
            policy = cap.get("requestPolicy")
            if isinstance(policy, dict):
                policies[qualified] = policy
    consumes: list[tuple[str, str, str]] = []
    for use in device.get("consumesCounters") or []:
        if not isinstance(use, dict):
            continue
        for counter, amount in (use.get("counters") or {}).items():
            value = amount.get("value") if isinstance(amount, dict) else None
            if value is not None:
                consumes.append((str(use.get("counterSet")), str(counter), str(value)))
    return Device(
        driver,
        device_attributes(driver, device),
        capacity=capacity,
        policies=policies,
        versions=versions,
        multi=device.get("allowMultipleAllocations") is True,
        consumes=tuple(consumes),
    )


def device_attributes(driver: str, device: Mapping[str, Any]) -> dict[str, AttrValue]:
    """A ResourceSlice device's attributes with fully qualified names and plain values.

    Unqualified names live in the driver's domain (`type` of gpu.nvidia.com is
    `gpu.nvidia.com/type`), which is also how CEL's `device.attributes['gpu.nvidia.com']`
    sees them.
    """
    out: dict[str, AttrValue] = {}
    for name, typed in (device.get("attributes") or {}).items():
        if not isinstance(typed, dict):
            continue
        qualified = name if "/" in name else f"{driver}/{name}"
        for kind in ("bool", "int", "string", "version"):
            if kind in typed:
                value = typed[kind]
                if isinstance(value, bool | int | str):
                    out[qualified] = value
                break
    return out


def resolved_numa(devices: Mapping[DeviceKey, Device]) -> dict[DeviceKey, int]:
    """Each device's NUMA node: its own attribute, else that of a device on the same PCIe
    root (real GPU drivers publish no NUMA; DRANet's NICs do), else unknown (absent)."""
    own: dict[DeviceKey, int] = {}
    by_root: dict[str, int] = {}
    for key, dev in devices.items():
        n = dev.own_numa()
        if n is not None:
            own[key] = n
            root = dev.root
            if root is not None:
                by_root.setdefault(root, n)
    for key, dev in devices.items():
        if key not in own:
            root = dev.root
            if root is not None and root in by_root:
                own[key] = by_root[root]
    return own
