"""One run of the scheduler_perf benchmark binary on one workload (I/O): write the
workload's files, run the binary from the workload's directory with etcd on PATH, keep its
output in a log, and read the DataItems file it writes."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from schedperf import dataitems, workloads
from schedperf.build import Build

# A workload that has not finished in this long has hung (5000pods_500nodes takes ~1 min
# here); scheduler_perf's own default (`go test`'s 10 min) would cut the 1,000-node ones.
DEFAULT_TIMEOUT_SECONDS = 3600.0


@dataclass(frozen=True)
class Outcome:
    """What a run left: its figures (None when the binary wrote no DataItems file), where
    its output went, and how it ended."""

    figures: dataitems.Figures | None
    log: Path
    dataitems_file: Path | None
    returncode: int
    started: float
    """Wall clock (epoch seconds)."""
    seconds: float
    """The binary's wall time: API server and etcd start-up, objects, measurement."""
    command: list[str]

    @property
    def problem(self) -> str | None:
        """Why the run has no throughput, in one line; None when it has one."""
        if self.figures is not None and self.figures.throughput is not None:
            return None
        if self.returncode != 0:
            return f"the benchmark failed (exit {self.returncode}); its output: {self.log}"
        if self.figures is None:
            return f"the benchmark wrote no DataItems file; its output: {self.log}"
        return (
            "no SchedulingThroughput sample (the workload scheduled its pods in under one "
            f"sampling interval); its output: {self.log}"
        )


def command(
    build: Build, selected: workloads.Selected, dataitems_dir: Path, timeout: float
) -> list[str]:
    """The benchmark's command line for `selected` (pure)."""
    args = [
        str(build.binary),
        f"-workloads={selected.config}",
        f"-topic={selected.topic}",
        f"-allocator={selected.allocator}",
        f"-data-items-dir={dataitems_dir}",
        # Every workload is run when named, whatever its labels (upstream's default filter
        # runs only `performance` ones).
        "-perf-scheduling-label-filter=",
        "-test.run=^$",
        f"-test.bench={workloads.bench_pattern(selected.benchmark)}",
        "-test.benchtime=1ns",
        f"-test.timeout={int(timeout)}s",
    ]
    return args


def run(
    build: Build,
    selected: workloads.Selected,
    out_dir: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    gomaxprocs: int | None = None,
) -> Outcome:
    """Run `selected` once; its output and DataItems go under `out_dir`."""
    workdir = Path(selected.workdir)
    for rel, text in selected.files.items():
        path = workdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out_dir.mkdir(parents=True, exist_ok=True)
    items_dir = out_dir / "dataitems"
    items_dir.mkdir(exist_ok=True)
    log = out_dir / "benchmark.log"
    env = dict(os.environ)
    env["PATH"] = f"{build.dir}{os.pathsep}{env.get('PATH', '')}"
    env.pop("ARTIFACTS", None)  # would move the per-test logs out of our log
    # The binary is built with -trimpath: these let its API server find its test data in the
    # module cache (tools/k8s/scheduler-perf.sh says why).
    env["TEST_SRCDIR"], env["TEST_WORKSPACE"] = str(build.module_cache), "."
    if gomaxprocs is not None:
        env["GOMAXPROCS"] = str(gomaxprocs)
    argv = command(build, selected, items_dir.resolve(), timeout)
    started, t0 = time.time(), time.monotonic()
    with log.open("wb") as sink:
        try:
            proc = subprocess.run(
                argv,
                cwd=workdir,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=timeout + 60,
                check=False,
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = -9
    seconds = time.monotonic() - t0
    found = sorted(items_dir.glob(f"{workloads.BENCHMARK}_benchmark_{selected.topic}_*.json"))
    figures = None
    if found:
        try:
            figures = dataitems.figures(dataitems.parse(found[-1].read_text()), selected.benchmark)
        except dataitems.DataItemsError:
            figures = None
    return Outcome(
        figures=figures,
        log=log,
        dataitems_file=found[-1] if found else None,
        returncode=code,
        started=started,
        seconds=seconds,
        command=argv,
    )
