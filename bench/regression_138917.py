"""Known-answer check: kubernetes/kubernetes#138917 found again, release against release.

Upstream found that partitionable (MIG) ResourceSlices anywhere in a cluster slow every DRA pod
on 1.36 (the allocator's GatherPools takes every node's counter slices as relevant), and fixed
it in 1.37.0 only. The testbed must find the same: the same one-GPU pods on the same
whole-GPU pool, with a `dgx-h100-mig` pool present and absent, on each release.

For each release (its own local cluster, brought up and torn down here): one fleet whose
whole-GPU pool stays and whose MIG pool is applied and removed in alternating order per
repeat; the pods go to the whole-GPU pool through a plain second kube-scheduler (DRA's
allocator alone, no extender), and each run reports scheduler_perf's throughput and the
scheduler's CPU per pod. Expected: on 1.36 the MIG pool slows the whole-GPU pods by an order
of magnitude; on 1.37 it does not; without the pool the releases are alike.

    .venv/bin/python bench/regression_138917.py --whole 100 --mig 100 --pods 50 --repeat 3

Each run's loadgen result is kept under --out/<release>/<mig|none>-<repeat>/.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import apply_fleet, loadgen_pods, tool  # bench/ is on sys.path

from testbed.cluster import binaries, local, second_scheduler

STATES = ("mig", "none")


def _fleet(name: str, whole: int, mig: int) -> dict[str, Any]:
    pools = [{"name": "whole", "profile": "dgx-h100", "count": whole}]
    if mig:
        pools.append({"name": "mig", "profile": "dgx-h100-mig", "count": mig})
    return {"name": name, "pools": pools}


def _run(
    fleet: str, pods: int, plain: second_scheduler.SecondScheduler, out: Path, env: dict[str, str]
) -> dict[str, float]:
    doc = loadgen_pods(plain, fleet, out, f"pods={pods}", "pool=whole", "gpus=1", env=env)
    expected = doc["counts"]["expected_pods"]
    throughput = (doc.get("throughput") or {}).get("Average")
    return {
        "throughput": float("nan") if throughput is None else float(throughput),
        "cpu_ms_per_pod": doc["metrics"]["scheduler"]["summary"]["cpu_seconds"] / expected * 1e3,
        "placed": doc["counts"]["pods_scheduled"] / expected,
    }


def _release(release: str, args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    cluster = local.LocalCluster(
        local.ClusterConfig(
            name=f"ka-138917-{release.replace('.', '-')}", kubernetes=release, extender=False
        )
    )
    status, created = cluster.up()
    env = {**os.environ, "KUBECONFIG": str(status.kubeconfig)}
    fleet = f"ka-{secrets.token_hex(3)}"
    runs: dict[str, list[dict[str, float]]] = {s: [] for s in STATES}
    try:
        with (
            tempfile.TemporaryDirectory() as work,
            second_scheduler.running(
                status.kubeconfig, Path(work), scheduler_name=f"ka-{fleet}", release=release
            ) as plain,
        ):
            for rep in range(args.repeat):
                for state in STATES if rep % 2 == 0 else STATES[::-1]:
                    out = args.out / release / f"{state}-{rep}"
                    mig = args.mig if state == "mig" else 0
                    apply_fleet(_fleet(fleet, args.whole, mig), out, env)
                    got = _run(fleet, args.pods, plain, out, env)
                    runs[state].append(got)
                    print(f"{release} repeat {rep} {state}: {got}", file=sys.stderr, flush=True)
    finally:
        subprocess.run([tool("fleet"), "delete", "--name", fleet], check=False, env=env)
        if created and not args.keep:
            cluster.down()
    return runs


def table(results: dict[str, dict[str, list[dict[str, float]]]]) -> str:
    """Medians per release and pool state, and the newest release's throughput over each
    older one's, repeat by repeat (median of the paired ratios); pure."""
    lines = [
        "| release | MIG pool | throughput (pods/s) | scheduler CPU per pod (ms) | placed |",
        "|---|---|---|---|---|",
    ]
    for release, runs in results.items():
        for state in STATES:
            rs = runs[state]
            lines.append(
                f"| {release} | {'present' if state == 'mig' else 'absent'} "
                f"| {statistics.median(r['throughput'] for r in rs):.1f} "
                f"| {statistics.median(r['cpu_ms_per_pod'] for r in rs):.1f} "
                f"| {min(r['placed'] for r in rs):.0%} |"
            )
    newest = max(results, key=lambda r: tuple(int(p) for p in r.split(".")))
    for release in results:
        if release == newest:
            continue
        for state in STATES:
            pairs = zip(results[newest][state], results[release][state], strict=True)
            ratios = [n["throughput"] / o["throughput"] for n, o in pairs if o["throughput"]]
            shown = ", ".join(f"{r:.2f}" for r in ratios)
            lines.append(
                f"\nthroughput {newest} / {release}, MIG pool "
                f"{'present' if state == 'mig' else 'absent'}: median "
                f"{statistics.median(ratios) if ratios else float('nan'):.2f}x (repeats: {shown})"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--releases", default="1.36,1.37", help="comma-separated (default 1.36,1.37)")
    p.add_argument("--whole", type=int, default=100, help="dgx-h100 nodes (default 100)")
    p.add_argument("--mig", type=int, default=100, help="dgx-h100-mig nodes (default 100)")
    p.add_argument("--pods", type=int, default=50, help="one-GPU pods per run (default 50)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", action="store_true", help="leave the clusters up afterwards")
    p.add_argument("--out", type=Path, default=Path("results/bench-regression-138917"))
    args = p.parse_args()
    if min(args.whole, args.mig, args.pods, args.repeat) < 1 or args.pods > 8 * args.whole:
        p.error("--whole, --mig, --pods and --repeat must be >= 1, --pods <= 8 x --whole")
    try:
        releases = [binaries.check_release(r) for r in args.releases.split(",") if r]
    except binaries.UnknownRelease as e:
        p.error(str(e))
    results = {r: _release(r, args) for r in releases}
    (args.out / "regression_138917.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
