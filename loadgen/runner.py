"""Runs a scenario against a cluster: the async API under `loadgen` (and tests and benches).

    result = await runner.run(kube, scenario, outcome.Settings(...), on_measured=write)

Order of a run: check the DeviceClasses and the fleet (nothing created on failure), start
the watches, create the namespace and ResourceClaimTemplates, run the phases, then hand the
measurements to `on_measured` (reports) *before* removing the namespace, so an interrupted
or failed run still reports everything it measured and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loadgen import (
    access,
    driver,
    explaining,
    fleet_views,
    gang_views,
    gates,
    inventory,
    outcome,
    plan,
    preflight,
    records,
    runs,
    stall,
    templates,
    tracker,
    workload_api,
)
from loadgen.scenarios import Phase, Scenario, resolve
from testbed import scheduler_profiles, vocab
from testbed.kube import errors, resources
from testbed.kube import workloads as workloads_api
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

DEFAULT_QPS = 100.0


class RunError(Exception):
    """The run cannot start or cannot go on: one line for the user (exit 1)."""


class Unfit(RunError):
    """The scenario's demand cannot fit the fleet's free devices (exit 2, nothing created)."""


class Unsupported(Unfit):
    """The cluster lacks an API or gate the scenario needs, e.g. the Workload API for native
    gangs or DRADerivedAttributes for derived attributes (exit 2, nothing created)."""


@dataclass
class Progress:
    phase: str
    expected_pods: int
    requested: int
    seen: int
    scheduled: int
    running: int
    finished: int


Measured = Callable[[outcome.RunResult], Awaitable[None] | None]


async def run(
    kube: Kube,
    scenario: Scenario,
    settings: outcome.Settings,
    *,
    stop: asyncio.Event | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_measured: Measured | None = None,
    on_notice: Callable[[str], None] | None = None,
    on_started: Callable[[str], None] | None = None,
) -> outcome.RunResult:
    """Run `scenario`; `stop` (Ctrl-C) ends creation early. Raises RunError/KubeError only
    before anything was created (Unfit: the demand cannot fit the fleet); later failures
    land in `result.error`. `on_notice` gets one-line warnings meant for the user;
    `on_started` the run's namespace, once it exists (the run can be found from then on)."""
    stop = stop or asyncio.Event()
    notice = on_notice or (lambda text: log.warning("%s", text))
    # Fail fast and create nothing when there is no cluster, a DeviceClass is missing or
    # the run id is taken (then the other run's namespace is not ours to watch or touch).
    version = await kube.request("GET", "/version", retry=False)
    await _check_device_classes(kube, scenario)
    try:
        gangs = await workload_api.check(kube, scenario)
        await gates.check_derived(kube, scenario)
    except gates.Unsupported as e:
        raise Unsupported(str(e)) from None
    await _check_run_id_free(kube, settings.run_id)
    watcher = tracker.Tracker(
        kube,
        namespace=templates.namespace_name(settings.run_id),
        pod_selector=tracker.run_pod_selector(settings.run_id),
        node_selector=settings.node_selector,
    )
    # A first list of a large fleet on a loaded machine can take minutes: bounded by the
    # stall time, not a fixed minute. The run's pods are watched once its namespace exists.
    await watcher.start(sync_timeout=settings.stall_timeout, pods=False)
    result = outcome.RunResult(
        run_id=settings.run_id,
        namespace=templates.namespace_name(settings.run_id),
        scenario=scenario,
        settings=settings,
        records=watcher.records,
        started_wall=time.time(),
        started_mono=watcher.clock(),
        apiserver_version=str((version or {}).get("gitVersion", "")),
    )
    token = runs.new_token()
    try:
        result.scenario = scenario = _size_and_check(result, scenario, settings, notice)
        await _claim_namespace(kube, settings, token, scenario)
    except BaseException:
        await watcher.stop()
        raise
    try:
        if settings.pod_reader_role:
            labels = templates.run_labels(settings.run_id)
            await access.grant_pod_reads(kube, result.namespace, settings.pod_reader_role, labels)
        await watcher.start_pods(sync_timeout=settings.stall_timeout)
    except BaseException as e:
        await watcher.stop()  # nothing but the namespace was made: take it back
        with contextlib.suppress(errors.KubeError, inventory.NotOwned):
            await inventory.remove(kube, settings.run_id, token=token)
        if isinstance(e, access.NotGranted):
            raise RunError(str(e)) from None
        raise
    if on_started is not None:
        on_started(result.namespace)
    beating = asyncio.Event()
    heart = asyncio.create_task(
        inventory.keep_alive(kube, settings.run_id, settings.heartbeat_interval, beating),
        name="heartbeat",
    )
    gathering = await explaining.start(kube, settings, watcher.clock, result.started_mono)
    reporter = asyncio.create_task(_report_progress(result, on_progress), name="progress")
    try:
        await _create_templates(kube, scenario, settings)
        for phase in scenario.phases:
            if stop.is_set():
                break
            pr = outcome.PhaseResult(phase=phase, started=watcher.clock())
            result.phases.append(pr)
            await _run_phase(kube, watcher, phase, pr, settings, stop, gangs)
    except (driver.DriverError, errors.KubeError, RunError) as e:
        result.error = str(e)
        log.info("run %s failed: %s", settings.run_id, e)
    except asyncio.CancelledError:
        # Cancelled by the caller: still report and clean up (below), then propagate.
        result.interrupted = True
        stop.set()
        raise
    finally:
        result.interrupted = result.interrupted or stop.is_set()
        result.finished_mono = watcher.clock()
        result.cpu_seconds = time.process_time() - result.started_cpu
        reporter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reporter
        await watcher.stop()
        await gathering.finish(result)
        try:
            if on_measured is not None:
                done = on_measured(result)
                if done is not None:
                    await done
        finally:
            beating.set()
            await heart
            result.cleaned_up = await _finish(kube, settings, token)
    return result


def _size_and_check(
    result: outcome.RunResult,
    scenario: Scenario,
    settings: outcome.Settings,
    notice: Callable[[str], None],
) -> Scenario:
    """Fleet figures into `result`, fill/free phases sized from the free GPUs, and the
    pre-flight check (raises Unfit). Other runs' holdings are reported, never counted."""
    rec = result.records
    result.fleet_nodes = len(fleet_views.fleet_nodes(rec))
    result.fleet_gpus = fleet_views.fleet_gpus(rec)
    result.held_by_others_at_start = fleet_views.gpus_held_by_others(rec)
    held = sum(result.held_by_others_at_start.values())
    if held:
        who = ", ".join(f"{ns} {n}" for ns, n in sorted(result.held_by_others_at_start.items()))
        notice(
            f"{held} of the fleet's {result.fleet_gpus} GPUs are held by other namespaces "
            f"({who}); they are left out of this run's figures (`loadgen runs` lists runs)"
        )
    capacity = preflight.Capacity(
        gpus=result.fleet_gpus,
        held_by_others=held,
        largest_node=max(fleet_views.gpus_by_node(rec).values(), default=0),
        compute_max=fleet_views.compute_max(rec),
    )
    if scenario.needs_fleet_size:
        try:
            scenario = resolve(scenario, capacity.free)
        except ValueError as e:
            raise Unfit(str(e)) from e
    found = preflight.problems(scenario, capacity)
    if found and not (settings.allow_unschedulable or preflight.probes_saturation(scenario)):
        raise Unfit("; ".join(found) + " (nothing created; --allow-unschedulable runs it anyway)")
    for problem in found:
        notice(f"{problem}: some pods will stay Pending")
    return scenario


async def _check_run_id_free(kube: Kube, run_id: str) -> None:
    try:
        await kube.get(resources.NAMESPACES, templates.namespace_name(run_id))
    except errors.NotFound:
        return
    raise RunError(f"run id {run_id} is taken: its namespace exists (see `loadgen runs`)")


async def _claim_namespace(
    kube: Kube, settings: outcome.Settings, token: str, scenario: Scenario
) -> None:
    """Create the run's namespace, recording who owns it; a run id taken in the meantime
    fails here, before anything else is created or watched as ours."""
    annotations = runs.ownership(token, time.time(), settings.heartbeat_interval)
    try:
        admin = any(c.admin_access for c in scenario.claims)
        ns = templates.namespace(settings.run_id, annotations, admin_access=admin)
        await kube.create(resources.NAMESPACES, ns)
    except errors.AlreadyExists:
        raise RunError(f"run id {settings.run_id} is taken: its namespace exists") from None


async def _finish(kube: Kube, settings: outcome.Settings, token: str) -> bool:
    """Remove the run's namespace if it is still the one this run made (or mark it kept).
    True when removed."""
    if settings.keep:
        await inventory.mark_kept(kube, settings.run_id)
        return False
    try:
        return await inventory.remove(kube, settings.run_id, token=token)
    except inventory.NotOwned as e:
        log.error("%s", e)
    except errors.KubeError as e:
        log.error("could not delete namespace of run %s: %s", settings.run_id, e)
    return False


async def _check_device_classes(kube: Kube, scenario: Scenario) -> None:
    wanted: set[str] = set()
    for claim in scenario.claims:
        if claim.mig_profile:
            wanted.add(claim.mig_class)
        elif claim.gpus:
            wanted.add(claim.gpu_class)
        wanted.update(a.gpu_class for a in claim.first_available if a.gpu_class)
        if claim.nics:
            wanted.add(claim.nic_class)
    for name in sorted(wanted):
        try:
            await kube.get(resources.DEVICE_CLASSES, name)
        except errors.NotFound:
            raise RunError(f"DeviceClass {name} does not exist (is a fleet installed?)") from None


async def _create_templates(kube: Kube, scenario: Scenario, settings: outcome.Settings) -> None:
    for claim in scenario.claims:
        if claim.shared_by == 1:  # shared claims are ResourceClaims, made per phase
            await kube.create(
                resources.RESOURCE_CLAIM_TEMPLATES, templates.claim_template(claim, settings.run_id)
            )


async def _create_shared_claims(
    kube: Kube, phase: Phase, settings: outcome.Settings, stop: asyncio.Event
) -> None:
    """The ResourceClaims a phase's pods share, before its first pod (as fast as allowed)."""
    groups = math.ceil(phase.count / phase.claim.shared_by)
    await driver.create_objects(
        kube,
        resources.RESOURCE_CLAIMS,
        lambda g: templates.shared_claim(phase, g, settings.run_id),
        range(groups),
        driver.Pacing(qps=0, max_in_flight=settings.max_in_flight),
        stats=outcome.CreateStats(),
        stop=stop,
    )


async def _create_pod_groups(
    kube: Kube, phase: Phase, settings: outcome.Settings, stop: asyncio.Event, version: str
) -> None:
    """Each native gang's Workload and (where `version` has them) PodGroup, before its Job
    (as fast as allowed), so no pod of a gang waits for its group to appear."""
    pacing = driver.Pacing(qps=0, max_in_flight=settings.max_in_flight)
    kinds = [(workloads_api.workloads(version), templates.workload)]
    if workloads_api.standalone(version):
        kinds.append((workloads_api.pod_groups(version), templates.pod_group))
    for res, make in kinds:
        await driver.create_objects(
            kube,
            res,
            lambda i, make=make: make(phase, i, settings.run_id, version),  # type: ignore[misc]
            range(phase.count),
            pacing,
            stats=outcome.CreateStats(),
            stop=stop,
        )


async def _run_phase(
    kube: Kube,
    watcher: tracker.Tracker,
    phase: Phase,
    pr: outcome.PhaseResult,
    settings: outcome.Settings,
    stop: asyncio.Event,
    gangs: str | None = None,
) -> None:
    """`gangs`: the Workload API version native gangs are made with (from the check)."""
    spec = templates.pod_spec(phase, settings.node_selector, settings.scheduler_name)
    res = resources.JOBS if phase.kind == "jobs" else resources.PODS
    counts = records.phase_counts(watcher.records, phase.name)
    concurrent = phase.concurrent
    arrival = settings.arrival or phase.arrival or "fixed"
    pacing = driver.Pacing(
        qps=settings.qps if settings.qps is not None else (phase.qps or DEFAULT_QPS),
        arrival=arrival,
        max_in_flight=settings.max_in_flight,
        seed=settings.seed,
    )
    waiting = _Waiting(watcher, phase, pr, settings, stop)
    stats = pr.stats

    def made() -> int:
        return stats.created + stats.already_existed

    gate = None
    if arrival == "closed":

        async def gate() -> None:
            def room() -> bool:
                outstanding = (stats.requested - stats.failed) * concurrent - counts.running
                return outstanding < settings.max_in_flight

            await waiting.until(room, "Running", lambda: counts.running, made)

    version = gangs or vocab.WORKLOAD_VERSION

    def build(i: int) -> dict[str, object]:
        return templates.build(phase, i, settings.run_id, spec, version)

    if phase.claim.shared_by > 1 and phase.claim.uses_dra:
        await _create_shared_claims(kube, phase, settings, stop)
    if phase.native_gang:
        await _create_pod_groups(kube, phase, settings, stop, version)

    for wave in _wave_ranges(phase):
        pr.waves += 1
        await driver.create_objects(
            kube, res, build, wave, pacing, stats=stats, stop=stop, gate=gate
        )
        if stop.is_set():
            return
        if phase.wave_size is not None and not await waiting.until(
            lambda: counts.running >= made(), "Running", lambda: counts.running, made
        ):
            return
    pr.created = watcher.clock()
    wait = _condition(phase, watcher.records, made)
    if wait is not None:
        reached, target, what = wait
        if not await waiting.until(lambda: reached() >= target(), what, reached, target):
            return
    pr.finished = watcher.clock()


Count = Callable[[], int]


def _condition(phase: Phase, rec: records.Records, made: Count) -> tuple[Count, Count, str] | None:
    """What the phase waits for before the next one: (pods reached, pods wanted, in words);
    None for `wait: created`."""
    counts = records.phase_counts(rec, phase.name)
    if phase.wait == "running":
        return (lambda: counts.running), (lambda: made() * phase.concurrent), "Running"
    if phase.wait == "settled":

        def wanted() -> int:
            return made() * phase.concurrent

        def settled() -> int:
            decided = counts.scheduled + counts.unschedulable
            # All or nothing: a native gang half bound is not done. Looked for (a scan of the
            # run's pods, checked after every event) only once every pod has a verdict.
            if phase.native_gang and decided >= wanted():
                decided -= gang_views.refusals_on_the_way(rec, phase.name)
            return decided

        return settled, wanted, "settled"
    if phase.wait == "complete":
        done = lambda: counts.succeeded + counts.failed  # noqa: E731
        return done, (lambda: made() * phase.completions), "finished"
    return None


def _wave_ranges(phase: Phase) -> list[range]:
    if phase.wave_size is None:
        return [range(phase.count)]
    out, start = [], 0
    for size in plan.waves(phase.count, phase.wave_size):
        out.append(range(start, start + size))
        start += size
    return out


class _Waiting:
    """A phase's waits for its pods: each ends when its condition holds, fails (RunError)
    when the phase stalls or its explicit timeout runs out, returns False when stopped."""

    def __init__(
        self,
        watcher: tracker.Tracker,
        phase: Phase,
        pr: outcome.PhaseResult,
        settings: outcome.Settings,
        stop: asyncio.Event,
    ) -> None:
        self.watcher = watcher
        self.phase = phase
        self.pr = pr
        self.stop = stop
        self.cap = settings.timeout if settings.timeout is not None else phase.timeout
        # A Job's pods legitimately sit Running for their run time before anything moves.
        self.stall = settings.stall_timeout + (phase.run_time or 0.0)
        self.counts = records.phase_counts(watcher.records, phase.name)
        self.profile = scheduler_profiles.gang_profile(settings.scheduler_name)

    def mark(self) -> tuple[int, ...]:
        c = self.counts
        return (c.seen, c.scheduled, c.verdicts, c.running, c.succeeded, c.failed)

    async def until(
        self,
        predicate: Callable[[], bool],
        what: str,
        reached: Callable[[], int],
        target: Callable[[], int],
    ) -> bool:
        """True once `predicate()` holds; False when stopped first; RunError on a stall
        (nothing moved for the stall time) or when the phase's timeout runs out."""
        clock = self.watcher.clock
        watch = stall.Watch(stall=self.stall, cap=self.cap, started=clock(), mark=self.mark())

        def holds() -> bool:  # checked after every event: progress moves the deadline
            watch.observe(self.mark(), clock())
            return predicate()

        ok = False

        async def wait() -> None:
            nonlocal ok
            while not ok and watch.expired(clock()) is None:
                ok = await self.watcher.wait_until(holds, watch.remaining(clock()))

        await driver.until_stopped(wait(), self.stop)
        if ok or self.stop.is_set():
            return ok
        self.pr.timed_out = True
        name = self.phase.name
        if watch.expired(clock()) == "capped":
            raise RunError(
                f"phase {name}: {reached()} of {target()} pods {what} after {self.cap:g}s"
            )
        idle = round(watch.idle(clock()))
        raise RunError(
            f"phase {name}: stalled: {reached()} of {target()} pods {what}; for {idle}s no pod "
            f"was scheduled, started or finished and the scheduler gave no new verdict"
            f"{self._pending()} (--stall-timeout sets how long a stall may last)"
        )

    def _pending(self) -> str:
        """The scheduler's commonest word on the pods still pending."""
        pending = records.pending(self.watcher.records)
        if not pending:
            return ""
        reason, n = next(iter(pending.items()))
        if reason == records.NO_VERDICT and self.phase.gang_profile:
            # A scheduler that does not serve the profile a pod names never looks at it.
            reason += (
                f" (they name the gang profile {self.profile!r}: does the scheduler serve it? "
                "manifests/scheduler/kube-scheduler-config.yaml has it)"
            )
        if self.phase.gang_gated and "gate" in reason:
            reason += (
                f" (they wait for the extender's gang placer to remove "
                f"{vocab.GATE_GANG_PLACEMENT}: its log says why a gang is not placed)"
            )
        return f"; {sum(pending.values())} pending, {n} of them: {reason}"


def _progress(result: outcome.RunResult) -> list[Progress]:
    out = []
    for pr in result.phases:
        c = records.phase_counts(result.records, pr.phase.name)
        out.append(
            Progress(
                phase=pr.phase.name,
                expected_pods=pr.phase.pods,
                requested=pr.stats.requested,
                seen=c.seen,
                scheduled=c.scheduled,
                running=c.running,
                finished=c.succeeded + c.failed,
            )
        )
    return out


async def _report_progress(
    result: outcome.RunResult, on_progress: Callable[[Progress], None] | None
) -> None:
    """Every phase's counts four times a second, and once more at the end."""
    if on_progress is None:
        return
    try:
        while True:
            for p in _progress(result):
                on_progress(p)
            await asyncio.sleep(0.25)
    finally:
        for p in _progress(result):
            on_progress(p)
