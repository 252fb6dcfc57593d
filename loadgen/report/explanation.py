"""Why a run was as fast as it was, as part of its result document: kube-scheduler's own
view (queues and event handling over time, from its /metrics), where kube-scheduler's and
kube-apiserver's CPU went (their profiles by `loadgen.cpu` category), and the known
pathologies that evidence shows (`loadgen.pathologies`).

The profiles themselves are kept beside the result (`profiles/scheduler-000.pb.gz`, ...;
`go tool pprof` reads them). A profile that cannot be decoded is one line in `unreadable`,
never a failure of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from loadgen import cpu, outcome, pathologies, pprof, scheduler_view

PROFILE_DIR = "profiles"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SchedulerView(_Doc):
    release: str = ""
    gates: dict[str, bool] = {}
    seconds: list[float]
    """Since the start of the run, like the run's timeline."""
    values: dict[str, list[float | None]]
    """Reduced key (see `loadgen.scheduler_view`) -> its value at each sample; counters
    cumulative, `pending:<queue>` gauges."""
    totals: scheduler_view.Totals


class CpuCategory(_Doc):
    category: str
    cpu_seconds: float
    share: float


class CpuProfile(_Doc):
    """One component's CPU over the profiled part of the run."""

    profiled: bool
    reason: str | None = None
    """Why it was not (wholly) profiled: `HTTP 403: forbidden ...`, no certificate, ..."""
    files: list[str] = []
    """The kept slices, relative to the result's directory."""
    seconds_profiled: float = 0.0
    cpu_seconds: float = 0.0
    categories: list[CpuCategory] = []
    """Every category of `loadgen.cpu.CATEGORIES`, in that order."""
    coverage: float = 0.0
    """Share of the samples a named category (not "other") took."""
    signatures: dict[str, float] = {}
    """Share of the CPU under a few telling functions (isPodWorthRequeuing, GatherPools)."""
    top_other: list[tuple[str, float]] = []
    """The leaf functions of "other" with the most CPU seconds."""
    unreadable: list[str] = []
    """One line per kept slice that could not be decoded."""
    busy_slices: int = 0
    """Slices not taken because another client was profiling the component then."""
    run_share: float | None = None
    """Share of the run's seconds the kept slices cover (None: written before it was)."""
    unanswered: list[tuple[float, float | None]] = []
    """Stretches (seconds since the run's start) the component did not answer its profile
    requests (killed, restarting); profiling resumed at their end (None: it never did)."""
    source: Literal["pprof", "stages"] = "pprof"
    """pprof: sampled CPU profiles (kube-scheduler, kube-apiserver). stages: the extender's
    own CPU clock per stage of its work (`EXTENDER_STAGES`), read from its /metrics."""

    def shares(self) -> dict[str, float]:
        return {c.category: c.share for c in self.categories}


class Explanation(_Doc):
    scheduler: SchedulerView | None = None
    """None: kube-scheduler was not scraped (`--scrape scheduler=URL`, found by itself on a
    local cluster)."""
    cpu: dict[str, CpuProfile] = {}
    """Component (`scheduler`, `apiserver`) -> where its CPU went."""
    findings: list[pathologies.Finding] = []


def unanswered(span: tuple[float, float | None]) -> str:
    """A stretch without profiles (`CpuProfile.unanswered`), in words."""
    start, end = span
    if end is None:
        return f"did not answer its profile requests from {start:.1f}s to the end of the run"
    return f"did not answer its profile requests from {start:.1f}s to {end:.1f}s (resumed)"


EXTENDER_STAGES = 'extender_cpu_seconds_total{stage="'
"""The extender's CPU per stage (extender/cpu_stages.py), as loadgen's deltas key it."""
EXTENDER_REST = "http, watch reads and event loop"
"""What no stage of the extender's covers: its CPU less the stages'."""


def stage_profile(deltas: Mapping[str, float], run_seconds: float) -> CpuProfile | None:
    """Where the extender's CPU went over the run, from the deltas of its stage counters and
    of its process CPU (None: it exposes no stages, or used no CPU)."""
    stages = {
        k[len(EXTENDER_STAGES) :].split('"', 1)[0]: v
        for k, v in deltas.items()
        if k.startswith(EXTENDER_STAGES)
    }
    total = deltas.get("process_cpu_seconds_total", 0.0)
    if not stages or total <= 0:
        return None
    named = sum(stages.values())
    stages[EXTENDER_REST] = max(0.0, total - named)
    return CpuProfile(
        profiled=True,
        source="stages",
        seconds_profiled=round(run_seconds, 3),
        cpu_seconds=round(total, 3),
        categories=[
            CpuCategory(category=c, cpu_seconds=round(s, 3), share=round(s / total, 4))
            for c, s in stages.items()
        ],
        coverage=round(min(1.0, named / total), 4),
        run_share=1.0,
    )


def profile_file(component: str, i: int) -> str:
    return f"{PROFILE_DIR}/{component}-{i:03d}.pb.gz"


def cpu_profile(
    profiled: outcome.Profiled,
    files_of: list[str],
    datas: list[bytes],
    *,
    run_seconds: float | None = None,
    origin: float = 0.0,
) -> CpuProfile:
    """The breakdown of one component's slices (`datas`, kept as `files_of`); with
    `run_seconds`, the share of the run they cover (`origin`: the run's monotonic start)."""
    covered = sum(s.seconds for s in profiled.slices)
    run_share = round(min(1.0, covered / run_seconds), 4) if run_seconds else None
    unanswered = [
        (round(u.start - origin, 3), None if u.end is None else round(u.end - origin, 3))
        for u in profiled.unanswered
    ]
    decoded, unreadable = [], []
    for name, data in zip(files_of, datas, strict=True):
        try:
            decoded.append(pprof.decode(data))
        except pprof.ProfileError as e:
            unreadable.append(f"{name}: {e}")
    if not decoded:
        reason = profiled.not_profiled or ("no readable profile" if unreadable else None)
        return CpuProfile(
            profiled=False,
            reason=reason,
            files=files_of,
            unreadable=unreadable,
            busy_slices=profiled.busy_slices,
            run_share=run_share,
            unanswered=unanswered,
        )
    b = cpu.breakdown(decoded)
    shares = b.shares()
    return CpuProfile(
        profiled=True,
        reason=profiled.not_profiled,
        files=files_of,
        seconds_profiled=b.seconds_profiled,
        cpu_seconds=round(b.cpu_seconds, 3),
        categories=[
            CpuCategory(category=c, cpu_seconds=round(b.by_category[c] / 1e9, 3), share=shares[c])
            for c in cpu.CATEGORIES
        ],
        coverage=round(b.coverage, 4),
        signatures={k: round(v, 4) for k, v in b.signature_shares().items()},
        top_other=[(f, round(v / 1e9, 3)) for f, v in b.top_other],
        unreadable=unreadable,
        busy_slices=profiled.busy_slices,
        run_share=run_share,
        unanswered=unanswered,
    )


def _partitionable(result: outcome.RunResult) -> bool:
    return any(p.claim.mig_profile for p in result.scenario.phases)


def evidence(
    view: SchedulerView | None,
    scheduler_cpu: CpuProfile | None,
    *,
    pods: int,
    claims: int,
    throughput: float,
    seconds: float,
    partitionable: bool = False,
) -> pathologies.Evidence:
    """The detector's input from a run's figures (plain values: recorded runs are judged
    through this same function)."""
    t = view.totals if view is not None else None
    profiled = scheduler_cpu if scheduler_cpu is not None and scheduler_cpu.profiled else None
    return pathologies.Evidence(
        release=view.release if view is not None else None,
        gates=view.gates if view is not None else {},
        pods=pods,
        claims=claims,
        partitionable=partitionable,
        seconds=seconds,
        throughput=throughput,
        pending_peak=t.pending_peak if t else {},
        claim_event_seconds=(
            sum(v for k, v in t.event_seconds.items() if "ResourceClaim" in k) if t else 0.0
        ),
        cpu_shares=profiled.shares() if profiled else None,
        signature_shares=profiled.signatures if profiled else {},
        attempts=t.attempts if t else 0.0,
        attempt_seconds=t.attempt_seconds if t else 0.0,
        outside_points_seconds=t.outside_points_seconds if t else 0.0,
        extender_served_seconds=sum(t.extender_seconds.values()) if t else 0.0,
        extender_calls=sum(t.extender_calls.values()) if t else 0.0,
        throttle_seconds=t.throttle_seconds if t else 0.0,
        binding_seconds=(t.point_seconds.get("PreBind", 0.0) + t.point_seconds.get("Bind", 0.0))
        if t
        else 0.0,
    )


def view_of(tl: scheduler_view.Timeline) -> SchedulerView:
    return SchedulerView(
        release=tl.release,
        gates={k: v for k, v in tl.gates.items() if k in _GATES_KEPT},
        seconds=tl.seconds,
        values=tl.values,
        totals=scheduler_view.totals(tl),
    )


def build(
    result: outcome.RunResult, *, pods: int, claims: int, throughput: float
) -> Explanation | None:
    """The explanation of a run (None: nothing was sampled or profiled)."""
    if result.scheduler_view is None and not result.profiles and "extender" not in result.metrics:
        return None
    tl = result.scheduler_view
    view = view_of(tl) if tl is not None else None
    profiles = {
        name: cpu_profile(
            p,
            [profile_file(name, i) for i in range(len(p.slices))],
            [s.data for s in p.slices],
            run_seconds=result.finished_mono - result.started_mono,
            origin=result.started_mono,
        )
        for name, p in result.profiles.items()
    }
    extender = result.metrics.get("extender")
    if extender is not None and "extender" not in profiles:
        staged = stage_profile(extender, result.finished_mono - result.started_mono)
        if staged is not None:
            profiles["extender"] = staged
    e = evidence(
        view,
        profiles.get("scheduler"),
        pods=pods,
        claims=claims,
        throughput=throughput,
        seconds=result.finished_mono - result.started_mono,
        partitionable=_partitionable(result),
    )
    return Explanation(scheduler=view, cpu=profiles, findings=pathologies.detect(e))


# The gates the detector reads (the full list is ~100 names per component).
_GATES_KEPT = (pathologies.GATE, "DRAConsumableCapacity", "DRADeviceBindingConditions")


def write_profiles(result: outcome.RunResult, out_dir: Path) -> None:
    """Each kept slice as `profiles/<component>-NNN.pb.gz` in `out_dir`."""
    for name, p in result.profiles.items():
        for i, s in enumerate(p.slices):
            path = out_dir / profile_file(name, i)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(s.data)
