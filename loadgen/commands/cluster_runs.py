"""`loadgen runs` and `loadgen cleanup`: the runs in a cluster (alive, kept or abandoned),
listed and removed with their claims."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.table import Table

from loadgen import inventory, runner, runs
from loadgen.commands.common import EXIT_OK, EXIT_RUNTIME, RUN_ID, UsageError, with_kube
from testbed import cliconv, runtime
from testbed.kube.client import Kube


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _state(run: runs.Run) -> str:
    return "terminating" if run.terminating else run.state


async def print_runs(kube: Kube, out: Console, fmt: str = "table") -> int:
    found = await inventory.list_runs(kube)
    doc = [
        {
            "run_id": r.run_id,
            "age_seconds": round(r.age_seconds, 1),
            "state": _state(r),
            "heartbeat_age_seconds": r.heartbeat_age_seconds,
            "pods": r.pods,
            "claims": r.claims,
            "allocated_claims": r.allocated_claims,
            "gpus": r.gpus,
        }
        for r in found
    ]

    def table() -> None:
        if not found:
            out.print("no loadgen runs in the cluster")
            return
        t = Table()
        for col in ("run id", "age", "state", "heartbeat", "pods", "claims", "GPUs held"):
            t.add_column(col, justify="left" if col in ("run id", "state") else "right")
        for r in found:
            beat = (
                "-" if r.heartbeat_age_seconds is None else _age(r.heartbeat_age_seconds) + " ago"
            )
            t.add_row(
                r.run_id,
                _age(r.age_seconds),
                _state(r),
                beat,
                str(r.pods),
                f"{r.allocated_claims}/{r.claims}",
                str(r.gpus),
            )
        out.print(t)
        if any(r.state == "abandoned" and not r.terminating for r in found):
            out.print("remove abandoned runs with: loadgen cleanup --abandoned")

    cliconv.emit(doc, fmt, table)
    return EXIT_OK


def _chosen(found: dict[str, runs.Run], opts: dict[str, Any], err: Console) -> list[str]:
    """The runs `loadgen cleanup` was asked to remove; a running one only with --force."""
    if opts.get("all"):
        live = [i for i, r in found.items() if r.state == "running" and not r.terminating]
        if live and not opts.get("force"):
            raise runner.RunError(
                f"{len(live)} run(s) still running ({', '.join(live)}), maybe someone else's: "
                "stop them, name the others, or use --all --force"
            )
        return list(found)
    if opts.get("abandoned"):
        return [i for i, r in found.items() if r.state == "abandoned"]
    chosen = []
    for run_id in opts.get("run_ids", []):
        run = found.get(run_id)
        if run is None:
            err.print(f"run {run_id}: not in the cluster, nothing to remove")
        elif run.state == "running" and not run.terminating and not opts.get("force"):
            raise runner.RunError(
                f"run {run_id} is running (heartbeat "
                f"{_age(run.heartbeat_age_seconds or 0)} ago): stop it, or use --force"
            )
        else:
            chosen.append(run_id)
    return chosen


async def _confirmed_abandoned(kube: Kube, candidates: list[runs.Run], err: Console) -> list[str]:
    """The runs that stay without a heartbeat while we watch for as long as the stale limit
    (a run whose beat arrives meanwhile was only cut off, e.g. by a control-plane outage)."""
    ids = [r.run_id for r in candidates]
    window = runs.STALE_INTERVALS * max(r.heartbeat_interval for r in candidates)
    err.print(f"{len(ids)} run(s) look abandoned: watching their heartbeats for {window:g}s")
    alive = await inventory.still_beating(kube, ids, window)
    for run_id in sorted(alive):
        err.print(f"run {run_id}: its heartbeat came back (alive, it was only cut off): left alone")
    return [i for i in ids if i not in alive]


def cleanup(opts: dict[str, Any], err: Console) -> int:
    ids: list[str] = opts.get("run_ids", [])
    picked = bool(ids) + bool(opts.get("abandoned")) + bool(opts.get("all"))
    if picked != 1:
        raise UsageError("name runs to remove, or give --abandoned or --all (one of them)")
    for run_id in ids:
        if not RUN_ID.match(run_id):
            raise UsageError(f"{run_id!r} is not a run id")

    async def go(kube: Kube) -> int:
        found = {r.run_id: r for r in await inventory.list_runs(kube)}
        chosen = _chosen(found, opts, err)
        if opts.get("abandoned") and chosen:
            chosen = await _confirmed_abandoned(kube, [found[i] for i in chosen], err)
        for run_id in chosen:
            await inventory.remove(kube, run_id)
        deadline = time.monotonic() + opts["wait"]
        code = EXIT_OK
        for run_id in chosen:
            run = found[run_id]
            if await inventory.wait_gone(kube, run_id, max(0.0, deadline - time.monotonic())):
                err.print(
                    f"removed run {run_id}: {run.pods} pods, {run.claims} claims, "
                    f"{run.gpus} GPUs released"
                )
            else:
                err.print(f"run {run_id}: namespace still terminating after {opts['wait']:g}s")
                code = EXIT_RUNTIME
        if not chosen and not ids:
            err.print("nothing to remove")
        return code

    return runtime.run(with_kube(opts, go))
