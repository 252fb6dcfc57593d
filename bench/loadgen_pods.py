"""Benchmark: `loadgen --pods N` on a fleet of kwok nodes, checked three ways.

1. loadgen's own cost: CPU seconds (user+sys, from wait4) over the run's wall time, and
   peak RSS — target <= 25 % of one core at 200 pods/s and <= 300 MB.
2. Its latencies against an independent second watcher (a separate process watching the
   same pods): pod_startup p99 must agree within 50 ms.
3. Against the API server's own timestamps: no pod's create->Running may be shorter than
   creationTimestamp -> container start allows (`server_check.violations == 0`).

    .venv/bin/python bench/loadgen_pods.py --nodes 1000 --pods 10000 --qps 200 --gpus 0

A dgx-h100 node has 8 GPUs, so with one GPU per pod at most 8 pods per node can run: use
`--gpus 0` (no claim) or N <= 8 x nodes to have every pod Running. The fleet is created with
`fleet apply` and deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from loadgen import stats
from testbed import vocab
from testbed.cluster import supervision
from testbed.kube import resources, watching
from testbed.kube.client import ClientSettings, Kube

BIN = Path(sys.executable).parent


async def watcher(namespace: str, out: Path, expected: int) -> None:
    """The independent second watcher: first seen / scheduled / Running receive times."""
    kube = await Kube.connect(settings=ClientSettings(qps=0))
    seen: dict[str, list[float | None]] = {}
    running = 0
    try:
        async for ev in watching.informer(kube, resources.PODS, namespace=namespace):
            now = time.time()
            objs = ev.items if isinstance(ev, watching.Snapshot) else [ev.object]
            for pod in objs:
                rec = seen.setdefault(pod["metadata"]["name"], [now, None, None])
                if rec[1] is None and pod.get("spec", {}).get("nodeName"):
                    rec[1] = now
                if rec[2] is None and pod.get("status", {}).get("phase") == "Running":
                    rec[2] = now
                    running += 1
            if running >= expected:
                break
    finally:
        await kube.close()
        with out.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["pod", "seen", "scheduled", "running"])
            for name, (a, b, c) in sorted(seen.items()):
                w.writerow([name, a, b or "", c or ""])


def _wait_sampling(pid: int) -> tuple[int, os.rusage_result, list[tuple[float, float]]]:
    """Wait for `pid`, sampling (wall, CPU seconds) every 0.5 s; returns its exit status,
    its rusage and the samples."""
    samples: list[tuple[float, float]] = []
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, samples
        cpu = supervision.cpu_seconds(pid)
        if cpu is not None:
            samples.append((time.time(), cpu))
        time.sleep(0.5)


def _peak_share(samples: list[tuple[float, float]], window: float = 5.0) -> float:
    """The highest CPU share of one core over any `window` seconds."""
    best = 0.0
    j = 0
    for i in range(len(samples)):
        while samples[i][0] - samples[j][0] > window:
            j += 1
        span = samples[i][0] - samples[j][0]
        if span >= window * 0.8:
            best = max(best, (samples[i][1] - samples[j][1]) / span)
    return best


def _startup_ms(rows: dict[str, tuple[float, float]]) -> list[float]:
    return [(run - seen) * 1000.0 for seen, run in rows.values()]


def _read(path: Path, seen_col: str, run_col: str) -> dict[str, tuple[float, float]]:
    with path.open() as f:
        return {
            r["pod"]: (float(r[seen_col]), float(r[run_col]))
            for r in csv.DictReader(f)
            if r[seen_col] and r[run_col]
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--qps", type=float, default=200.0)
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--profile", default="dgx-h100")
    p.add_argument("--out", type=Path, default=Path("results/bench-loadgen-pods"))
    p.add_argument("--keep-fleet", action="store_true")
    p.add_argument("--watch-only", nargs=3, metavar=("NS", "OUT", "N"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.watch_only:
        ns, out, n = args.watch_only
        asyncio.run(watcher(ns, Path(out), int(n)))
        return

    fleet = f"lgbench-{secrets.token_hex(3)}"
    run_id = f"bench-{secrets.token_hex(3)}"
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    subprocess.run(
        [BIN / "fleet", "apply", "--profile", args.profile, "--nodes", str(args.nodes),
         "--name", fleet, "--timeout", "1200"],
        check=True,
    )  # fmt: skip
    print(f"fleet {fleet}: {args.nodes} nodes in {time.time() - t0:.1f}s", flush=True)
    watch_csv = args.out / "watcher.csv"
    second = subprocess.Popen(
        [sys.executable, __file__, "--watch-only", f"loadgen-{run_id}", str(watch_csv),
         str(args.pods)]
    )  # fmt: skip
    try:
        time.sleep(2)  # let the watcher list before the first pod exists
        cmd = [
            BIN / "loadgen", "--pods", str(args.pods), "--gpus", str(args.gpus),
            "--qps", str(args.qps), "--max-in-flight", "200", "--run-id", run_id,
            "--node-selector", f"{vocab.LABEL_FLEET}={fleet}", "--output-dir", str(args.out),
            "--timeout", "30m", "-q",
        ]  # fmt: skip
        start = time.time()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        status, usage, samples = _wait_sampling(proc.pid)
        wall = time.time() - start
        code = os.waitstatus_to_exitcode(status)
        # If not every pod ran, it is stopped below and still writes what it saw.
        with contextlib.suppress(subprocess.TimeoutExpired):
            second.wait(timeout=60)
    finally:
        if second.poll() is None:
            second.send_signal(signal.SIGINT)
            second.wait(timeout=30)
        if not args.keep_fleet:
            subprocess.run([BIN / "fleet", "delete", "--name", fleet], check=False)
    doc = json.loads((args.out / "result.json").read_text())
    cpu = usage.ru_utime + usage.ru_stime
    ours = _read(args.out / "pods.csv", "created", "running")
    theirs = _read(watch_csv, "seen", "running")
    common = ours.keys() & theirs.keys()
    p99_ours = stats.percentile(sorted(_startup_ms({k: ours[k] for k in common})), 99)
    p99_theirs = stats.percentile(sorted(_startup_ms({k: theirs[k] for k in common})), 99)
    creating = doc["phases"][0]["create_seconds"]
    summary = {
        "command": " ".join(str(c) for c in cmd),
        "exit_code": code,
        "nodes": args.nodes,
        "pods_requested": args.pods,
        "pods_running": doc["counts"]["pods_running"],
        "wall_seconds": round(wall, 1),
        "create_seconds": creating,
        "achieved_create_rate": round(doc["counts"]["objects_created"] / creating, 1)
        if creating
        else None,
        "loadgen_cpu_seconds": round(cpu, 2),
        "loadgen_cpu_share_of_core": round(cpu / wall, 3),
        "loadgen_cpu_share_peak_5s": round(_peak_share(samples), 3),
        "loadgen_cpu_ms_per_pod": round(cpu * 1000 / max(1, doc["counts"]["pods_seen"]), 2),
        "loadgen_max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "pod_startup_ms": doc["latency_ms"]["pod_startup"],
        "throughput": doc["throughput"],
        "second_watcher": {
            "pods_compared": len(common),
            "loadgen_p99_ms": round(p99_ours, 1),
            "watcher_p99_ms": round(p99_theirs, 1),
            "difference_ms": round(abs(p99_ours - p99_theirs), 1),
        },
        "server_check": doc["server_check"],
    }
    (args.out / "bench.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
