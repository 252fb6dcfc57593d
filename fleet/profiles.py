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
from testbed import validation

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


class GpuModel(_Model):
    """One GPU model, published as the NVIDIA GPU DRA driver does (driver `gpu.nvidia.com`)."""

    product_name: AttrString
    brand: AttrString = "Nvidia"
    architecture: AttrString
    addressing_mode: AttrString = "None"
    cuda_compute_capability: str
    driver_version: str
    cuda_driver_version: str
    memory: str = Field(description="capacity `memory` as a canonical Quantity, e.g. 81559Mi")

    @model_validator(mode="after")
    def _versions(self) -> GpuModel:
        for field in ("cuda_compute_capability", "driver_version", "cuda_driver_version"):
            value = getattr(self, field)
            if not _VERSION.match(value):
                raise ValueError(
                    f"{to_camel(field)}: {validation.shown(value)} is not a semantic version x.y.z"
                )
        return self


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
        files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        for file in files:
            try:
                docs = list(yaml.safe_load_all(file.read_text()))
            except (OSError, yaml.YAMLError) as e:
                raise ProfileError(f"cannot read profile file {file}: {_first_line(e)}") from None
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
