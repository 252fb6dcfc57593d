"""The fleet spec: node pools of hardware profiles, topology, labels and taints.

One shape for the file `fleet apply -f` reads and the `Fleet` custom resource `fleet serve`
watches: `{apiVersion, kind: Fleet, metadata: {name}, spec: FleetSpec}`. A bare FleetSpec
mapping (with an optional `name`) is accepted in files too. Validation errors become one line
that names the field.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from fleet import limits
from fleet.profiles import Profile, ProfileError
from testbed import documents, validation, vocab

DEFAULT_NAME = "fleet"
API_VERSION = f"{vocab.TESTBED_GROUP}/{vocab.FLEET_CRD_VERSION}"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class SpecError(ValueError):
    """A spec that cannot be used; the message is one line naming the field."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


def check_label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not _QUALIFIED.match(key) or len(name) > 63 or len(prefix) > 253:
        raise ValueError(f"{validation.shown(key)} is not a valid label key")
    return key


def check_label_value(value: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(
            f"{validation.shown(value)} is not a valid label value (63 characters at most)"
        )
    return value


def _check_labels(labels: dict[str, str]) -> dict[str, str]:
    for k, v in labels.items():
        check_label_key(k)
        check_label_value(v)
    return labels


class _TaintBase(_Model):
    """A key, a value and an effect, checked as label keys and values, as the API has them."""

    key: str
    value: str = ""
    effect: str

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        return check_label_key(v)

    @field_validator("value")
    @classmethod
    def _value(cls, v: str) -> str:
        return check_label_value(v)

    def to_api(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


class Taint(_TaintBase):
    """A node taint."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class DeviceTaint(_TaintBase):
    """A taint on a chosen share of the fleet's physical GPUs (all devices of a chosen GPU:
    the whole GPU, its MIG partitions, its shared device), as a driver marks failing hardware.
    NoSchedule keeps new claims off; NoExecute also evicts pods whose claims use them."""

    key: str = vocab.DEVICE_TAINT_KEY
    effect: Literal["NoSchedule", "NoExecute", "None"] = "NoSchedule"
    share: float = Field(gt=0, le=1, description="fraction of the GPUs in scope, chosen by seed")
    pools: list[str] = Field(default_factory=list, description="only these pools (default all)")


KWOK_TAINT = Taint(key=vocab.KWOK_TAINT_KEY, value=vocab.KWOK_TAINT_VALUE, effect="NoSchedule")


class Topology(_Model):
    """Hosts fill racks, racks fill blocks, per pool, in node-index order.

    The labels are what Kueue TAS and KAI-Scheduler read as levels (block > rack > hostname).
    """

    hosts_per_rack: int = Field(default=8, ge=1)
    racks_per_block: int = Field(default=4, ge=1)
    block_label: str = vocab.LABEL_BLOCK
    rack_label: str = vocab.LABEL_RACK

    @field_validator("block_label", "rack_label")
    @classmethod
    def _keys(cls, v: str) -> str:
        return check_label_key(v)


class Pool(_Model):
    name: str = Field(min_length=1, max_length=40)
    profile: str = Field(min_length=1)
    count: int = Field(ge=0, le=100_000)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] | None = Field(
        default=None, description="replaces the fleet's taints for this pool when set"
    )
    capacity: dict[str, str] = Field(
        default_factory=dict, description="node capacity overrides, e.g. {cpu: '96'}"
    )
    extended_resources: bool | None = Field(
        default=None,
        description="overrides the fleet's extendedResources for this pool when set (a pool "
        "without nvidia.com/gpu capacity has such pods served by DRA)",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _DNS_LABEL.match(v):
            raise ValueError(f"{validation.shown(v)} is not a DNS label (lower case, digits, '-')")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_labels(v)


class FleetSpec(_Model):
    seed: int = Field(default=0, ge=0, description="same spec and seed, same objects")
    pools: list[Pool] = Field(min_length=1)
    topology: Topology = Field(default_factory=Topology)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=lambda: [KWOK_TAINT])
    extended_resources: bool = Field(
        default=False,
        description="also advertise GPUs as the device-plugin resource nvidia.com/gpu",
    )
    kwok_shards: int = Field(
        default=1,
        ge=1,
        le=64,
        description="label nodes round-robin with testbed.dra.io/kwok-shard=0..N-1 so N kwok "
        "controllers can each manage one shard",
    )
    profiles: list[Profile] = Field(
        default_factory=list, description="inline hardware profiles, besides the built-in ones"
    )
    device_taints: list[DeviceTaint] = Field(
        default_factory=list,
        max_length=limits.MAX_TAINTS_PER_DEVICE,
        description="taint a share of the GPUs (simulated failures); `fleet taint` edits these",
    )

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_labels(v)

    @field_validator("annotations")
    @classmethod
    def _annotations(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            check_label_key(key)  # annotation keys follow the label-key rules
        size = limits.annotations_bytes(v)
        if size > limits.MAX_ANNOTATIONS_BYTES:
            raise ValueError(
                f"{limits.human(size)} of annotations on every node; the API allows "
                f"{limits.human(limits.MAX_ANNOTATIONS_BYTES)} per object"
            )
        return v

    @model_validator(mode="after")
    def _unique_pools(self) -> FleetSpec:
        counts = Counter(p.name for p in self.pools)  # not list.count: quadratic in pools
        dupes = sorted(n for n, k in counts.items() if k > 1)
        if dupes:
            raise ValueError(f"pools: duplicate pool name {validation.shown(dupes[0])}")
        for i, taint in enumerate(self.device_taints):
            for name in taint.pools:
                if name not in counts:
                    raise ValueError(
                        f"deviceTaints[{i}].pools: no pool named {validation.shown(name)}"
                    )
        keys = [(t.key, t.value, t.effect) for t in self.device_taints]
        if len(set(keys)) != len(keys):
            raise ValueError("deviceTaints: two entries with the same key, value and effect")
        return self

    @property
    def total_nodes(self) -> int:
        return sum(p.count for p in self.pools)


class Fleet(_Model):
    """A named fleet: what `fleet apply` reconciles and what a Fleet object holds."""

    name: str = DEFAULT_NAME
    spec: FleetSpec

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > 40 or not _DNS_LABEL.match(v):
            raise ValueError(f"{validation.shown(v)} is not a DNS label of at most 40 characters")
        return v

    def to_object(self, *, inline: Sequence[Profile] = ()) -> dict[str, Any]:
        """As a Fleet custom resource (what `kubectl apply -f` takes); `inline` profiles join
        (and override) the spec's own, so the object stands alone without profile files."""
        spec = self.spec
        if inline:
            names = {p.name for p in inline}
            own = [p for p in spec.profiles if p.name not in names]
            spec = spec.model_copy(update={"profiles": [*own, *inline]})
        return {
            "apiVersion": API_VERSION,
            "kind": vocab.FLEET_KIND,
            "metadata": {"name": self.name},
            "spec": spec.model_dump(mode="json", by_alias=True, exclude_defaults=True),
        }


def from_data(data: Any, *, name: str | None = None, source: str = "spec") -> Fleet:
    """A Fleet from a decoded Fleet object or bare spec mapping; `name` overrides."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping (a Fleet object or a fleet spec)")
    if "spec" in data:
        kind = data.get("kind", vocab.FLEET_KIND)
        if kind != vocab.FLEET_KIND:
            raise SpecError(
                f"{source}: kind is {validation.shown(kind)}, expected {vocab.FLEET_KIND}"
            )
        meta = data.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise SpecError(f"{source}: metadata: expected a mapping")
        body = {"name": name or meta.get("name") or DEFAULT_NAME, "spec": data["spec"]}
    else:
        spec = dict(data)
        body = {"name": name or spec.pop("name", None) or DEFAULT_NAME, "spec": spec}
    try:
        return Fleet.model_validate(body)
    except ValidationError as e:
        raise SpecError(f"{source}: {validation.one_line(e)}") from None


def load(path: str | Path, *, name: str | None = None) -> Fleet:
    """A Fleet from a YAML or JSON file (`-` reads stdin)."""
    try:
        data = documents.load(path, json_suffix=True)
    except documents.DocumentError as e:
        raise SpecError(str(e)) from None
    return from_data(data, name=name, source=str(path))


def for_profile(
    profile: str, nodes: int, *, name: str = DEFAULT_NAME, seed: int = 0, kwok_shards: int = 1
) -> Fleet:
    """The one-pool fleet of `fleet apply --profile P --nodes N` (pool named after the profile)."""
    return from_data(
        {
            "name": name,
            "seed": seed,
            "kwokShards": kwok_shards,
            "pools": [{"name": profile, "profile": profile, "count": nodes}],
        },
        source="--profile/--nodes",
    )


__all__ = [
    "DEFAULT_NAME",
    "DeviceTaint",
    "Fleet",
    "FleetSpec",
    "Pool",
    "ProfileError",
    "SpecError",
    "Taint",
    "Topology",
    "for_profile",
    "from_data",
    "load",
]
