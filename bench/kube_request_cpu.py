"""Benchmark: the shared API client's CPU per request, this tree against a baseline tree.

On a running local cluster (`testbed --name C up`), each tree's `Kube` client (its own process,
the tree first on PYTHONPATH) sends `--requests` GETs of one small object, one after another,
after 100 warm-up requests; rounds alternate the trees. The figure is the client process's
CPU time per request (`time.process_time`: every thread, so work handed to a thread pool
counts), which a busy machine stretches far less than wall time.

    .venv/bin/python bench/kube_request_cpu.py --cluster C --baseline OLD_TREE [--this NEW_TREE]
        [--requests 1000] [--rounds 3]

The baseline is a source tree, e.g. `git archive main | tar -x -C OLD_TREE`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from common import add_cluster_flags, running_cluster  # bench/ is on sys.path

HERE = Path(__file__).resolve().parent.parent

_CLIENT = """
import sys, time
from testbed import runtime
from testbed.kube.client import Kube

async def main(n):
    async with await Kube.connect() as kube:
        for _ in range(100):
            await kube.request("GET", "/api/v1/namespaces/default")
        started = time.process_time()
        for _ in range(n):
            await kube.request("GET", "/api/v1/namespaces/default")
        print((time.process_time() - started) / n * 1e6)

runtime.run(main(int(sys.argv[1])))
"""


def cpu_us_per_request(tree: Path, requests: int, env: dict[str, str]) -> float:
    done = subprocess.run(
        # -P: PYTHONPATH first (`-c` would put the current directory, maybe a checkout, first).
        [sys.executable, "-P", "-c", _CLIENT, str(requests)],
        env={**env, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"the client from {tree} failed:\n{done.stderr}")
    return float(done.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_cluster_flags(ap, extender_port=False)
    ap.add_argument("--baseline", type=Path, required=True, help="source tree to compare with")
    ap.add_argument("--this", type=Path, default=HERE, help="source tree measured as this")
    ap.add_argument("--requests", type=int, default=1000, help="timed GETs per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of both trees")
    args = ap.parse_args()
    for flag, tree in (("--baseline", args.baseline), ("--this", args.this)):
        if not (tree / "testbed" / "kube" / "client.py").is_file():
            ap.error(f"{flag} {tree}: not a source tree with testbed/kube/client.py")
    _, env = running_cluster(args.cluster)
    trees = {"baseline": args.baseline.resolve(), "this": args.this.resolve()}
    got: dict[str, list[float]] = {"baseline": [], "this": []}
    for rnd in range(args.rounds):
        for arm in ("baseline", "this") if rnd % 2 == 0 else ("this", "baseline"):
            us = cpu_us_per_request(trees[arm], args.requests, env)
            got[arm].append(us)
            print(f"round {rnd + 1} {arm:>8}: {us:6.0f} us CPU per request", flush=True)
    for arm, values in got.items():
        spread = f"{min(values):.0f}-{max(values):.0f}"
        print(f"{arm:>8}: median {statistics.median(values):.0f} us ({spread})")
    ratio = statistics.median(got["this"]) / statistics.median(got["baseline"])
    print(f"this / baseline: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
