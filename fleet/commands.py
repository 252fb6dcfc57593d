"""What each `fleet` command does, once `fleet.cli` has parsed its flags: a validated fleet
from the flags, then render, apply, status, taint, delete or serve, with progress bars and
one-line summaries on stderr."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress as RichBar
from rich.progress import TaskID
from rich.table import Table

from fleet import handoff, layout, yamlout
from fleet import profiles as profiles_mod
from fleet import render as render_mod
from fleet.reconcile import ReconcileError, Reconciler, ReconcileSettings
from fleet.spec import DEFAULT_NAME, SpecError, for_profile, from_data, load
from testbed import cliconv, runtime, vocab
from testbed.kube.client import ClientSettings, Kube

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class UsageError(cliconv.UsageError):
    """Bad flags or spec: exit 2."""


def _fleet_from_args(args: argparse.Namespace) -> layout.DesiredFleet:
    """The fleet checked against every API limit, or a UsageError/SpecError (nothing written)."""
    extra = profiles_mod.load_paths(args.profiles)
    if args.filename and args.profile:
        raise UsageError("give either -f SPEC or --profile/--nodes, not both")
    if args.filename:
        if args.nodes is not None or args.kwok_shards is not None:
            raise UsageError("--nodes and --kwok-shards go with --profile, not with -f")
        fleet = load(args.filename, name=args.name)
    elif args.profile:
        if args.nodes is None:
            raise UsageError("--profile needs --nodes N")
        fleet = for_profile(
            args.profile,
            args.nodes,
            name=args.name or DEFAULT_NAME,
            seed=args.seed or 0,
            kwok_shards=args.kwok_shards or 1,
        )
    else:
        raise UsageError("give a fleet spec: -f SPEC, or --profile P --nodes N")
    try:
        return render_mod.validate(fleet, layout.resolve_profiles(fleet, extra))
    except SpecError as e:
        raise SpecError(f"{args.filename or '--profile/--nodes'}: {e}") from None


# -- commands (each is its subparser's `args.func`) ---------------------------------------------


def render(args: argparse.Namespace) -> int:
    out = render_mod.render(_fleet_from_args(args))
    fmt = _format_json if args.format == "json" else yamlout.dump_stream
    with render_mod.gc_paused():
        return _write_rendered(args, out, fmt)


def _write_rendered(
    args: argparse.Namespace,
    out: render_mod.Rendered,
    fmt: Callable[[list[dict[str, Any]]], Iterable[str]],
) -> int:
    """Write object by object: a 1,000-node MIG fleet is 200 MB of YAML, never held whole."""
    if not args.output_dir:
        sys.stdout.writelines(fmt(out.objects()))
        return 0
    target = Path(args.output_dir)
    try:
        target.mkdir(parents=True, exist_ok=True)
        ext = args.format
        for name, objs in (
            ("deviceclasses", out.device_classes),
            ("nodes", out.nodes),
            ("resourceslices", out.slices),
        ):
            with (target / f"{name}.{ext}").open("w") as f:
                f.writelines(fmt(objs))
    except OSError as e:
        raise UsageError(f"cannot write to {target}: {e.strerror or e}") from None
    err_console.print(
        f"wrote {len(out.device_classes)} DeviceClasses, {len(out.nodes)} Nodes, "
        f"{len(out.slices)} ResourceSlices to {target}/"
    )
    return 0


def _format_json(objs: list[dict[str, Any]]) -> Iterator[str]:
    return (json.dumps(o, separators=(",", ":")) + "\n" for o in objs)


def profiles(args: argparse.Namespace) -> int:
    known = profiles_mod.catalogue(profiles_mod.load_paths(args.profiles))
    rows = []
    for p in known.values():
        rdma = sum(r.nics for r in p.roots if r.nics and p.nics[p.nic_model_name(r)].rdma)
        mode = (
            "-" if p.gpu is None else "mig" if p.gpu.mig else "shared" if p.gpu.shared else "whole"
        )
        rows.append(
            {
                "profile": p.name,
                "gpus": p.gpu_count,
                "gpu_mode": mode,
                "nics": p.nic_count,
                "rdma": rdma,
                "numa": p.numa_nodes,
                "description": p.description,
            }
        )

    def table() -> None:
        t = Table("PROFILE", "GPUS", "GPU MODE", "NICS", "RDMA", "NUMA", "DESCRIPTION", box=None)
        for row in rows:
            t.add_row(*(str(v) for v in row.values()))
        cliconv.stdout_console().print(t)

    cliconv.emit(rows, args.output, table)
    return 0


def apply(args: argparse.Namespace) -> int:
    desired = _fleet_from_args(args)  # all validation before any connection
    return runtime.run(_apply(args, desired))


async def _apply(args: argparse.Namespace, desired: layout.DesiredFleet) -> int:
    fleet = desired.fleet
    if args.through_service:
        return await _apply_through_service(args, desired)
    async with await _connect(args) as kube:
        rec = Reconciler(kube, settings=ReconcileSettings(concurrency=args.concurrency))
        total = fleet.spec.total_nodes
        started = time.perf_counter()
        with _Bar() as bar:
            # Watch for Ready while writing: kwok readies the first nodes while the last are
            # still being created, so the wait overlaps the writes.
            waiter = None
            if not args.no_wait and total:
                waiter = asyncio.create_task(
                    rec.wait_ready(desired, within=args.timeout, progress=bar.track())
                )
            try:
                counts = await rec.apply(desired, progress=bar.track())
                err_console.print(
                    f"fleet {fleet.name}: {total} nodes; created {counts.created}, updated "
                    f"{counts.updated}, deleted {counts.deleted}, unchanged {counts.unchanged} "
                    f"objects in {time.perf_counter() - started:.1f}s"
                )
                ready = await waiter if waiter else None
            finally:
                if waiter and not waiter.done():
                    waiter.cancel()
        if ready is not None:
            err_console.print(
                f"fleet {fleet.name}: {ready}/{total} nodes Ready after "
                f"{time.perf_counter() - started:.1f}s"
            )
    return 0


async def _apply_through_service(args: argparse.Namespace, desired: layout.DesiredFleet) -> int:
    fleet = desired.fleet
    obj = fleet.to_object(inline=list(profiles_mod.load_paths(args.profiles).values()))
    started = time.perf_counter()
    async with await _connect(args) as kube:
        generation = await handoff.submit(kube, obj)
        err_console.print(f"fleet {fleet.name}: Fleet object at generation {generation}")
        if args.no_wait:
            return 0
        status = await handoff.wait_ready(
            kube,
            fleet.name,
            generation,
            within=args.timeout,
            on_status=lambda m: err_console.print(f"fleet {fleet.name}: {m}"),
        )
    err_console.print(
        f"fleet {fleet.name}: {status.get('readyNodes', 0)}/{fleet.spec.total_nodes} nodes "
        f"Ready through fleet serve after {time.perf_counter() - started:.1f}s"
    )
    return 0


def status(args: argparse.Namespace) -> int:
    return runtime.run(_status(args))


async def _status(args: argparse.Namespace) -> int:
    async with await _connect(args) as kube:
        rec = Reconciler(kube)
        names = await rec.list_fleets() if args.all else [args.name or DEFAULT_NAME]
        results = [await rec.status(n) for n in names]
    doc = [
        {
            "name": r.name,
            "recorded": r.recorded,
            "complete": r.complete,
            "problems": r.problems,
            "desired": r.desired,
            "nodes": r.nodes,
            "ready": r.ready,
            "pools": [dataclasses.asdict(p) for p in r.pools],
        }
        for r in results
    ]
    if args.output != "table":
        cliconv.emit(doc if args.all else doc[0], args.output, lambda: None)
        return 0
    table = Table(
        "FLEET", "STATE", "POOL", "PROFILE", "DESIRED", "NODES", "READY", "SLICES", box=None
    )
    for r in results:
        state = "complete" if r.complete else "INCOMPLETE"
        if not r.pools:
            table.add_row(r.name, state, "-", "-", "-", "0", "0", "0")
        for p in r.pools:
            desired = "?" if p.desired is None else str(p.desired)
            slices = str(p.slices)
            if p.desired_slices is not None and p.desired_slices != p.slices:
                slices += f"/{p.desired_slices}"
            table.add_row(
                r.name, state, p.pool, p.profile, desired, str(p.nodes), str(p.ready), slices
            )
    cliconv.stdout_console().print(table)
    for r in results:
        if not r.complete:
            err_console.print(
                f"fleet {r.name} is incomplete: {'; '.join(r.problems)}. To converge, apply "
                f"its spec again (`fleet apply -f SPEC --name {r.name}`, or the same --profile/"
                f"--nodes); `fleet delete --name {r.name}` removes it instead."
            )
    return 0


def taint(args: argparse.Namespace) -> int:
    if args.clear == (args.share is not None):
        raise UsageError("give --share S to taint, or --clear to remove (one of them)")
    return runtime.run(_taint(args))


async def _taint(args: argparse.Namespace) -> int:
    name = args.name or DEFAULT_NAME
    async with await _connect(args) as kube:
        rec = Reconciler(kube, settings=ReconcileSettings(concurrency=args.concurrency))
        recorded = await rec.read_record(name)
        if recorded is None:
            raise ReconcileError(f"fleet {name} has no record; apply it first")
        doc = recorded.to_object()
        kept = [
            t.model_dump(mode="json", by_alias=True, exclude_defaults=True)
            for t in recorded.spec.device_taints
            if t.key != args.key
        ]
        if not args.clear:
            entry = {"key": args.key, "effect": args.effect, "share": args.share}
            entry.update({"value": args.value} if args.value else {})
            entry.update({"pools": args.pool} if args.pool else {})
            kept.append(entry)
        doc["spec"]["deviceTaints"] = kept
        desired = render_mod.validate(from_data(doc, source=f"fleet {name}"))
        counts = await rec.apply(desired)
    tainted = sum(
        1
        for n in desired.nodes
        for taints in n.gpu_taints.values()
        if any(t.key == args.key for t in taints)
    )
    gpus = sum(n.profile.gpu_count for n in desired.nodes)
    err_console.print(
        f"fleet {name}: {tainted} of {gpus} GPUs carry {args.key}; updated {counts.updated} slices"
    )
    return 0


def delete(args: argparse.Namespace) -> int:
    return runtime.run(_delete(args))


async def _delete(args: argparse.Namespace) -> int:
    name = args.name or DEFAULT_NAME
    async with await _connect(args) as kube:
        started = time.perf_counter()
        outcome = await handoff.withdraw(kube, name, within=args.timeout)
        if outcome is handoff.Withdrawal.SERVED:
            err_console.print(
                f"fleet {name}: Fleet object and its objects deleted by fleet serve in "
                f"{time.perf_counter() - started:.1f}s"
            )
            return 0
        rec = Reconciler(kube)
        with _Bar() as bar:
            counts = await rec.delete(name, within=args.timeout, progress=bar)
        if outcome is handoff.Withdrawal.UNSERVED:
            # Only now, so that a failed direct delete leaves the Fleet object to retry from.
            await handoff.set_finalizer(kube, name, present=False)
    took = time.perf_counter() - started
    if outcome is handoff.Withdrawal.UNSERVED:
        err_console.print(
            f"fleet {name}: no fleet serve took up the Fleet object; deleted its "
            f"{counts.deleted} objects directly, then the Fleet object, in {took:.1f}s"
        )
    else:
        err_console.print(f"fleet {name}: deleted {counts.deleted} objects in {took:.1f}s")
    return 0


def serve(args: argparse.Namespace) -> int:
    from fleet import service

    return runtime.run(
        service.serve(
            kubeconfig=args.kubeconfig,
            context=args.context,
            settings=_client_settings(args),
            host=args.host,
            port=args.port,
            with_crd=args.install_crd,
            concurrency=args.concurrency,
            ready_timeout=args.ready_timeout,
        )
    )


# -- plumbing ----------------------------------------------------------------------------------


def _client_settings(args: argparse.Namespace) -> ClientSettings:
    return ClientSettings(
        qps=args.qps,
        burst=args.burst,
        pool_size=max(args.concurrency * 2, 16),
        user_agent=vocab.FLEET_MANAGER,
        request_timeout=cliconv.long_run_timeout(args),
    )


async def _connect(args: argparse.Namespace) -> Kube:
    # Fails fast and clearly on an unreachable or silent cluster, before anything is written.
    return await cliconv.connect(args, _client_settings(args))


class _Bar:
    """Rich progress bars on stderr; `track()` gives one bar as the reconciler's Progress."""

    def __init__(self) -> None:
        self.bar = runtime.progress_bar(err_console, transient=True)
        self._single: _Track | None = None

    def __enter__(self) -> _Bar:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def track(self) -> _Track:
        return _Track(self.bar)

    # A _Bar is itself a Progress too (one bar at a time), for the single-phase commands.
    def phase(self, description: str, total: int) -> None:
        self._single = self._single or self.track()
        self._single.phase(description, total)

    def advance(self, n: int = 1) -> None:
        if self._single:
            self._single.advance(n)

    def set_done(self, done: int) -> None:
        if self._single:
            self._single.set_done(done)


class _Track:
    def __init__(self, bar: RichBar) -> None:
        self._bar = bar
        self._task: TaskID | None = None

    def phase(self, description: str, total: int) -> None:
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._bar.advance(self._task, n)

    def set_done(self, done: int) -> None:
        if self._task is not None:
            self._bar.update(self._task, completed=done)
