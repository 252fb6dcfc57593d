"""`testbed perf` at run time: check the release and workload, build (or reuse) the release's
benchmark, run it --repeat times and write the result files."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fleet import profiles
from loadgen.report import document
from schedperf import build, fleetconfig, result, runner, table, workloads
from testbed import cli


@dataclass(frozen=True)
class Options:
    """How `run` and `releases` run a workload (the CLI's checked flags)."""

    repeat: int = 1
    nodes: int = 500
    """fleet/<profile> only."""
    pods: int = 2500
    """fleet/<profile> only."""
    gomaxprocs: int | None = None
    timeout: float = runner.DEFAULT_TIMEOUT_SECONDS
    output_dir: Path | None = None


def all_releases() -> list[str]:
    return build.releases()


def _release(release: str, flag: str = "--kubernetes") -> tuple[str, Path]:
    """`release` without a leading v, and its upstream directory; UsageError if unknown."""
    norm = release.removeprefix("v")
    try:
        return norm, build.upstream_dir(norm)
    except build.UnknownRelease as e:
        raise cli.UsageError(f"{flag}: {e}") from None
    except build.BuildError as e:
        raise cli.CommandError(str(e)) from None


def _configs(upstream: Path) -> dict[str, str]:
    """The text of each of upstream's DRA workload files this release has."""
    return {
        f.path: (upstream / f.path).read_text()
        for f in workloads.UPSTREAM_FILES
        if (upstream / f.path).is_file()
    }


def _fleet_profiles() -> list[str]:
    """Built-in profiles with GPUs: the pods' claims ask for one (on a CPU-only fleet they
    would wait until the timeout)."""
    return sorted(name for name, p in profiles.builtin().items() if p.gpu_count)


def select(
    name: str, release: str, upstream: Path, *, nodes: int, pods: int, workdir: Path
) -> workloads.Selected:
    """The workload `name` resolved for this release; UsageError naming what exists."""
    configs = _configs(upstream)
    if name.startswith(workloads.FLEET_PREFIX):
        profile = name.removeprefix(workloads.FLEET_PREFIX)
        if profile in _fleet_profiles():
            return fleetconfig.selected(profile, nodes, pods, str(workdir))
    elif (found := workloads.upstream(name, str(upstream), configs)) is not None:
        return found
    raise cli.UsageError(workloads.unknown(name, release, configs, _fleet_profiles()))


def list_workloads(release: str) -> int:
    release, upstream = _release(release)
    configs = _configs(upstream)
    print(f"Kubernetes {release}: ours (sized by --nodes/--pods)")
    for p in _fleet_profiles():
        print(f"  {workloads.FLEET_PREFIX}{p}")
    for f in workloads.UPSTREAM_FILES:
        if f.path in configs:
            print(f"upstream's {f.path} (allocator {f.allocator})")
            for n in workloads.names_in(configs[f.path]):
                print(f"  {n}")
    return cli.EXIT_OK


def _ensure(release: str) -> build.Build:
    try:
        return build.ensure(release)
    except build.UnknownRelease as e:
        raise cli.UsageError(f"--kubernetes: {e}") from None
    except build.BuildError as e:
        raise cli.CommandError(str(e)) from None


def _repeats(
    bench: build.Build,
    selected: workloads.Selected,
    release: str,
    out_dir: Path,
    o: Options,
) -> result.Repeat | None:
    """Run `selected` `repeat` times into `out_dir`; the median repeat, None for no data."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    repeats: list[result.Repeat] = []
    repeat = o.repeat
    for i in range(1, repeat + 1):
        run_dir = out_dir / f"run-{i}"
        settings = {**result.machine(o.gomaxprocs), "repeat": i, "repeats": repeat}
        print(
            f"perf: {selected.name} on Kubernetes {bench.kubernetes_version}, repeat {i}/{repeat}"
            f" (load {settings['load_average_1m_5m_15m'][0]})",
            file=sys.stderr,
            flush=True,
        )
        outcome = runner.run(bench, selected, run_dir, timeout=o.timeout, gomaxprocs=o.gomaxprocs)
        run_id = f"perf-{release}-{stamp}-{i}"
        doc = result.doc(outcome, selected, bench, run_id, settings)
        if doc is not None:
            result.write_run(doc, run_dir)
            t = doc.throughput
            print(
                f"  run-{i}: SchedulingThroughput Average {t.Average:.1f} pods/s "
                f"(Perc50 {t.Perc50:.1f}, Perc90 {t.Perc90:.1f}, Perc99 {t.Perc99:.1f}) "
                f"in {outcome.seconds:.0f}s"
            )
        else:
            print(f"  run-{i}: no data: {outcome.problem}")
        repeats.append(result.Repeat(dir=run_dir, outcome=outcome, result=doc))

    chosen = result.write_summary(repeats, selected, bench, out_dir)
    if chosen is None or chosen.result is None:
        print(
            f"perf: no data: no repeat took a throughput sample ({out_dir / result.SUMMARY_FILE})"
        )
        return None
    print(
        f"median of {sum(r.result is not None for r in repeats)}: {chosen.dir.name}, "
        f"Average {chosen.result.throughput.Average:.1f} pods/s; result: "
        f"{out_dir / 'result.json'}"
    )
    return chosen


def _default_out() -> Path:
    return Path("results") / time.strftime("perf-%Y%m%d-%H%M%S")


def run(name: str, release: str, o: Options) -> int:
    release, upstream = _release(release)
    out_dir = o.output_dir or _default_out()
    workdir = (out_dir / "workload").resolve()
    selected = select(name, release, upstream, nodes=o.nodes, pods=o.pods, workdir=workdir)
    bench = _ensure(release)
    chosen = _repeats(bench, selected, release, out_dir, o)
    return cli.EXIT_OK if chosen is not None else cli.EXIT_RUNTIME


def releases(name: str, chosen: list[str], o: Options) -> int:
    """The workload on each release in turn (each into `<out>/<release>/`), then PFN's
    table (`releases.md`). Every release and the workload in each are checked first."""
    out_dir = o.output_dir or _default_out()
    # Every release first, then the workload in each.
    found = [_release(r, "--releases") for r in chosen]
    plans = [
        (
            norm,
            select(
                name,
                norm,
                up,
                nodes=o.nodes,
                pods=o.pods,
                workdir=(out_dir / norm / "workload").resolve(),
            ),
        )
        for norm, up in found
    ]
    columns: list[tuple[str, document.ResultDoc | None]] = []
    for norm, selected in plans:
        bench = _ensure(norm)
        best = _repeats(bench, selected, norm, out_dir / norm, o)
        columns.append((bench.kubernetes_version, best.result if best else None))
    text = table.markdown(columns)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "releases.md").write_text(text)
    print(f"\n{name}, median of {o.repeat} per release:\n\n{text}")
    print(f"table: {out_dir / 'releases.md'}")
    return cli.EXIT_OK if all(d is not None for _, d in columns) else cli.EXIT_RUNTIME
