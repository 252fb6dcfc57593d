"""`testbed experiment run` (and the commands over built-in files): an experiment end to end.

For each stage (the planner's: `wing.Planner`): open the site its cluster needs -> the fleet ->
the stage's schedulers (for the stage, or each for its own arms) -> its arms, one loadgen run
each -> delete the fleet and close the site. Then the reporter's summary, top-level JSON and
`index.html` (`wing.Reporter`). The runner knows no experiment's comparisons: a file's variants
x workloads come with the engine's own planner and reporter, a wing's built-in comparisons with
the wing's. The services run as their own processes through their CLIs; the runner knows the
cluster only as a `Site`. Ctrl-C stops the running arm through loadgen's own interrupt handling
(what it measured is written) and cleans up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from experiment.measure import (
    accounting,
    arm_record,
    arms,
    fault_plan,
    figures,
    fleet_shape,
    process_cpu,
    validity,
)
from experiment.measure.arm_record import ArmRecord, ResultDoc
from experiment.measure.arms import Arm
from experiment.oracle import inputs as oracle_inputs
from experiment.oracle import optimum_report
from experiment.plan import design, matrix
from experiment.plan.wing import Finished, Planner, Reporter
from experiment.report import variants_report
from experiment.sites import children, clusterloader2, fault_run, in_process
from experiment.sites.site import Scheduler, SchedulerSetup, Site
from experiment.spec import spec as specs
from testbed import charts, cliconv, files, heartbeats, units, vocab
from testbed.kube import errors, resources
from testbed.kube.client import Kube

SiteOpener = Callable[[matrix.ClusterKey, Path], contextlib.AbstractContextManager[Site]]
"""Opens the site for a stage's cluster (release, gates); the path is its work directory."""


class RunError(RuntimeError):
    """A step failed; the message says which and where its log is."""


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    output_dir: Path
    keep: bool = False
    """Leave the fleet running afterwards (the site decides about its cluster)."""
    request_timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT
    """`--request-timeout` of every fleet and loadgen call (their first request's limit)."""

    def timeout_flags(self) -> list[str]:
        return ["--request-timeout", f"{self.request_timeout:g}s"]


async def _fleet_slices(kubeconfig: Path, fleet: str) -> list[dict[str, Any]]:
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        selector = resources.label_selector({vocab.LABEL_FLEET: fleet})
        return (await kube.list(resources.RESOURCE_SLICES, label_selector=selector)).items


async def _fleet_model(kubeconfig: Path, fleet: str) -> oracle_inputs.Fleet:
    """The fleet as the placement oracle reads it: its slices and its nodes' labels."""
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        selector = resources.label_selector({vocab.LABEL_FLEET: fleet})
        slices = (await kube.list(resources.RESOURCE_SLICES, label_selector=selector)).items
        nodes = (await kube.list(resources.NODES, label_selector=selector)).items
    labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes}
    return oracle_inputs.fleet_of(slices, labels)


async def _free_devices(kubeconfig: Path, namespace: str, seconds: float) -> bool:
    """Clear the previous arm's namespace of pods and claims, so the next arm starts on a
    fleet with every device free; True once none is left. loadgen has deleted the namespace,
    but kube-controller-manager's namespace controller waits 5 s before it starts on its
    contents, and claims (with their finalizer) make it wait 8 s more: 6-8 s after an arm of
    3-5 s. The pods are deleted at once (they have no grace period; kwok runs no kubelet);
    their generated claims are then deallocated and collected by their owner's deletion.
    The namespace itself finishes terminating in the background."""
    selector = vocab.LABEL_RUN  # every pod loadgen makes carries it
    deadline = time.monotonic() + seconds
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        with contextlib.suppress(errors.NotFound):
            await kube.delete_collection(
                resources.PODS, namespace=namespace, label_selector=selector, grace_seconds=0
            )
        while True:
            left = [
                (await kube.request("GET", res.path(namespace), query=[("limit", "1")])).get(
                    "items"
                )
                for res in (resources.PODS, resources.RESOURCE_CLAIMS)
            ]
            if not any(left):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.2)


def _run_arm(
    arm: Arm,
    out_dir: Path,
    env: dict[str, str],
    qps: float,
    scheduler: Scheduler,
    fleet: str,
    arrival: str = "fixed",
    flags: Sequence[str] = (),
    around: Callable[[str], contextlib.AbstractContextManager[object]] | None = None,
) -> ResultDoc:
    """Run `arm` with loadgen (`flags`: common ones, e.g. the request timeout; `around`: a
    block given loadgen's run id that the run goes on inside, e.g. a fault's)."""
    arm_dir = out_dir / arm.name
    arm_dir.mkdir(parents=True, exist_ok=True)
    scenario = arm.scenario
    if arm.scenario_doc is not None:
        scenario = str(arm_dir / "scenario.yaml")
        Path(scenario).write_text(yaml.safe_dump(arm.scenario_doc, sort_keys=False))
    # The arm's own run id, checked in the result: a result.json left in a reused output
    # directory by an earlier run is never taken for this arm's.
    run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
    result = arm_dir / "result.json"
    result.unlink(missing_ok=True)
    cmd = [
        children.tool("loadgen"),
        "run",
        scenario,
        *(f"{k}={v}" for k, v in arm.params.items()),
        "--run-id",
        run_id,
        "--node-selector",
        f"{vocab.LABEL_FLEET}={fleet}",
        "--output-dir",
        str(arm_dir),
        "--qps",
        str(qps),
        "--arrival",
        arrival,
        "--seed",
        str(arm.repeat),
        "--scrape",
        "apiserver=kube:/metrics",
        "--scrape",
        f"scheduler={scheduler.metrics_url}",
        *flags,
    ]
    if scheduler.extender_metrics_url:
        cmd += ["--scrape", f"extender={scheduler.extender_metrics_url}"]
    if scheduler.idle_extender_metrics_url:
        cmd += ["--scrape", f"{figures.IDLE_EXTENDER}={scheduler.idle_extender_metrics_url}"]
    if scheduler.name != "default-scheduler":
        cmd += ["--scheduler-name", scheduler.name]
    with around(run_id) if around else contextlib.nullcontext():
        code = children.run(cmd, env)
    if not result.is_file():
        raise RunError(f"loadgen wrote no result for {arm.name} (exit {code})")
    try:
        doc = arm_record.read_result(result)
    except (OSError, ValueError) as e:
        raise RunError(f"loadgen's result for {arm.name} is unreadable: {e}") from e
    if doc.run_id != run_id:
        raise RunError(f"{result} is run {doc.run_id!r}'s, not this arm's run {run_id}")
    return doc


def _apply_fleet(
    doc: dict[str, Any], path: Path, env: dict[str, str], flags: Sequence[str] = ()
) -> None:
    """`fleet apply` the fleet spec `doc` (written to `path`): fleet touches only the
    difference from what runs."""
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if children.run([children.tool("fleet"), "apply", "-f", str(path), *flags], env) != 0:
        raise RunError(f"fleet apply of {path.name} failed")


def _fleet_for(
    exp: specs.Experiment,
    planner: Planner,
    doc: dict[str, Any],
    nodes: int,
    variant: str,
    out: Path,
) -> tuple[dict[str, Any], Path]:
    """The fleet an arm needs and where its spec goes: the planner's at `nodes` nodes (the
    scale comparison resizes it) with a fleet `variant`'s pools, or the experiment's `doc`."""
    if nodes or variant:
        doc = {**planner.fleet(exp, nodes, variant), "name": doc["name"]}
    return doc, out / f"fleet-{nodes or 'spec'}{'-' + variant if variant else ''}.yaml"


def _latency_qps(arm: Arm, by_name: dict[str, ArmRecord]) -> float | None:
    """The latency arm's rate by arms.latency_rate, from the rate its throughput arm
    sustained (None if it has none)."""
    sustained = by_name.get(arm.latency_of)
    return arms.latency_rate(sustained.result.throughput.Average if sustained else None)


def _settle(kubeconfig: Path, doc: ResultDoc, console: Console) -> None:
    namespace = doc.namespace
    if namespace and not asyncio.run(_free_devices(kubeconfig, namespace, 300)):
        console.print(f"[yellow]namespace {namespace} still holds pods or claims after 300s")


def _scheduler_dir(out: Path, key: str) -> Path:
    """Work directory (and name) of the second scheduler for scheduler key `key`."""
    return out / f"{key}-scheduler"


@dataclass
class _Progress:
    """What the arms measured so far: kept whatever stops the run."""

    results: list[tuple[Arm, ArmRecord]]
    valid: dict[str, validity.Validity]
    timings: dict[str, dict[str, float | str]]
    by_name: dict[str, ArmRecord]
    sites: list[str]
    done: int = 0
    should_stop: Callable[[int], str] = lambda completed: ""
    """Before a repeat starts, given the repeats completed: why to stop there ("" to go on)."""
    stopped: str = ""
    closed_at: int | None = None
    """The pairs after which a sequential run took its closing look (`design.Design.closes`)."""
    repeat_seconds: list[float] = field(default_factory=list)
    """How long each completed repeat (all its arms, clean-up included) took."""


def _run_stage(
    exp: specs.Experiment,
    planner: Planner,
    stage: matrix.Stage,
    site: Site,
    config: RunConfig,
    progress: _Progress,
    total: int,
    console: Console,
) -> None:
    out = config.output_dir
    env = {**os.environ, "KUBECONFIG": str(site.kubeconfig)}
    flags = config.timeout_flags()
    apply_flags = [*flags, *site.fleet_flags]
    fleet_doc = specs.fleet_document(exp)
    fleet = exp.fleet_name
    fleet_applied = False
    try:
        cliconv.rule(console, f"fleet {fleet!r} on {site.description}")
        found = bool(asyncio.run(_fleet_slices(site.kubeconfig, fleet)))
        if found:
            # A fleet of that name was there before (a kept run's): used, never deleted.
            console.print(f"fleet {fleet!r} already runs: reshaped as needed, then left up")
        _apply_fleet(*_fleet_for(exp, planner, fleet_doc, 0, "", out), env, apply_flags)
        # Only now: after a failed apply (refused, say, since a node of that name is not
        # the fleet's) the delete would touch what this run did not create.
        fleet_applied = not found
        nodes = exp.fleet.nodes or 0
        shape = fleet_shape.shape_of(asyncio.run(_fleet_slices(site.kubeconfig, fleet)))
        console.print(
            f"fleet: {shape.nodes} device nodes, {shape.gpus} GPUs, "
            f"{shape.eight_gpu_nodes} 8-GPU nodes, {shape.aligned_eight_nodes} with 8 RDMA NICs"
        )
        try:
            planned = planner.arms(exp, stage, shape)
        except ValueError as e:
            raise RunError(str(e)) from e
        total += len(planned) - len(stage.arms)
        setups = planner.setups(exp)
        keys = list(dict.fromkeys(a.scheduler for a in planned if a.scheduler and not a.same_as))
        # Every arm carries the same idle load, so the ratios are fair: where an arm uses the
        # cluster's own scheduler (which runs throughout), every second scheduler runs for the
        # whole stage too; else each arm runs with its own second scheduler only, started for
        # it, and no idle one takes CPU from the arm (or goes uncounted in its CPU by process).
        per_arm = site.schedulers_per_arm and not any(setups[k].shipped for k in keys)
        with contextlib.ExitStack() as stack:
            schedulers = (
                {}
                if per_arm
                else {
                    k: stack.enter_context(site.scheduler(setups[k], _scheduler_dir(out, k)))
                    for k in keys
                }
            )
            fleet_now = (nodes, "")
            # The fleet as the oracle reads it, once per fleet the arms run on.
            models: dict[tuple[int, str], oracle_inputs.Fleet] = {}

            def fleet_model() -> oracle_inputs.Fleet:
                if fleet_now not in models:
                    models[fleet_now] = asyncio.run(_fleet_model(site.kubeconfig, fleet))
                return models[fleet_now]

            repeat, repeat_started = -1, time.monotonic()
            for arm in planned:
                if arm.repeat != repeat:
                    if repeat >= 0:
                        progress.repeat_seconds.append(time.monotonic() - repeat_started)
                    progress.stopped = progress.should_stop(arm.repeat)
                    if progress.stopped:
                        done = units.counted(arm.repeat, "pair")
                        console.print(f"[bold]stopped after {done}: {progress.stopped}")
                        break
                    repeat, repeat_started = arm.repeat, time.monotonic()
                progress.done += 1
                cliconv.rule(
                    console, f"arm {progress.done}/{total}: {arm.comparison} / {arm.variant}"
                )
                # Back to the stage's own fleet too, after an arm that needed another (the
                # scale comparison's large arm may come first).
                wanted = (arm.fleet_nodes or nodes, arm.fleet)
                if wanted != fleet_now:
                    fleet_now = wanted
                    console.print(f"fleet: {wanted[0]} nodes, variant {wanted[1] or '-'}")
                    _apply_fleet(
                        *_fleet_for(exp, planner, fleet_doc, *wanted, out), env, apply_flags
                    )
                if arm.harness == in_process.HARNESS:
                    console.print(_in_process_arm(exp, arm, stage.cluster[0], out, progress))
                    continue
                with _arm_scheduler(site, setups, out, arm, per_arm) as own:
                    running = {**schedulers, **own}
                    if arm.harness == clusterloader2.HARNESS:
                        where = clusterloader2.Where(
                            site.kubeconfig,
                            fleet,
                            shape.nodes,
                            shape.gpus // max(1, shape.nodes),
                            running[arm.scheduler].name,
                        )
                        console.print(_cl2_arm(arm, out, where, progress))
                        continue
                    fault = _armed_fault(exp, arm, shape.gpus)
                    _one_arm(
                        exp,
                        arm,
                        out,
                        site,
                        running,
                        setups,
                        env,
                        progress,
                        console,
                        flags,
                        fault,
                        fleet_model,
                    )
            else:
                if repeat >= 0:
                    progress.repeat_seconds.append(time.monotonic() - repeat_started)
    finally:
        if fleet_applied and not config.keep:
            children.run([children.tool("fleet"), "delete", "--name", fleet, *flags], env)


@contextlib.contextmanager
def _arm_scheduler(
    site: Site, setups: dict[str, SchedulerSetup], out: Path, arm: Arm, per_arm: bool
) -> Iterator[dict[str, Scheduler]]:
    """The arm's own second scheduler (and extender), started for it and stopped after it,
    where schedulers run per arm; else none (the stage's run throughout). Their logs, which
    the next start overwrites, are kept in the arm's directory."""
    if not per_arm or not arm.scheduler or arm.same_as:
        yield {}
        return
    workdir = _scheduler_dir(out, arm.scheduler)
    try:
        with site.scheduler(setups[arm.scheduler], workdir) as scheduler:
            yield {arm.scheduler: scheduler}
    finally:
        kept = out / arm.name
        kept.mkdir(parents=True, exist_ok=True)
        for log in workdir.glob("*.log"):
            shutil.copyfile(log, kept / log.name)


def _armed_fault(
    exp: specs.Experiment, arm: Arm, fleet_gpus: int
) -> tuple[fault_plan.Fault, int] | None:
    """The fault of `arm`'s variant with the pods the arm creates (what a share of them is
    counted against); None for a variant without one."""
    fault = next((v.fault for v in exp.variants if v.name == arm.variant), None)
    if fault is None:
        return None
    try:
        return fault, specs.expected_pods(arm.scenario, arm.params, fleet_gpus)
    except specs.SpecError as e:
        raise RunError(f"arm {arm.name}: its pods cannot be counted for its fault: {e}") from e


def _one_arm(
    exp: specs.Experiment,
    arm: Arm,
    out: Path,
    site: Site,
    schedulers: dict[str, Scheduler],
    setups: dict[str, SchedulerSetup],
    env: dict[str, str],
    p: _Progress,
    console: Console,
    flags: Sequence[str] = (),
    fault: tuple[fault_plan.Fault, int] | None = None,
    fleet_model: Callable[[], oracle_inputs.Fleet] | None = None,
) -> None:
    """Run the arm and keep its record (`arm.json` beside loadgen's result): its process CPU,
    its fault, its validity and, for a throughput arm given `fleet_model`, its optimum."""
    if arm.same_as:
        # Link, so the report and every reader find the arm's own directory.
        link = out / arm.name
        if not link.exists():
            link.symlink_to(arm.same_as, target_is_directory=True)
        p.results.append((arm, p.by_name[arm.same_as]))
        p.valid[arm.name] = p.valid[arm.same_as]
        p.timings[arm.name] = {"seconds": 0.0, "same_as": arm.same_as}
        console.print(f"same workload as {arm.same_as}: its result is reused")
        return
    qps, arrival = exp.qps, "fixed"
    if arm.latency_of:
        latency_qps = _latency_qps(arm, p.by_name)
        if latency_qps is None:
            p.valid[arm.name] = validity.Validity(
                False,
                f"{arm.latency_of} sustained no rate to run below (scheduler_perf's rate needs "
                "pods scheduled across two 1 s samples: more pods or a lower qps give one)",
            )
            console.print(f"[yellow]arm {arm.name}: {p.valid[arm.name].reason}")
            return
        qps, arrival = latency_qps, "poisson"
        console.print(f"unsaturated: Poisson arrivals at {qps:g} pods/s")
    scheduler = schedulers[arm.scheduler]
    started = time.monotonic()
    skips_before = scheduler.skips_logged() if setups[arm.scheduler].extender else None
    span = process_cpu.Span.start(site.processes_cpu())
    landed: list[fault_plan.Landed] = []

    @contextlib.contextmanager
    def faulted(run_id: str) -> Iterator[None]:
        if fault is None:
            yield
            return
        with fault_run.injected(fault[0], site, run_id, fault[1]) as record:
            landed.append(record)
            yield

    doc = _run_arm(arm, out, env, qps, scheduler, exp.fleet_name, arrival, flags, faulted)
    killed, fault_doc = "", None
    if landed:
        fault_doc = _fault_record(doc, landed[0], out / arm.name, console)
        killed = landed[0].fault.kill if landed[0].killed_wall is not None else ""
    at_fault = landed[0].cpu_at_kill if killed else None
    cpu = process_cpu.of_loadgen(
        doc, span, site.processes_cpu(), scheduler.name, at_fault=at_fault, killed=killed
    )
    rec = arm_record.build(doc, process_cpu=cpu, fault=fault_doc)
    extender = setups[arm.scheduler].extender
    p.valid[arm.name] = validity.of_arm(
        rec,
        extender=extender,
        filter=setups[arm.scheduler].extender_filter == "all",
        scheduler_skipped=validity.skipped_between(skips_before, scheduler.skips_logged())
        if extender
        else 0,
        faults_expected=fault is not None,
    )
    rec = dataclasses.replace(rec, validity=p.valid[arm.name])
    _keep(arm, rec, out, p)
    if not p.valid[arm.name].valid:
        console.print(f"[red]arm {arm.name} is invalid: {p.valid[arm.name].reason}")
    ran = time.monotonic() - started
    _settle(site.kubeconfig, doc, console)
    settled = time.monotonic() - started - ran
    p.timings[arm.name] = {"seconds": round(ran, 1), "cleanup_seconds": round(settled, 1)}
    console.print(f"arm {arm.name}: {ran:.0f} s, then {settled:.0f} s to clean up")
    if fleet_model is not None and not arm.latency_of:
        optimum = _optimum(rec, fleet_model, out / arm.name, console)
        _keep(arm, dataclasses.replace(rec, optimum=optimum), out, p)


def _keep(arm: Arm, rec: ArmRecord, out: Path, p: _Progress) -> None:
    """Keep the arm's record (again, once it is completed) beside its result and among the
    run's: what an interrupt leaves measured."""
    arm_record.write(rec, out / arm.name)
    if arm.name in p.by_name:
        p.results = [(a, rec if a.name == arm.name else r) for a, r in p.results]
    else:
        p.results.append((arm, rec))
    p.by_name[arm.name] = rec


def _fault_record(
    doc: ResultDoc, landed: fault_plan.Landed, arm_dir: Path, console: Console
) -> fault_plan.Outcome:
    """What became of the arm's fault (for its record, on loadgen's run clock beside the
    restarts it saw), kept in `fault.json` too."""
    record = landed.outcome(
        heartbeats.parse_time(doc.started_at), heartbeats.parse_time(doc.finished_at)
    )
    files.write_atomic(arm_dir / arm_record.FAULT, record.model_dump_json(indent=2) + "\n")
    colour = "" if landed.done else "[red]"
    console.print(f"{colour}fault: {fault_plan.describe(record)}")
    return record


def _in_process_arm(exp: specs.Experiment, arm: Arm, release: str, out: Path, p: _Progress) -> str:
    """Run the arm through scheduler_perf on the stage's release and the file's profile
    fleet (`in_process`); the line to print."""
    started = time.monotonic()
    rec, p.valid[arm.name] = in_process.run_arm(arm, out, release, exp.fleet)
    if rec is not None:
        _keep(arm, dataclasses.replace(rec, validity=p.valid[arm.name]), out, p)
    p.timings[arm.name] = {"seconds": round(time.monotonic() - started, 1)}
    return f"arm {arm.name}: {p.timings[arm.name]['seconds']:.0f} s, {p.valid[arm.name].reason}"


def _cl2_arm(arm: Arm, out: Path, where: clusterloader2.Where, p: _Progress) -> str:
    """Run the arm through ClusterLoader2's DRA test on the site's cluster, loadgen observing
    its pods (`clusterloader2`); the line to print."""
    started = time.monotonic()
    rec, p.valid[arm.name] = clusterloader2.run_arm(arm, out, where)
    if rec is not None:
        _keep(arm, dataclasses.replace(rec, validity=p.valid[arm.name]), out, p)
    p.timings[arm.name] = {"seconds": round(time.monotonic() - started, 1)}
    said = "; ".join(
        clusterloader2.agreement_lines(clusterloader2.sections([(arm, rec)] if rec else []))
    )
    seconds = p.timings[arm.name]["seconds"]
    return f"arm {arm.name}: {seconds:.0f} s, {said or p.valid[arm.name].reason}"


def _optimum(
    rec: ArmRecord,
    fleet: Callable[[], oracle_inputs.Fleet],
    arm_dir: Path,
    console: Console,
) -> arm_record.Optimum | None:
    """The arm's placement against its optimum; a failure of the oracle is reported and
    never stops the run."""
    try:
        return optimum_report.compute(rec, fleet, arm_dir, console)
    except Exception as e:
        failed = arm_record.Optimum(error=f"the oracle failed: {e!r}", figures=[])
        console.print(f"[yellow]optimum: {failed.error}")
        return failed


def run(
    exp: specs.Experiment,
    config: RunConfig,
    open_site: SiteOpener,
    console: Console,
    *,
    planner: Planner | None = None,
    reporter: Reporter | None = None,
) -> int:
    """Run the experiment; 0 when every arm accounted for every pod and ran as labelled.
    `planner` and `reporter`: a wing's (default: the engine's, for a file's variants x
    workloads)."""
    planner = planner or matrix.Planner()
    reporter = reporter or variants_report.Reporter()
    started = time.monotonic()
    out = config.output_dir
    out.mkdir(parents=True, exist_ok=True)
    charts.shared_plotly(out, out)  # before the arms: their reports share it
    stages = planner.stages(exp)
    total = sum(len(s.arms) for s in stages)
    p = _Progress([], {}, {}, {}, [])
    plan = design.of(exp)
    if plan.sequential:
        console.print(f"design: {plan.describe()}")

        def should_stop(completed: int) -> str:
            return _stop_reason(
                exp, plan, reporter, p, completed, time.monotonic() - started, console
            )

        p.should_stop = should_stop
    try:
        for i, stage in enumerate(stages):
            with open_site(stage.cluster, out / f"site-{i}") as site:
                p.sites.append(site.description)
                _run_stage(exp, planner, stage, site, config, p, total, console)
    except KeyboardInterrupt:
        # What was measured is kept: each arm's own directory, and the report over them.
        if plan.sequential and p.closed_at is None and not p.stopped:
            # Judged as a closing look on the pairs run: at the share no look has spent, so
            # the pairs since the last look reached are not judged again at its share.
            p.closed_at = len(p.repeat_seconds)
            p.stopped = f"interrupted: {_closing(plan, p.closed_at)}"
        if p.results:
            try:
                _report(
                    exp,
                    reporter,
                    p,
                    out,
                    time.monotonic() - started,
                    console,
                    interrupted=True,
                )
            except Exception as e:  # a partial report must not hide the interrupt
                console.print(f"[yellow]no report over the arms measured so far: {e}")
        raise
    return _report(exp, reporter, p, out, time.monotonic() - started, console)


def _valid_results(p: _Progress) -> list[tuple[Arm, ArmRecord]]:
    """The arms that ran as labelled and accounted for every pod (no error, no timeout
    outside a probe): the only ones any figure or verdict is made of."""
    return [
        (arm, doc)
        for arm, doc in p.results
        if p.valid[arm.name].valid and accounting.accounted(doc)[0]
    ]


def _stop_reason(
    exp: specs.Experiment,
    plan: design.Design,
    reporter: Reporter,
    p: _Progress,
    completed: int,
    elapsed: float,
    console: Console,
) -> str:
    """Why a sequential run stops after `completed` pairs: at a look, every headline target
    decided; or its budget can reach neither the next look nor one more pair, so it takes
    its closing look there (recorded in `p.closed_at`; pairs that no look would use add
    nothing to a verdict). "" to run the next pair."""
    if not completed:
        return ""
    done = units.counted(completed, "pair")
    if completed in plan.looks:
        left = reporter.undecided(exp, _valid_results(p), [a for a, _ in p.results])
        if not left:
            return f"every headline target decided at the look after {done}"
        console.print(f"look after {done}: {len(left)} headline target(s) undecided")
    if exp.budget_minutes is not None and p.repeat_seconds:
        pair = sum(p.repeat_seconds) / len(p.repeat_seconds)
        if plan.closes(completed, elapsed, pair, exp.budget_minutes * 60):
            p.closed_at = completed
            upcoming = plan.next_look(completed) or plan.max_pairs  # closes: there is one
            return (
                f"its {exp.budget_minutes:g} min budget reaches neither the look after "
                f"{units.counted(upcoming, 'pair')} nor one more pair (a pair takes {pair:.0f} "
                f"s; {elapsed / 60:.1f} min spent): {_closing(plan, completed)}"
            )
    return ""


def _closing(plan: design.Design, pairs: int) -> str:
    """What a closing look after `pairs` pairs judges at."""
    done = units.counted(pairs, "pair")
    level = plan.closed(pairs).level(pairs)
    if not level:
        return f"after {done}, before the first look after {plan.fewest}: observations only"
    return f"closing look after {done} at the error budget left ({level:.2g})"


def _report(
    exp: specs.Experiment,
    reporter: Reporter,
    p: _Progress,
    out: Path,
    elapsed: float,
    console: Console,
    *,
    interrupted: bool = False,
) -> int:
    accounted = {arm.name: accounting.accounted(doc) for arm, doc in p.results}
    by_name = {arm.name: doc for arm, doc in p.results}
    # Only arms that ran as labelled and accounted for every pod feed the figures; the
    # others are listed with their reason.
    results = _valid_results(p)
    meta: dict[str, Any] = {
        "experiment": exp.name,
        "sites": p.sites,
        "nodes": exp.fleet.nodes,
        "repeat": exp.repeats,
        "design": design.of(exp, p.closed_at).describe(),
        **(
            {
                "repeats_completed": len(p.repeat_seconds),
                "stopped": p.stopped,
                **({"closed_at": p.closed_at} if p.closed_at is not None else {}),
            }
            if design.of(exp).sequential
            else {}
        ),
        "elapsed_seconds": round(elapsed, 1),
        "interrupted": interrupted,
        "arms": {
            name: {
                "accounted": ok,
                "detail": why,
                "valid": p.valid[name].valid,
                "validity": p.valid[name].reason,
                "unjudged_share": p.valid[name].unjudged_share,
                "restarts": validity.restarts(by_name[name]) if name in by_name else [],
                **(
                    {"fault": f.model_dump()}
                    if name in by_name and (f := by_name[name].fault)
                    else {}
                ),
                **p.timings.get(name, {}),
            }
            for name, (ok, why) in accounted.items()
        },
        "invalid_arms": {n: v.reason for n, v in p.valid.items() if not v.valid},
    }
    optimum = optimum_report.section(results)
    meta["optimum"] = optimum.to_json()
    finished = Finished(exp, results, [arm for arm, _ in p.results], meta, out)
    index = reporter.report(finished, console)
    optimum_report.console_table(optimum, console)
    bad = {n: why for n, (ok, why) in accounted.items() if not ok}
    for name, why in bad.items():
        console.print(f"[red]arm {name}: not every pod accounted for: {why}")
    for name, v in p.valid.items():
        if not v.valid:
            console.print(f"[red]arm {name} invalid, left out of every figure: {v.reason}")
    console.print(f"report: {index}")
    if interrupted:
        console.print(
            f"[yellow]interrupted after {elapsed / 60:.1f} min: the report covers the "
            f"{len(p.results)} arm(s) measured before"
        )
    elif exp.budget_minutes is not None and elapsed > exp.budget_minutes * 60:
        console.print(
            f"[yellow]{exp.name} took {elapsed / 60:.1f} min, over its "
            f"{exp.budget_minutes:g} min budget on this machine: try fewer nodes, pods or "
            "comparisons"
        )
    else:
        console.print(f"done in {elapsed / 60:.1f} min")
    return 1 if bad or not all(v.valid for v in p.valid.values()) else 0
