"""Benchmark: the ClusterLoader2 DRA scenario on a fleet of 8-GPU nodes, SLO p99 <= 5 s.

Fill 90 % of the fleet's GPUs with long-running one-pod Jobs (QPS 10), then churn the free
GPUs with Jobs of 10 completions x 30 s (QPS 5) — on 100 dgx-h100 nodes that is 720 fill
Jobs and 80 churn Jobs (800 pods), as in kubernetes/perf-tests' DRA test. Reports pod
startup per phase and whether `pod_startup.p99 <= 5s` held (loadgen's exit code).

    .venv/bin/python bench/loadgen_cl2_dra.py --nodes 100
    .venv/bin/python bench/loadgen_cl2_dra.py --nodes 10 --completions 2 --run-time 5s  # smoke

Release against release (kubernetes/kubernetes#140877's question), paired and alternated,
is the experiment `examples/experiments/cl2-dra-releases.yaml`.

`--scrape NAME=URL` is passed through (e.g. the local kube-scheduler's /metrics).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import tool  # bench/ is on sys.path

from testbed import vocab


def run_once(args: argparse.Namespace, out: Path, env: dict[str, str]) -> dict[str, Any]:
    """The scenario once on a fleet of its own in the cluster `env` points at; the summary
    (also written to out/bench.json)."""
    fleet = f"lgcl2-{secrets.token_hex(3)}"
    subprocess.run(
        [tool("fleet"), "apply", "--profile", args.profile, "--nodes", str(args.nodes),
         "--name", fleet, "--timeout", "1200"],
        check=True, env=env,
    )  # fmt: skip
    cmd = [
        tool("loadgen"), "run", "cl2-dra",
        f"completions={args.completions}", f"run_time={args.run_time}",
        "--node-selector", f"{vocab.LABEL_FLEET}={fleet}",
        "--slo", "pod_startup.p99=5s", "--output-dir", str(out), "--timeout", "1h", "-q",
    ]  # fmt: skip
    for s in args.scrape:
        cmd += ["--scrape", s]
    start = time.time()
    result = out / "result.json"
    result.unlink(missing_ok=True)  # a result left by an earlier run is never this run's
    try:
        code = subprocess.run(cmd, check=False, env=env).returncode
    finally:
        subprocess.run([tool("fleet"), "delete", "--name", fleet], check=False, env=env)
    if not result.is_file():
        sys.exit(f"loadgen run failed (exit {code}); see {out}")
    doc = json.loads(result.read_text())
    summary = {
        "command": " ".join(cmd),
        "exit_code": code,
        "wall_seconds": round(time.time() - start, 1),
        "fleet": doc["fleet"],
        "counts": doc["counts"],
        "slos": doc["slos"],
        "phases": {
            ph["name"]: {
                "objects": ph["objects"],
                "pods_running": ph["counts"]["pods_running"],
                "pods_succeeded": ph["counts"]["pods_succeeded"],
                "pod_startup_ms": {
                    k: round(v, 1)
                    for k, v in ph["latency_ms"]["pod_startup"].items()
                    if k in ("count", "Perc50", "Perc90", "Perc99")
                },
                "create_to_schedule_ms": {
                    k: round(ph["latency_ms"]["create_to_schedule"][k], 1)
                    for k in ("Perc50", "Perc99")
                },
                "throughput_avg": round(ph["throughput"]["Average"], 1),
            }
            for ph in doc["phases"]
        },
        "server_check": doc["server_check"],
        "metrics": {k: v["summary"] for k, v in doc.get("metrics", {}).items()},
    }
    (out / "bench.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--profile", default="dgx-h100")
    p.add_argument("--completions", default="10")
    p.add_argument("--run-time", default="30s")
    p.add_argument("--scrape", action="append", default=[], metavar="NAME=URL")
    p.add_argument("--out", type=Path, default=Path("results/bench-loadgen-cl2-dra"))
    args = p.parse_args()
    print(json.dumps(run_once(args, args.out, dict(os.environ)), indent=1))


if __name__ == "__main__":
    main()
