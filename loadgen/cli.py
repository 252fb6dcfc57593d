"""`loadgen`: fire DRA workloads at a cluster and measure them like ClusterLoader2.

    loadgen --pods 10000                      # the default `pods` scenario
    loadgen run cl2-dra fill=0.9              # a named scenario with parameters
    loadgen run my-scenario.yaml              # a scenario file of phases
    loadgen compare before.json after.json    # the release-notes table
    loadgen observe -n team-a --count 500     # measure pods something else creates
    loadgen runs                              # runs in the cluster, alive or abandoned
    loadgen cleanup --abandoned               # remove killed runs, releasing their claims
    loadgen cpu profiles/scheduler-*.pb.gz    # where a component's CPU went, by category

Exit codes (testbed.cliconv): 0 ok, 1 runtime failure, an SLO violated or (compare
--fail-on-regression) a regression, 2 usage (or a demand that cannot fit the fleet, refused
before anything is created), 3 (compare) runs of different loads, 128 + the signal when
interrupted: 130 by SIGINT (Ctrl-C), 143 by SIGTERM (after the partial report is written and
the run's objects are removed). A second signal aborts at once, with the same code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console

from loadgen import compare, runner, runs, scenarios
from loadgen.commands import cluster_runs, comparison, cpu_profile, measure
from loadgen.commands.common import (
    EXIT_INTERRUPTED,
    EXIT_RUNTIME,
    EXIT_USAGE,
    Aborted,
    UsageError,
    exit_code,
    with_kube,
)
from testbed import cliconv, runtime
from testbed.kube import errors

_duration = cliconv.duration
_positive_duration = cliconv.positive_duration


def _percent(text: str) -> float:
    value = runtime.positive_float(text.removesuffix("%"))
    if value >= 1000:
        raise argparse.ArgumentTypeError(f"{value:g} %: at most 1000")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _cluster_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    cliconv.add_cluster_flags(p.add_argument_group("cluster"), suppress=True)
    cliconv.add_verbosity(p)
    return p


def _label_selector(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, value = _key_value(part)
        out[key] = value
    return out


def _run_options() -> argparse.ArgumentParser:
    """Options of a run, shared by the default scenario and `run` (SUPPRESS: no clobbering)."""
    p = argparse.ArgumentParser(
        add_help=False, argument_default=argparse.SUPPRESS, parents=[_cluster_options()]
    )
    g = p.add_argument_group("rate control")
    g.add_argument(
        "--qps",
        type=runtime.positive_float,
        help="objects created per second (default: each phase's own, else 100)",
    )
    g.add_argument(
        "--max-in-flight",
        type=runtime.positive_int,
        help="open loop: create requests "
        "outstanding; closed loop: pods not yet Running (default 100)",
    )
    g.add_argument(
        "--arrival",
        choices=["fixed", "poisson", "closed"],
        help="arrival process (default: each phase's own, else fixed)",
    )
    g.add_argument("--seed", type=int, help="seed of Poisson arrivals (default 0)")
    g = p.add_argument_group("run")
    g.add_argument(
        "--node-selector",
        type=_key_value,
        action="append",
        metavar="KEY=VALUE",
        help="only use nodes with this label (repeatable); the fleet is those nodes",
    )
    g.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="pods ask for this scheduler, e.g. dra-testbed-scheduler (default: the cluster's)",
    )
    g.add_argument(
        "--timeout",
        type=_positive_duration,
        metavar="DURATION",
        help="per phase: the most time to reach its wait condition (default: the phase's "
        "own, else none: a phase ends on a stall)",
    )
    g.add_argument(
        "--stall-timeout",
        type=_positive_duration,
        metavar="DURATION",
        help="a phase fails after this long with no pod scheduled, started or finished and "
        "no new scheduler verdict (default 2m; a Job's run time is added)",
    )
    g.add_argument(
        "--run-id",
        help="run id (default: time + random suffix); names the namespace loadgen-<run-id>",
    )
    g.add_argument("--keep", action="store_true", help="leave the run's objects in place")
    g.add_argument(
        "--allow-unschedulable",
        action="store_true",
        help="run even when the pre-flight check finds a phase needs more GPUs than the "
        "fleet has free (by default: exit 2, nothing created)",
    )
    g.add_argument(
        "--heartbeat-interval",
        type=_positive_duration,
        metavar="DURATION",
        help="how often the run refreshes its heartbeat on its namespace (default 10s); "
        f"`loadgen runs` calls a run abandoned after {runs.STALE_INTERVALS} missed beats",
    )
    g.add_argument(
        "--pod-reader-role",
        metavar="CLUSTERROLE",
        help="bind this ClusterRole (pods get/list/watch) to loadgen's own identity in the "
        "run's namespace and read the run's pods through it: its ServiceAccount then needs no "
        "right to read pods cluster-wide (manifests/loadgen: dra-testbed-loadgen-run-reader)",
    )
    g = p.add_argument_group("output")
    g.add_argument("--output-dir", type=Path, help="where reports go (default ./results/<run-id>/)")
    g.add_argument(
        "--slo",
        action="append",
        metavar="PHASE.STAT=DURATION",
        help="threshold, e.g. pod_startup.p99=5s (repeatable); exit 1 if violated",
    )
    g.add_argument(
        "--scrape",
        type=_key_value,
        action="append",
        metavar="NAME=URL",
        help="scrape this /metrics before and after, report deltas (repeatable), e.g. "
        "scheduler=https://127.0.0.1:10259/metrics; apiserver=kube:/metrics goes through "
        "the API client's credentials. `scheduler` (and `extender`) are also sampled through "
        "the run, `scheduler` and `apiserver` CPU-profiled. Default on a local testbed "
        "cluster: its apiserver, scheduler and extender; elsewhere none",
    )
    g.add_argument(
        "--no-profile",
        action="store_true",
        default=argparse.SUPPRESS,
        help="do not CPU-profile the scraped scheduler and apiserver (their "
        "/debug/pprof/profile, in slices of up to 30s through the run)",
    )
    return p


def parser() -> argparse.ArgumentParser:
    common = _run_options()
    root = cliconv.parser(
        prog="loadgen",
        description="Create pods and Jobs with DRA claims on a cluster and measure pod startup\n"
        "(ClusterLoader2 phases, nearest-rank percentiles), scheduling throughput, claim\n"
        "allocation and placement. Without a subcommand it runs the `pods` scenario.",
        parents=[common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="named scenarios: "
        + ", ".join(scenarios.NAMED)
        + "\nexamples:\n  loadgen --pods 10000\n  loadgen run waves waves=10 size=80"
        "\n  loadgen run cl2-dra --slo pod_startup.p99=5s\n  loadgen compare a.json b.json"
        "\n  loadgen run pods pods=30 mig_profile=1g.10gb   # claim shapes: loadgen run --help"
        "\n  loadgen observe -n team-a --count 500          # pods another tool creates"
        "\n  loadgen runs; loadgen cleanup --abandoned       # runs left in the cluster",
    )
    cliconv.add_version(root)
    root.add_argument(
        "--pods",
        type=runtime.positive_int,
        default=argparse.SUPPRESS,
        help="default scenario: number of pods (default 100)",
    )
    root.add_argument(
        "--gpus",
        type=runtime.non_negative_int,
        default=argparse.SUPPRESS,
        help="default scenario: GPUs per pod (default 1)",
    )
    sub = root.add_subparsers(dest="command", metavar="{run,observe,compare,runs,cleanup,cpu}")
    run = sub.add_parser(
        "run",
        parents=[common],
        help="run a named scenario or a scenario file",
        description="Run a named scenario with KEY=VALUE parameters, or a YAML file of phases.",
        epilog="parameters per scenario:\n"
        + "\n".join(
            f"  {name}: "
            + ", ".join(f"{k}={f.default}" for k, f in named.params.model_fields.items())
            for name, named in scenarios.NAMED.items()
        )
        + "\nclaim shapes (every scenario): memory=10Gi and compute=250m are per-GPU capacity"
        "\n  shares of GPUs that allow multiple allocations (dgx-h100-shared, -fractional);"
        "\n  compute is milli-units of one GPU within the fleet's policy (dgx-h100-fractional:"
        "\n  100m to 1 in 100m steps, with DRAFractionalCapacityRange): the allocator rounds up"
        "\n  to a step, and a share above every GPU's max is refused by the pre-flight check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("scenario", help="scenario name or FILE.yaml")
    run.add_argument("params", nargs="*", type=_key_value, metavar="KEY=VALUE")
    cmp_ = sub.add_parser(
        "compare",
        help="compare two result files",
        description="Print metric, previous, current, % difference and whether it is better, "
        "worse or the same. A change counts only past both runs' own noise (each figure's 95 %% "
        "sampling interval from the run's spread: a latency percentile's from its pods, a "
        "throughput's from its per-second rates), and never below --threshold. Runs of "
        "different loads (scenario, pods, phases, claims, qps) are refused with exit 3.",
    )
    cmp_.add_argument(
        "previous",
        help="result.json of the earlier run, or of its repeats separated by commas "
        "(a,b,c: then the noise is the repeats' spread)",
    )
    cmp_.add_argument(
        "current", help="result.json of the run to compare with it (or its repeats, a,b,c)"
    )
    cliconv.add_output(cmp_)
    cliconv.add_verbosity(cmp_)
    cmp_.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when any figure got worse past its noise (for CI)",
    )
    cmp_.add_argument(
        "--threshold",
        type=_percent,
        default=compare.DEFAULT_FLOOR_PERCENT,
        metavar="PERCENT",
        help="the least change that counts, whatever the noise "
        f"(default {compare.DEFAULT_FLOOR_PERCENT:g})",
    )
    cmp_.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the table and both runs' charts (latency CDFs, throughput, GPU "
        "allocation) as one self-contained HTML page",
    )
    cluster = _cluster_options()
    obs = sub.add_parser(
        "observe",
        parents=[cluster],
        argument_default=argparse.SUPPRESS,
        help="measure pods that something else creates",
        description="Watch the pods of a namespace, of every namespace (-A) or of the namespaces "
        "whose name\nstarts with a prefix (optionally matching a label selector) that another "
        "tool creates,\nand write the same reports as a run: CL2 pod startup "
        "phases, scheduling throughput,\nclaim allocation and placement. Nothing is created "
        "or deleted. Start it before the pods\nare created (a pod's first event seen is its "
        "create, as in ClusterLoader2); it ends on\nCtrl-C (exit 0 after the report), after "
        "--count pods ran, or after --timeout.",
        epilog="examples:\n  loadgen observe -n team-a\n  loadgen observe -n test-1 -l "
        "app=trainer --count 800 --slo pod_startup.p99=5s\n  loadgen observe "
        "--namespace-prefix cl2-run- -l job-type=short-lived",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = obs.add_mutually_exclusive_group(required=True)
    where.add_argument("-n", "--namespace", help="namespace of the pods to measure")
    where.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="pods of every namespace (narrow them with -l)",
    )
    where.add_argument(
        "--namespace-prefix",
        metavar="PREFIX",
        help="pods of every namespace whose name starts with PREFIX (tools such as "
        "ClusterLoader2 make their own namespaces, e.g. <prefix>-1..N)",
    )
    obs.add_argument(
        "-l",
        "--selector",
        type=_label_selector,
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="only pods with these labels",
    )
    obs.add_argument("--count", type=runtime.positive_int, help="stop once this many pods ran")
    obs.add_argument(
        "--timeout", type=_positive_duration, help="stop after this long at the latest"
    )
    obs.add_argument(
        "--node-selector",
        type=_key_value,
        action="append",
        metavar="KEY=VALUE",
        help="the fleet whose GPU allocation is reported (default: all nodes)",
    )
    obs.add_argument(
        "--output-dir", type=Path, help="where reports go (default ./results/observe-<time>/)"
    )
    obs.add_argument("--slo", action="append", metavar="PHASE.STAT=DURATION", help="as for run")
    obs.add_argument("--scrape", type=_key_value, action="append", metavar="NAME=URL")
    runs_ = sub.add_parser(
        "runs",
        parents=[cluster],
        help="list the loadgen runs in the cluster",
        description="List every loadgen run whose namespace exists: id, age, state, pods, "
        "claims (allocated/all) and the GPUs they hold.\nstate: running (its heartbeat is "
        f"fresh), kept (ended with --keep), abandoned (no heartbeat for "
        f"{runs.STALE_INTERVALS} intervals: the\nprocess was killed), terminating.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cliconv.add_output(runs_)
    clean = sub.add_parser(
        "cleanup",
        parents=[cluster],
        help="remove runs left in the cluster, releasing their claims",
        description="Delete runs' namespaces (and so their pods, Jobs and claims) and wait "
        "until every claim is released. Name runs by id, or pick --abandoned or --all.",
        epilog="examples:\n  loadgen cleanup --abandoned\n  loadgen cleanup 20260101-120000-"
        "a1b2c3\n  loadgen cleanup --all",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cpu_ = sub.add_parser(
        "cpu",
        help="where a Go component's CPU went, from pprof CPU profiles",
        description="Sort the samples of CPU profiles (a run's profiles/*.pb.gz, or any "
        "/debug/pprof/profile) into the named categories loadgen's reports use, the files "
        "taken together as slices of one profile.",
        epilog="example:\n  loadgen cpu results/RUN/profiles/scheduler-*.pb.gz",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cpu_.add_argument("files", nargs="+", type=Path, metavar="FILE.pb.gz")
    clean.add_argument("run_ids", nargs="*", metavar="RUN-ID", help="runs to remove")
    which = clean.add_mutually_exclusive_group()
    which.add_argument(
        "--abandoned",
        action="store_true",
        help="every abandoned run, confirmed by watching its heartbeat for three more "
        "intervals first: a run only cut off (a control-plane outage) beats again and stays "
        "(runs kept with --keep stay too: name them, or --all)",
    )
    which.add_argument(
        "--all", action="store_true", help="every run (running ones only with --force)"
    )
    clean.add_argument(
        "--force",
        action="store_true",
        help="also remove runs that are still running (named ones, or with --all)",
    )
    clean.add_argument(
        "--wait",
        type=_duration,
        default=120.0,
        metavar="DURATION",
        help="how long to wait for the namespaces to be gone (default 2m)",
    )
    return root


def main(argv: list[str] | None = None) -> NoReturn:
    with cliconv.exits():
        _main(argv)
    raise AssertionError("unreachable")  # pragma: no cover - _main always exits


def _main(argv: list[str] | None) -> NoReturn:
    args = parser().parse_args(argv)
    opts: dict[str, Any] = vars(args)
    cliconv.configure_logging(args)
    err = Console(stderr=True, soft_wrap=True)
    try:
        command = opts.get("command")
        if command == "compare":
            code = comparison.compare_results(opts, cliconv.stdout_console())
        elif command == "observe":
            code = measure.observe_pods(opts, err)
        elif command == "runs":
            out = cliconv.stdout_console()
            fmt = opts.get("output", "table")
            code = runtime.run(
                with_kube(opts, lambda kube: cluster_runs.print_runs(kube, out, fmt))
            )
        elif command == "cleanup":
            code = cluster_runs.cleanup(opts, err)
        elif command == "cpu":
            code = cpu_profile.print_breakdown(opts["files"], cliconv.stdout_console())
        else:
            code = measure.run_scenario(opts, err)
    except UsageError as e:
        print(f"loadgen: error: {e}", file=sys.stderr)
        code = EXIT_USAGE
    except (runner.Unfit, errors.ConfigError) as e:
        print(f"loadgen: error: {e}", file=sys.stderr)
        code = EXIT_USAGE
    except BrokenPipeError:
        raise  # the reader went away: cliconv.exits ends quietly
    except (errors.KubeError, runner.RunError, OSError) as e:
        print(f"loadgen: error: {e}", file=sys.stderr)
        code = EXIT_RUNTIME
    except KeyboardInterrupt as e:  # a second signal: stop without waiting for cleanup
        print(
            "loadgen: aborted; `loadgen runs` lists what is left, `loadgen cleanup "
            "--abandoned` removes it",
            file=sys.stderr,
        )
        code = exit_code(e.signum) if isinstance(e, Aborted) else EXIT_INTERRUPTED
    sys.exit(code)
