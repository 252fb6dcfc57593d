"""`testbed demo`: the main job, end to end, on the embedded local cluster.

Binaries -> cluster -> extender -> second (plain) scheduler -> mixed fleet -> the comparison
arms -> summary, `demo.json`, `index.html` -> tear down (unless --keep). The services run as
their own processes through their CLIs, exactly as a user would run them, so each has its own
core and the demo imports none of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from experiment import plan, report, summary, validity
from testbed import vocab
from testbed.cluster import local, processes, second_scheduler
from testbed.kube import resources, watching
from testbed.kube.client import Kube

BUDGET_SECONDS = 15 * 60


class DemoError(RuntimeError):
    """A step failed; the message says which and where its log is."""


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    nodes: int = 1000
    workload: plan.Workload = field(default_factory=plan.Workload)
    output_dir: Path
    keep: bool = False
    """Leave the fleet, and the cluster if the demo started it, running afterwards."""
    qps: float = 100.0
    """loadgen's creation rate."""
    cluster: local.ClusterConfig = field(default_factory=local.ClusterConfig)


def _tool(name: str) -> str:
    """A console script of this installation (beside the running interpreter)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def _wait_child(proc: subprocess.Popen[bytes]) -> int:
    """Wait for a child; on Ctrl-C (or SIGTERM) pass one SIGINT on and let the child finish
    its own interrupt handling, so what it measured is written and what it created is
    removed. Children run in their own process group, so a terminal's Ctrl-C reaches them
    only this way, exactly once (a second SIGINT would make loadgen abort its cleanup)."""
    interrupted = False
    deadline = None
    while True:
        try:
            code = proc.wait(
                timeout=None if deadline is None else max(0.1, deadline - time.monotonic())
            )
            break
        except KeyboardInterrupt:
            if not interrupted:
                interrupted = True
                deadline = time.monotonic() + 120
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
            break
    if interrupted:
        raise KeyboardInterrupt
    return code


def _run(cmd: list[str], env: dict[str, str]) -> int:
    return _wait_child(subprocess.Popen(cmd, env=env, process_group=0))


def _extender(env: dict[str, str], log: Path, port: int) -> contextlib.AbstractContextManager[Any]:
    """`extender serve` on the loopback port the scheduler configuration calls."""
    return processes.running(
        "the extender",
        [_tool("extender"), "serve", "--port", str(port)],
        log=log,
        health_url=f"http://127.0.0.1:{port}/readyz",
        timeout=120,
        env=env,
    )


async def _fleet_slices(kubeconfig: Path) -> list[dict[str, Any]]:
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        selector = resources.label_selector({vocab.LABEL_FLEET: plan.FLEET_NAME})
        return (await kube.list(resources.RESOURCE_SLICES, label_selector=selector)).items


async def _wait_namespace_gone(kubeconfig: Path, namespace: str, seconds: float) -> bool:
    """Block until the previous arm's namespace (its pods and claims) is gone, so the next
    arm starts on a fleet with every device free."""
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:

        async def gone() -> None:
            async for ev in watching.informer(
                kube, resources.NAMESPACES, field_selector=f"metadata.name={namespace}"
            ):
                if isinstance(ev, watching.Snapshot) and not ev.items:
                    return
                if isinstance(ev, watching.Change) and ev.type == "DELETED":
                    return

        try:
            await asyncio.wait_for(gone(), seconds)
        except TimeoutError:
            return False
        return True


def _run_arm(
    arm: plan.Arm,
    out_dir: Path,
    env: dict[str, str],
    qps: float,
    plain: second_scheduler.SecondScheduler,
    scheduler_metrics: str,
    extender_metrics: str,
    arrival: str = "fixed",
) -> dict[str, Any]:
    arm_dir = out_dir / arm.name
    arm_dir.mkdir(parents=True, exist_ok=True)
    scenario = arm.scenario
    if arm.scenario_doc is not None:
        scenario = str(arm_dir / "scenario.yaml")
        Path(scenario).write_text(yaml.safe_dump(arm.scenario_doc, sort_keys=False))
    cmd = [
        _tool("loadgen"),
        "run",
        scenario,
        *(f"{k}={v}" for k, v in arm.params.items()),
        "--node-selector",
        f"{vocab.LABEL_FLEET}={plan.FLEET_NAME}",
        "--output-dir",
        str(arm_dir),
        "--qps",
        str(qps),
        "--arrival",
        arrival,
        "--seed",
        str(arm.repeat),
    ]
    cmd += ["--scrape", "apiserver=kube:/metrics", "--scrape", f"extender={extender_metrics}"]
    if arm.scheduler == plan.PLAIN:
        cmd += ["--scheduler-name", plain.name, "--scrape", f"scheduler={plain.metrics_url}"]
    else:
        cmd += ["--scrape", f"scheduler={scheduler_metrics}"]
    code = _run(cmd, env)
    result = arm_dir / "result.json"
    if not result.is_file():
        raise DemoError(f"loadgen wrote no result for {arm.name} (exit {code})")
    doc: dict[str, Any] = json.loads(result.read_text())
    return doc


def _apply_fleet(nodes: int, out: Path, env: dict[str, str]) -> None:
    """The demo's mixed fleet at `nodes` nodes (fleet touches only the difference)."""
    spec = out / f"fleet-{nodes}.yaml"
    spec.write_text(yaml.safe_dump(plan.fleet_spec(nodes), sort_keys=False))
    if _run([_tool("fleet"), "apply", "-f", str(spec)], env) != 0:
        raise DemoError(f"fleet apply of {nodes} nodes failed")


def _latency_qps(arm: plan.Arm, by_name: dict[str, dict[str, Any]]) -> float | None:
    """LATENCY_LOAD of the rate the arm's throughput arm sustained (None if it has none)."""
    sustained = ((by_name.get(arm.latency_of) or {}).get("throughput") or {}).get("Average")
    return round(plan.LATENCY_LOAD * float(sustained), 3) if sustained else None


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def _skipped_since(log: Path, offset: int) -> int:
    """Times kube-scheduler's log says it skipped the extender after byte `offset`."""
    try:
        with log.open("rb") as f:
            f.seek(offset)
            return validity.skipped_in_log(f.read().decode(errors="replace"))
    except OSError:
        return 0


def _settle(kubeconfig: Path, doc: dict[str, Any], console: Console) -> None:
    namespace = doc.get("namespace")
    if namespace and not asyncio.run(_wait_namespace_gone(kubeconfig, namespace, 300)):
        console.print(f"[yellow]namespace {namespace} still terminating after 300s")


def run(config: DemoConfig, console: Console) -> int:
    """Run the demo; 0 when every arm accounted for every pod and ran as labelled, else 1."""
    started = time.monotonic()
    out = config.output_dir
    out.mkdir(parents=True, exist_ok=True)
    cluster = local.LocalCluster(config.cluster)
    console.rule("control plane")
    status, created = cluster.up()
    state = "started" if created else "already running"
    console.print(f"cluster {config.cluster.name!r} {state} at {status.server}")
    kubeconfig = status.kubeconfig
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    scheduler_port = cluster.component_flag("kube-scheduler", "secure-port")
    scheduler_metrics = f"https://127.0.0.1:{scheduler_port}/metrics"
    extender_metrics = f"http://127.0.0.1:{config.cluster.extender_port}/metrics"
    scheduler_log = config.cluster.cluster_dir / "logs" / "kube-scheduler.log"
    fleet_applied = False
    results: list[tuple[plan.Arm, dict[str, Any]]] = []
    valid: dict[str, validity.Validity] = {}
    timings: dict[str, dict[str, float | str]] = {}
    by_name: dict[str, dict[str, Any]] = {}
    try:
        with (
            _extender(env, out / "extender.log", config.cluster.extender_port),
            second_scheduler.running(kubeconfig, out / "plain-scheduler") as plain,
        ):
            console.rule(f"fleet: {config.nodes} nodes")
            fleet_applied = True
            _apply_fleet(config.nodes, out, env)
            fleet_nodes = config.nodes
            shape = plan.shape_of(asyncio.run(_fleet_slices(kubeconfig)))
            console.print(
                f"fleet: {shape.nodes} device nodes, {shape.gpus} GPUs, "
                f"{shape.eight_gpu_nodes} 8-GPU nodes, {shape.aligned_eight_nodes} with 8 RDMA NICs"
            )
            try:
                arms = plan.arms(shape, config.workload)
            except ValueError as e:
                raise DemoError(str(e)) from e
            for i, arm in enumerate(arms, 1):
                console.rule(f"arm {i}/{len(arms)}: {arm.comparison} / {arm.variant}")
                if (arm.fleet_nodes or config.nodes) != fleet_nodes:
                    fleet_nodes = arm.fleet_nodes or config.nodes
                    console.print(f"resizing the fleet to {fleet_nodes} nodes")
                    _apply_fleet(fleet_nodes, out, env)
                if arm.same_as:
                    # Link, so the report and every reader find the arm's own directory.
                    (out / arm.name).symlink_to(arm.same_as, target_is_directory=True)
                    results.append((arm, by_name[arm.same_as]))
                    valid[arm.name] = valid[arm.same_as]
                    timings[arm.name] = {"seconds": 0.0, "same_as": arm.same_as}
                    console.print(f"same workload as {arm.same_as}: its result is reused")
                    continue
                qps, arrival = config.qps, "fixed"
                if arm.latency_of:
                    latency_qps = _latency_qps(arm, by_name)
                    if latency_qps is None:
                        valid[arm.name] = validity.Validity(
                            False, f"{arm.latency_of} sustained no rate to run below"
                        )
                        console.print(f"[yellow]arm {arm.name}: {valid[arm.name].reason}")
                        continue
                    qps, arrival = latency_qps, "poisson"
                    console.print(f"unsaturated: Poisson arrivals at {qps:g} pods/s")
                arm_started = time.monotonic()
                log_offset = _log_size(scheduler_log)
                doc = _run_arm(
                    arm, out, env, qps, plain, scheduler_metrics, extender_metrics, arrival
                )
                by_name[arm.name] = doc
                results.append((arm, doc))
                valid[arm.name] = (
                    validity.extender_arm(
                        doc, scheduler_skipped=_skipped_since(scheduler_log, log_offset)
                    )
                    if arm.scheduler == plan.EXTENDER
                    else validity.VALID
                )
                if not valid[arm.name].valid:
                    console.print(f"[red]arm {arm.name} is invalid: {valid[arm.name].reason}")
                ran = time.monotonic() - arm_started
                _settle(kubeconfig, doc, console)
                settled = time.monotonic() - arm_started - ran
                timings[arm.name] = {"seconds": round(ran, 1), "cleanup_seconds": round(settled, 1)}
                console.print(f"arm {arm.name}: {ran:.0f} s, then {settled:.0f} s to clean up")
    finally:
        if not config.keep:
            if fleet_applied:
                _run([_tool("fleet"), "delete", "--name", plan.FLEET_NAME], env)
            if created:
                cluster.down()
    # Invalid arms are shown (below and in demo.json), never averaged in.
    rows = summary.rows([(arm, doc) for arm, doc in results if valid[arm.name].valid])
    goals = summary.targets(rows)
    guide = summary.guide_matrix(rows)
    report.console_table(rows, console)
    report.console_targets(goals, console)
    report.console_guide(guide, console)
    accounting = {
        arm.name: summary.accounted(doc, probe_phases=plan.PROBE_PHASES.get(arm.comparison, ()))
        for arm, doc in results
    }
    elapsed = time.monotonic() - started
    meta = {
        "nodes": config.nodes,
        "pods": config.workload.pods,
        "repeat": config.workload.repeat,
        "scale_nodes": config.workload.scale_nodes,
        "elapsed_seconds": round(elapsed, 1),
        "arms": {
            name: {
                "accounted": ok,
                "detail": why,
                "valid": valid[name].valid,
                "validity": valid[name].reason,
                **timings.get(name, {}),
            }
            for name, (ok, why) in accounting.items()
        },
        "invalid_arms": {n: v.reason for n, v in valid.items() if not v.valid},
    }
    index = report.write(out, rows, meta, [arm for arm, _ in results], goals, guide)
    bad = {n: why for n, (ok, why) in accounting.items() if not ok}
    for name, why in bad.items():
        console.print(f"[red]arm {name}: not every pod accounted for: {why}")
    for name, v in valid.items():
        if not v.valid:
            console.print(f"[red]arm {name} invalid, left out of every figure: {v.reason}")
    console.print(f"report: {index}")
    if elapsed > BUDGET_SECONDS:
        console.print(
            f"[yellow]the demo took {elapsed / 60:.1f} min, over its 15 min budget on this "
            "machine: try fewer --nodes/--pods or --comparisons"
        )
    else:
        console.print(f"done in {elapsed / 60:.1f} min")
    return 1 if bad or not all(v.valid for v in valid.values()) else 0
