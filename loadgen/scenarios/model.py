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
from testbed import units, validation, vocab

_MIG_PROFILE = re.compile(r"^\d+g\.\d+gb(\+me)?\Z")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?\Z")
MAX_DURATION = 365 * 86400.0
"""Longest duration a scenario may give (run times, timeouts): a year is already absurd."""
MAX_COUNT = 1_000_000
"""Most pods or Jobs one phase may create: far past any fleet, short of a runaway plan."""


def parse_duration(value: object) -> float:
    """Seconds from a Go duration (`30s`, `500ms`, `5m`, `1m30s`) or a bare number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(min(value, 2 * MAX_DURATION))  # a 400-digit int overflows a float
    elif isinstance(value, str):
        try:
            seconds = units.parse_duration(value.replace(" ", ""))
        except ValueError:
            raise ValueError(
                f"{validation.shown(value)} is not a duration like 30s, 500ms, 5m or 1m30s"
            ) from None
    else:
        raise ValueError(f"{validation.shown(value)} is not a duration like 30s, 500ms, 5m or 1h")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    if not seconds <= MAX_DURATION:  # also NaN and infinity, which no timer or kwok takes
        raise ValueError(f"a duration of at most {MAX_DURATION / 86400:.0f} days, please")
    return seconds


def _is_quantity(text: str) -> bool:
    """A Kubernetes quantity of memory (`40Gi`, `1e9`, `1Pi`), not negative."""
    try:
        units.quantity_bytes(text)
    except ValueError:
        return False
    return True


def go_duration(seconds: float) -> str:
    """The Go duration string kwok's stage annotations expect."""
    return f"{round(seconds * 1000)}ms"


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Alternative(_Model):
    """One choice of a `firstAvailable` list: this many GPUs (of this class, else the
    claim's), each with at least `min_memory`."""

    gpus: int = Field(1, ge=1, le=64)
    gpu_class: str | None = None
    min_memory: str | None = None

    @model_validator(mode="after")
    def _quantity(self) -> Alternative:
        if self.min_memory is not None and not _is_quantity(self.min_memory):
            raise ValueError(
                f"min_memory {validation.shown(self.min_memory)} is not a quantity like 40Gi"
            )
        return self


_ALTERNATIVE = re.compile(r"^\s*(\d+)\s*(?:>=\s*(\S+?))?\s*\Z")


def parse_alternatives(value: object) -> object:
    """`first_available` from the command line: `1>=80Gi,2` is one GPU of at least 80Gi,
    else two of any size. Lists (scenario files) pass through to validation."""
    if not isinstance(value, str):
        return value
    out = []
    for part in value.split(","):
        m = _ALTERNATIVE.match(part)
        if not m:
            raise ValueError(
                f"first_available {validation.shown(value)}: expected choices like 1>=80Gi,2"
            )
        out.append({"gpus": int(m.group(1)), "min_memory": m.group(2)})
    return out


def compute_milli(text: str) -> int | None:
    """A positive compute fraction in whole milli-units (`250m` -> 250, `0.5` -> 500, `1` ->
    1000); None if it is no quantity, not positive or finer than 1m (pure)."""
    try:
        value = units.parse_quantity(text) * 1000
    except ValueError:
        return None
    return int(value) if value > 0 and value.denominator == 1 else None


class Claim(_Model):
    """What each pod asks for. `gpus: 0` means no devices at all."""

    gpus: int = Field(1, ge=0, le=64)
    """GPUs per pod."""
    nics: int = Field(0, ge=0, le=64)
    """RDMA NICs per pod; with `align` each GPU gets its own NIC on the same PCIe root."""
    align: bool = True
    """Pair GPU i with NIC i by `matchAttribute: resource.kubernetes.io/pcieRoot`."""
    numa: bool = False
    """All of the claim's GPUs and NICs on one NUMA node, by the in-tree constraint
    `matchAttribute: resource.kubernetes.io/numaNode` across the GPU and NIC requests (the
    standard attribute of 1.37): the scheduler refuses a node where that is impossible."""
    derived: bool = False
    """With `numa`: align by a derived attribute (DRADerivedAttributes, alpha in 1.37) instead,
    as a claim across two drivers that name NUMA each their own way must: every GPU request
    maps the NVIDIA driver's NUMA attribute (the standard name, the only one it publishes),
    every NIC request DRANet's `dra.net/numaNode`, to `derived/numaNode`, which the constraint
    matches. Refused before anything is created where the gate is off."""
    min_memory: str | None = None
    """Only GPUs with at least this much memory (a CEL selector), e.g. `40Gi`."""
    device_plugin: bool = False
    """Ask for the extended resource `nvidia.com/gpu: N` with no claim, as pods written for
    the device plugin do (DRA serves them when a DeviceClass names that resource)."""
    gpu_class: str = vocab.CLASS_GPU
    nic_class: str = vocab.CLASS_RDMA_NIC
    all_gpus: bool = False
    """`allocationMode: All`: every matching GPU of the node the pod lands on (`gpus` is
    then the count the pre-flight check assumes, a whole node's by convention)."""
    memory: str | None = None
    """Per GPU, a capacity request (`capacity.requests.memory`, e.g. `10Gi`): a share of a
    GPU that allows multiple allocations (consumable capacity)."""
    compute: str | None = None
    """Per GPU, a fraction of a shared GPU's compute (`capacity.requests.compute`, milli-units:
    `250m`, `0.5`), as a fractional profile publishes it (dgx-h100-fractional: 100m to 1 in
    100m steps; DRAFractionalCapacityRange). The allocator rounds a request up to the policy's
    next step and refuses one above its max."""
    footprint: str | None = None
    """GPU memory the pod's workload uses on each of its GPUs (e.g. `10G`), for the report's
    utilization figures (memory requested vs what the allocations take); a capacity request's
    `memory` when unset. It changes no request."""
    shared_by: int = Field(1, ge=1, le=1000)
    """Pods per claim: above 1, one ResourceClaim (not a template) serves this many pods."""
    admin_access: bool = False
    """`adminAccess: true` (monitoring): devices are granted whatever else holds them; the
    run's namespace gets the admin-access label this needs."""
    mig_profile: str | None = None
    """Each GPU is a MIG partition of this profile (e.g. `1g.10gb`), from `mig_class`."""
    mig_class: str = vocab.CLASS_MIG
    first_available: Annotated[
        list[Alternative], BeforeValidator(parse_alternatives), Field(max_length=8)
    ] = []
    """Prioritized alternatives (`firstAvailable`): the first that fits is allocated, e.g.
    one 80Gi GPU, else two smaller ones. Replaces the GPU request of `gpus`."""

    @model_validator(mode="after")
    def _consistent(self) -> Claim:
        if self.min_memory is not None and not _is_quantity(self.min_memory):
            raise ValueError(
                f"min_memory {validation.shown(self.min_memory)} is not a quantity like 40Gi"
            )
        if self.device_plugin and (self.nics or self.min_memory):
            raise ValueError("device_plugin requests GPUs only (no nics, no min_memory)")
        if self.nics and self.align and self.nics != self.gpus:
            raise ValueError("aligned NICs pair 1:1 with GPUs: set nics equal to gpus")
        if self.nics and not self.gpus and self.align:
            raise ValueError("align needs GPUs to align the NICs with")
        if self.derived and not self.numa:
            raise ValueError("derived is a way of numa alignment: set numa too")
        if self.numa and not (self.gpus and self.nics):
            raise ValueError("numa aligns GPUs with NICs: set gpus and nics >= 1")
        if self.memory is not None and not _is_quantity(self.memory):
            raise ValueError(f"memory {validation.shown(self.memory)} is not a quantity like 10Gi")
        if self.compute is not None and compute_milli(self.compute) is None:
            raise ValueError(
                f"compute {validation.shown(self.compute)} is not a positive fraction of a GPU "
                "in milli-units like 250m or 0.5"
            )
        if self.footprint is not None and not _is_quantity(self.footprint):
            raise ValueError(
                f"footprint {validation.shown(self.footprint)} is not a quantity like 10G"
            )
        if self.mig_profile is not None:
            if not _MIG_PROFILE.match(self.mig_profile):
                raise ValueError(
                    f"mig_profile {validation.shown(self.mig_profile)} is not a MIG profile "
                    "like 1g.10gb"
                )
            if (
                self.all_gpus
                or self.memory
                or self.compute
                or self.first_available
                or self.min_memory
            ):
                raise ValueError(
                    "mig_profile names the partition: no all_gpus, memory, compute, "
                    "first_available or min_memory with it"
                )
        shaped = (
            self.mig_profile is not None
            or self.all_gpus
            or self.memory is not None
            or self.compute is not None
            or self.shared_by > 1
            or self.admin_access
            or bool(self.first_available)
        )
        if shaped and self.device_plugin:
            raise ValueError("device_plugin pods have no claim to shape")
        if shaped and not self.gpus:
            raise ValueError("claim shapes apply to GPU claims: set gpus >= 1")
        if shaped and self.numa:
            raise ValueError("numa takes an exact count of whole GPUs and NICs: no other shape")
        if (self.all_gpus or self.first_available) and self.nics and self.align:
            raise ValueError(
                "aligned NIC pairs need an exact GPU count (no all_gpus or first_available)"
            )
        if self.all_gpus and (self.first_available or self.memory or self.compute):
            raise ValueError(
                "all_gpus takes whole devices: no first_available, memory or compute with it"
            )
        return self

    @property
    def shares(self) -> bool:
        """The claim takes capacity shares of GPUs (memory or compute), not whole ones."""
        return self.memory is not None or self.compute is not None

    @property
    def uses_dra(self) -> bool:
        return not self.device_plugin and (self.gpus > 0 or self.nics > 0)

    @property
    def key(self) -> str:
        """A short DNS-safe name for the ResourceClaimTemplate that serves this claim."""
        parts = [f"gpu{self.gpus}"]
        if self.nics:
            parts.append(f"nic{self.nics}" + ("-aligned" if self.align else ""))
        if self.numa:
            parts.append("numa-derived" if self.derived else "numa")
        if self.min_memory:
            parts.append("mem" + self.min_memory.lower().replace(".", "p"))
        if self.device_plugin:
            parts.insert(0, "dp")
        if self.mig_profile:
            parts.append("mig" + self.mig_profile.replace(".", "").replace("+", "-"))
        if self.all_gpus:
            parts.append("all")
        if self.memory:
            parts.append("cap" + self.memory.lower().replace(".", "p"))
        if self.compute:
            parts.append(f"compute{compute_milli(self.compute)}m")
        if self.shared_by > 1:
            parts.append(f"shared{self.shared_by}")
        if self.admin_access:
            parts.append("admin")
        if self.first_available:
            parts.append(f"fa{len(self.first_available)}")
        shape = [self.gpu_class, self.nic_class]
        if self.mig_profile and self.mig_class != vocab.CLASS_MIG:
            shape.append(self.mig_class)
        shape += [a.model_dump_json() for a in self.first_available]
        if shape != [vocab.CLASS_GPU, vocab.CLASS_RDMA_NIC]:
            digest = hashlib.sha256("|".join(shape).encode()).hexdigest()
            parts.append(digest[:8])  # other classes or alternatives: a different template
        return "-".join(parts)

    @property
    def footprint_bytes(self) -> int:
        """GPU memory the pod's workload uses in all (per GPU x GPUs); 0 when not given."""
        per_gpu = self.footprint or self.memory
        return units.quantity_bytes(per_gpu) * self.gpus if per_gpu else 0

    @property
    def gpus_per_claim(self) -> int:
        """Whole GPUs one claim holds at least, for the pre-flight check: 0 when only the
        scheduler can know (capacity shares, MIG partitions), the smallest alternative of a
        `firstAvailable`."""
        if not self.uses_dra or self.shares or self.mig_profile is not None:
            return 0  # shares and partitions: only the scheduler can count them
        return min((a.gpus for a in self.first_available), default=self.gpus)


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
    """Jobs only: every Job's pods are a gang, labelled with the Job's name (span and time
    to all Running are reported)."""
    native_gang: bool = False
    """Gangs as the Workload API has them, in the version the cluster serves (1.35 on, with
    GenericWorkload and before 1.37 GangScheduling): a Workload and a PodGroup per Job (gang
    policy, minCount = the Job's parallelism) its pods name in `spec.schedulingGroup` (on
    1.35 a Workload holding the group, named in `spec.workloadRef`), and no private label;
    the scheduler then binds all or none."""
    gang_profile: bool = False
    """Gangs only: the pods name their scheduler's gang profile (`S-gang`,
    `testbed.scheduler_profiles`), which scores every feasible node, so a gang's later pods
    are offered the block its first pods took."""
    gang_gated: bool = False
    """Gangs only (labelled): the pods are created with the scheduling gate
    `testbed.dra.io/gang-placement` and their gang's size, and wait until the extender's gang
    placer has narrowed them to the fewest topology blocks that hold the whole gang."""
    run_time: Duration | None = None
    """How long each pod runs before kwok completes it (Jobs only; bare pods run on)."""
    qps: float | None = Field(None, gt=0)
    arrival: plan.Arrival | None = None
    claim: Claim = Claim()
    wait: Literal["running", "complete", "created", "settled"] = "running"
    """Before the next phase: all pods Running, all pods Succeeded (Jobs), nothing, or every
    pod either scheduled or found unschedulable by the scheduler (a placeability probe: how
    many fit, not how fast)."""
    timeout: Duration | None = None
    """Caps the wait for the phase's condition; None: no cap, the wait fails only on a
    stall (the run's stall timeout), so a slow but busy scheduler is left to finish."""

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
        if self.native_gang and not self.gang:
            raise ValueError("native_gang applies to gangs (gang: true)")
        if self.gang_profile and not self.gang:
            raise ValueError("gang_profile applies to gangs (gang: true)")
        if self.gang_gated and (not self.gang or self.native_gang):
            raise ValueError(
                "gang_gated applies to labelled gangs (gang: true, native_gang: false)"
            )
        if self.sizing != "fixed" and (self.claim.gpus < 1 or self.claim.device_plugin):
            raise ValueError("fill/free sizing needs DRA GPU claims")
        if self.claim.shared_by > 1 and self.kind != "pods":
            raise ValueError("shared_by applies to bare pods (a Job's pods come and go)")
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
        if self.claim.shared_by > 1:
            return math.ceil(self.count / self.claim.shared_by) * self.claim.gpus_per_claim
        return self.count * self.concurrent * self.claim.gpus_per_claim


class Scenario(_Model):
    name: str
    description: str = ""
    phases: list[Phase] = Field(min_length=1)
    node_selector: dict[str, str] = {}
    """Labels every pod's node must have, on top of the run's --node-selector (e.g. one
    fleet pool's label): the run's fleet figures count only those nodes."""

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
