"""The named scenarios and their parameters (`loadgen run NAME key=value ...`).

Each builder takes a validated parameter model (unknown keys are rejected) and returns a
`Scenario`. Defaults follow the references: CL2's DRA test (fill 90 % with long Jobs at QPS
10, then 10 completions of 30 s per free GPU at QPS 5) and the seed's 10 waves of 80 pods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from loadgen.scenarios.model import Claim, Duration, Phase, Scenario
from testbed import vocab


class _Params(Claim):
    """A named scenario's parameters: the claim fields (checked as a Claim) plus its own."""

    pool: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")
    """Only nodes of this fleet pool (a node selector on the pool label)."""

    def claim(self) -> Claim:
        return Claim(**self.model_dump(include=set(Claim.model_fields)))


class PodsParams(_Params):
    pods: int = Field(100, ge=1)


class JobsParams(_Params):
    jobs: int = Field(100, ge=1)
    run_time: Duration = 3600.0


class WavesParams(_Params):
    waves: int = Field(10, ge=1)
    size: int = Field(80, ge=1)


class ChurnParams(_Params):
    jobs: int = Field(80, ge=1)
    parallelism: int = Field(1, ge=1)
    completions: int = Field(10, ge=1)
    run_time: Duration = 30.0


class Cl2DraParams(_Params):
    fill: float = Field(0.9, gt=0, lt=1)
    completions: int = Field(10, ge=1)
    run_time: Duration = 30.0
    long_run_time: Duration = 3600.0
    fill_qps: float = Field(10.0, gt=0)
    churn_qps: float = Field(5.0, gt=0)


class GangParams(_Params):
    gpus: int = Field(8, ge=1, le=64)
    nics: int = Field(8, ge=0, le=64)
    gangs: int = Field(4, ge=1)
    size: int = Field(4, ge=1, le=1000)
    run_time: Duration = 3600.0
    native: bool = False
    """Each gang a Workload API group (Kubernetes 1.35 on, in the version it serves, with
    GenericWorkload and before 1.37 GangScheduling on), placed all or nothing by
    kube-scheduler; else (today's way) a private label only the extender reads."""
    profile: bool = True
    """The pods name their scheduler's gang profile (`S-gang`: every feasible node scored,
    so later pods are offered the block the first took); false: the scheduler's own profile,
    whose adaptive window offers a rotating part of the fleet."""
    placement: Literal["scheduler", "gated"] = "scheduler"
    """`gated`: each gang waits behind a scheduling gate until the extender's gang placer has
    narrowed it to the fewest topology blocks that hold it whole (labelled gangs only);
    `scheduler`: its pods go to the scheduler as they are created."""

    @model_validator(mode="after")
    def _gated_labelled(self) -> GangParams:
        if self.placement == "gated" and self.native:
            raise ValueError("placement gated applies to labelled gangs (native: false)")
        return self


class AlignmentParams(_Params):
    gpus: int = Field(4, ge=1, le=64)
    nics: int = Field(4, ge=1, le=64)
    align: bool = False
    """Also pair each GPU with its own NIC on a PCIe root (`matchAttribute` per pair)."""
    fill: float = Field(0.25, ge=0, lt=1)
    """Share of the fleet's GPUs first taken by 1-GPU pods (fragmenting NUMA nodes)."""
    qps: float = Field(20.0, gt=0)


def _alignment(p: AlignmentParams) -> Scenario:
    how = "in-tree numaNode constraint" if p.numa else "no alignment constraint"
    if p.derived:
        how = "in-tree constraint on a derived NUMA attribute"
    phases = []
    if p.fill:
        fill = Claim(gpus=1, gpu_class=p.gpu_class)
        phases.append(
            Phase(
                name="fill", kind="pods", sizing="fill", fill_fraction=p.fill, claim=fill, qps=p.qps
            )
        )
    phases.append(
        Phase(
            name=f"aligned{p.gpus}",
            kind="pods",
            sizing="free",
            qps=p.qps,
            wait="settled",
            timeout=600.0,
            claim=p.claim(),
        )
    )
    return Scenario(
        name="alignment",
        description=(
            f"fill {p.fill:.0%} of the GPUs with 1-GPU pods, then {p.gpus} GPU + {p.nics} NIC "
            f"pods ({how}) as many as the rest holds, each left until placed or refused"
        ),
        phases=phases,
    )


# The smallest H100 80GB MIG profile that holds a footprint of at most this many GB.
_MIG_FOR_GB = ((10, "1g.10gb"), (20, "2g.20gb"), (40, "3g.40gb"), (80, "7g.80gb"))


def _footprints(value: object) -> object:
    """`5,10,20` -> [5, 10, 20] (GB); lists pass through."""
    if isinstance(value, str):
        try:
            return [int(v) for v in value.split(",")]
        except ValueError:
            raise ValueError(f"footprints {value!r}: expected GB like 5,10,20,40,80") from None
    return value


class InferenceParams(_Params):
    jobs: int = Field(20, ge=1)
    """Jobs per footprint."""
    footprints: Annotated[list[int], BeforeValidator(_footprints)] = [5, 10, 20, 40, 80]
    """GPU memory each pod needs, GB (decimal, as GPUs and MIG profiles are named); one
    phase per footprint."""
    shape: Literal["whole", "mig", "capacity"] = "capacity"
    """How a pod gets its memory: a whole GPU, the smallest MIG profile that holds it, or a
    capacity request of exactly that much on a shared GPU."""
    completions: int = Field(3, ge=1)
    run_time: Duration = 30.0
    qps: float = Field(20.0, gt=0)
    probe: bool = False
    """A placeability probe instead of churn: `jobs` bare pods per footprint that run on,
    each phase left until every pod is placed or refused (how many fit, not how fast)."""
    rounds: int = Field(1, ge=1, le=20)
    """Probe only: ask each footprint's pods in this many rounds, the footprints
    interleaved, so no one size gets the empty fleet first."""

    @model_validator(mode="after")
    def _fits(self) -> InferenceParams:
        if not self.footprints or any(not 0 < f <= 80 for f in self.footprints):
            raise ValueError("footprints are GB between 1 and 80 (an H100 80GB)")
        if self.rounds > 1 and not self.probe:
            raise ValueError("rounds applies to the probe (probe=true)")
        if self.probe and self.jobs < self.rounds:
            raise ValueError("a probe needs at least one pod per footprint and round")
        return self


def _inference(p: InferenceParams) -> Scenario:
    sizes = ", ".join(f"{g}GB" for g in p.footprints)
    if p.probe:
        phases = _inference_probe(p)
        description = (
            f"inference mix probe: {p.jobs} pods per footprint ({sizes}) in {p.rounds} "
            f"round(s), {p.shape} GPUs, each left until placed or refused"
        )
    else:
        phases = _inference_churn(p)
        description = (
            f"inference mix: {p.jobs} Jobs x {p.completions} completions per footprint "
            f"({sizes}), {p.shape} GPUs"
        )
    return Scenario(name="inference", description=description, phases=phases)


def _inference_churn(p: InferenceParams) -> list[Phase]:
    base = p.claim()
    return [
        Phase(
            name=f"mem{gb}gb",
            kind="jobs",
            count=p.jobs,
            completions=p.completions,
            run_time=p.run_time,
            qps=p.qps,
            # Every footprint's Jobs run side by side: only the last phase waits.
            wait="complete" if i == len(p.footprints) - 1 else "created",
            claim=_footprint_claim(base, p.shape, gb),
        )
        for i, gb in enumerate(p.footprints)
    ]


def _footprint_claim(base: Claim, shape: str, gb: int) -> Claim:
    """One GPU for a workload of `gb` GB: whole, the smallest MIG profile that holds it, or
    a capacity share of exactly that much."""
    need: dict[str, object] = {"gpus": 1, "footprint": f"{gb}G"}
    if shape == "mig":
        need["mig_profile"] = next(name for most, name in _MIG_FOR_GB if gb <= most)
    elif shape == "capacity":
        need["memory"] = f"{gb}G"
    return Claim.model_validate(base.model_copy(update=need).model_dump())


def _inference_probe(p: InferenceParams) -> list[Phase]:
    base = p.claim()
    phases = []
    for r in range(p.rounds):
        # Round r gets its share of each footprint's pods (the first rounds the remainder).
        count = p.jobs // p.rounds + (1 if r < p.jobs % p.rounds else 0)
        for gb in p.footprints:
            phases.append(
                Phase(
                    name=f"mem{gb}gb" if p.rounds == 1 else f"r{r + 1}-mem{gb}gb",
                    kind="pods",
                    count=count,
                    qps=p.qps,
                    wait="settled",
                    timeout=300.0,
                    claim=_footprint_claim(base, p.shape, gb),
                )
            )
    return phases


def _pods(p: PodsParams) -> Scenario:
    claim = p.claim()
    each = (
        f"asking for {claim.gpus} {vocab.EXTENDED_RESOURCE_GPU} (device plugin, no claim)"
        if claim.device_plugin
        else "with a claim"
    )
    return Scenario(
        name="pods",
        description=f"{p.pods} single pods, each {each}",
        phases=[Phase(name="pods", kind="pods", count=p.pods, claim=claim)],
    )


def _jobs(p: JobsParams) -> Scenario:
    return Scenario(
        name="jobs",
        description=f"{p.jobs} Jobs of one long-running pod each",
        phases=[
            Phase(name="jobs", kind="jobs", count=p.jobs, run_time=p.run_time, claim=p.claim())
        ],
    )


def _waves(p: WavesParams) -> Scenario:
    return Scenario(
        name="waves",
        description=f"{p.waves} waves of {p.size} pods, each after the previous is Running",
        phases=[
            Phase(
                name="waves",
                kind="pods",
                count=p.waves * p.size,
                wave_size=p.size,
                claim=p.claim(),
            )
        ],
    )


def _churn(p: ChurnParams) -> Scenario:
    return Scenario(
        name="churn",
        description=(
            f"{p.jobs} Jobs x {p.completions} completions of {p.run_time:g}s "
            f"(parallelism {p.parallelism})"
        ),
        phases=[
            Phase(
                name="churn",
                kind="jobs",
                count=p.jobs,
                parallelism=p.parallelism,
                completions=p.completions,
                run_time=p.run_time,
                wait="complete",
                claim=p.claim(),
            )
        ],
    )


def _cl2_dra(p: Cl2DraParams) -> Scenario:
    claim = p.claim()
    return Scenario(
        name="cl2-dra",
        description=(
            f"ClusterLoader2 DRA: fill {p.fill:.0%} of the fleet's GPUs with long Jobs, "
            f"then churn the rest with {p.completions} completions of {p.run_time:g}s"
        ),
        phases=[
            Phase(
                name="fill",
                kind="jobs",
                sizing="fill",
                fill_fraction=p.fill,
                run_time=p.long_run_time,
                qps=p.fill_qps,
                claim=claim,
                timeout=3600.0,
            ),
            Phase(
                name="churn",
                kind="jobs",
                sizing="free",
                completions=p.completions,
                run_time=p.run_time,
                qps=p.churn_qps,
                wait="complete",
                claim=claim,
                timeout=3600.0,
            ),
        ],
    )


def _gang(p: GangParams) -> Scenario:
    how = "native PodGroup" if p.native else "labelled"
    view = "the gang profile" if p.profile else "the default window"
    if p.placement == "gated":
        view += ", gated until placed in the fewest blocks"
    return Scenario(
        name="gang",
        description=(
            f"{p.gangs} {how} gang Jobs of {p.size} pods x {p.gpus} GPUs + {p.nics} NICs, on {view}"
        ),
        phases=[
            Phase(
                name="gang",
                kind="jobs",
                count=p.gangs,
                parallelism=p.size,
                completions=p.size,
                gang=True,
                native_gang=p.native,
                gang_profile=p.profile,
                gang_gated=p.placement == "gated",
                run_time=p.run_time,
                claim=p.claim(),
            )
        ],
    )


@dataclass(frozen=True)
class Named:
    params: type[_Params]
    build: Callable[[Any], Scenario]


NAMED: dict[str, Named] = {
    "pods": Named(PodsParams, _pods),
    "jobs": Named(JobsParams, _jobs),
    "waves": Named(WavesParams, _waves),
    "churn": Named(ChurnParams, _churn),
    "cl2-dra": Named(Cl2DraParams, _cl2_dra),
    "gang": Named(GangParams, _gang),
    "inference": Named(InferenceParams, _inference),
    "alignment": Named(AlignmentParams, _alignment),
}
