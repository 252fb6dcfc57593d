"""`testbed demo`: registered with `testbed` through the `testbed.commands` entry point.

Only the parser and the checks of its flags live here; the orchestration (`experiment.demo`)
is imported when the command runs, so `testbed up` loads none of it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from experiment import plan
from testbed import cli
from testbed.cluster import local


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    demo = sub.add_parser(
        "demo",
        help="the main job: cluster, extender, fleet, workloads, side-by-side report",
        description=(
            "Bring the local cluster up (building binaries if needed), start the extender "
            "and a second plain scheduler, provision a mixed fleet, run each comparison's "
            "arms alternately on it (extender on/off, placement, fragmentation, DRA vs device "
            "plugin), print the side-by-side table and write demo.json and index.html."
        ),
    )
    demo.add_argument("--nodes", type=int, default=1000, help="fleet size (default %(default)s)")
    demo.add_argument(
        "--pods",
        type=int,
        default=1000,
        help="pods per arm of the throughput comparisons (default %(default)s)",
    )
    demo.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each comparison's pair, order alternating (default %(default)s)",
    )
    demo.add_argument(
        "--comparisons",
        default=",".join(plan.DEFAULT_COMPARISONS),
        help="comma-separated, from %(default)s and the opt-in 'scale' (the same --pods on "
        "--nodes and on --scale-nodes nodes; e.g. --pods 10000 --comparisons scale) "
        "(default %(default)s)",
    )
    demo.add_argument(
        "--scale-nodes",
        type=int,
        metavar="N",
        help="fleet size of the scale comparison's large arm (default 5x --nodes)",
    )
    demo.add_argument(
        "--qps", type=float, default=100.0, help="pod creation rate (default %(default)s)"
    )
    demo.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="where reports go (default results/demo-<time>)",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the fleet and the cluster running afterwards",
    )
    return run_demo


def workload(args: argparse.Namespace) -> plan.Workload:
    """The demo's workload from its flags; `cli.UsageError` names the flag that is wrong."""
    if args.nodes < 10:
        raise cli.UsageError(f"--nodes {args.nodes}: the demo needs at least 10 nodes")
    if args.pods < 1 or args.repeat < 1 or args.qps <= 0:
        raise cli.UsageError("--pods, --repeat and --qps must be positive")
    comparisons = tuple(c.strip() for c in args.comparisons.split(",") if c.strip())
    if not comparisons or not set(comparisons) <= set(plan.ALL_COMPARISONS):
        raise cli.UsageError(f"--comparisons takes a subset of {', '.join(plan.ALL_COMPARISONS)}")
    scale_nodes = args.scale_nodes if args.scale_nodes is not None else 5 * args.nodes
    if scale_nodes <= args.nodes:
        raise cli.UsageError(
            f"--scale-nodes {scale_nodes} must be larger than --nodes {args.nodes}"
        )
    return plan.Workload(
        pods=args.pods, repeat=args.repeat, comparisons=comparisons, scale_nodes=scale_nodes
    )


def run_demo(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    from rich.console import Console

    from experiment import demo
    from testbed.cluster import processes

    config = demo.DemoConfig(
        nodes=args.nodes,
        workload=workload(args),
        output_dir=args.output_dir or Path("results") / time.strftime("demo-%Y%m%d-%H%M%S"),
        keep=args.keep,
        qps=args.qps,
        cluster=cluster.config,
    )
    try:
        return demo.run(config, Console())
    except (demo.DemoError, processes.ProcessError) as e:
        raise cli.CommandError(str(e)) from e
