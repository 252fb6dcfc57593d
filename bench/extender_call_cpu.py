"""The extender's own CPU per scheduler call, one source tree against another, on loopback.

Starts `extender serve --from-files` of each tree in turn (a small fleet rendered as
bench/common.py renders it) and sends it kube-scheduler-shaped calls one at a time on one
kept-alive connection, as kube-scheduler's Go client does, every node a candidate. The pod
asks for nothing (the call's HTTP path is what this compares), or with `--claims` for its
claim template's GPUs and NICs, so the judging path runs too (demand, scoring, the decision
log). Prints the server's CPU per call (its own CPU time, which a busy machine skews far less
than wall time) for each tree, the pairs alternating, and each pair's ratio to the first tree.

    .venv/bin/python bench/extender_call_cpu.py --tree ../t-429f49f --tree . \\
        [--verb prioritize] [--nodes 50] [--calls 1500] [--pairs 3] [--claims]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
from common import build_objects, pod, serving_files  # bench/ is on sys.path

from testbed.cluster import supervision


async def cpu_per_call(
    tree: str, body: bytes, verb: str, objs: list[dict[str, Any]], calls: int
) -> float:
    """Server CPU seconds per call of the extender of source tree `tree` (absolute)."""
    os.environ["PYTHONPATH"] = tree  # the served extender's source
    async with serving_files(objs) as (base, pid), aiohttp.ClientSession() as session:
        url = f"{base}/{verb}"
        for i in range(calls // 5 + calls):  # the first fifth warms caches up, untimed
            if i == calls // 5:
                before = supervision.cpu_seconds(pid) or 0.0
            async with session.post(url, data=body) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: HTTP {r.status}")
        return ((supervision.cpu_seconds(pid) or 0.0) - before) / calls


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tree", type=Path, action="append", required=True, help="a source tree")
    ap.add_argument("--verb", choices=["filter", "prioritize"], default="prioritize")
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--calls", type=int, default=1500, help="timed calls per tree and pair")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument(
        "--claims", action="store_true", help="the pod asks for its claim template's devices"
    )
    ns = ap.parse_args()
    for tree in ns.tree:
        if not (tree / "extender" / "cli.py").is_file():
            ap.error(f"{tree} is not a source tree (no extender/cli.py)")
    trees = [str(t.resolve()) for t in ns.tree]
    objs, names = build_objects(ns.nodes, 1, False)
    p = pod(False)
    if not ns.claims:
        p["spec"]["resourceClaims"] = []
    body = json.dumps({"Pod": p, "Nodes": None, "NodeNames": names}).encode()
    for pair in range(ns.pairs):
        order = trees if pair % 2 == 0 else trees[::-1]
        cpu = {t: await cpu_per_call(t, body, ns.verb, objs, ns.calls) for t in order}
        first = cpu[trees[0]]
        shown = ", ".join(f"{t}: {1000 * c:.3f} ms ({c / first:.2f})" for t, c in cpu.items())
        print(f"pair {pair}: server CPU per {ns.verb} call: {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
