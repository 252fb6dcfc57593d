"""The testbed's end-to-end path against scheduler_perf in-process, same workload, same machine.

One workload, two ways, alternated repeat by repeat on one release:
- `testbed perf run fleet/<profile>`: upstream's scheduler_perf imported as a library, the
  scheduler, API server and informers in one process (etcd beside it), no kubelet, no kwok;
- the same Nodes, ResourceSlices, DeviceClasses, claim template and pods (`fleet apply` of the
  profile, `loadgen run pods`) on the local kwok cluster, through a plain second
  kube-scheduler of the same release (DRA's allocator alone, no extender).

Both report scheduler_perf's SchedulingThroughput definition; the figure published is the
ratio loadgen / scheduler_perf per repeat (their median), so the machine's speed cancels out.
CPU per pod: loadgen's side is the second scheduler's own CPU; scheduler_perf's is the whole
benchmark process tree (scheduler, API server and etcd together), an upper bound.

Where the time goes: for every arm the machine's busy cores (the kernel's CPU counters, averaged
over the arm) and, for the loadgen arm, the CPU each process spent per pod (the cluster's
components from their pid files, the second scheduler from its metrics, loadgen itself as a
child): on a machine whose cores are all busy, that is what the end-to-end path pays beside
the scheduler. The ratio's 95 % interval and verdict against 0.8 use the experiment engine's
paired statistics (one repeat is an observation).

    .venv/bin/python bench/schedperf_vs_loadgen.py --nodes 500 --pods 2500 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import apply_fleet, loadgen_pods, tool  # bench/ is on sys.path

from experiment import intervals
from testbed.cluster import binaries, local, second_scheduler, supervision

WAYS = ("schedperf", "loadgen")
TARGET = 0.8
"""loadgen / scheduler_perf throughput the issue asks for."""


class Span:
    """Wall time and the machine's busy cores over one arm."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.busy = supervision.machine_cpu_seconds()[0]

    def figures(self) -> dict[str, float]:
        wall = time.monotonic() - self.start
        return {
            "wall_seconds": wall,
            "busy_cores": (supervision.machine_cpu_seconds()[0] - self.busy) / wall,
        }


def _component_cpu(cluster: local.LocalCluster) -> dict[str, float]:
    """CPU seconds so far of each running component of the local cluster."""
    out = {}
    for c in cluster.status().components:
        used = supervision.cpu_seconds(c.pid) if c.pid is not None else None
        if used is not None:
            out[c.name] = used
    return out


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _throughput(doc: dict[str, Any]) -> float | None:
    average = (doc.get("throughput") or {}).get("Average")
    return None if average is None else float(average)


def _schedperf(args: argparse.Namespace, out: Path) -> dict[str, float | None]:
    span = Span()
    before = _children_cpu()
    cmd = [
        tool("testbed"),
        "perf",
        "run",
        f"fleet/{args.profile}",
        "--kubernetes",
        args.kubernetes,
        "--nodes",
        str(args.nodes),
        "--pods",
        str(args.pods),
        "--output-dir",
        str(out),
    ]
    code = subprocess.run(cmd, check=False).returncode
    cpu = _children_cpu() - before
    result = out / "result.json"
    if code != 0 or not result.is_file():
        raise SystemExit(f"testbed perf run failed (exit {code}); see {out}")
    doc = json.loads(result.read_text())
    return {
        "throughput": _throughput(doc),
        "cpu_ms_per_pod": cpu / args.pods * 1e3,
        **span.figures(),
    }


def _loadgen(
    args: argparse.Namespace,
    cluster: local.LocalCluster,
    fleet: str,
    plain: second_scheduler.SecondScheduler,
    out: Path,
    env: dict[str, str],
) -> dict[str, float | None]:
    span, components, client = Span(), _component_cpu(cluster), _children_cpu()
    doc = loadgen_pods(plain, fleet, out, f"pods={args.pods}", env=env, require_success=True)
    client = _children_cpu() - client
    cpu = doc["metrics"]["scheduler"]["summary"]["cpu_seconds"]
    per_pod = {
        f"cpu_ms_per_pod:{name}": (used - components[name]) / args.pods * 1e3
        for name, used in _component_cpu(cluster).items()
        if name in components
    }
    per_pod["cpu_ms_per_pod:loadgen"] = client / args.pods * 1e3
    return {
        "throughput": _throughput(doc),
        "cpu_ms_per_pod": cpu / args.pods * 1e3,
        **span.figures(),
        **per_pod,
    }


Runs = dict[str, list[dict[str, float | None]]]


def _pairs(runs: Runs, key: str) -> list[tuple[float, float]]:
    """(loadgen, scheduler_perf) of `key`, repeat by repeat, where both measured."""
    pairs = zip(runs["loadgen"], runs["schedperf"], strict=True)
    return [(float(lg[key]), float(sp[key])) for lg, sp in pairs if lg[key] and sp[key]]  # type: ignore[arg-type]


def _median(runs: Runs, way: str, key: str) -> str:
    values = [v for r in runs[way] if (v := r.get(key)) is not None]
    return f"{statistics.median(values):.1f}" if values else "no data"


def table(runs: Runs, args: argparse.Namespace) -> str:
    """Medians per way and the paired ratios; pure."""
    lines = [
        f"{args.profile}, {args.nodes} nodes, {args.pods} one-GPU pods, Kubernetes "
        f"{args.kubernetes}, {args.repeat} alternated repeats, {os.cpu_count()} cores",
        "| way | throughput (pods/s) | CPU per pod (ms) |",
        "|---|---|---|",
    ]
    for way in WAYS:
        cells = f"{_median(runs, way, 'throughput')} | {_median(runs, way, 'cpu_ms_per_pod')}"
        lines.append(f"| {way} | {cells} |")
    for key, label in (("throughput", "throughput"), ("cpu_ms_per_pod", "CPU per pod")):
        ratios = [a / b for a, b in _pairs(runs, key)]
        shown = ", ".join(f"{r:.2f}" for r in ratios)
        middle = f"{statistics.median(ratios):.2f}" if ratios else "no data"
        lines.append(f"loadgen / scheduler_perf {label}: median {middle} (repeats: {shown})")
    lines.append(_verdict(runs))
    lines += ["", "Where the time goes (medians over repeats):", *_breakdown(runs)]
    return "\n".join(lines)


def _verdict(runs: Runs) -> str:
    pairs = _pairs(runs, "throughput")
    interval = intervals.ratio_interval([a for a, _ in pairs], [b for _, b in pairs])
    verdict = intervals.verdict(interval, TARGET, at_least=True)
    return (
        f"throughput ratio 95 % interval {intervals.describe(interval, '{:.2f}'.format)}, "
        f">= {TARGET}: {verdict}"
    )


def _breakdown(runs: Runs) -> list[str]:
    lines = [f"- busy cores during the arm: {w} {_median(runs, w, 'busy_cores')}" for w in WAYS]
    names = sorted({k for r in runs["loadgen"] for k in r if k.startswith("cpu_ms_per_pod:")})
    parts = ", ".join(f"{k.split(':', 1)[1]} {_median(runs, 'loadgen', k)}" for k in names)
    lines.append(f"- loadgen arm, CPU ms per pod by process: {parts}")
    lines.append(
        f"- the second scheduler (the one measured): {_median(runs, 'loadgen', 'cpu_ms_per_pod')}"
    )
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--kubernetes", default=binaries.DEFAULT_RELEASE, help="release (default %(default)s)"
    )
    p.add_argument("--profile", default="dgx-h100", help="fleet profile (default %(default)s)")
    p.add_argument("--nodes", type=int, default=500, help="nodes (default %(default)s)")
    p.add_argument("--pods", type=int, default=2500, help="one-GPU pods (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="alternated repeats (default %(default)s)")
    p.add_argument("--out", type=Path, default=Path("results/bench-schedperf-vs-loadgen"))
    args = p.parse_args()
    if min(args.nodes, args.pods, args.repeat) < 1:
        p.error("--nodes, --pods and --repeat must be >= 1")
    try:
        args.kubernetes = binaries.check_release(args.kubernetes)
    except binaries.UnknownRelease as e:
        p.error(str(e))
    cluster = local.LocalCluster(
        local.ClusterConfig(
            name=f"bench-sp-{args.kubernetes.replace('.', '-')}",
            kubernetes=args.kubernetes,
            extender=False,
        )
    )
    status, created = cluster.up()
    env = {**os.environ, "KUBECONFIG": str(status.kubeconfig)}
    fleet = f"sp-{secrets.token_hex(3)}"
    runs: Runs = {w: [] for w in WAYS}
    try:
        pools = [{"name": "whole", "profile": args.profile, "count": args.nodes}]
        apply_fleet({"name": fleet, "pools": pools}, args.out, env)
        with (
            tempfile.TemporaryDirectory() as work,
            second_scheduler.running(
                status.kubeconfig, Path(work), scheduler_name=f"sp-{fleet}", release=args.kubernetes
            ) as plain,
        ):
            for rep in range(args.repeat):
                for way in WAYS if rep % 2 == 0 else WAYS[::-1]:
                    out = args.out / f"{way}-{rep}"
                    got = (
                        _schedperf(args, out)
                        if way == "schedperf"
                        else _loadgen(args, cluster, fleet, plain, out, env)
                    )
                    runs[way].append(got)
                    print(f"repeat {rep} {way}: {got}", file=sys.stderr, flush=True)
    finally:
        subprocess.run([tool("fleet"), "delete", "--name", fleet], check=False, env=env)
        if created:
            cluster.down()
    (args.out / "schedperf_vs_loadgen.json").write_text(json.dumps(runs, indent=2))
    print(table(runs, args))


if __name__ == "__main__":
    main()
