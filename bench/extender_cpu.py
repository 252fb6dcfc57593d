"""The extender's CPU per pod, this tree against a baseline tree, side by side in one run.

On a running local cluster (`testbed --name C --extender-port P up`) with the demo's mixed
fleet (applied here, idempotently), runs the demo's extender workload (`loadgen --pods N`,
one GPU per pod, on the demo fleet) once per arm and repeat, arms in alternating order:

  off       this tree's extender runs and watches, but pods go to the plain second
            scheduler (no extender entry): the watching cost alone, and the throughput the
            overhead is measured against
  baseline  the baseline tree's extender (e.g. `git archive main | tar -x -C DIR`) on the
            cluster's extender port: the cluster's scheduler calls it
  this      this tree's extender, the same way

Per arm: the extender's CPU seconds (process_cpu_seconds_total, read just before and just
after loadgen, so the initial sync is not counted; each arm starts once the previous runs'
namespaces are gone, so their deletions are not counted either) per pod, the watch events it
applied, its scheduler calls, and
loadgen's scheduling throughput. CPU seconds do not depend on how busy the machine is the way
wall time does; the ratios between arms of one round are the figures to compare, with the
engine's paired 95 % intervals over rounds (`experiment.intervals`).

    .venv/bin/python bench/extender_cpu.py --cluster C --extender-port P --baseline DIR \\
        [--nodes 200] [--pods 300] [--repeat 3] [--profile-dir D]

`--profile-dir` also writes a cProfile (CPU time) of each arm's extender over the loadgen run
(`python -m pstats FILE`); profiling inflates the CPU figures. `--this DIR` measures another
tree than this one as "this" (e.g. a `git archive` of a commit, so editing goes on meanwhile).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import (  # bench/ is on sys.path
    HERE,
    add_cluster_flags,
    apply_demo_fleet,
    extender_counters,
    extender_from_tree,
    run_arm,
    running_cluster,
    settle,
)

from experiment import intervals
from testbed.cluster import second_scheduler

ARMS = ("off", "baseline", "this")


@dataclass(frozen=True)
class Measured:
    arm: str
    cpu_ms_per_pod: float
    calls: int
    events: int
    throughput: float


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_cluster_flags(ap)
    ap.add_argument("--baseline", type=Path, required=True, help="source tree to compare with")
    ap.add_argument("--this", type=Path, default=HERE, help="source tree measured as this")
    ap.add_argument("--nodes", type=int, default=200, help="demo fleet size (default 200)")
    ap.add_argument("--pods", type=int, default=300, help="pods per arm (default 300)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of all arms (default 3)")
    ap.add_argument("--profile-dir", type=Path, help="cProfile each answering arm here")
    args = ap.parse_args()
    for flag, tree in (("--baseline", args.baseline), ("--this", args.this)):
        if not (tree / "extender" / "cli.py").is_file():
            ap.error(f"{flag} {tree}: not a source tree with extender/cli.py")

    cluster, env = running_cluster(args.cluster, args.extender_port)
    config = cluster.config
    work = Path(tempfile.mkdtemp(prefix="extender-cpu-"))
    apply_demo_fleet(args.nodes, work, env)
    this = args.this.resolve()
    trees = {"off": this, "baseline": args.baseline.resolve(), "this": this}
    results: list[Measured] = []
    port = args.extender_port
    with second_scheduler.running(config.kubeconfig, work / "plain") as plain:
        for rep in range(args.repeat):
            for arm in ARMS if rep % 2 == 0 else ARMS[::-1]:
                profile = None
                if args.profile_dir:
                    args.profile_dir.mkdir(parents=True, exist_ok=True)
                    profile = (args.profile_dir / f"{rep}-{arm}.prof").resolve()
                log = work / f"extender-{rep}-{arm}.log"
                settle(config.kubeconfig)
                with extender_from_tree(trees[arm], port, env, log, profile) as proc:
                    time.sleep(2)  # let the initial sync's last events settle
                    before = extender_counters(port)
                    if profile is not None:
                        proc.send_signal(10)  # SIGUSR1: start profiling
                    doc = run_arm(
                        arm,
                        args.pods,
                        work / f"{rep}-{arm}",
                        env,
                        plain.name if arm == "off" else None,
                    )
                    if profile is not None:
                        proc.send_signal(12)  # SIGUSR2: write the profile
                        time.sleep(1)
                    after = extender_counters(port)
                pods = doc["counts"]["expected_pods"]
                m = Measured(
                    arm,
                    (after["cpu"] - before["cpu"]) / pods * 1000,
                    int(after["calls"] - before["calls"]),
                    int(after["events"] - before["events"]),
                    float(doc["throughput"]["Average"]),
                )
                results.append(m)
                print(
                    f"round {rep + 1} {arm:>8}: extender {m.cpu_ms_per_pod:5.2f} ms CPU/pod, "
                    f"{m.calls} scheduler calls, {m.events} watch events, "
                    f"{m.throughput:5.1f} pods/s",
                    flush=True,
                )
    print(f"\n{args.pods} pods x {args.repeat} rounds, {args.nodes}-node demo fleet; {work}")
    print("arm       extender CPU ms/pod, median (min-max)   pods/s, median (min-max)")
    for arm in ARMS:
        mine = [m for m in results if m.arm == arm]
        cpu = spread([m.cpu_ms_per_pod for m in mine])
        print(f"{arm:>8}  {cpu:>32}   {spread([m.throughput for m in mine]):>22}")
    # A round's arms ran back to back: a round is a pair (the engine's paired intervals).
    by_round = [{m.arm: m for m in results[i : i + len(ARMS)]} for i in range(0, len(results), 3)]
    print(intervals.METHOD)
    for label, a, b, key in (
        ("this / baseline extender CPU per pod", "this", "baseline", "cpu_ms_per_pod"),
        ("this / off pods/s (overhead = 1 - ratio)", "this", "off", "throughput"),
        ("baseline / off pods/s (overhead = 1 - ratio)", "baseline", "off", "throughput"),
    ):
        ratio = intervals.ratio_interval(
            [getattr(r[a], key) for r in by_round], [getattr(r[b], key) for r in by_round]
        )
        point = f"{ratio.point:.2f}" if ratio is not None else "-"
        print(f"{label}: {point} {intervals.describe(ratio, '{:.2f}'.format)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
