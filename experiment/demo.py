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

from experiment import plan, report, summary
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


def _settle(kubeconfig: Path, doc: dict[str, Any], console: Console) -> None:
    namespace = doc.get("namespace")
    if namespace and not asyncio.run(_wait_namespace_gone(kubeconfig, namespace, 300)):
        console.print(f"[yellow]namespace {namespace} still terminating after 300s")


def run(config: DemoConfig, console: Console) -> int:
    """Run the demo; 0 when every arm accounted for every pod, 1 otherwise."""
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
    fleet_applied = False
    results: list[tuple[plan.Arm, dict[str, Any]]] = []
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
                    timings[arm.name] = {"seconds": 0.0, "same_as": arm.same_as}
                    console.print(f"same workload as {arm.same_as}: its result is reused")
                    continue
                arm_started = time.monotonic()
                doc = _run_arm(
                    arm, out, env, config.qps, plain, scheduler_metrics, extender_metrics
                )
                by_name[arm.name] = doc
                results.append((arm, doc))
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
    rows = summary.rows(results)
    goals = summary.targets(rows)
    report.console_table(rows, console)
    report.console_targets(goals, console)
    accounting = {
        arm.name: summary.accounted(
            doc, probe_phase="whole" if arm.comparison == "fragmentation" else None
        )
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
            name: {"accounted": ok, "detail": why, **timings.get(name, {})}
            for name, (ok, why) in accounting.items()
        },
    }
    index = report.write(out, rows, meta, [arm.name for arm, _ in results], goals)
    bad = {n: why for n, (ok, why) in accounting.items() if not ok}
    for name, why in bad.items():
        console.print(f"[red]arm {name}: not every pod accounted for: {why}")
    console.print(f"report: {index}")
    if elapsed > BUDGET_SECONDS:
        console.print(
            f"[yellow]the demo took {elapsed / 60:.1f} min, over its 15 min budget on this "
            "machine: try fewer --nodes/--pods or --comparisons"
        )
    else:
        console.print(f"done in {elapsed / 60:.1f} min")
    return 1 if bad else 0
