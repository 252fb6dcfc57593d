"""Benchmark: the extender's first scheduler calls after /readyz turns 200, against its steady
calls, at `--nodes` rendered dgx-h100 nodes served with `extender serve --from-files`.

Renders the fleet (with a random share of each node's devices allocated, and the "pairs"
template: 8 GPU + 8 RDMA NIC requests), starts the extender as its own process and waits for
/readyz, then at once sends `--first` calls, filter (with `require-alignment: pcie-root`) and
prioritize in turn, over `--candidates` node names, then `--steady` more of the same. Prints
the first calls' round trips, the steady p50/p99 (nearest rank) and the worst first call as a
multiple of the steady p99 (the goal: within 5x), and the server's CPU per call in each part.

    .venv/bin/python bench/extender_first_calls.py [--nodes 500] [--first 20] [--steady 400]

The extender is whichever tree is first on the path: `PYTHONPATH=TREE` measures another one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp
from common import build_objects, pod, serving_files  # bench/ is on sys.path

from loadgen import stats
from testbed.cluster import supervision


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--candidates", type=int, default=500, help="node names per call")
    ap.add_argument("--first", type=int, default=20, help="calls timed right after ready")
    ap.add_argument("--steady", type=int, default=400, help="calls timed after those")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the results here too")
    ns = ap.parse_args()
    if min(ns.nodes, ns.candidates, ns.first, ns.steady) < 1:
        ap.error("--nodes, --candidates, --first and --steady must be at least 1")

    objs, names = build_objects(ns.nodes, ns.seed)
    names = names[: ns.candidates]
    bodies = {
        verb: json.dumps({"Pod": pod(verb == "filter"), "Nodes": None, "NodeNames": names})
        for verb in ("filter", "prioritize")
    }
    times: list[float] = []
    cpu: list[float] = []
    async with serving_files(objs) as (base, pid), aiohttp.ClientSession() as session:
        async with session.get(f"{base}/readyz") as r:  # the connection, as a prober's
            assert r.status == 200
        for part in (ns.first, ns.steady):
            before = supervision.cpu_seconds(pid) or 0.0
            for i in range(part):
                verb = ("filter", "prioritize")[i % 2]
                t0 = time.perf_counter()
                async with session.post(f"{base}/{verb}", data=bodies[verb]) as r:
                    await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"{verb}: HTTP {r.status}")
                times.append(time.perf_counter() - t0)
            cpu.append(((supervision.cpu_seconds(pid) or 0.0) - before) / part)
    first, steady = times[: ns.first], sorted(times[ns.first :])
    p99 = stats.percentile(steady, 99)
    out = {
        "nodes": ns.nodes,
        "candidates": len(names),
        "first_ms": [round(1000 * t, 2) for t in first],
        "first_max_ms": round(1000 * max(first), 2),
        "steady_p50_ms": round(1000 * stats.percentile(steady, 50), 2),
        "steady_p99_ms": round(1000 * p99, 2),
        "first_max_over_steady_p99": round(max(first) / p99, 1),
        "server_cpu_ms_per_call_first": round(1000 * cpu[0], 2),
        "server_cpu_ms_per_call_steady": round(1000 * cpu[1], 2),
    }
    print(json.dumps(out))
    if ns.json:
        await asyncio.to_thread(Path(ns.json).write_text, json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
