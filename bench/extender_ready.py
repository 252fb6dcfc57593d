"""Extender time to ready after a (re)start, against a real cluster of N dgx-h100 nodes.

Applies a one-pool dgx-h100 fleet of `--nodes` nodes with `fleet apply` (idempotent: an
already-applied fleet is left as is), optionally runs `loadgen --pods P --keep` once so that
ResourceClaims with allocation results and scheduled pods exist, then `--repeat` times:
starts `extender serve --kubeconfig ... --port PORT` as its own process and times

  exec -> first /healthz 200 (process up, listening)
  exec -> first /readyz 200   (every informer's first full list applied: a full relist)

and reads its RSS when ready (and its peak, VmHWM). Prints min / median / max of each.

    .venv/bin/python bench/extender_ready.py --kubeconfig KC --nodes 1000 [--pods 500] \\
        [--repeat 3] [--port 18883] [--delete-after]

`--delete-after` removes the fleet (`fleet delete`) and the loadgen namespace at the end.
Issue 8 item 1 asks for this figure at 1,000 and 5,000 nodes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from testbed.cluster import supervision
from testbed.kube import resources
from testbed.kube.client import Kube

HERE = Path(__file__).resolve().parent


def tool(name: str) -> list[str]:
    return [sys.executable, "-c", f"from {name}.cli import main; main()"]


async def counts(kubeconfig: str) -> dict[str, int]:
    kube = await Kube.connect(kubeconfig=kubeconfig)
    try:
        out = {}
        for name, res in (
            ("nodes", resources.NODES),
            ("resourceslices", resources.RESOURCE_SLICES),
            ("resourceclaims", resources.RESOURCE_CLAIMS),
            ("pods", resources.PODS),
        ):
            items = (await kube.list(res)).items
            out[name] = len(items)
            if res is resources.RESOURCE_CLAIMS:
                out["allocated claims"] = sum(
                    1 for c in items if (c.get("status") or {}).get("allocation")
                )
        return out
    finally:
        await kube.close()


async def delete_namespace(kubeconfig: str, name: str) -> None:
    kube = await Kube.connect(kubeconfig=kubeconfig)
    try:
        await kube.delete(resources.NAMESPACES, name)
    finally:
        await kube.close()


async def one_start(kubeconfig: str, port: int, limit: float) -> dict[str, float]:
    base = f"http://127.0.0.1:{port}"
    argv = [*tool("extender"), "serve", "--kubeconfig", kubeconfig, "--port", str(port)]
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, "--log-level", "warning")
    up = ready = None
    try:
        async with aiohttp.ClientSession() as s, asyncio.timeout(limit):
            while ready is None:
                if proc.returncode is not None:
                    raise RuntimeError(f"extender exited with {proc.returncode} before ready")
                try:
                    if up is None:
                        async with s.get(f"{base}/healthz") as r:
                            if r.status == 200:
                                up = time.perf_counter() - started
                    async with s.get(f"{base}/readyz") as r:
                        if r.status == 200:
                            ready = time.perf_counter() - started
                except aiohttp.ClientConnectionError:
                    pass
                if ready is None:
                    await asyncio.sleep(0.02)
        # The extender has just answered /readyz: it runs, so none of these is None.
        cpu = supervision.cpu_seconds(proc.pid)
        rss, peak = supervision.rss_bytes(proc.pid), supervision.peak_rss_bytes(proc.pid)
        assert cpu is not None and rss is not None and peak is not None
        return {
            "up_s": up or ready,
            "ready_s": ready,
            "cpu_s": cpu,
            "rss_mib": rss / 2**20,
            "peak_mib": peak / 2**20,
        }
    finally:
        proc.terminate()
        await proc.wait()


def summary(values: list[float]) -> str:
    return (
        f"min {min(values):7.2f}  median {statistics.median(values):7.2f}  max {max(values):7.2f}"
    )


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--fleet-name", default="ready")
    ap.add_argument("--pods", type=int, default=0, help="loadgen pods to keep (allocated claims)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int, default=int(os.environ.get("EXTENDER_PORT", "18883")))
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for ready")
    ap.add_argument("--delete-after", action="store_true")
    ns = ap.parse_args()
    kc = ns.kubeconfig
    run_id = f"ready-{ns.nodes}"

    apply = [*tool("fleet"), "apply", "--profile", "dgx-h100", "--nodes", str(ns.nodes)]
    # The objects are what the extender lists; kwok marking nodes Ready does not matter here.
    apply += ["--name", ns.fleet_name, "--kubeconfig", kc, "--no-wait"]
    t0 = time.perf_counter()
    await asyncio.to_thread(subprocess.run, apply, check=True)
    print(f"fleet apply: {time.perf_counter() - t0:.1f}s", flush=True)
    if ns.pods:
        with tempfile.TemporaryDirectory() as out:
            lg = [*tool("loadgen"), "--pods", str(ns.pods), "--keep", "-q", "--run-id", run_id]
            lg += ["--kubeconfig", kc, "--output-dir", out]
            await asyncio.to_thread(subprocess.run, lg, check=False, stdout=subprocess.DEVNULL)
    objects = await counts(kc)
    print("cluster: " + ", ".join(f"{k}={v}" for k, v in objects.items()), flush=True)

    runs = []
    try:
        for i in range(ns.repeat):
            r = await one_start(kc, ns.port, ns.timeout)
            runs.append(r)
            print(
                f"start {i + 1}: listening {r['up_s']:.2f}s, ready {r['ready_s']:.2f}s "
                f"({r['cpu_s']:.1f} CPU-s), "
                f"RSS {r['rss_mib']:.0f} MiB (peak {r['peak_mib']:.0f} MiB)",
                flush=True,
            )
    finally:
        if ns.delete_after:
            if ns.pods:
                await delete_namespace(kc, f"loadgen-{run_id}")
            delete = [*tool("fleet"), "delete", "--name", ns.fleet_name, "--kubeconfig", kc]
            await asyncio.to_thread(subprocess.run, delete, check=False)
    print(f"nodes {ns.nodes}, {ns.repeat} starts (exec -> ...), load {os.getloadavg()[0]:.2f}")
    print(f"  listening (s)  {summary([r['up_s'] for r in runs])}")
    print(f"  ready (s)      {summary([r['ready_s'] for r in runs])}")
    print(f"  CPU to ready (s) {summary([r['cpu_s'] for r in runs])}")
    print(f"  RSS (MiB)      {summary([r['rss_mib'] for r in runs])}")
    print(f"  peak RSS (MiB) {summary([r['peak_mib'] for r in runs])}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
