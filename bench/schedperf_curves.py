"""Cost curves: scheduler_perf's DRA workload in-process at several fleet sizes, one release.

Upstream's `SchedulingWithResourceClaimTemplate` (the test case of its `5000pods_500nodes`:
one ResourceSlice of 10 devices per node, one-device claims from a template), sized by us
(`schedperf.curves.sized`): `--pods` measured pods on each of `--sizes` nodes, no claims
allocated first, so the fleet stays mostly empty and the scheduler filters about as many nodes
per pod as percentageOfNodesToScore's adaptive rule asks for (`schedperf.costmodel`).

Each repeat runs every size once (sizes in turn, the order reversed every other repeat, so
a change of the machine's load is not read as a change with size). Per run: scheduler_perf's
SchedulingThroughput, the Filter extension point's mean duration per pod and DynamicResources'
Filter per node (both wall time, from scheduler_perf's own metrics), the process tree's CPU
per measured pod (start-up and the fleet's creation included: an upper bound), and the load
average at its start. Written after every run, so an interrupted bench keeps what it took:

    <out>/curve.json   the points, the fits (per node of the fleet, per filtered node, per
                       slice visit of the cost model; 95 % intervals) and the model's
                       predictors at each size
    <out>/curve.html   the curves (plotly), offline
    <out>/<nodes>-<repeat>/   each run's benchmark log and DataItems

`--way loadgen` takes the same figures end to end instead: one local cluster of the release
(`--cluster`), our `dgx-h100` fleet grown to each size in turn (ascending) with `fleet apply`,
`--pods` one-GPU pods per run by `loadgen run pods` through a plain second kube-scheduler
(no extender); CPU per pod is that scheduler's own, the Filter figures are not taken. Each
run starts once the previous run's namespace is gone, after `--idle-seconds` of that
scheduler's CPU at rest (kept per pod for the run's length: what the fleet costs it whatever
the pods do).

    .venv/bin/python bench/schedperf_curves.py --kubernetes 1.37 --sizes 100,250,500,1000 \
        --pods 300 --repeat 3 --out results/curve-1.37
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import apply_fleet, loadgen_pods, settle, tool  # bench/ is on sys.path

from loadgen import scrape
from schedperf import build, costmodel, curves, runner
from testbed.cluster import local, second_scheduler, supervision

DRA_CONFIG = "dra/performance-config.yaml"


def _sizes(text: str) -> list[int]:
    """Node counts, ascending; ValueError (one line) when none or one below 1 (one size is
    a point of a curve that `--append` grows)."""
    try:
        sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise ValueError(f"--sizes {text!r}: comma-separated node counts") from None
    if not sizes or sizes[0] < 1:
        raise ValueError(f"--sizes {text!r}: node counts, each >= 1")
    return sizes


def _appended(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` continuing the curve in `path` (its points, its model at its sizes, its start):
    ValueError (one line) when that is not the same curve (`curves.SAME_CURVE`: another way,
    release, workload or number of pods per run), whose points would not belong on this one."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"--append: {path}: not a curve to continue ({e})") from None
    if not isinstance(old, dict):
        raise ValueError(f"--append: {path}: not a curve to continue (not an object)")
    try:
        return {**curves.merge(old, doc), "started": old.get("started", doc["started"])}
    except ValueError as e:
        raise ValueError(f"--append: {path}: {e}") from None


def _next_repeat(doc: dict[str, Any], nodes: int) -> int:
    """The repeat number after the curve's last at `nodes` (1 for a new size)."""
    return 1 + max((p["repeat"] for p in doc["points"] if p["nodes"] == nodes), default=0)


def _write(out: Path, doc: dict[str, Any]) -> None:
    points = [curves.Point(**p) for p in doc["points"]]
    doc["fits"] = curves.fits(doc["release"], points, doc["pods"], doc["devices_per_node"])
    (out / "curve.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "curve.html").write_text(curves.page(doc))


# What one run returns: (durations, throughput Average or None, CPU seconds, wall seconds,
# nodes filtered per pod or None, idle CPU seconds for as long as the run or None), or None for
# a run without data.
Measured = tuple[dict[str, float], float | None, float, float, float | None, float | None] | None
Measure = Callable[[int, Path], Measured]


def _schedperf_way(
    p: argparse.ArgumentParser, args: argparse.Namespace, release: str, sizes: list[int]
) -> tuple[str, int, Measure]:
    """Upstream's workload sized in-process: (Kubernetes version, devices per node, run)."""
    try:  # upstream's config first (no build), so bad input builds nothing
        upstream = build.upstream_dir(release)
    except build.UnknownRelease as e:
        p.error(str(e))
    except build.BuildError as e:
        raise SystemExit(f"error: {e}") from None
    config_text = (upstream / DRA_CONFIG).read_text()
    upstream_file_dir = str((upstream / DRA_CONFIG).parent)
    try:
        devices = curves.devices_per_node(config_text)
        for n in sizes:  # every size checked before the first run
            curves.sized(config_text, upstream_file_dir, nodes=n, pods=args.pods, workdir=".")
    except curves.CurveError as e:
        p.error(str(e))
    try:
        bench = build.ensure(release)
    except (build.UnknownRelease, build.BuildError) as e:
        raise SystemExit(f"error: {e}") from None

    def measure(nodes: int, run_dir: Path) -> Measured:
        selected = curves.sized(
            config_text, upstream_file_dir, nodes=nodes, pods=args.pods, workdir=str(run_dir)
        )
        before = supervision.children_cpu_seconds()
        outcome = runner.run(
            bench, selected, run_dir, timeout=args.timeout, gomaxprocs=os.cpu_count()
        )
        cpu = supervision.children_cpu_seconds() - before
        if outcome.figures is None or outcome.problem is not None:
            # A failed workload (e.g. upstream's 10-minute wait for its pods ran out) writes
            # a DataItems file without items: not a point of the curve.
            print(f"  no data: {outcome.problem}", flush=True)
            return None
        t = outcome.figures.throughput
        average = t["Average"] if t else None
        filtered = curves.evaluated_nodes(outcome.log.read_text(errors="replace"))
        return dict(outcome.figures.durations), average, cpu, outcome.seconds, filtered, None

    return bench.kubernetes_version, devices, measure


CPU_SERIES = "process_cpu_seconds_total"


def _cpu_rate_at_rest(metrics_url: str, seconds: float) -> float | None:
    """The scheduler's CPU seconds per second over `seconds` with no pod to place: what the
    fleet costs it whatever the pods do (the nodes' status and lease updates through its
    informers), paid per second of a run; None when it did not answer both scrapes."""
    before = asyncio.run(scrape.fetch({"s": metrics_url}, prefixes=(CPU_SERIES,))).samples
    t0 = time.monotonic()
    time.sleep(seconds)
    after = asyncio.run(scrape.fetch({"s": metrics_url}, prefixes=(CPU_SERIES,))).samples
    if CPU_SERIES not in before.get("s", {}) or CPU_SERIES not in after.get("s", {}):
        return None
    return (after["s"][CPU_SERIES] - before["s"][CPU_SERIES]) / (time.monotonic() - t0)


PROFILE = "dgx-h100"
DGX_GPUS = 8


def _loadgen_points(
    args: argparse.Namespace, release: str, sizes: list[int], record: Callable[..., None]
) -> None:
    """The end-to-end way: one cluster, the fleet grown to each size, loadgen per run."""
    cluster = local.LocalCluster(
        local.ClusterConfig(name=args.cluster, kubernetes=release, extender=False)
    )
    status, created = cluster.up()
    env = {**os.environ, "KUBECONFIG": str(status.kubeconfig)}
    fleet = f"curve-{secrets.token_hex(3)}"
    try:
        with (
            tempfile.TemporaryDirectory() as work,
            second_scheduler.running(
                status.kubeconfig, Path(work), scheduler_name=f"sp-{fleet}", release=release
            ) as plain,
        ):

            def measure(nodes: int, run_dir: Path) -> Measured:
                del nodes  # the fleet is already that size
                # The previous run's namespace is still being deleted when loadgen returns:
                # its pods' claims would hold part of the fleet and its deletions' events
                # would land in this run's window.
                settle(status.kubeconfig)
                rest = (
                    _cpu_rate_at_rest(plain.metrics_url, args.idle_seconds)
                    if args.idle_seconds > 0
                    else None
                )
                t0 = time.monotonic()
                doc = loadgen_pods(plain, fleet, run_dir, f"pods={args.pods}", env=env)
                summary = doc["metrics"]["scheduler"]["summary"]
                calls = summary.get("dra_filter_calls")
                filtered = float(calls) / args.pods if calls is not None else None
                average = (doc.get("throughput") or {}).get("Average")
                seconds = time.monotonic() - t0
                idle = rest * seconds if rest is not None else None
                return {}, average, float(summary["cpu_seconds"]), seconds, filtered, idle

            for n in sizes:
                pools = [{"name": "whole", "profile": PROFILE, "count": n}]
                apply_fleet({"name": fleet, "pools": pools}, args.out / "fleet", env)
                for _ in range(args.repeat):
                    record(n, measure)
    finally:
        subprocess.run([tool("fleet"), "delete", "--name", fleet], check=False, env=env)
        if created:
            cluster.down()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubernetes", default="1.37", help="release, e.g. 1.35 (default %(default)s)")
    p.add_argument("--sizes", default="100,250,500,1000", help="node counts (default %(default)s)")
    p.add_argument(
        "--pods", type=int, default=300, help="measured pods per run (default %(default)s)"
    )
    p.add_argument("--repeat", type=int, default=3, help="runs per size (default %(default)s)")
    p.add_argument(
        "--way",
        choices=("schedperf", "loadgen"),
        default="schedperf",
        help="scheduler_perf in-process, or end to end on a local cluster (default %(default)s)",
    )
    p.add_argument(
        "--cluster",
        default="curve",
        help="--way loadgen: the local cluster's name (default %(default)s)",
    )
    p.add_argument(
        "--idle-seconds",
        type=float,
        default=30.0,
        help="--way loadgen: before each run, the scheduler's CPU at rest over this long "
        "(its rate times the run's length is kept as idle_cpu_ms_per_pod; 0: not taken; "
        "default %(default)s)",
    )
    p.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per run (default %(default)s)"
    )
    p.add_argument("--out", type=Path, required=True, help="results directory")
    p.add_argument(
        "--append",
        action="store_true",
        help="continue the curve already in --out (same way, release and --pods): its points "
        "are kept and the repeats numbered after them",
    )
    args = p.parse_args()
    try:
        sizes = _sizes(args.sizes)
    except ValueError as e:
        p.error(str(e))  # exit 2: bad input
    if args.pods < 1 or args.repeat < 1 or args.timeout <= 0 or args.idle_seconds < 0:
        p.error("--pods, --repeat and --timeout must be positive, --idle-seconds not negative")
    release = args.kubernetes.removeprefix("v")
    if args.way == "schedperf":
        version, devices, measure_sp = _schedperf_way(p, args, release, sizes)
        workload = f"{curves.TEST_CASE} (upstream's), sized"
    else:
        if release not in costmodel.RELEASES:
            p.error(f"--kubernetes {release}: one of {', '.join(costmodel.RELEASES)}")
        if args.pods > sizes[0] * DGX_GPUS:
            p.error(
                f"--pods {args.pods}: more than the {sizes[0] * DGX_GPUS} GPUs of {sizes[0]} nodes"
            )
        version, devices = release, DGX_GPUS
        workload = f"loadgen pods on {PROFILE} nodes, a plain second kube-scheduler"

    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "kind": "SchedulerCostCurve",
        "way": args.way,
        "release": release,
        "kubernetes": version,
        "workload": workload,
        "pods": args.pods,
        "devices_per_node": devices,
        "cpus": os.cpu_count(),
        "gomaxprocs": os.cpu_count(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(sys.argv),
        "model": {
            str(n): {
                "nodes_to_find": costmodel.nodes_to_find(n),
                **curves.model_x(release, n, args.pods, devices),
            }
            for n in sizes
        },
        "points": [],
    }
    if args.append and (args.out / "curve.json").exists():
        try:
            doc = _appended(args.out / "curve.json", doc)
        except ValueError as e:
            p.error(str(e))

    def record(n: int, measure: Measure) -> None:
        rep = _next_repeat(doc, n)
        while (args.out / f"{n}-{rep}").exists():  # a run without data keeps its directory
            rep += 1
        load = os.getloadavg()[0]
        print(f"curve: {n} nodes, repeat {rep} (load {load:.1f})", flush=True)
        got = measure(n, (args.out / f"{n}-{rep}").resolve())
        if got is None:
            return
        durations, average, cpu, seconds, filtered, idle = got
        pt = curves.point(
            n, rep, durations, average, cpu, args.pods, round(load, 1), seconds, filtered, idle
        )
        doc["points"].append(asdict(pt))
        print(
            f"  {pt.throughput} pods/s, CPU {pt.cpu_ms_per_pod:.0f} ms/pod, Filter "
            f"{pt.filter_ms_per_pod} ms/pod, nodes filtered per pod "
            f"{pt.nodes_filtered_per_pod}, {pt.seconds:.0f} s",
            flush=True,
        )
        _write(args.out, doc)

    if args.way == "schedperf":
        for i in range(args.repeat):
            for n in list(reversed(sizes)) if i % 2 else sizes:
                record(n, measure_sp)
    else:
        _loadgen_points(args, release, sizes, record)
    print(f"curve: {args.out / 'curve.json'}, {args.out / 'curve.html'}")


if __name__ == "__main__":
    main()
