"""The two commands that measure pods and write a run's reports: `loadgen [run]` creates
them (a scenario), `loadgen observe` watches the ones another tool creates."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from loadgen import observe, outcome, progress, report, runner, scenarios, slo
from loadgen.commands.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    RUN_ID,
    Aborted,
    UsageError,
    exit_code,
    with_kube,
)
from loadgen.report import console as console_report
from loadgen.report import document
from testbed import cliconv, runtime
from testbed.cluster import discovery
from testbed.kube.client import ClientSettings, Kube


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
    if not RUN_ID.match(settings.run_id):
        raise UsageError(f"--run-id {settings.run_id!r} must be a short DNS label")
    out = opts.get("output_dir") or Path("results") / settings.run_id
    return settings, slos, out


def run_scenario(opts: dict[str, Any], err: Console) -> int:
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
        return exit_code(signals[0]) if signals else EXIT_INTERRUPTED
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
                raise Aborted(signals[0])

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


def observe_pods(opts: dict[str, Any], err: Console) -> int:
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

    result = runtime.run(with_kube(opts, go))
    doc = report.write_all(result, out_dir, slos)
    console_report.render(doc, cliconv.stdout_console())
    err.print(f"reports in {out_dir}/", highlight=False)
    return EXIT_RUNTIME if any(not s.ok for s in doc.slos) else EXIT_OK
