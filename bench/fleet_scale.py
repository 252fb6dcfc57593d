"""Benchmark: `fleet apply` of N dgx-h100 nodes (1 Node + 2 ResourceSlices of 8 devices each)
against `kwokctl scale node --replicas N` on the same local cluster, plus `fleet render`.

For each N it measures, in this order and each time from an empty start:
1. `fleet apply --profile dgx-h100 --nodes N` as a subprocess: wall time to exit (every node
   Ready, every slice written), the write phase alone, API objects per second, and the peak RSS
   of the fleet process (from wait4). It then lists the fleet's objects to check every slice
   is there.
2. `kwokctl scale node --replicas N` (bare nodes, no slices): wall time until N of its nodes
   are Ready, seen on a watch. Then `--replicas 0` removes them again.
3. `fleet delete`.
And once: `fleet render --profile dgx-h100 --nodes 5000 --output-dir DIR` wall time (no
cluster); with `--render-profile` repeated, several profiles side by side (e.g. dgx-h100
against dgx-h100-mig, whose nodes publish 10 slices and 120 GPU devices each instead of 2
and 8), and with `--render-format json` the JSON-lines output too. `--render-repeat N` runs
each render N times and reports the median (the fleet's goal: under 5 s for 5,000 nodes,
median of 3); `--render-tree DIR` (repeatable) renders with the source tree DIR instead of
this installation's, the trees taking turns within each repeat, and reports each tree's
median and, per repeat, its ratio to the first tree's (a before/after on a noisy machine).

Beside each figure: CPU seconds each control-plane process used meanwhile (from psutil; kwok
sums every kwok controller, shards included), the machine's busy fraction over the step and
the load average, so a figure can be read against what the API server spent per object.
`--kwok-shards N` labels the fleet for N kwok controllers (the cluster needs `testbed up
--kwok-shards N`; the cluster's shard count is reported). `--kwok-shards` and `--concurrency`
repeat, to compare values in one run on one cluster.

    .venv/bin/python bench/fleet_scale.py --nodes 1000 --nodes 5000 --json /tmp/fleet-scale.json
    testbed --name shards2 up --kwok-shards 2 --no-extender
    .venv/bin/python bench/fleet_scale.py --cluster shards2 --nodes 2000 --no-kwokctl \\
        --render-nodes 0 --kwok-shards 1 --kwok-shards 2
    .venv/bin/python bench/fleet_scale.py --cluster h --profile dgx-h100-mig --nodes 200 \\
        --no-kwokctl --render-nodes 1000 --render-profile dgx-h100 \\
        --render-profile dgx-h100-mig --render-format yaml --render-format json
    .venv/bin/python bench/fleet_scale.py --no-apply --render-repeat 3 \\
        --render-tree BEFORE --render-tree .

Bounded: one fleet at a time, deleted afterwards (also on Ctrl-C); `--no-kwokctl` skips step 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import add_cluster_flags  # bench/ is on sys.path

from testbed.cluster import binaries, local, supervision
from testbed.kube import resources, watching
from testbed.kube.client import ClientSettings, Kube

BIN = Path(sys.executable).parent
KWOKCTL_LABEL = "kwok.x-k8s.io/kwokctl-scale"


class CpuMeter:
    """CPU seconds of the cluster's processes and of the whole machine between start and stop."""

    def __init__(self, cluster: local.LocalCluster) -> None:
        self.pids = {c.name: c.pid for c in cluster.status().components if c.pid}

    @staticmethod
    def _proc(pid: int) -> float:
        return supervision.cpu_seconds(pid) or 0.0

    def start(self) -> None:
        self.load_start = os.getloadavg()[0]
        self.t0 = {n: self._proc(p) for n, p in self.pids.items()}
        self.m0 = supervision.machine_cpu_seconds()

    def stop(self, objects: int) -> dict[str, Any]:
        used = {n: self._proc(p) - self.t0[n] for n, p in self.pids.items()}
        busy, total = (
            b - a for a, b in zip(self.m0, supervision.machine_cpu_seconds(), strict=True)
        )
        kwok = sum(v for n, v in used.items() if n.startswith("kwok-controller"))
        out: dict[str, Any] = {
            f"cpu_s_{n.replace('-', '_')}": round(v, 2)
            for n, v in used.items()
            if not n.startswith("kwok-controller")
        }
        out["cpu_s_kwok"] = round(kwok, 2)
        if objects:
            out["apiserver_cpu_ms_per_object"] = round(
                1000 * used.get("kube-apiserver", 0.0) / objects, 2
            )
        out["machine_busy"] = round(busy / total, 2) if total else None
        out["load_avg_start_end"] = [round(self.load_start, 2), round(os.getloadavg()[0], 2)]
        return out


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `cmd`; wall seconds, exit code, peak RSS (MiB), CPU seconds and stderr."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    stderr = proc.stderr
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(stderr.read()), daemon=True)
    reader.start()
    # Peak RSS from the child's own VmHWM, polled until it exits: wait4's ru_maxrss also
    # counts the high-water mark of this (forking) process, which grows from run to run.
    peak = 0
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        peak = max(peak, supervision.peak_rss_bytes(proc.pid) or 0)
        time.sleep(0.1)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    return {
        "wall_s": time.perf_counter() - started,
        "code": proc.returncode,
        "peak_rss_mib": peak / 2**20,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "stderr": b"".join(err).decode(),
    }


async def count_ready(kube: Kube, selector: str, expected: int, within: float) -> float:
    """Seconds until `expected` nodes matching `selector` are Ready (watched, not polled)."""
    started = time.perf_counter()
    ready: set[str] = set()

    async def watch() -> None:
        async for ev in watching.informer(kube, resources.NODES, label_selector=selector):
            if isinstance(ev, watching.Snapshot):
                ready.clear()
                ready.update(n["metadata"]["name"] for n in ev.items if resources.node_ready(n))
            elif ev.type != "DELETED" and resources.node_ready(ev.object):
                ready.add(ev.object["metadata"]["name"])
            if len(ready) >= expected:
                return

    await asyncio.wait_for(watch(), within)
    return time.perf_counter() - started


async def wait_gone(kube: Kube, selector: str, within: float) -> None:
    deadline = time.monotonic() + within
    while (await kube.list(resources.NODES, label_selector=selector)).items:
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes {selector} still present after {within}s")
        await asyncio.sleep(0.5)


def _seconds(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


async def bench_fleet(
    kube: Kube,
    kubeconfig: str,
    n: int,
    args: argparse.Namespace,
    meter: CpuMeter,
    *,
    concurrency: int,
    shards: int,
) -> dict[str, Any]:
    name = f"bench-{n}-{secrets.token_hex(2)}"
    cmd = [str(BIN / "fleet"), "apply", "--profile", args.profile, "--nodes", str(n)]
    cmd += ["--name", name, "--kubeconfig", kubeconfig, "--timeout", str(args.timeout)]
    cmd += ["--concurrency", str(concurrency), "--qps", str(args.qps)]
    cmd += ["--kwok-shards", str(shards)]
    try:
        meter.start()
        r = run_measured(cmd)
        if r["code"] != 0:
            raise RuntimeError(f"fleet apply failed: {r['stderr'].strip()[-300:]}")
        created = int(re.search(r"created (\d+)", r["stderr"]).group(1))  # type: ignore[union-attr]
        write_s = _seconds(r"objects in ([\d.]+)s", r["stderr"])
        sel = f"testbed.dra.io/fleet={name}"
        nodes = len((await kube.list(resources.NODES, label_selector=sel)).items)
        slices = len((await kube.list(resources.RESOURCE_SLICES, label_selector=sel)).items)
        out = {
            "nodes": n,
            "objects_created": created,
            "nodes_present": nodes,
            "slices_present": slices,
            "write_s": write_s,
            "ready_wall_s": round(r["wall_s"], 2),
            "objects_per_s_write": round(created / write_s, 1) if write_s else None,
            "objects_per_s_to_ready": round(created / r["wall_s"], 1),
            "nodes_per_s_to_ready": round(n / r["wall_s"], 1),
            "peak_rss_mib": round(r["peak_rss_mib"], 1),
            "cpu_s": round(r["cpu_s"], 2),
            "fleet_cpu_ms_per_object": round(1000 * r["cpu_s"] / created, 2) if created else None,
            "concurrency": concurrency,
            "qps": args.qps,
            "kwok_shards": shards,
            **meter.stop(created),
        }
    finally:
        d = run_measured([str(BIN / "fleet"), "delete", "--name", name, "--kubeconfig", kubeconfig])
    out["delete_s"] = round(d["wall_s"], 2)
    return out


async def bench_kwokctl(
    kube: Kube, n: int, args: argparse.Namespace, meter: CpuMeter
) -> dict[str, Any]:
    b = binaries.ensure(build=False)
    cfg = local.ClusterConfig(name=args.cluster)
    env = dict(os.environ, KWOK_WORKDIR=str(cfg.workdir), KWOK_KUBECTL_BINARY=str(b["kubectl"]))
    base = [str(b["kwokctl"]), "--name", args.cluster, "scale", "node"]
    sel = f"{KWOKCTL_LABEL}=node"
    try:
        meter.start()
        started = time.perf_counter()
        ready = asyncio.create_task(count_ready(kube, sel, n, args.timeout))
        r = await asyncio.to_thread(run_measured, [*base, "--replicas", str(n)], env)
        if r["code"] != 0:
            ready.cancel()
            raise RuntimeError(f"kwokctl scale failed: {r['stderr'].strip()[-300:]}")
        await ready
        wall = time.perf_counter() - started
        return {
            "nodes": n,
            "kwokctl_exit_s": round(r["wall_s"], 2),
            "ready_wall_s": round(wall, 2),
            "nodes_per_s_to_ready": round(n / wall, 1),
            **meter.stop(n),
        }
    finally:
        await asyncio.to_thread(run_measured, [*base, "--replicas", "0"], env)
        await wait_gone(kube, sel, args.timeout)


def render_argv(tree: Path | None) -> list[str]:
    """`fleet` of this installation, or of the source tree `tree` (first on the path)."""
    if tree is None:
        return [str(BIN / "fleet")]
    # -P: no current directory ahead of PYTHONPATH, which `-c` would otherwise put first.
    return [sys.executable, "-P", "-c", "from fleet.cli import main; main()"]


def bench_render(n: int, profile: str, fmt: str, tree: Path | None = None) -> dict[str, Any]:
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree.resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*render_argv(tree), "render", "--profile", profile, "--nodes", str(n)]
        r = run_measured([*cmd, "--output-dir", tmp, "--format", fmt], env)
        if r["code"] != 0:
            raise RuntimeError(f"fleet render failed: {r['stderr'].strip()[-300:]}")
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return {
        "profile": profile,
        "format": fmt,
        "nodes": n,
        "tree": str(tree) if tree is not None else None,
        "wall_s": round(r["wall_s"], 2),
        "cpu_s": round(r["cpu_s"], 2),
        "peak_rss_mib": round(r["peak_rss_mib"], 1),
        "bytes": size,
        "load_avg": round(os.getloadavg()[0], 2),
    }


def bench_renders(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each profile and format `--render-repeat` times, the trees taking turns in each
    repeat; then per case and tree the medians, and each repeat's ratio to the first tree."""
    trees: list[Path | None] = list(args.render_tree or [None])
    out: list[dict[str, Any]] = []
    for fmt in args.render_format or ["yaml"]:
        for profile in args.render_profile or [args.profile]:
            runs: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(trees))}
            for _ in range(args.render_repeat):
                for i, tree in enumerate(trees):
                    r = bench_render(args.render_nodes, profile, fmt, tree)
                    runs[i].append(r)
                    print(json.dumps({"render": r}), flush=True)
            for i, tree in enumerate(trees):
                summary = {
                    "profile": profile,
                    "format": fmt,
                    "nodes": args.render_nodes,
                    "tree": str(tree) if tree is not None else None,
                    "repeats": args.render_repeat,
                    **{
                        f"median_{k}": round(statistics.median(r[k] for r in runs[i]), 2)
                        for k in ("wall_s", "cpu_s", "peak_rss_mib")
                    },
                }
                if i:
                    for k in ("wall_s", "cpu_s"):
                        ratios = [b[k] / a[k] for a, b in zip(runs[0], runs[i], strict=True)]
                        summary[f"{k}_ratio_to_first_tree"] = [round(x, 2) for x in ratios]
                out.append(summary)
                print(json.dumps({"render_summary": summary}), flush=True)
    return out


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, action="append", help="fleet sizes (default 1000)")
    p.add_argument("--profile", default="dgx-h100")
    add_cluster_flags(p, extender_port=False)
    p.add_argument("--kubeconfig", help="default: the local testbed cluster's")
    p.add_argument(
        "--concurrency",
        type=int,
        action="append",
        help="fleet apply --concurrency; repeat to compare values in one run (default 64)",
    )
    p.add_argument("--qps", type=float, default=500.0)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument(
        "--kwok-shards",
        type=int,
        action="append",
        help="fleet spec.kwokShards; repeat to compare values in one run (default 1)",
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="runs per size, fleet and kwokctl alternating"
    )
    p.add_argument("--no-kwokctl", action="store_true", help="skip the kwokctl comparison")
    p.add_argument("--no-apply", action="store_true", help="only the render step (no cluster)")
    p.add_argument("--render-nodes", type=int, default=5000, help="0 skips the render step")
    p.add_argument(
        "--render-profile",
        action="append",
        help="profiles to render side by side, e.g. dgx-h100 and dgx-h100-mig (default --profile)",
    )
    p.add_argument(
        "--render-format",
        action="append",
        choices=["yaml", "json"],
        help="render output formats to time (default yaml); repeatable",
    )
    p.add_argument(
        "--render-repeat", type=int, default=1, help="runs of each render; medians reported"
    )
    p.add_argument(
        "--render-tree",
        type=Path,
        action="append",
        help="render with this source tree (repeatable: trees take turns in each repeat)",
    )
    p.add_argument("--json", type=Path, help="write the results here too")
    args = p.parse_args()
    kubeconfig = args.kubeconfig or str(local.ClusterConfig(name=args.cluster).kubeconfig)
    cluster = local.LocalCluster(local.ClusterConfig(name=args.cluster))
    meter = CpuMeter(cluster)
    results: dict[str, Any] = {
        "profile": args.profile,
        "cluster_kwok_shards": cluster.kwok_shards(),
        "fleet": [],
        "kwokctl": [],
    }
    if args.render_nodes:
        results["render"] = bench_renders(args)
    if args.no_apply:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
        return
    kube = await Kube.connect(kubeconfig=kubeconfig, settings=ClientSettings(qps=0))
    try:
        for n in [m for m in args.nodes or [1000] for _ in range(args.repeat)]:
            for shards in args.kwok_shards or [1]:
                for concurrency in args.concurrency or [64]:
                    f = await bench_fleet(
                        kube, kubeconfig, n, args, meter, concurrency=concurrency, shards=shards
                    )
                    results["fleet"].append(f)
                    print(json.dumps({"fleet": f}), flush=True)
            if not args.no_kwokctl:
                k = await bench_kwokctl(kube, n, args, meter)
                k["fleet_node_rate_ratio"] = round(
                    f["nodes_per_s_to_ready"] / k["nodes_per_s_to_ready"], 2
                )
                results["kwokctl"].append(k)
                print(json.dumps({"kwokctl": k}), flush=True)
    finally:
        await kube.close()
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
