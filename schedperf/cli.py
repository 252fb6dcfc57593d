"""`testbed perf`: scheduler_perf as a library, beside loadgen (registered with `testbed`
through the `testbed.commands` entry point).

    testbed perf list [--kubernetes 1.NN]
    testbed perf run WORKLOAD [--kubernetes 1.NN] [--repeat N] [--nodes N --pods N]
    testbed perf releases WORKLOAD [--releases 1.35,1.36,1.37] [--repeat N]

Only the parser and the checks of its flags live here; everything a run does is in
`schedperf.session`, imported when the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from testbed import cli, cliconv
from testbed.cluster import binaries, local


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    perf = sub.add_parser(
        "perf",
        help="scheduler_perf in-process on the same machine: upstream's DRA workloads or "
        "the fleet's shapes, as loadgen result files",
        description=(
            "Build (once per release, cached) and run upstream's scheduler_perf benchmark, "
            "imported as a library, on one workload: upstream's DRA workloads by their "
            "scheduler_perf names (e.g. SchedulingWithResourceClaimTemplate/5000pods_500nodes) "
            "or fleet/<profile> (the Nodes and ResourceSlices `fleet render` makes, the "
            "claims and pods of `loadgen run pods`). Each repeat writes a loadgen result.json "
            "and PerfData; the median repeat's result.json sits beside them for "
            "`loadgen compare`."
        ),
    )
    verbs = perf.add_subparsers(dest="verb", required=True, metavar="VERB")
    release_help = (
        f"Kubernetes release, one with a pinned module (default {binaries.DEFAULT_RELEASE})"
    )
    lst = verbs.add_parser("list", help="the workloads a release has")
    lst.add_argument(
        "--kubernetes", metavar="RELEASE", default=binaries.DEFAULT_RELEASE, help=release_help
    )
    run = verbs.add_parser(
        "run",
        help="run one workload N times and write the result files",
        description="Run WORKLOAD --repeat times, one after another, and write "
        "run-<i>/result.json (+ PerfData, the benchmark's log and DataItems), repeats.json "
        "and the median repeat's result.json into --output-dir. A repeat that took no "
        "throughput sample has no result (no data, not 0); exit 1 if none has one.",
    )
    run.add_argument("workload", help="upstream's <test case>/<workload>, or fleet/<profile>")
    run.add_argument(
        "--kubernetes", metavar="RELEASE", default=binaries.DEFAULT_RELEASE, help=release_help
    )
    _run_options(run)
    rel = verbs.add_parser(
        "releases",
        help="one workload on several releases, then PFN's release-to-release table",
        description="Run WORKLOAD --repeat times on each release in turn (into "
        "<output-dir>/<release>/, as `run` does) and print and write releases.md: the median "
        "SchedulingThroughput per release and the change from each release to the next.",
    )
    rel.add_argument("workload", help="upstream's <test case>/<workload>, or fleet/<profile>")
    rel.add_argument(
        "--releases",
        metavar="A,B,...",
        help="releases, oldest first (default: every release with a pinned module)",
    )
    _run_options(rel)
    return _run


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=1, help="runs (default %(default)s)")
    p.add_argument(
        "--nodes", type=int, default=500, help="fleet/<profile> only: nodes (default %(default)s)"
    )
    p.add_argument(
        "--pods",
        type=int,
        default=2500,
        help="fleet/<profile> only: pods measured (default %(default)s)",
    )
    p.add_argument(
        "--gomaxprocs",
        type=int,
        metavar="N",
        help="GOMAXPROCS of the benchmark (default: Go's, the machine's cores)",
    )
    p.add_argument(
        "--timeout",
        type=cliconv.positive_duration,
        default=3600.0,
        metavar="DURATION",
        help="give up on a repeat after this long, e.g. 90s, 30m (default 1h)",
    )
    p.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="where results go (default results/perf-<time>)",
    )


def _run(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    from schedperf import session

    if args.verb == "list":
        return session.list_workloads(args.kubernetes)
    for flag in ("repeat", "nodes", "pods", "gomaxprocs"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise cli.UsageError(f"--{flag} {value}: must be at least 1")
    options = session.Options(
        repeat=args.repeat,
        nodes=args.nodes,
        pods=args.pods,
        gomaxprocs=args.gomaxprocs,
        timeout=args.timeout,
        output_dir=args.output_dir,
    )
    if args.verb == "releases":
        chosen = [r for r in (args.releases or "").split(",") if r] or session.all_releases()
        return session.releases(args.workload, chosen, options)
    return session.run(args.workload, args.kubernetes, options)
