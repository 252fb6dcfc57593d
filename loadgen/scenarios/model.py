"""Scenario models: what to create, in which phases, with which claims (validated at the edge).

A scenario is a list of phases run one after another. A phase creates either bare pods
(optionally in waves) or Jobs (optionally gangs of several pods); every pod asks for the
devices its `Claim` describes. Counts may be fixed or sized from the fleet at run time
(`fill`: a fraction of its GPUs; `free`: whatever the earlier fill phases left).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from loadgen import plan
from testbed import validation, vocab

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*\Z")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_QUANTITY = re.compile(r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|k|M|G|T)?\Z")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?\Z")
MAX_DURATION = 365 * 86400.0
"""Longest duration a scenario may give (run times, timeouts): a year is already absurd."""
MAX_COUNT = 1_000_000
"""Most pods or Jobs one phase may create: far past any fleet, short of a runaway plan."""


def parse_duration(value: object) -> float:
    """Seconds from `30s`, `500ms`, `5m`, `1h` or a bare number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(min(value, 2 * MAX_DURATION))  # a 400-digit int overflows a float
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    else:
        raise ValueError(f"{validation.shown(value)} is not a duration like 30s, 500ms, 5m or 1h")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    if not seconds <= MAX_DURATION:  # also NaN and infinity, which no timer or kwok takes
        raise ValueError(f"a duration of at most {MAX_DURATION / 86400:.0f} days, please")
    return seconds


def go_duration(seconds: float) -> str:
    """The Go duration string kwok's stage annotations expect."""
    return f"{round(seconds * 1000)}ms"


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Claim(_Model):
    """What each pod asks for. `gpus: 0` means no devices at all."""

    gpus: int = Field(1, ge=0, le=64)
    """GPUs per pod."""
    nics: int = Field(0, ge=0, le=64)
    """RDMA NICs per pod; with `align` each GPU gets its own NIC on the same PCIe root."""
    align: bool = True
    """Pair GPU i with NIC i by `matchAttribute: resource.kubernetes.io/pcieRoot`."""
    min_memory: str | None = None
    """Only GPUs with at least this much memory (a CEL selector), e.g. `40Gi`."""
    device_plugin: bool = False
    """Request the extended resource `nvidia.com/gpu` instead of a DRA claim (comparison)."""
    gpu_class: str = vocab.CLASS_GPU
    nic_class: str = vocab.CLASS_RDMA_NIC

    @model_validator(mode="after")
    def _consistent(self) -> Claim:
        if self.min_memory is not None and not _QUANTITY.match(self.min_memory):
            raise ValueError(
                f"min_memory {validation.shown(self.min_memory)} is not a quantity like 40Gi"
            )
        if self.device_plugin and (self.nics or self.min_memory):
            raise ValueError("device_plugin requests GPUs only (no nics, no min_memory)")
        if self.nics and self.align and self.nics != self.gpus:
            raise ValueError("aligned NICs pair 1:1 with GPUs: set nics equal to gpus")
        if self.nics and not self.gpus and self.align:
            raise ValueError("align needs GPUs to align the NICs with")
        return self

    @property
    def uses_dra(self) -> bool:
        return not self.device_plugin and (self.gpus > 0 or self.nics > 0)

    @property
    def key(self) -> str:
        """A short DNS-safe name for the ResourceClaimTemplate that serves this claim."""
        parts = [f"gpu{self.gpus}"]
        if self.nics:
            parts.append(f"nic{self.nics}" + ("-aligned" if self.align else ""))
        if self.min_memory:
            parts.append("mem" + self.min_memory.lower().replace(".", "p"))
        if self.device_plugin:
            parts.insert(0, "dp")
        if (self.gpu_class, self.nic_class) != (vocab.CLASS_GPU, vocab.CLASS_RDMA_NIC):
            digest = hashlib.sha256(f"{self.gpu_class}|{self.nic_class}".encode()).hexdigest()
            parts.append(digest[:8])  # other DeviceClasses: a different template
        return "-".join(parts)


class Phase(_Model):
    """One step of a scenario: a batch of pods or Jobs created at a controlled rate."""

    name: str
    kind: Literal["pods", "jobs"]
    count: int = Field(0, ge=0, le=MAX_COUNT)
    """Pods (kind pods) or Jobs (kind jobs); computed when `sizing` is not `fixed`."""
    sizing: Literal["fixed", "fill", "free"] = "fixed"
    fill_fraction: float = Field(0.9, gt=0, le=1)
    wave_size: int | None = Field(None, ge=1)
    """Pods only: create in waves of this size, each after the previous is all Running."""
    parallelism: int = Field(1, ge=1, le=1000)
    completions: int = Field(1, ge=1, le=100000)
    gang: bool = False
    """Jobs only: label every pod with its Job as a gang (placement span is reported)."""
    run_time: Duration | None = None
    """How long each pod runs before kwok completes it (Jobs only; bare pods run on)."""
    qps: float | None = Field(None, gt=0)
    arrival: plan.Arrival | None = None
    claim: Claim = Claim()
    wait: Literal["running", "complete", "created", "settled"] = "running"
    """Before the next phase: all pods Running, all pods Succeeded (Jobs), nothing, or every
    pod either scheduled or found unschedulable by the scheduler (a placeability probe: how
    many fit, not how fast)."""
    timeout: Duration = 600.0

    @model_validator(mode="after")
    def _consistent(self) -> Phase:
        if not _NAME.match(self.name):
            raise ValueError(
                f"phase name {validation.shown(self.name)} must be a DNS label of <= 32 chars"
            )
        if self.sizing == "fixed" and self.count < 1:
            raise ValueError("count must be >= 1")
        if self.kind == "pods":
            if self.parallelism != 1 or self.completions != 1 or self.gang:
                raise ValueError("parallelism, completions and gang apply to jobs only")
            if self.wait == "complete":
                raise ValueError("bare pods never complete: use wait running or created")
        elif self.wave_size is not None:
            raise ValueError("wave_size applies to pods only")
        if self.sizing != "fixed" and (self.claim.gpus < 1 or self.claim.device_plugin):
            raise ValueError("fill/free sizing needs DRA GPU claims")
        return self

    @property
    def pods(self) -> int:
        """Pods this phase creates in total."""
        return self.count * (self.completions if self.kind == "jobs" else 1)

    @property
    def concurrent(self) -> int:
        """Pods of one object (pod or Job) that run at the same time."""
        return min(self.parallelism, self.completions) if self.kind == "jobs" else 1

    @property
    def gpus_held(self) -> int:
        """GPUs this phase keeps allocated while all of its concurrent pods run."""
        return self.count * self.concurrent * self.claim.gpus


class Scenario(_Model):
    name: str
    description: str = ""
    phases: list[Phase] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_phases(self) -> Scenario:
        names = [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise ValueError("phase names must be unique")
        return self

    @property
    def needs_fleet_size(self) -> bool:
        return any(p.sizing != "fixed" for p in self.phases)

    @property
    def claims(self) -> list[Claim]:
        """The distinct DRA claims of all phases (one ResourceClaimTemplate each)."""
        seen: dict[str, Claim] = {}
        for p in self.phases:
            if p.claim.uses_dra:
                seen.setdefault(p.claim.key, p.claim)
        return list(seen.values())


def resolve(scenario: Scenario, fleet_gpus: int) -> Scenario:
    """Fix the counts of `fill` and `free` phases for a fleet of `fleet_gpus` GPUs."""
    if not scenario.needs_fleet_size:
        return scenario
    held = 0
    phases: list[Phase] = []
    for p in scenario.phases:
        per_object = p.concurrent * p.claim.gpus
        if p.sizing == "fill":
            count = math.floor(fleet_gpus * p.fill_fraction) // per_object
        elif p.sizing == "free":
            count = max(0, fleet_gpus - held) // per_object
        else:
            count = p.count
        if count < 1:
            raise ValueError(
                f"phase {p.name}: a fleet of {fleet_gpus} GPUs leaves no room for its pods"
            )
        resolved = p.model_copy(update={"count": count, "sizing": "fixed"})
        if p.wait != "complete":  # its pods keep their GPUs while later phases run
            held += resolved.gpus_held
        phases.append(resolved)
    return scenario.model_copy(update={"phases": phases})
