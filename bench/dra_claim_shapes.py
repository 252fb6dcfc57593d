"""Benchmark: what each DRA claim shape costs kube-scheduler per pod, side by side in one run.

One fleet with up to three pools of the same size (`--nodes` each), those the chosen shapes
use: whole H100s (dgx-h100), partitionable ones (dgx-h100-mig) and shareable ones
(dgx-h100-shared). The same number of pods (`--pods`, at most --nodes: `all` takes a node
each) asks each shape in turn, on its pool, scheduled by a plain second kube-scheduler of its
own (no extender: DRA's allocator alone):

    whole      one GPU                              (dgx-h100)
    mig        one 1g.10gb MIG partition            (dgx-h100-mig)
    capacity   a 10Gi share of a GPU                (dgx-h100-shared)
    shared     one GPU claim shared by 4 pods       (dgx-h100)
    first      firstAvailable: one 80Gi GPU, else 2 (dgx-h100)
    all        allocationMode All (the node's 8)    (dgx-h100)
    aligned    one GPU + one RDMA NIC on a PCIe root (dgx-h100)

Shapes run in a rotated order per repeat; each reports the scheduler's CPU seconds per pod
(from its own /metrics, process_cpu_seconds_total over the run) and scheduler_perf's
throughput, and both as ratios to the whole-GPU claim of the same repeat. Medians over
repeats.

    .venv/bin/python bench/dra_claim_shapes.py --nodes 30 --pods 30 --repeat 3

Needs a running local cluster (KUBECONFIG, e.g. `testbed up`). The fleet is created with
`fleet apply` and deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import loadgen_pods  # bench/ is on sys.path

from testbed.cluster import second_scheduler
from testbed.kube import resources, watching
from testbed.kube.client import Kube

BIN = Path(sys.executable).parent
POOLS = {"whole": "dgx-h100", "mig": "dgx-h100-mig", "shared": "dgx-h100-shared"}
# shape -> (pool, loadgen `pods` scenario parameters)
SHAPES: dict[str, tuple[str, dict[str, str]]] = {
    "whole": ("whole", {"gpus": "1"}),
    "mig": ("mig", {"gpus": "1", "mig_profile": "1g.10gb"}),
    "capacity": ("shared", {"gpus": "1", "memory": "10Gi"}),
    "shared": ("whole", {"gpus": "1", "shared_by": "4"}),
    "first": ("whole", {"first_available": "1>=80Gi,2"}),
    "all": ("whole", {"gpus": "8", "all_gpus": "true"}),
    "aligned": ("whole", {"gpus": "1", "nics": "1", "align": "true"}),
}


async def _namespace_gone(namespace: str, seconds: float) -> None:
    """Block until a run's namespace is gone, so the next shape starts on free devices."""
    async with await Kube.connect() as kube:
        if not await watching.until_deleted(kube, resources.NAMESPACES, namespace, seconds):
            raise TimeoutError(f"namespace {namespace} still there after {seconds:.0f}s")


def _run(
    shape: str, fleet: str, pods: int, plain: second_scheduler.SecondScheduler, out: Path
) -> dict[str, Any]:
    pool, params = SHAPES[shape]
    args = [f"pods={pods}", f"pool={pool}", *(f"{k}={v}" for k, v in params.items())]
    doc = loadgen_pods(plain, fleet, out, *args, extra=("--qps", "100"), what=f"shape {shape}")
    asyncio.run(_namespace_gone(doc["namespace"], 300))
    summary = doc["metrics"]["scheduler"]["summary"]
    expected = doc["counts"]["expected_pods"]
    return {
        "cpu_ms_per_pod": summary["cpu_seconds"] / expected * 1000,
        "throughput": (doc.get("throughput") or {}).get("Average", 0.0),
        "scheduled": doc["counts"]["pods_scheduled"],
        "expected": expected,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=30, help="nodes per pool (default 30)")
    p.add_argument("--pods", type=int, default=30, help="pods per shape, <= --nodes")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset")
    p.add_argument("--out", type=Path, default=Path("results/bench-dra-claim-shapes"))
    args = p.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    if not set(shapes) <= set(SHAPES) or "whole" not in shapes:
        p.error(f"--shapes: a subset of {', '.join(SHAPES)} that includes whole")
    if not 0 < args.pods <= args.nodes:
        p.error("--pods must be between 1 and --nodes (an `all` pod takes a whole node)")
    kubeconfig = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
    fleet = f"shapes-{secrets.token_hex(3)}"
    spec = {
        "name": fleet,
        # Only the pools the chosen shapes use: partitionable (MIG) slices anywhere in the
        # cluster slow kube-scheduler's DRA filter for every pod (see BENCHMARKS.md).
        "pools": [
            {"name": n, "profile": prof, "count": args.nodes}
            for n, prof in POOLS.items()
            if n in {SHAPES[s][0] for s in shapes}
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    spec_file = args.out / "fleet.json"
    spec_file.write_text(json.dumps(spec))
    subprocess.run([str(BIN / "fleet"), "apply", "-f", str(spec_file)], check=True)
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in shapes}
    try:
        with (
            tempfile.TemporaryDirectory() as work,
            second_scheduler.running(
                kubeconfig, Path(work), scheduler_name=f"shapes-bench-{secrets.token_hex(3)}"
            ) as plain,
        ):
            for rep in range(args.repeat):
                turn = rep % len(shapes)
                for shape in shapes[turn:] + shapes[:turn]:
                    got = _run(shape, fleet, args.pods, plain, args.out / f"{shape}-{rep}")
                    results[shape].append(got)
                    print(f"repeat {rep} {shape}: {got}", file=sys.stderr, flush=True)
    finally:
        subprocess.run([str(BIN / "fleet"), "delete", "--name", fleet], check=False)
    table = _table(results, args)
    (args.out / "claim_shapes.json").write_text(json.dumps({"results": results}, indent=2))
    print(table)


def _table(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """Medians over repeats, and each repeat's ratio to the whole-GPU claim of that repeat
    (median of the ratios): both sides of a ratio ran minutes apart, not runs apart."""
    whole = results["whole"]
    lines = [
        f"{args.pods} pods per shape, {args.nodes} nodes per pool, {args.repeat} repeat(s)",
        "| shape | scheduler CPU per pod (ms) | vs whole | throughput (pods/s) | vs whole "
        "| placed |",
        "|---|---|---|---|---|---|",
    ]
    for shape, runs in results.items():
        cpu = statistics.median(r["cpu_ms_per_pod"] for r in runs)
        thr = statistics.median(r["throughput"] for r in runs)
        cpu_ratio = statistics.median(
            r["cpu_ms_per_pod"] / w["cpu_ms_per_pod"] for r, w in zip(runs, whole, strict=True)
        )
        thr_ratio = statistics.median(
            r["throughput"] / w["throughput"] if w["throughput"] else float("nan")
            for r, w in zip(runs, whole, strict=True)
        )
        placed = min(r["scheduled"] / r["expected"] for r in runs)
        lines.append(
            f"| {shape} | {cpu:.1f} | {cpu_ratio:.2f}x | {thr:.1f} | {thr_ratio:.2f}x "
            f"| {placed:.0%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
