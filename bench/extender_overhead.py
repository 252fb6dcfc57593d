"""Where the extender's throughput cost in kube-scheduler comes from, arm by arm in one run.

On a running local cluster (`testbed --name C --extender-port P up`) with the demo's mixed
fleet (applied here, idempotently), runs the demo's "extender" workload (`loadgen --pods N`,
one GPU per pod) in three arms, alternating their order per repeat:

  off         the plain second scheduler (no extender entry); the extender runs, watching
  on          the cluster's scheduler calling the extender with its default weights
  on-no-pack  the same, with the extender's packing weight 0 (`--weight-packing 0`)
  prio-only   a second scheduler calling only the extender's prioritize verb (no filter
              call: one HTTP round trip per pod instead of two), default weights

and reports per arm, from loadgen's result and the scheduler's /metrics:
scheduling throughput, scheduler CPU per pod, and nodes DRA's Filter ran on per pod
(`scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources"}`):
the median (min-max) over rounds and, against `off`, the paired ratio's 95 % interval
(a round's arms run back to back, so a round is a pair: `experiment.intervals`, the method of
every A/B figure; one round is an observation).
"on" vs "on-no-pack" separates what the extender's calls cost from what its packing policy
costs the scheduler, and "prio-only" what one of the two calls costs in the scheduler's serial
scheduling cycle: kube-scheduler runs every Filter plugin before it asks an extender, and
with the default percentageOfNodesToScore it checks nodes until it has found enough feasible
ones, so nodes that packing filled up are checked (DRA evaluates the claim's CEL selectors on
their devices) and rejected, and more nodes are checked per pod.

`--profile-dir D` also saves a CPU profile of the measured scheduler for each arm
(`/debug/pprof/profile`, the cluster's admin certificate) for `go tool pprof -top`.

    .venv/bin/python bench/extender_overhead.py --cluster C --extender-port P \\
        [--nodes 1000] [--pods 1000] [--repeat 2] [--profile-dir DIR]
"""

from __future__ import annotations

import argparse
import ssl
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from common import (  # bench/ is on sys.path
    add_cluster_flags,
    apply_demo_fleet,
    run_arm,
    running_cluster,
    tool,
)

from experiment import intervals
from loadgen import series
from testbed.cluster import processes, second_scheduler

ARMS = ("off", "on", "on-no-pack", "prio-only")


@dataclass(frozen=True)
class Measured:
    arm: str
    throughput: float
    cpu_ms_per_pod: float
    filtered_nodes_per_pod: float
    filter_ms_per_pod: float
    """Wall time of the Filter extension point (all plugins), per pod."""


def extender(port: int, env: dict[str, str], log: Path, *extra: str) -> Any:
    argv = [tool("extender"), "serve", "--port", str(port), *extra]
    return processes.service("the extender", argv, port, log=log, timeout=300, env=env)


def admin_tls(cluster_dir: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cluster_dir / "pki" / "admin.crt", cluster_dir / "pki" / "admin.key")
    return ctx


def profile(port: int, seconds: int, out: Path, ctx: ssl.SSLContext) -> threading.Thread:
    """Fetch a CPU profile of the scheduler on `port` in the background."""

    def fetch() -> None:
        url = f"https://127.0.0.1:{port}/debug/pprof/profile?seconds={seconds}"
        with urllib.request.urlopen(url, timeout=seconds + 30, context=ctx) as r:
            out.write_bytes(r.read())

    thread = threading.Thread(target=fetch, daemon=True)
    thread.start()
    return thread


def measured(arm: str, doc: dict[str, Any]) -> Measured:
    pods = doc["counts"]["expected_pods"]
    deltas = doc["metrics"]["scheduler"]["deltas"]
    s = series.summary(deltas)
    filter_sum = sum(
        v
        for k, v in deltas.items()
        if k.startswith("scheduler_framework_extension_point_duration_seconds_sum")
        and 'extension_point="Filter"' in k
    )
    return Measured(
        arm,
        float(doc["throughput"]["Average"]),
        s["cpu_seconds"] / pods * 1000,
        s["dra_filter_calls"] / pods,
        filter_sum / pods * 1000,
    )


FIGURES = (
    ("throughput", "pods/s", "throughput"),
    ("scheduler CPU", "ms/pod", "cpu_ms_per_pod"),
    ("DRA-filtered nodes", "/pod", "filtered_nodes_per_pod"),
    ("Filter time", "ms/pod", "filter_ms_per_pod"),
)


def report(results: list[Measured], arms: tuple[str, ...]) -> None:
    """Per arm and figure: the median (min-max) over rounds and, against `off`, the paired
    ratio's 95 % interval (each round's arms ran back to back, so a round is a pair: the
    engine's method, `experiment.intervals`). One round is an observation."""
    rounds: dict[str, list[Measured]] = {a: [m for m in results if m.arm == a] for a in arms}
    print(intervals.METHOD)
    for arm in arms:
        for label, unit, key in FIGURES:
            mine = [getattr(m, key) for m in rounds[arm]]
            low, high = intervals.min_max(mine)
            line = f"{arm:>10} {label:>18}: {intervals.median(mine):6.1f} {unit}"
            line += f" ({low:.1f}-{high:.1f})"
            if arm != "off":
                base = [getattr(m, key) for m in rounds["off"]]
                ratio = intervals.ratio_interval(mine, base)
                point = f"{ratio.point:.2f}" if ratio is not None else "-"
                line += f"; /off {point} {intervals.describe(ratio, '{:.2f}'.format)}"
            print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_cluster_flags(ap)
    ap.add_argument("--nodes", type=int, default=1000, help="demo fleet size (default 1000)")
    ap.add_argument("--pods", type=int, default=1000, help="pods per arm (default 1000)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of all arms (default 2)")
    ap.add_argument(
        "--arms", default=",".join(ARMS), help=f"comma-separated subset of {', '.join(ARMS)}"
    )
    ap.add_argument("--profile-dir", type=Path, help="save each arm's scheduler CPU profile")
    ap.add_argument("--profile-seconds", type=int, default=45)
    args = ap.parse_args()
    arms = tuple(a for a in ARMS if a in args.arms.split(","))
    if "off" not in arms or set(args.arms.split(",")) - set(ARMS):
        ap.error(f"--arms: a subset of {', '.join(ARMS)} that includes off")

    cluster, env = running_cluster(args.cluster, args.extender_port)
    config = cluster.config
    ctx = admin_tls(config.cluster_dir)
    work = Path(tempfile.mkdtemp(prefix="extender-overhead-"))
    apply_demo_fleet(args.nodes, work, env)
    own_port = int(cluster.component_flag("kube-scheduler", "secure-port") or 0)
    results: list[Measured] = []
    # The cluster scheduler's extender entry, minus its filter verb.
    (entry,) = yaml.safe_load((config.cluster_dir / "scheduler.yaml").read_text())["extenders"]
    prio_only = {k: v for k, v in entry.items() if k != "filterVerb"}
    with (
        second_scheduler.running(config.kubeconfig, work / "plain") as plain,
        second_scheduler.running(
            config.kubeconfig, work / "prio", scheduler_name="prio-only", extenders=[prio_only]
        ) as prio,
    ):
        for rep in range(args.repeat):
            order = arms if rep % 2 == 0 else arms[::-1]
            for arm in order:
                flags = ("--weight-packing", "0") if arm == "on-no-pack" else ()
                log = work / f"extender-{rep}-{arm}.log"
                with extender(args.extender_port, env, log, *flags):
                    scheduler = {"off": plain, "prio-only": prio}.get(arm)
                    port = scheduler.port if scheduler else own_port
                    fetch = None
                    if args.profile_dir:
                        args.profile_dir.mkdir(parents=True, exist_ok=True)
                        target = args.profile_dir / f"{rep}-{arm}.pb.gz"
                        fetch = profile(port, args.profile_seconds, target, ctx)
                    doc = run_arm(
                        arm,
                        args.pods,
                        work / f"{rep}-{arm}",
                        env,
                        scheduler.name if scheduler else None,
                        "--scrape",
                        f"scheduler=https://127.0.0.1:{port}/metrics",
                    )
                    if fetch:
                        fetch.join()
                m = measured(arm, doc)
                results.append(m)
                print(
                    f"round {rep + 1} {arm:>10}: {m.throughput:5.1f} pods/s, scheduler "
                    f"{m.cpu_ms_per_pod:5.1f} ms CPU/pod, DRA-filtered "
                    f"{m.filtered_nodes_per_pod:5.0f} nodes/pod, "
                    f"Filter {m.filter_ms_per_pod:4.1f} ms/pod",
                    flush=True,
                )
    print(f"\n{args.pods} pods x {args.repeat} rounds, {args.nodes}-node demo fleet; {work}")
    report(results, arms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
