"""`testbed demo`: registered with `testbed` through the `testbed.commands` entry point.

Only the parser and the checks of its flags live here; the orchestration (`experiment.demo`)
is imported when the command runs, so `testbed up` loads none of it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

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
            "plugin), print the side-by-side table and write demo.json and index.html. It is "
            "the built-in experiment file (`testbed experiment run builtin:demo`) with these "
            "flags laid over it."
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


def register_experiment(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    exp = sub.add_parser(
        "experiment",
        help="run or check an experiment file (variants x workloads, releases, repeats)",
        description=(
            "An experiment file names a fleet, variants (extender on/off and its flags, "
            "scheduler configuration overrides, feature gates, Kubernetes release, device "
            "plugin vs DRA), loadgen workloads, repeats and the metrics to compare. Variants "
            "on different releases run on one local cluster per release, in turn. See "
            "examples/experiments/ and the README's Experiments section."
        ),
    )
    verbs = exp.add_subparsers(dest="verb", required=True, metavar="VERB")
    run = verbs.add_parser(
        "run",
        help="run it: clusters, fleet, arms, then the report",
        description="Run the experiment FILE (or `builtin:NAME`, e.g. builtin:demo) and write "
        "each arm's loadgen result, experiment.json (demo.json for the built-in comparisons) "
        "and index.html into --output-dir.",
    )
    run.add_argument("file", metavar="FILE", help="experiment YAML file, or builtin:NAME")
    run.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="where reports go (default results/<name>-<time>)",
    )
    run.add_argument(
        "--keep",
        action="store_true",
        help="leave the fleet, and clusters the run started, running afterwards",
    )
    check = verbs.add_parser(
        "validate",
        help="parse and check the file; creates nothing",
        description="Parse FILE and check everything a run would need (the fleet spec, the "
        "Kubernetes releases' pinned modules, the scenarios and their parameters, the "
        "extender flags); print the plan. Exit 2 with one line naming the field if not.",
    )
    check.add_argument("file", metavar="FILE", help="experiment YAML file, or builtin:NAME")
    return run_experiment


def load_checked(source: str) -> tuple[Any, list[str]]:
    """The experiment FILE (or builtin:NAME), checked; `cli.UsageError` names what is wrong."""
    import subprocess

    from experiment import children
    from experiment import spec as specs

    try:
        if source.startswith("builtin:"):
            name = source.removeprefix("builtin:")
            try:
                exp = specs.builtin(name)
            except FileNotFoundError:
                raise specs.SpecError(f"no built-in experiment {name!r} (known: demo)") from None
        else:
            exp = specs.load(Path(source))
    except specs.SpecError as e:
        raise cli.UsageError(str(e)) from e
    try:
        releases = specs.check(exp)
    except specs.SpecError as e:
        raise cli.UsageError(f"{source}: {e}") from e
    if any(v.extender_flags for v in exp.variants):
        serve_help = subprocess.run(
            [children.tool("extender"), "serve", "--help"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if unknown := specs.unknown_extender_flags(exp, serve_help):
            raise cli.UsageError(
                f"{source}: {unknown[0]}: not an `extender serve` flag (see extender serve --help)"
            )
    return exp, releases


def run_experiment(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    from rich.console import Console

    from experiment import matrix

    exp, releases = load_checked(args.file)
    console = Console()
    stages = matrix.stages(exp)
    if args.verb == "validate":
        arms = sum(len(s.arms) for s in stages)
        what = (
            f"built-in comparisons {', '.join(exp.builtin.comparisons)}"
            if exp.builtin is not None
            else f"{len(exp.variants)} variants x {len(exp.workloads)} workloads, {arms} arms"
        )
        print(
            f"{args.file}: ok: experiment {exp.name!r}, {what}, {exp.repeats} repeat(s) "
            f"({exp.order}), Kubernetes {', '.join(releases)}, {len(stages)} cluster stage(s)"
        )
        return cli.EXIT_OK
    from experiment import local_site, runner
    from testbed.cluster import processes

    out = args.output_dir or Path("results") / time.strftime(f"{exp.name}-%Y%m%d-%H%M%S")
    open_site = local_site.opener(
        cluster.config,
        exp.clusters(),
        console,
        explicit_release=any(v.kubernetes for v in exp.variants),
        keep=args.keep,
    )
    try:
        return runner.run(exp, runner.RunConfig(output_dir=out, keep=args.keep), open_site, console)
    except (runner.RunError, processes.ProcessError) as e:
        raise cli.CommandError(str(e)) from e
