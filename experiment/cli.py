"""`testbed demo`, `testbed experiment` and `testbed report`: registered with `testbed`
through the `testbed.commands` entry point. The roof over the demo wing and the engine: it
registers the wings with the engine (`experiment.plan.wing`, as kwok's command imports its
runtimes), whose registry then picks a wing's planner and reporter for a file of built-in
comparisons, the engine's for any other.

Only the parsers and the checks of their flags live here; the wings and the orchestration
(`experiment.run.runner`) are imported when a command runs, so `testbed up` loads none of it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiment.demo import defaults, plan
from testbed import cli, cliconv, runtime
from testbed.cluster import local

if TYPE_CHECKING:
    from experiment.run import runner
    from experiment.spec import spec as specs


def _register_wings() -> None:
    """Register every wing with the engine's registry (idempotent)."""
    from experiment.demo import command as demo
    from experiment.plan import wing

    wing.WINGS.register(demo.WING)


def _cluster_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "an existing cluster, instead of the local one",
        "With --kubeconfig or --context the run goes to that cluster: it creates only what is "
        "missing there (namespace, DeviceClasses, RBAC, kwok where it is not installed), a "
        "second scheduler per variant with the extender as its sidecar, and deletes what it "
        "created afterwards.",
    )
    cliconv.add_cluster_flags(g)
    g.add_argument(
        "--image",
        metavar="IMAGE",
        help="dra-testbed image the cluster's nodes can pull, for the extender sidecar "
        "(default dra-testbed:dev)",
    )


def _existing_opener(
    args: argparse.Namespace, exp: specs.Experiment, *, explicit_release: bool
) -> runner.SiteOpener | None:
    """The existing cluster's site opener with --kubeconfig/--context, else None. Checked
    here, before the run makes anything: a bad kubeconfig or context is a usage error, a
    cluster that does not answer a runtime one."""
    if not (args.kubeconfig or args.context):
        return None
    if faulted := [i for i, v in enumerate(exp.variants) if v.fault is not None]:
        raise cli.UsageError(
            f"variants.{faulted[0]}.fault: faults are made and repaired on a local cluster the "
            "testbed brings up, not on an existing cluster (--kubeconfig/--context)"
        )
    if any(v.extender_source for v in exp.variants):
        raise cli.UsageError(
            "extenderSource: a source tree's extender runs beside a local cluster only (an "
            "existing cluster's schedulers call the image's)"
        )
    from experiment.sites import in_process

    if other := next((v.harness for v in exp.variants if v.harness != in_process.LOADGEN), None):
        raise cli.UsageError(
            f"harness: {other} runs beside a local cluster only (on its release, with kwok's "
            "fake pods; an existing cluster's processes are not this machine's to measure)"
        )
    from experiment.sites import existing_site as es

    try:
        es.preflight(args.kubeconfig, args.context, request_timeout=args.request_timeout)
        return es.opener(
            exp.clusters(),
            kubeconfig_path=args.kubeconfig,
            context=args.context,
            image=args.image or es.DEFAULT_IMAGE,
            request_timeout=args.request_timeout,
            explicit_release=explicit_release,
        )
    except es.SiteUsageError as e:
        raise cli.UsageError(str(e)) from e
    except es.SiteError as e:
        raise cli.CommandError(str(e)) from e


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    default = defaults.defaults()  # the built-in file's (demo.yaml)
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
    demo.add_argument(
        "--nodes",
        type=runtime.positive_int,
        default=default.nodes,
        help="fleet size (default %(default)s; --nodes 1000 --repeat N publishes figures)",
    )
    demo.add_argument(
        "--pods",
        type=runtime.positive_int,
        default=default.pods,
        help="pods per arm of the throughput comparisons (default %(default)s)",
    )
    demo.add_argument(
        "--repeat",
        type=runtime.positive_int,
        default=default.repeats,
        help="the most runs of each comparison's pair, order alternating: the sequential "
        "design stops earlier once the headline target is decided or --budget ends; one "
        "repeat gives observations, not verdicts (default %(default)s)",
    )
    demo.add_argument(
        "--budget",
        type=cliconv.positive_duration,
        metavar="DURATION",
        help=f"time budget of the sequential design, e.g. 15m (default: demo.yaml's "
        f"{default.budget_minutes:g}m): "
        "where it cannot reach the next look, pairs run while one more fits and a closing "
        "look after the last spends the error budget left",
    )
    demo.add_argument(
        "--comparisons",
        default=",".join(default.comparisons),
        help="comma-separated, from %(default)s and the opt-in ones: 'placement' (gang "
        "locality), 'fragmentation' (8-GPU placeability after a mixed fill), 'scale' (the same "
        "--pods on --nodes and on --scale-nodes nodes; e.g. --pods 10000 --comparisons "
        "scale), 'sharing' (device plugin vs DRA whole GPUs vs MIG vs capacity shares), "
        "'extended-resource' (nvidia.com/gpu pods by DRA vs the device plugin) and 'taints' "
        "(a NoSchedule device taint on part of a pool) (default %(default)s)",
    )
    demo.add_argument(
        "--latency-arms",
        action="store_true",
        help="follow each throughput arm with an unsaturated latency arm (Poisson arrivals "
        "at up to 2 pods/s: pod startup as service time; the guide's latency row needs it)",
    )
    demo.add_argument(
        "--scale-nodes",
        type=runtime.positive_int,
        metavar="N",
        help="fleet size of the scale comparison's large arm (default 5x --nodes)",
    )
    demo.add_argument(
        "--qps",
        type=runtime.positive_float,
        default=default.qps,
        help="pod creation rate (default %(default)s)",
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
    _cluster_flags(demo)
    return run_demo


def demo_experiment(args: argparse.Namespace) -> specs.Experiment:
    """The built-in demo file with the flags laid over it, checked as the file would be (e.g.
    a --budget shorter than one pair); `cli.UsageError` names what is wrong."""
    if args.nodes < plan.MIN_NODES:
        raise cli.UsageError(
            f"--nodes {args.nodes}: the demo needs at least {plan.MIN_NODES} nodes"
        )
    if args.pods < 1 or args.repeat < 1 or args.qps <= 0:
        raise cli.UsageError("--pods, --repeat and --qps must be positive")
    comparisons = tuple(c.strip() for c in args.comparisons.split(",") if c.strip())
    if not comparisons or not set(comparisons) <= set(plan.ALL_COMPARISONS):
        raise cli.UsageError(f"--comparisons takes a subset of {', '.join(plan.ALL_COMPARISONS)}")
    scale_nodes = plan.scale_nodes(args.nodes, args.scale_nodes)
    if scale_nodes <= args.nodes:
        raise cli.UsageError(
            f"--scale-nodes {scale_nodes} must be larger than --nodes {args.nodes}"
        )
    from experiment.demo import command as demo

    try:
        return demo.experiment(
            nodes=args.nodes,
            pods=args.pods,
            repeats=args.repeat,
            comparisons=comparisons,
            scale_nodes=args.scale_nodes,
            latency_arms=args.latency_arms,
            qps=args.qps,
            budget_minutes=args.budget / 60 if args.budget is not None else None,
        )
    except ValueError as e:  # spec.SpecError: the flags make a file that cannot run
        raise cli.UsageError(str(e)) from e


def run_demo(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    exp = demo_experiment(args)
    out = args.output_dir or Path("results") / time.strftime("demo-%Y%m%d-%H%M%S")
    return _run(exp, cluster, args, out)


def register_experiment(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    exp = sub.add_parser(
        "experiment",
        help="run or check an experiment file (variants x workloads, releases, repeats)",
        description=(
            "An experiment file names a fleet, variants (extender on/off and its flags, "
            "scheduler configuration overrides, feature gates, Kubernetes release, device "
            "plugin vs DRA), loadgen workloads, repeats and the metrics to compare. Variants "
            "on different releases run on one local cluster per release, in turn. See "
            "examples/experiments/ and docs/experiments.md."
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
    _size_flags(run)
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
    _cluster_flags(run)
    check = verbs.add_parser(
        "validate",
        help="parse and check the file; creates nothing",
        description="Parse FILE and check everything a run would need (the fleet spec, the "
        "Kubernetes releases' pinned modules, the scenarios and their parameters, the "
        "extender flags); print the plan. Exit 2 with one line naming the field if not.",
    )
    check.add_argument("file", metavar="FILE", help="experiment YAML file, or builtin:NAME")
    _size_flags(check)
    return run_experiment


def _size_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nodes",
        type=runtime.positive_int,
        metavar="N",
        help="the fleet's node count instead of the file's (a profile fleet only)",
    )
    p.add_argument(
        "--repeat",
        dest="repeats",
        type=runtime.positive_int,
        metavar="N",
        help="repeats instead of the file's (as testbed demo --repeat)",
    )


def load_checked(
    source: str, *, nodes: int | None = None, repeats: int | None = None
) -> tuple[Any, list[str]]:
    """The experiment FILE (or builtin:NAME) with the command line's --nodes/--repeats over
    it, checked; `cli.UsageError` names what is wrong."""
    import subprocess

    from experiment.plan import wing
    from experiment.sites import children
    from experiment.spec import spec as specs

    _register_wings()
    try:
        if source.startswith("builtin:"):
            exp = wing.WINGS.builtin(source.removeprefix("builtin:"))
        else:
            exp = specs.load(Path(source))
        exp = specs.overridden(exp, nodes=nodes, repeats=repeats)
    except specs.SpecError as e:
        raise cli.UsageError(str(e)) from e
    try:
        releases = specs.check(exp)
        if (owner := wing.WINGS.of(exp)) is not None:
            owner.check(exp)
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
    from experiment.plan import matrix, wing

    exp, releases = load_checked(args.file, nodes=args.nodes, repeats=args.repeats)
    owner = wing.WINGS.of(exp)
    if args.verb == "validate":
        stages = (owner.planner() if owner else matrix.Planner()).stages(exp)
        arms = sum(len(s.arms) for s in stages)
        what = (
            owner.describe(exp)
            if owner
            else f"{len(exp.variants)} variants x {len(exp.workloads)} workloads, {arms} arms"
        )
        repeats = (
            f"at most {exp.repeats} pairs within {exp.budget_minutes:g} min (sequential)"
            if exp.design == "sequential"
            else f"{exp.repeats} repeat(s)"
        )
        print(
            f"{args.file}: ok: experiment {exp.name!r}, {what}, {repeats} "
            f"({exp.order}), Kubernetes {', '.join(releases)}, {len(stages)} cluster stage(s)"
        )
        return cli.EXIT_OK
    out = args.output_dir or Path("results") / time.strftime(f"{exp.name}-%Y%m%d-%H%M%S")
    return _run(exp, cluster, args, out)


def _run(
    exp: specs.Experiment, cluster: local.LocalCluster, args: argparse.Namespace, out: Path
) -> int:
    """Run `exp` (on --kubeconfig/--context's cluster, else the local one) with the planner
    and reporter of the wing registered for it, or the engine's."""
    from experiment.plan import wing
    from experiment.run import runner
    from experiment.sites import existing_site, in_process, local_site
    from testbed.cluster import processes

    _register_wings()
    console = cliconv.stdout_console()
    # An in-process variant runs the release its stage names: the cluster must run it too.
    explicit_release = any(v.kubernetes or v.harness != in_process.LOADGEN for v in exp.variants)
    open_site = _existing_opener(args, exp, explicit_release=explicit_release) or local_site.opener(
        cluster.config,
        exp.clusters(),
        console,
        explicit_release=explicit_release,
        keep=args.keep,
    )
    config = runner.RunConfig(output_dir=out, keep=args.keep, request_timeout=args.request_timeout)
    owner = wing.WINGS.of(exp)
    try:
        if owner is not None:
            return runner.run(
                exp, config, open_site, console, planner=owner.planner(), reporter=owner.reporter()
            )
        return runner.run(exp, config, open_site, console)
    except (runner.RunError, processes.ProcessError, existing_site.SiteError) as e:
        raise cli.CommandError(str(e)) from e


def register_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> cli.Command:
    report = sub.add_parser(
        "report",
        help="rebuild a results directory's HTML pages from its kept JSON",
        description="Rewrite the HTML pages of DIR from the JSON it keeps, with this "
        "version's page writers: each loadgen result's report (result.json, in DIR or one "
        "level down, or flat <arm>.json files as bench/results keeps them) and the index of "
        "a demo (demo.json) or experiment (experiment.json). The JSON is left as it is; "
        "no cluster is needed.",
    )
    report.add_argument("directory", type=Path, metavar="DIR", help="a results directory")
    return run_report


def run_report(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    from experiment.plan import wing
    from experiment.report import rebuild

    directory: Path = args.directory
    if not directory.is_dir():
        raise cli.UsageError(f"{directory} is not a directory")
    _register_wings()
    try:
        out = rebuild.rebuild(directory, [w.result for w in wing.WINGS.wings()])
    except rebuild.NoResults as e:
        raise cli.UsageError(str(e)) from e
    for page in out.pages:
        print(page)
    for line in out.failed:
        print(f"testbed: {line}", file=sys.stderr)
    if out.failed:
        raise cli.CommandError(
            f"{len(out.failed)} of {len(out.failed) + len(out.pages)} pages not rebuilt"
        )
    return cli.EXIT_OK
