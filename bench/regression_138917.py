"""Known-answer check: kubernetes/kubernetes#138917 found again, release against release.

Upstream found that partitionable (MIG) ResourceSlices anywhere in a cluster slow every DRA pod
on 1.36 (the allocator's GatherPools takes every node's counter slices as relevant), and fixed
it in 1.37.0 only. The testbed must find the same: the same one-GPU pods on the same
whole-GPU pool, with a `dgx-h100-mig` pool present and absent, on each release.

Each release runs on its own local cluster, all of them up for the whole bench (so every run
shares the same background). Each cluster's fleet keeps its whole-GPU pool; its MIG pool is
applied for the "present" runs and removed for the "absent" ones. A repeat runs every
(pool state, release) pair once, the order of states and of releases alternating between
repeats, so the releases' runs of one state in one repeat are a pair. The pods go to the
whole-GPU pool through a plain second kube-scheduler of the release (DRA's allocator alone,
no extender); each run reports scheduler_perf's throughput and the scheduler's CPU per pod.

Verdicts, from the paired repeats with the project's statistics (experiment.intervals):
with the pool present, the newest release's throughput over each older one's >= 10x; with it
absent, within 20 % (the interval of the ratio inside [1/1.2, 1.2]: both one-sided tests
met). Expected on 1.36 against 1.37: both met.

    .venv/bin/python bench/regression_138917.py --repeat 5
    .venv/bin/python bench/regression_138917.py --states none --repeat 10   # the control alone

Each run's loadgen result is kept under --out/<release>/<mig|none>-<repeat>/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import apply_fleet, loadgen_pods, local_release, settle, tool  # bench/ is on sys.path

from experiment import intervals
from testbed.cluster import binaries, second_scheduler

STATES = ("mig", "none")
PRESENT_AT_LEAST = 10.0
"""With the pool present the fixed release must be at least this many times faster."""
ABSENT_WITHIN = 1.2
"""With the pool absent the releases' throughput must be within this factor of each other."""

Runs = dict[str, list[dict[str, float]]]


def _fleet(name: str, whole: int, mig: int) -> dict[str, Any]:
    pools = [{"name": "whole", "profile": "dgx-h100", "count": whole}]
    if mig:
        pools.append({"name": "mig", "profile": "dgx-h100-mig", "count": mig})
    return {"name": name, "pools": pools}


class _Site:
    """One release's cluster, its fleet's name and its plain scheduler."""

    def __init__(
        self, release: str, kubeconfig: Path, plain: second_scheduler.SecondScheduler
    ) -> None:
        self.release, self.kubeconfig, self.plain = release, kubeconfig, plain
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.fleet = f"ka-{secrets.token_hex(3)}"

    def run(self, state: str, rep: int, args: argparse.Namespace) -> dict[str, float]:
        out = args.out / self.release / f"{state}-{rep}"
        mig = args.mig if state == "mig" else 0
        apply_fleet(_fleet(self.fleet, args.whole, mig), out, self.env)
        pods = args.pods_mig if state == "mig" else args.pods
        doc = loadgen_pods(
            self.plain, self.fleet, out, f"pods={pods}", "pool=whole", "gpus=1", env=self.env
        )
        expected = doc["counts"]["expected_pods"]
        # The run's namespace is still going when loadgen returns: its pods would hold GPUs
        # and their deletions land in the next run's window.
        settle(self.kubeconfig)
        throughput = (doc.get("throughput") or {}).get("Average")
        cpu = doc["metrics"]["scheduler"]["summary"]["cpu_seconds"]
        return {
            "throughput": float("nan") if throughput is None else float(throughput),
            "cpu_ms_per_pod": cpu / expected * 1e3,
            "placed": doc["counts"]["pods_scheduled"] / expected,
        }


@contextlib.contextmanager
def _site(release: str, work: Path, keep: bool) -> Iterator[_Site]:
    name = f"ka-138917-{release.replace('.', '-')}"
    with (
        local_release(release, name, keep=keep) as kubeconfig,
        second_scheduler.running(
            kubeconfig, work, scheduler_name="ka-plain", release=release
        ) as plain,
    ):
        site = _Site(release, kubeconfig, plain)
        try:
            yield site
        finally:
            subprocess.run(
                [tool("fleet"), "delete", "--name", site.fleet], check=False, env=site.env
            )


def measure(releases: list[str], args: argparse.Namespace) -> dict[str, Runs]:
    states = args.states
    results: dict[str, Runs] = {r: {s: [] for s in states} for r in releases}
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        sites = [stack.enter_context(_site(r, Path(work) / r, args.keep)) for r in releases]
        for rep in range(args.repeat):
            flip = rep % 2 == 1
            for state in states[::-1] if flip else states:
                for site in sites[::-1] if flip else sites:
                    started = time.monotonic()
                    got = site.run(state, rep, args)
                    results[site.release][state].append(got)
                    print(
                        f"repeat {rep} {site.release} {state}: {got} "
                        f"({time.monotonic() - started:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    return results


def _within(interval: intervals.Interval | None, factor: float) -> str:
    """'met' when the ratio is shown inside [1/factor, factor] (both one-sided tests met),
    'missed' when shown outside either bound, else the more informative inconclusive."""
    low = intervals.verdict(interval, 1 / factor, at_least=True)
    high = intervals.verdict(interval, factor, at_least=False)
    if low == high == "met":
        return "met"
    if "missed" in (low, high):
        return "missed"
    return low if low != "met" else high


def table(results: dict[str, Runs]) -> str:
    """Medians per release and pool state, then the newest release over each older one per
    pool state: the paired ratio's interval and the verdict; pure."""
    lines = [
        "| release | MIG pool | runs | throughput (pods/s), median | "
        "scheduler CPU per pod (ms), median | placed |",
        "|---|---|---|---|---|---|",
    ]
    for release, runs in results.items():
        for state, rs in runs.items():
            lines.append(
                f"| {release} | {'present' if state == 'mig' else 'absent'} "
                f"| {len(rs)} runs "
                f"| {statistics.median(r['throughput'] for r in rs):.2f} "
                f"| {statistics.median(r['cpu_ms_per_pod'] for r in rs):.1f} "
                f"| {min(r['placed'] for r in rs):.0%} |"
            )
    newest = max(results, key=lambda r: tuple(int(p) for p in r.split(".")))
    for release in results:
        if release == newest:
            continue
        for state in results[release]:
            new, old = results[newest][state], results[release][state]
            for key, name in (("throughput", "throughput"), ("cpu_ms_per_pod", "CPU per pod")):
                interval = intervals.ratio_interval([r[key] for r in new], [r[key] for r in old])
                shown = ", ".join(
                    f"{n[key] / o[key]:.2f}" if o[key] else "-"
                    for n, o in zip(new, old, strict=True)
                )
                line = (
                    f"\n{name} {newest} / {release}, MIG pool "
                    f"{'present' if state == 'mig' else 'absent'}: "
                    f"{intervals.describe(interval, '{:.2f}'.format)} (repeats: {shown})"
                )
                if key == "throughput":
                    target, verdict = (
                        (
                            f">= {PRESENT_AT_LEAST:g}x",
                            intervals.verdict(interval, PRESENT_AT_LEAST, at_least=True),
                        )
                        if state == "mig"
                        else (f"within {ABSENT_WITHIN - 1:.0%}", _within(interval, ABSENT_WITHIN))
                    )
                    line += f"; target {target}: {verdict}"
                lines.append(line)
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--releases", default="1.36,1.37", help="comma-separated (default 1.36,1.37)")
    p.add_argument("--whole", type=int, default=125, help="dgx-h100 nodes (default 125)")
    p.add_argument("--mig", type=int, default=100, help="dgx-h100-mig nodes (default 100)")
    p.add_argument(
        "--pods", type=int, default=800, help="one-GPU pods per run, pool absent (default 800)"
    )
    p.add_argument(
        "--pods-mig",
        type=int,
        default=100,
        help="one-GPU pods per run, pool present (default 100: 1.36 takes seconds per pod)",
    )
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument(
        "--states",
        default="mig,none",
        help="MIG pool states to run, comma-separated: mig (present), none (absent);\n"
        "`--states none` runs the control alone (default mig,none)",
    )
    p.add_argument("--keep", action="store_true", help="leave the clusters up afterwards")
    p.add_argument("--out", type=Path, default=Path("results/bench-regression-138917"))
    args = p.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the clusters and second schedulers come down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if (
        min(args.whole, args.mig, args.pods, args.pods_mig, args.repeat) < 1
        or max(args.pods, args.pods_mig) > 8 * args.whole
    ):
        p.error("every count must be >= 1, and --pods, --pods-mig <= 8 x --whole")
    args.states = tuple(s for s in args.states.split(",") if s)
    if not args.states or set(args.states) - set(STATES):
        p.error(f"--states: comma-separated of {', '.join(STATES)}")
    try:
        releases = [binaries.check_release(r) for r in args.releases.split(",") if r]
    except binaries.UnknownRelease as e:
        p.error(str(e))
    results = measure(releases, args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "regression_138917.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
