"""Benchmark: the ClusterLoader2 DRA scenario on a fleet of 8-GPU nodes, SLO p99 <= 5 s.

Fill 90 % of the fleet's GPUs with long-running one-pod Jobs (QPS 10), then churn the free
GPUs with Jobs of 10 completions x 30 s (QPS 5) — on 100 dgx-h100 nodes that is 720 fill
Jobs and 80 churn Jobs (800 pods), as in kubernetes/perf-tests' DRA test. Reports pod
startup per phase and whether `pod_startup.p99 <= 5s` held (loadgen's exit code).

    .venv/bin/python bench/loadgen_cl2_dra.py --nodes 100
    .venv/bin/python bench/loadgen_cl2_dra.py --nodes 10 --completions 2 --run-time 5s  # smoke

With `--releases`, release against release (kubernetes/kubernetes#140877's question: did a
release slow the churn's claim path?): one local cluster per release, all up for the whole
bench, the scenario run once per release per repeat with the releases' order reversed on
every other repeat, so each repeat pairs them. Verdicts from the paired repeats with the
project's statistics (experiment.intervals): the newest release's churn figures over each
older one's below 2x (upstream's regression was ~10x on create_to_schedule p50).

    .venv/bin/python bench/loadgen_cl2_dra.py --releases 1.36,1.37 --repeat 3

`--scrape NAME=URL` is passed through (e.g. the local kube-scheduler's /metrics).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import local_release, settle  # bench/ is on sys.path

from experiment import intervals
from testbed import vocab
from testbed.cluster import binaries

BIN = Path(sys.executable).parent
REGRESSION_BELOW = 2.0
"""A churn figure of the newest release under this many times an older one's: no
#140877-like regression (upstream's was ~10x)."""
CHURN_FIGURES = (
    ("pod_startup", "Perc50", "churn pod startup p50"),
    ("pod_startup", "Perc99", "churn pod startup p99"),
    ("create_to_schedule", "Perc50", "churn create to schedule p50"),
    ("create_to_schedule", "Perc99", "churn create to schedule p99"),
)


def run_once(args: argparse.Namespace, out: Path, env: dict[str, str]) -> dict[str, Any]:
    """The scenario once on a fleet of its own in the cluster `env` points at; the summary
    (also written to out/bench.json)."""
    fleet = f"lgcl2-{secrets.token_hex(3)}"
    subprocess.run(
        [BIN / "fleet", "apply", "--profile", args.profile, "--nodes", str(args.nodes),
         "--name", fleet, "--timeout", "1200"],
        check=True, env=env,
    )  # fmt: skip
    cmd = [
        str(BIN / "loadgen"), "run", "cl2-dra",
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
        subprocess.run([BIN / "fleet", "delete", "--name", fleet], check=False, env=env)
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


def churn_figures(summary: dict[str, Any]) -> dict[str, float]:
    """The churn phase's latency figures (ms) by their names in CHURN_FIGURES; pure."""
    churn = summary["phases"]["churn"]
    got = {
        "pod_startup": churn["pod_startup_ms"],
        "create_to_schedule": churn["create_to_schedule_ms"],
    }
    return {name: float(got[latency][p]) for latency, p, name in CHURN_FIGURES}


def across_releases(
    args: argparse.Namespace, releases: list[str]
) -> dict[str, list[dict[str, float]]]:
    """Every release's churn figures per repeat, the releases alternated (see the docstring)."""
    runs: dict[str, list[dict[str, float]]] = {r: [] for r in releases}
    with contextlib.ExitStack() as stack:
        kubeconfigs = {
            r: stack.enter_context(local_release(r, f"cl2-{r.replace('.', '-')}", keep=args.keep))
            for r in releases
        }
        for rep in range(args.repeat):
            for release in releases[::-1] if rep % 2 else releases:
                env = {**os.environ, "KUBECONFIG": str(kubeconfigs[release])}
                summary = run_once(args, args.out / release / f"run-{rep}", env)
                settle(kubeconfigs[release])  # the run's namespace, out of the next run's window
                runs[release].append(churn_figures(summary))
                print(f"repeat {rep} {release}: {runs[release][-1]}", file=sys.stderr, flush=True)
    return runs


def table(runs: dict[str, list[dict[str, float]]]) -> str:
    """Medians per release, then the newest release over each older one: the paired ratio's
    interval and whether it stays below REGRESSION_BELOW; pure."""
    names = [name for _, _, name in CHURN_FIGURES]
    lines = [
        "| release | runs | " + " | ".join(f"{n} (ms), median" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for release, rs in runs.items():
        medians = " | ".join(f"{statistics.median(r[n] for r in rs):.1f}" for n in names)
        lines.append(f"| {release} | {len(rs)} | {medians} |")
    newest = max(runs, key=lambda r: tuple(int(p) for p in r.split(".")))
    lines.append("")
    for release in runs:
        if release == newest:
            continue
        for n in names:
            interval = intervals.ratio_interval(
                [r[n] for r in runs[newest]], [r[n] for r in runs[release]]
            )
            verdict = intervals.verdict(interval, REGRESSION_BELOW, at_least=False)
            lines.append(
                f"{n} {newest} / {release}: {intervals.describe(interval, '{:.2f}'.format)}; "
                f"target below {REGRESSION_BELOW:g}x: {verdict}"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--profile", default="dgx-h100")
    p.add_argument("--completions", default="10")
    p.add_argument("--run-time", default="30s")
    p.add_argument("--scrape", action="append", default=[], metavar="NAME=URL")
    p.add_argument(
        "--releases",
        help="comma-separated releases, each on a local cluster of its own (e.g. 1.36,1.37);\n"
        "without it the scenario runs once on the cluster KUBECONFIG points at",
    )
    p.add_argument("--repeat", type=int, default=3, help="with --releases (default 3)")
    p.add_argument("--keep", action="store_true", help="with --releases: leave the clusters up")
    p.add_argument("--out", type=Path, default=Path("results/bench-loadgen-cl2-dra"))
    args = p.parse_args()
    if not args.releases:
        print(json.dumps(run_once(args, args.out, dict(os.environ)), indent=1))
        return
    if args.repeat < 1 or args.scrape:
        p.error("with --releases: --repeat >= 1 and no --scrape (each cluster has its own)")
    try:
        releases = [binaries.check_release(r) for r in args.releases.split(",") if r]
    except binaries.UnknownRelease as e:
        p.error(str(e))
    if len(releases) < 2:
        p.error("--releases needs two releases or more")
    # SIGTERM unwinds like Ctrl-C, so the clusters come down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    runs = across_releases(args, releases)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cl2_dra_releases.json").write_text(json.dumps(runs, indent=2))
    print(table(runs))


if __name__ == "__main__":
    main()
