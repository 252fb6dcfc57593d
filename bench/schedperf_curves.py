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

    .venv/bin/python bench/schedperf_curves.py --kubernetes 1.37 --sizes 100,250,500,1000 \
        --pods 300 --repeat 3 --out results/curve-1.37
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from schedperf import build, costmodel, curves, runner

DRA_CONFIG = "dra/performance-config.yaml"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _sizes(text: str) -> list[int]:
    """Node counts, ascending; ValueError (one line) when fewer than two or below 1."""
    try:
        sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise ValueError(f"--sizes {text!r}: comma-separated node counts") from None
    if len(sizes) < 2 or sizes[0] < 1:
        raise ValueError(f"--sizes {text!r}: two node counts at least, each >= 1")
    return sizes


def _write(out: Path, doc: dict[str, Any]) -> None:
    points = [curves.Point(**p) for p in doc["points"]]
    doc["fits"] = curves.fits(doc["release"], points, doc["pods"], doc["devices_per_node"])
    (out / "curve.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "curve.html").write_text(curves.page(doc))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubernetes", default="1.37", help="release, e.g. 1.35 (default %(default)s)")
    p.add_argument("--sizes", default="100,250,500,1000", help="node counts (default %(default)s)")
    p.add_argument(
        "--pods", type=int, default=300, help="measured pods per run (default %(default)s)"
    )
    p.add_argument("--repeat", type=int, default=3, help="runs per size (default %(default)s)")
    p.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per run (default %(default)s)"
    )
    p.add_argument("--out", type=Path, required=True, help="results directory")
    args = p.parse_args()
    try:
        sizes = _sizes(args.sizes)
    except ValueError as e:
        p.error(str(e))  # exit 2: bad input
    if args.pods < 1 or args.repeat < 1 or args.timeout <= 0:
        p.error("--pods, --repeat and --timeout must be positive")
    release = args.kubernetes.removeprefix("v")
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

    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "kind": "SchedulerPerfCurve",
        "release": release,
        "kubernetes": bench.kubernetes_version,
        "workload": f"{curves.TEST_CASE} (upstream's), sized",
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
    for rep in range(1, args.repeat + 1):
        for n in sizes if rep % 2 else list(reversed(sizes)):
            run_dir = (args.out / f"{n}-{rep}").resolve()
            selected = curves.sized(
                config_text, upstream_file_dir, nodes=n, pods=args.pods, workdir=str(run_dir)
            )
            load = os.getloadavg()[0]
            print(f"curve: {n} nodes, repeat {rep}/{args.repeat} (load {load:.1f})", flush=True)
            before = _children_cpu()
            outcome = runner.run(bench, selected, run_dir, timeout=args.timeout)
            cpu = _children_cpu() - before
            if outcome.figures is None:
                print(f"  no data: {outcome.problem}", flush=True)
                continue
            t = outcome.figures.throughput
            pt = curves.point(
                n,
                rep,
                outcome.figures.durations,
                t["Average"] if t else None,
                cpu,
                args.pods,
                round(load, 1),
                outcome.seconds,
            )
            doc["points"].append(asdict(pt))
            print(
                f"  {pt.throughput} pods/s, CPU {pt.cpu_ms_per_pod:.0f} ms/pod, Filter "
                f"{pt.filter_ms_per_pod} ms/pod, {pt.seconds:.0f} s",
                flush=True,
            )
            _write(args.out, doc)
    print(f"curve: {args.out / 'curve.json'}, {args.out / 'curve.html'}")


if __name__ == "__main__":
    main()
