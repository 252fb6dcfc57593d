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
import asyncio
import dataclasses
import math
import os
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from loadgen import (
    compare,
    cpu,
    inventory,
    observe,
    outcome,
    pprof,
    progress,
    report,
    runner,
    runs,
    scenarios,
    slo,
)
from loadgen.report import console as console_report
from loadgen.report import document
from loadgen.report import html as html_report
from testbed import cliconv, runtime, units, validation
from testbed.cluster import discovery
from testbed.kube import errors
from testbed.kube.client import ClientSettings, Kube

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = cliconv.EXIT_OK, cliconv.EXIT_FAILURE, cliconv.EXIT_USAGE
EXIT_INCOMPARABLE = 3
"""`loadgen compare` of runs under different loads: nothing is judged."""
# Interrupted runs exit 128 + the signal number, as shells report a process that signal ended.
_SIGNAL_EXIT = cliconv.SIGNAL_EXIT
EXIT_INTERRUPTED = _SIGNAL_EXIT + signal.SIGINT
# The namespace is loadgen-<run-id>: a DNS label of at most 63 characters.
_RUN_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,52}[a-z0-9])?\Z")


class UsageError(cliconv.UsageError):
    pass


class _Aborted(KeyboardInterrupt):
    """A second signal: stop without waiting for the report or the cleanup."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _exit_code(signum: int) -> int:
    return _SIGNAL_EXIT + signum


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
            code = _compare(opts, cliconv.stdout_console())
        elif command == "observe":
            code = _observe(opts, err)
        elif command == "runs":
            out = cliconv.stdout_console()
            fmt = opts.get("output", "table")
            code = runtime.run(_with_kube(opts, lambda kube: _list_runs(kube, out, fmt)))
        elif command == "cleanup":
            code = _cleanup(opts, err)
        elif command == "cpu":
            code = _cpu(opts["files"], cliconv.stdout_console())
        else:
            code = _run(opts, err)
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
        code = _exit_code(e.signum) if isinstance(e, _Aborted) else EXIT_INTERRUPTED
    sys.exit(code)


def _scenario(opts: dict[str, Any]) -> scenarios.Scenario:
    if opts.get("command") == "run":
        if "pods" in opts or "gpus" in opts:
            raise UsageError("--pods/--gpus set the default scenario; with run use pods=N gpus=K")
        params = {k.replace("-", "_"): v for k, v in opts.get("params", [])}
        name = opts["scenario"]
    else:
        params = {k: opts[k] for k in ("pods", "gpus") if k in opts}
        name = "pods"
    try:
        return scenarios.load(name, params)
    except scenarios.ScenarioError as e:
        raise UsageError(str(e)) from None


def _settings(opts: dict[str, Any]) -> tuple[outcome.Settings, list[slo.Slo], Path]:
    try:
        slos = [slo.parse(s) for s in opts.get("slo", [])]
    except ValueError as e:
        raise UsageError(str(e)) from None
    names = (
        "qps",
        "max_in_flight",
        "arrival",
        "keep",
        "timeout",
        "stall_timeout",
        "seed",
        "scheduler_name",
        "allow_unschedulable",
        "heartbeat_interval",
        "pod_reader_role",
    )
    kw: dict[str, Any] = {k: opts[k] for k in names if k in opts}
    if "run_id" in opts:
        kw["run_id"] = opts["run_id"]
    kw["node_selector"] = dict(opts.get("node_selector", []))
    kw["scrape"] = dict(opts.get("scrape", []))
    kw["profile"] = not opts.get("no_profile", False)
    try:
        settings = outcome.Settings(**kw)
    except TypeError as e:  # pragma: no cover - options and Settings are kept in step
        raise UsageError(str(e)) from None
    if not _RUN_ID.match(settings.run_id):
        raise UsageError(f"--run-id {settings.run_id!r} must be a short DNS label")
    out = opts.get("output_dir") or Path("results") / settings.run_id
    return settings, slos, out


def _run(opts: dict[str, Any], err: Console) -> int:
    scenario = _scenario(opts)
    settings, slos, out_dir = _settings(opts)
    if scenario.node_selector:  # the scenario's own (a pool), on top of --node-selector
        selector = {**settings.node_selector, **scenario.node_selector}
        settings = dataclasses.replace(settings, node_selector=selector)
    _check_writable(out_dir)
    written: dict[str, document.ResultDoc] = {}
    signals: list[int] = []

    def write_reports(result: outcome.RunResult) -> None:
        written["doc"] = report.write_all(result, out_dir, slos)

    result = _run_async(opts, scenario, settings, write_reports, err, signals)
    doc = written.get("doc")
    if doc is None:  # pragma: no cover - on_measured always runs once the run started
        return EXIT_RUNTIME
    # `cleaned_up` is only known after the reports were written: keep the file truthful.
    doc.cleaned_up = result.cleaned_up
    document.write(doc, out_dir)
    console_report.render(doc, cliconv.stdout_console())
    err.print(f"reports in {out_dir}/", highlight=False)
    if result.interrupted:
        return _exit_code(signals[0]) if signals else EXIT_INTERRUPTED
    if result.error:
        return EXIT_RUNTIME
    if any(not s.ok for s in doc.slos):
        return EXIT_RUNTIME
    return EXIT_OK


def _check_writable(out_dir: Path) -> None:
    """Fail before the run, not after it, when reports could not be written."""
    existing = out_dir.absolute()
    while not existing.exists():
        existing = existing.parent
    if existing == out_dir.absolute() and not existing.is_dir():
        raise UsageError(f"--output-dir {out_dir} is not a directory")
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--output-dir {out_dir}: {existing} is not a writable directory")


def _run_async(
    opts: dict[str, Any],
    scenario: scenarios.Scenario,
    settings: outcome.Settings,
    on_measured: runner.Measured,
    err: Console,
    signals: list[int],
) -> outcome.RunResult:
    """Run on an event loop; SIGINT and SIGTERM received are appended to `signals`."""

    async def go() -> outcome.RunResult:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        def interrupted(signum: int) -> None:
            signals.append(signum)
            if not stop.is_set():
                err.print(
                    f"interrupted ({signal.Signals(signum).name}): stopping creation, writing "
                    "the partial report, cleaning up (Ctrl-C again to abort)"
                )
                stop.set()
            else:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
                raise _Aborted(signals[0])

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupted, sig)
        kube = await cliconv.connect(
            opts,
            # loadgen paces its own creates; the watches must never wait on a token bucket.
            ClientSettings(
                qps=0,
                pool_size=settings.max_in_flight + 10,
                user_agent="dra-testbed-loadgen",
                request_timeout=cliconv.long_run_timeout(opts),
            ),
        )
        run_settings = settings
        if not settings.scrape:  # a local testbed cluster: its components, found by address
            found = discovery.endpoints(kube.host)
            run_settings = dataclasses.replace(settings, scrape=found)
        try:
            display = _Progress(err, quiet=bool(opts.get("quiet")))
            with display:
                return await runner.run(
                    kube,
                    scenario,
                    run_settings,
                    stop=stop,
                    on_progress=display.update,
                    on_measured=on_measured,
                    on_notice=lambda text: err.print(f"[yellow]loadgen:[/] {text}"),
                    on_started=lambda namespace: _started(settings.run_id, namespace),
                )
        finally:
            await kube.close()

    return runtime.run(go())


def _started(run_id: str, namespace: str) -> None:
    """The run's id once its namespace exists, first thing, terminal or not: a run killed
    from then on can be found by it (`loadgen runs`, `loadgen cleanup`)."""
    print(f"loadgen: run {run_id} (namespace {namespace})", file=sys.stderr, flush=True)


class _Progress:
    """A rich progress bar per phase (pods Running of pods expected) on a terminal; else,
    unless quiet, a line per phase every 30 s (logs, CI, `tee`)."""

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console = console
        self.enabled = not quiet and console.is_terminal
        self.lines = None if quiet or self.enabled else progress.Lines()
        self.bar = runtime.progress_bar(console, detail=True)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Progress:
        if self.enabled:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()

    def update(self, p: runner.Progress) -> None:
        if self.lines is not None:
            text = self.lines.due(
                p.phase, p.requested, p.scheduled, p.running, p.expected_pods, time.monotonic()
            )
            if text is not None:
                print(f"loadgen: {text}", file=sys.stderr, flush=True)
        if not self.enabled:
            return
        if p.phase not in self.tasks:
            self.tasks[p.phase] = self.bar.add_task(p.phase, total=p.expected_pods, detail="")
        detail = f"created {p.requested} seen {p.seen} sched {p.scheduled} done {p.finished}"
        self.bar.update(self.tasks[p.phase], completed=p.running, detail=detail)


def _compare(opts: dict[str, Any], out: Console) -> int:
    html: Path | None = opts.get("html")
    sides = [_results(opts["previous"]), _results(opts["current"])]
    if html is not None and html.is_dir():
        raise UsageError(f"--html {html}: is a directory (give a file name)")
    threshold = opts.get("threshold", compare.DEFAULT_FLOOR_PERCENT)
    if differences := compare.load_differences(sides[0], sides[1]):
        print(
            "loadgen: error: the runs were not under the same load, so their figures measure "
            f"the load, not a change: {'; '.join(differences)}",
            file=sys.stderr,
        )
        return EXIT_INCOMPARABLE
    found = compare.changes(sides[0], sides[1], threshold)
    docs = [side[0] for side in sides]  # the charts show each side's first run
    names = [
        side[0].run_id if len(side) == 1 else f"{side[0].run_id} and {len(side) - 1} more"
        for side in sides
    ]
    rows = [
        (
            compare.name_of(c.metric),
            compare.human(c.metric, c.previous),
            compare.human(c.metric, c.current),
            units.change(c.change_percent),
            c.judgement,
        )
        for c in found
    ]
    fmt = opts.get("output", "table")

    def table() -> None:
        t = Table(title=f"{names[0]} -> {names[1]}")
        for col, justify in (
            ("metric", "left"),
            ("previous", "right"),
            ("current", "right"),
            ("change", "right"),
            ("counts past", "right"),
            ("", "left"),
        ):
            t.add_column(col, justify=justify)  # type: ignore[arg-type]
        colours = {"better": "green", "worse": "red"}
        for c, (metric, a, b, change, judgement) in zip(found, rows, strict=True):
            colour = colours.get(judgement)
            t.add_row(
                metric,
                a,
                b,
                f"[{colour}]{change}[/]" if colour else change,
                f"±{c.threshold_percent:.1f} %"
                if math.isfinite(c.threshold_percent)
                else "too few samples",
                f"[{colour}]{judgement}[/]" if colour else judgement,
            )
        out.print(t)
        out.print(
            "counts past: the noise of the figure (95 %; the repeats' spread, else each run's "
            "own sampling noise), at least "
            f"{threshold:g} %; within it, same",
            style="dim",
        )

    doc = {
        "previous": [d.run_id for d in sides[0]],
        "current": [d.run_id for d in sides[1]],
        "rows": [  # JSON has no infinity: noise that cannot be bounded is null
            {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in row.items()}
            for row in (dataclasses.asdict(c) for c in found)
        ],
        "regressions": [c.metric for c in compare.regressions(found)],
    }
    cliconv.emit(doc, fmt, table)
    if html is not None:
        try:
            html.write_text(html_report.render_comparison(docs[0], docs[1], rows))
        except OSError as e:
            print(f"loadgen: error: cannot write {html}: {e.strerror or e}", file=sys.stderr)
            return EXIT_RUNTIME
        print(f"loadgen: charts: {html}", file=sys.stderr)
    worse = compare.regressions(found)
    if worse and opts.get("fail_on_regression"):
        listed = ", ".join(compare.name_of(c.metric) for c in worse)
        print(
            f"loadgen: error: {len(worse)} figures got worse past their noise: {listed}",
            file=sys.stderr,
        )
        return EXIT_RUNTIME
    return EXIT_OK


def _cpu(paths: list[Path], out: Console) -> int:
    profiles = []
    for path in paths:
        try:
            profiles.append(pprof.decode(path.read_bytes()))
        except IsADirectoryError:
            raise UsageError(f"{path} is a directory (give its .pb.gz files)") from None
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        except pprof.ProfileError as e:
            raise UsageError(f"{path}: {e}") from None
    b = cpu.breakdown(profiles)
    table = Table(
        title=f"CPU {b.cpu_seconds:.2f} s in {b.seconds_profiled:.0f} s profiled "
        f"({len(profiles)} files); named categories cover {units.percent(b.coverage)}"
    )
    table.add_column("category")
    table.add_column("CPU", justify="right")
    table.add_column("share", justify="right")
    shares = b.shares()
    for c in cpu.CATEGORIES:
        table.add_row(c, f"{b.by_category[c] / 1e9:.2f} s", units.percent(shares[c]))
    out.print(table)
    for name, share in b.signature_shares().items():
        out.print(f"under {name}: {units.percent(share)}", highlight=False)
    for function, nanos in b.top_other:
        out.print(f"uncategorized: {function} {nanos / 1e9:.2f} s", highlight=False)
    return EXIT_OK


def _results(paths: str) -> list[document.ResultDoc]:
    """The result documents of one side: a path, or paths separated by commas."""
    docs = []
    for raw in paths.split(","):
        if not raw.strip():
            raise UsageError(f"{paths!r}: an empty path between commas (give a,b,c)")
        path = Path(raw.strip())
        try:
            docs.append(document.load(path))
        except IsADirectoryError:
            raise UsageError(f"{path} is a directory (give its result.json)") from None
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{path} is not a loadgen result: not UTF-8 text") from None
        except (ValidationError, ValueError) as e:
            raise UsageError(f"{path} is not a loadgen result: {_why_not_result(e)}") from None
    return docs


def _why_not_result(e: Exception) -> str:
    """Why a file is not a result document, in one line: JSON syntax with its line and
    column, or the first field that is wrong."""
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        if first["type"] == "json_invalid":
            return f"not JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
        return validation.one_line(e)
    return str(e).splitlines()[0]


_T = TypeVar("_T")


async def _with_kube(opts: dict[str, Any], use: Callable[[Kube], Awaitable[_T]]) -> _T:
    kube = await cliconv.connect(
        opts,
        ClientSettings(
            user_agent="dra-testbed-loadgen", request_timeout=cliconv.long_run_timeout(opts)
        ),
    )
    try:
        return await use(kube)
    finally:
        await kube.close()


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _state(run: runs.Run) -> str:
    return "terminating" if run.terminating else run.state


async def _list_runs(kube: Kube, out: Console, fmt: str = "table") -> int:
    found = await inventory.list_runs(kube)
    doc = [
        {
            "run_id": r.run_id,
            "age_seconds": round(r.age_seconds, 1),
            "state": _state(r),
            "heartbeat_age_seconds": r.heartbeat_age_seconds,
            "pods": r.pods,
            "claims": r.claims,
            "allocated_claims": r.allocated_claims,
            "gpus": r.gpus,
        }
        for r in found
    ]

    def table() -> None:
        if not found:
            out.print("no loadgen runs in the cluster")
            return
        t = Table()
        for col in ("run id", "age", "state", "heartbeat", "pods", "claims", "GPUs held"):
            t.add_column(col, justify="left" if col in ("run id", "state") else "right")
        for r in found:
            beat = (
                "-" if r.heartbeat_age_seconds is None else _age(r.heartbeat_age_seconds) + " ago"
            )
            t.add_row(
                r.run_id,
                _age(r.age_seconds),
                _state(r),
                beat,
                str(r.pods),
                f"{r.allocated_claims}/{r.claims}",
                str(r.gpus),
            )
        out.print(t)
        if any(r.state == "abandoned" and not r.terminating for r in found):
            out.print("remove abandoned runs with: loadgen cleanup --abandoned")

    cliconv.emit(doc, fmt, table)
    return EXIT_OK


def _chosen(found: dict[str, runs.Run], opts: dict[str, Any], err: Console) -> list[str]:
    """The runs `loadgen cleanup` was asked to remove; a running one only with --force."""
    if opts.get("all"):
        live = [i for i, r in found.items() if r.state == "running" and not r.terminating]
        if live and not opts.get("force"):
            raise runner.RunError(
                f"{len(live)} run(s) still running ({', '.join(live)}), maybe someone else's: "
                "stop them, name the others, or use --all --force"
            )
        return list(found)
    if opts.get("abandoned"):
        return [i for i, r in found.items() if r.state == "abandoned"]
    chosen = []
    for run_id in opts.get("run_ids", []):
        run = found.get(run_id)
        if run is None:
            err.print(f"run {run_id}: not in the cluster, nothing to remove")
        elif run.state == "running" and not run.terminating and not opts.get("force"):
            raise runner.RunError(
                f"run {run_id} is running (heartbeat "
                f"{_age(run.heartbeat_age_seconds or 0)} ago): stop it, or use --force"
            )
        else:
            chosen.append(run_id)
    return chosen


async def _confirmed_abandoned(kube: Kube, candidates: list[runs.Run], err: Console) -> list[str]:
    """The runs that stay without a heartbeat while we watch for as long as the stale limit
    (a run whose beat arrives meanwhile was only cut off, e.g. by a control-plane outage)."""
    ids = [r.run_id for r in candidates]
    window = runs.STALE_INTERVALS * max(r.heartbeat_interval for r in candidates)
    err.print(f"{len(ids)} run(s) look abandoned: watching their heartbeats for {window:g}s")
    alive = await inventory.still_beating(kube, ids, window)
    for run_id in sorted(alive):
        err.print(f"run {run_id}: its heartbeat came back (alive, it was only cut off): left alone")
    return [i for i in ids if i not in alive]


def _cleanup(opts: dict[str, Any], err: Console) -> int:
    ids: list[str] = opts.get("run_ids", [])
    picked = bool(ids) + bool(opts.get("abandoned")) + bool(opts.get("all"))
    if picked != 1:
        raise UsageError("name runs to remove, or give --abandoned or --all (one of them)")
    for run_id in ids:
        if not _RUN_ID.match(run_id):
            raise UsageError(f"{run_id!r} is not a run id")

    async def go(kube: Kube) -> int:
        found = {r.run_id: r for r in await inventory.list_runs(kube)}
        chosen = _chosen(found, opts, err)
        if opts.get("abandoned") and chosen:
            chosen = await _confirmed_abandoned(kube, [found[i] for i in chosen], err)
        for run_id in chosen:
            await inventory.remove(kube, run_id)
        deadline = time.monotonic() + opts["wait"]
        code = EXIT_OK
        for run_id in chosen:
            run = found[run_id]
            if await inventory.wait_gone(kube, run_id, max(0.0, deadline - time.monotonic())):
                err.print(
                    f"removed run {run_id}: {run.pods} pods, {run.claims} claims, "
                    f"{run.gpus} GPUs released"
                )
            else:
                err.print(f"run {run_id}: namespace still terminating after {opts['wait']:g}s")
                code = EXIT_RUNTIME
        if not chosen and not ids:
            err.print("nothing to remove")
        return code

    return runtime.run(_with_kube(opts, go))


def _observe(opts: dict[str, Any], err: Console) -> int:
    try:
        slos = [slo.parse(s) for s in opts.get("slo", [])]
    except ValueError as e:
        raise UsageError(str(e)) from None
    for flag in ("namespace", "namespace_prefix"):
        if flag in opts and not opts[flag]:
            raise UsageError(f"--{flag.replace('_', '-')} must not be empty (-A: every namespace)")
    target = observe.Target(
        namespace=opts.get("namespace") or "",
        namespace_prefix=opts.get("namespace_prefix") or "",
        selector=opts.get("selector", {}),
        count=opts.get("count"),
        timeout=opts.get("timeout"),
        node_selector=dict(opts.get("node_selector", [])),
        scrape=dict(opts.get("scrape", [])),
    )
    out_dir = opts.get("output_dir") or Path("results") / target.run_id
    _check_writable(out_dir)

    async def go(kube: Kube) -> outcome.RunResult:
        stop = runtime.stop_event()
        display = _Progress(err, quiet=bool(opts.get("quiet")))
        expected = target.count or 0

        def update(seen: int, scheduled: int, ran: int) -> None:
            display.update(
                runner.Progress(observe.PHASE, expected or seen, seen, seen, scheduled, ran, 0)
            )

        with display:
            return await observe.observe(
                kube,
                target,
                stop=stop,
                on_progress=update,
                on_watching=lambda: print(
                    f"loadgen: observing pods in {observe.where(target.scope)} "
                    "(Ctrl-C ends and reports)",
                    file=sys.stderr,
                    flush=True,
                ),
            )

    result = runtime.run(_with_kube(opts, go))
    doc = report.write_all(result, out_dir, slos)
    console_report.render(doc, cliconv.stdout_console())
    err.print(f"reports in {out_dir}/", highlight=False)
    return EXIT_RUNTIME if any(not s.ok for s in doc.slos) else EXIT_OK
