"""Hardware profiles: what one machine looks like, as data (YAML), never code.

A profile lists the node's capacity and its PCIe root complexes; each root holds some GPUs
and some NICs. That is enough to publish ResourceSlices shaped like the NVIDIA GPU DRA driver's
and DRANet's: devices on the same root share `resource.kubernetes.io/pcieRoot`, which is what
GPU-NIC alignment constraints match on. Built-in profiles live in `fleet/profiles/*.yaml`;
users add their own files (or inline them in a fleet spec) in the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from fleet import limits
from testbed import units, validation

MAX_DEVICES_PER_SLICE = limits.MAX_DEVICES_PER_SLICE
MAX_STRING_ATTRIBUTE = limits.MAX_STRING_ATTRIBUTE
_VERSION = re.compile(r"^\d+\.\d+\.\d+\Z")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")

AttrString = Annotated[str, Field(min_length=1, max_length=MAX_STRING_ATTRIBUTE)]
"""A value published as a string device attribute: the API allows 64 characters."""


class ProfileError(ValueError):
    """A profile that cannot be loaded or would break an API limit; one line, names the field."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


def quantity_bytes(text: str) -> int:
    """A whole-number Quantity (`81559Mi`, `10Gi`, `1000`) as an integer; ValueError if not."""
    try:
        if "." in text:
            raise ValueError(text)
        return units.quantity_bytes(text)
    except ValueError:
        raise ValueError(
            f"{validation.shown(text)} is not a whole quantity like 10Gi or 81559Mi"
        ) from None


Quantity = Annotated[str, Field(min_length=1, max_length=32)]


class MigEngines(_Model):
    """What one MIG partition (or the whole GPU) has besides memory: NVIDIA publishes each as a
    capacity of the device and, under partitionable devices, as a counter it consumes."""

    multiprocessors: int = Field(ge=0)
    copy_engines: int = Field(ge=0)
    decoders: int = Field(ge=0)
    encoders: int = Field(default=0, ge=0)
    jpeg_engines: int = Field(default=0, ge=0)
    ofa_engines: int = Field(default=0, ge=0)


class MigProfile(MigEngines):
    """One MIG profile (`nvidia-smi mig -lgip`): its resources, how many of the GPU's memory
    slices one instance takes, and where an instance may start (placement start indexes)."""

    name: str = Field(min_length=1, max_length=20, description="e.g. 1g.10gb")
    id: int = Field(ge=0, le=99, description="GPU instance profile id, e.g. 19 for 1g.10gb")
    memory: Quantity
    memory_slices: int = Field(ge=1)
    placements: list[int] = Field(min_length=1)


class MigModel(MigEngines):
    """The GPU as MIG sees it: its engines and memory slices in total, and the profiles it can
    be cut into. Partitions and the full GPU consume these as shared counters, so the
    scheduler never over-commits a GPU (KEP-4815, the NVIDIA driver's dynamic MIG)."""

    memory_slices: int = Field(ge=1, le=16)
    profiles: list[MigProfile] = Field(min_length=1)


_FRACTION = re.compile(r"^(\d{1,6})(?:\.(\d{1,3})|(m))?\Z")


def milli(text: str) -> int:
    """A small quantity with at most milli precision (`250m`, `0.25`, `1`) in milli-units."""
    m = _FRACTION.match(text)
    if not m:
        raise ValueError(f"{validation.shown(text)} is not a quantity like 250m, 0.5 or 1")
    whole, decimals, suffix = m.groups()
    if suffix:
        return int(whole)
    return int(whole) * 1000 + int((decimals or "").ljust(3, "0"))


class ComputeShare(_Model):
    """A shared GPU's compute as a fraction of one GPU (capacity `compute: 1`), taken in
    milli-unit steps: the range DRAFractionalCapacityRange (1.37) lets a policy express."""

    default: Quantity = Field(default="100m", description="compute a claim takes by default")
    min: Quantity = "100m"
    max: Quantity = "1"
    step: Quantity = "100m"


class SharedModel(_Model):
    """Consumable capacity (KEP-5075): each GPU is one device that many claims may share
    (`allowMultipleAllocations`), each taking some of its `memory` by the request policy."""

    memory_default: Quantity = Field(
        default="1Gi", description="memory a claim takes when it asks for none"
    )
    memory_min: Quantity = "1Gi"
    memory_max: Quantity | None = Field(default=None, description="most memory one claim takes")
    memory_step: Quantity = Field(default="1Gi", description="requests round up to a multiple")
    compute: ComputeShare | None = None
    """Also publish `compute: 1` with this fractional range (each claim takes `default` unless
    it asks for more)."""


class GpuModel(_Model):
    """One GPU model, published as the NVIDIA GPU DRA driver does (driver `gpu.nvidia.com`).

    By default each GPU is one whole device. With `mig`, each GPU is partitionable: a full-GPU
    device plus one device per MIG profile placement, all consuming the GPU's counters. With
    `shared`, each GPU is one device with consumable memory capacity."""

    product_name: AttrString
    brand: AttrString = "Nvidia"
    architecture: AttrString
    addressing_mode: AttrString = "None"
    cuda_compute_capability: str
    driver_version: str
    cuda_driver_version: str
    memory: str = Field(description="capacity `memory` as a canonical Quantity, e.g. 81559Mi")
    mig: MigModel | None = None
    shared: SharedModel | None = None

    @model_validator(mode="after")
    def _versions(self) -> GpuModel:
        for field in ("cuda_compute_capability", "driver_version", "cuda_driver_version"):
            value = getattr(self, field)
            if not _VERSION.match(value):
                raise ValueError(
                    f"{to_camel(field)}: {validation.shown(value)} is not a semantic version x.y.z"
                )
        memory = _bytes("memory", self.memory)
        if self.mig and self.shared:
            raise ValueError("shared: a GPU is either MIG-partitioned or shared, not both")
        if self.mig:
            _check_mig(self.mig, memory)
        if self.shared:
            _check_shared(self.shared, memory)
        return self


def _bytes(field: str, text: str) -> int:
    try:
        return quantity_bytes(text)
    except ValueError as e:
        raise ValueError(f"{field}: {e}") from None


_ENGINES = tuple(to_camel(f) for f in MigEngines.model_fields)


def _check_mig(mig: MigModel, memory: int) -> None:
    """Every profile must fit its GPU: a partition that could never exist would be refused by
    nothing until a claim for it stayed Pending."""
    names = [p.name for p in mig.profiles]
    if len(set(names)) != len(names):
        raise ValueError("mig.profiles: two profiles share a name")
    for i, prof in enumerate(mig.profiles):
        where = f"mig.profiles[{i}]"
        if _bytes(f"{where}.memory", prof.memory) > memory:
            raise ValueError(f"{where}.memory: {prof.memory} is more than the GPU has")
        for field in MigEngines.model_fields:
            if getattr(prof, field) > getattr(mig, field):
                raise ValueError(
                    f"{where}.{to_camel(field)}: {getattr(prof, field)} is more than the GPU's "
                    f"{getattr(mig, field)}"
                )
        for start in prof.placements:
            if start < 0 or start + prof.memory_slices > mig.memory_slices:
                raise ValueError(
                    f"{where}.placements: an instance at {start} taking {prof.memory_slices} "
                    f"memory slices runs past the GPU's {mig.memory_slices}"
                )
        if not _DNS_LABEL.match(mig_device_suffix(prof.name)):
            raise ValueError(f"{where}.name: {validation.shown(prof.name)} cannot name a device")


def _check_shared(shared: SharedModel, memory: int) -> None:
    step = _bytes("shared.memoryStep", shared.memory_step)
    low = _bytes("shared.memoryMin", shared.memory_min)
    default = _bytes("shared.memoryDefault", shared.memory_default)
    if step <= 0 or low + step > memory:
        raise ValueError("shared.memoryStep: memoryMin + memoryStep must fit the GPU's memory")
    if not low <= default <= memory or default % step:
        raise ValueError(
            "shared.memoryDefault: must lie between memoryMin and the GPU's memory and be a "
            "multiple of memoryStep"
        )
    if shared.memory_max is not None:
        most = _bytes("shared.memoryMax", shared.memory_max)
        if not default <= most <= memory or (most - low) % step:
            raise ValueError(
                "shared.memoryMax: must lie between memoryDefault and the GPU's memory, a "
                "whole number of memorySteps above memoryMin"
            )
    if shared.compute is not None:
        _check_compute(shared.compute)


def _check_compute(c: ComputeShare) -> None:
    """The API server's rules for a range (min <= default <= max <= capacity, default and max
    whole steps above min, min + step within capacity), in milli-units against `compute: 1`."""
    try:
        default, low, most, step = (milli(v) for v in (c.default, c.min, c.max, c.step))
    except ValueError as e:
        raise ValueError(f"shared.compute: {e}") from None
    if step <= 0 or low + step > 1000 or not low <= default <= most <= 1000:
        raise ValueError(
            "shared.compute: needs min <= default <= max <= 1 and min + step <= 1 (one GPU)"
        )
    if (default - low) % step or (most - low) % step:
        raise ValueError("shared.compute: default and max must be whole steps above min")


def mig_device_suffix(profile: str) -> str:
    """`1g.10gb` -> `1g10gb`, as the NVIDIA driver names MIG devices (no dots in a DNS label)."""
    return re.sub(r"[^a-z0-9-]", "-", profile.lower().replace(".", "")).strip("-")


class NicModel(_Model):
    """One NIC model, published as DRANet does (driver `dra.net`, attributes `dra.net/*`)."""

    rdma: bool
    pci_vendor: AttrString
    pci_device: AttrString
    mtu: int = Field(default=1500, ge=68, le=65535)
    encapsulation: AttrString = "ether"
    if_name: str = Field(
        default="eth{index}",
        description="interface name template; {index} is the NIC's index on the host, "
        "{bus} its PCI bus number in hex",
    )
    rdma_device: str = Field(default="mlx5_{index}", description="RDMA device name template")
    sriov: bool = False
    ipv4: bool = Field(default=True, description="publish a (made-up) IPv4 address")


class PcieRoot(_Model):
    """One PCIe root complex and what hangs below it."""

    bus: int = Field(ge=0, le=0xF0, description="root bus number; devices take the next buses")
    numa_node: int = Field(default=0, ge=0, le=63)
    gpus: int = Field(default=0, ge=0)
    nics: int = Field(default=0, ge=0)
    nic: str | None = Field(default=None, description="NIC model name; default: the first")


class NodeShape(_Model):
    """The Node object's capacity (also its allocatable) and labels."""

    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"
    ephemeral_storage: str = "100Gi"
    labels: dict[str, str] = Field(default_factory=dict)


class Profile(_Model):
    name: str = Field(min_length=1, max_length=63)
    description: str = ""
    node: NodeShape = Field(default_factory=NodeShape)
    gpu: GpuModel | None = None
    nics: dict[str, NicModel] = Field(default_factory=dict)
    roots: list[PcieRoot] = Field(default_factory=list)
    gce_topology: bool = Field(
        default=False,
        description="NICs also carry gce.dra.net/block, subblock and host, as DRANet on GCE",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        if not _DNS_LABEL.match(self.name):
            raise ValueError(f"name: {validation.shown(self.name)} is not a DNS label")
        if self.gpu_count and self.gpu is None:
            raise ValueError("roots: GPUs are placed but `gpu` (the GPU model) is missing")
        if self.nic_count and not self.nics:
            raise ValueError("roots: NICs are placed but `nics` (the NIC models) is empty")
        for i, root in enumerate(self.roots):
            if root.nic is not None and root.nic not in self.nics:
                raise ValueError(f"roots[{i}].nic: unknown NIC model {validation.shown(root.nic)}")
            if root.bus + root.gpus + root.nics > 0xFF:
                raise ValueError(f"roots[{i}]: devices would run past PCI bus 0xff")
        buses = [r.bus for r in self.roots]
        if len(set(buses)) != len(buses):
            raise ValueError("roots: two roots share a bus number")
        # The real drivers publish one slice per node; past 128 devices it would not validate.
        for what, count in (("GPUs", self.gpu_count), ("NICs", self.nic_count)):
            if count > MAX_DEVICES_PER_SLICE:
                raise ValueError(
                    f"roots: {count} {what} in one ResourceSlice; the API allows "
                    f"{MAX_DEVICES_PER_SLICE} devices per slice"
                )
        return self

    @property
    def gpu_count(self) -> int:
        return sum(r.gpus for r in self.roots)

    @property
    def nic_count(self) -> int:
        return sum(r.nics for r in self.roots)

    @property
    def numa_nodes(self) -> int:
        return len({r.numa_node for r in self.roots}) or 1

    def nic_model_name(self, root: PcieRoot) -> str:
        return root.nic or next(iter(self.nics))


def parse(data: Any, source: str) -> Profile:
    """A validated profile from decoded YAML, or a one-line ProfileError naming the field."""
    try:
        return Profile.model_validate(data)
    except ValidationError as e:
        raise ProfileError(f"profile {source}: {validation.one_line(e)}") from None


def builtin() -> dict[str, Profile]:
    """The profiles shipped in `fleet/profiles/`."""
    found: dict[str, Profile] = {}
    for entry in sorted(resources.files("fleet").joinpath("profiles").iterdir(), key=str):
        if entry.name.endswith((".yaml", ".yml")):
            profile = parse(yaml.safe_load(entry.read_text()), entry.name)
            found[profile.name] = profile
    return found


def load_paths(paths: Iterable[str | Path]) -> dict[str, Profile]:
    """Profiles from YAML files or directories of them (one profile per YAML document)."""
    found: dict[str, Profile] = {}
    for raw in paths:
        path = Path(raw)
        try:
            files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        except OSError as e:  # a name too long, a directory not readable
            raise ProfileError(f"cannot read profiles from {raw}: {e.strerror or e}") from None
        for file in files:
            try:
                docs = list(yaml.safe_load_all(file.read_text()))
            except (OSError, yaml.YAMLError) as e:
                raise ProfileError(
                    f"cannot read profile file {file}: {validation.syntax_error(e)}"
                ) from None
            for doc in docs:
                if doc is not None:
                    profile = parse(doc, str(file))
                    found[profile.name] = profile
    return found


def catalogue(
    extra: Mapping[str, Profile] | None = None, inline: Iterable[Profile] = ()
) -> dict[str, Profile]:
    """Built-ins, overridden by `extra` (files), overridden by `inline` (the spec's own)."""
    found = builtin()
    found.update(extra or {})
    found.update({p.name: p for p in inline})
    return found


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
