"""Would the default demo decide its headline within its budget? A simulation driven by the
per-repeat noise of recorded runs (no cluster).

From each recorded `demo.json` given, the extender comparison's headline figures per repeat
(`experiment.demo.project_targets.HEADLINE`: on/off log-ratios, paired by repeat) and how long a
repeat (all its arms and their clean-up) and the set-up took. Each simulated demo draws its
pairs from those repeats (resampled whole, so a repeat's figures stay together; `--parametric`:
normal log-ratios with their mean and spread instead), takes the sequential design's looks
(`experiment.plan.design`, the built-in file's most pairs and budget) and stops once every headline
target is decided at a look, or takes its closing look where the budget reaches neither the next
look nor one more pair (`design.Design.within`, the runner's rule at a steady pair time).
Prints how many of `--runs` simulated demos decided every headline target, and in how many
minutes. A headline figure that some run lacks (results from before it was scraped) is left
out, and the output says so. `--repeats` and `--without-closing` show other designs (the most
pairs; the budget ending the run before a look it cannot reach, with no closing look).

    .venv/bin/python bench/sequential_demo.py RUN [RUN2 ...] \\
        [--runs 10] [--seed 0] [--parametric] [--pair-seconds S] [--setup-seconds S] \\
        [--repeats N] [--without-closing]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from experiment.demo import command as demo
from experiment.demo import project_targets
from experiment.measure import arm_record, figures, intervals
from experiment.plan import design


def _arm_docs(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """(variant, repeat) -> the extender comparison's arm results of a run directory: its
    output (`extender-on-0/result.json`) or a compact copy (`extender-on-0.json`)."""
    out = {}
    for path in [*run.glob("extender-*/result.json"), *run.glob("extender-*.json")]:
        name = path.parent.name if path.name == "result.json" else path.stem
        parts = name.split("-")
        if len(parts) == 3 and parts[2].isdigit():
            out[(parts[1], int(parts[2]))] = json.loads(path.read_text())
    return out


def _log_ratios(run: Path, metrics: list[str]) -> dict[int, list[float]]:
    """repeat -> log(on/off) - log(threshold) of each of `metrics`, where all exist."""
    docs = _arm_docs(run)
    out: dict[int, list[float]] = {}
    for repeat in sorted({r for _, r in docs}):
        on_doc, off_doc = docs.get(("on", repeat)), docs.get(("off", repeat))
        if on_doc is None or off_doc is None:
            continue
        on, off = arm_record.build(on_doc), arm_record.build(off_doc)
        row = []
        for metric in metrics:
            get = figures.metric(metric)[2]
            a, b = get(on), get(off)
            if a and b and a > 0 and b > 0:
                row.append(math.log(a / b / project_targets.OVERHEAD))
        if len(row) == len(metrics):
            out[repeat] = row
    return out


def _present(run: Path) -> list[str]:
    """The headline metrics every extender arm of the run has."""
    docs = list(_arm_docs(run).values())
    return [
        m
        for _, m in project_targets.HEADLINE
        if docs and all(figures.metric(m)[2](arm_record.build(d)) for d in docs)
    ]


def _times(doc: dict[str, Any]) -> tuple[list[float], float]:
    """(seconds of each repeat, its arms and their clean-up; seconds of everything else)."""
    per: dict[int, float] = {}
    for name, arm in doc["arms"].items():
        repeat = int(name.removesuffix("-latency").rsplit("-", 1)[1])
        per[repeat] = per.get(repeat, 0.0) + arm.get("seconds", 0) + arm.get("cleanup_seconds", 0)
    return list(per.values()), float(doc["elapsed_seconds"]) - sum(per.values())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs_dirs", nargs="+", type=Path, metavar="RUN", help="recorded demo runs")
    p.add_argument("--runs", type=int, default=10, help="simulated demos (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parametric", action="store_true", help="normal log-ratios, not resampled")
    p.add_argument(
        "--pair-seconds",
        type=float,
        help="a repeat's time in place of the recorded runs' (what a quieter machine takes)",
    )
    p.add_argument("--setup-seconds", type=float, help="the set-up's, likewise")
    p.add_argument("--repeats", type=int, help="the most pairs (default: the built-in file's)")
    p.add_argument(
        "--without-closing",
        action="store_true",
        help="no closing look: stop undecided where the budget cannot reach the next look",
    )
    args = p.parse_args()

    repeats: list[list[float]] = []
    pair_seconds: list[float] = []
    setup: list[float] = []
    metrics = [m for _, m in project_targets.HEADLINE]
    for run in args.runs_dirs:
        metrics = [m for m in metrics if m in _present(run)]
    if not metrics:
        raise SystemExit("no headline figure is in every run given")
    for run in args.runs_dirs:
        doc = json.loads((run / "demo.json").read_text())
        repeats += list(_log_ratios(run, metrics).values())
        seconds, rest = _times(doc)
        pair_seconds += seconds
        setup.append(rest)
    exp = demo.builtin("demo")
    budget = (exp.budget_minutes or 15) * 60
    pair = args.pair_seconds or statistics.fmean(pair_seconds)
    fixed = args.setup_seconds if args.setup_seconds is not None else statistics.fmean(setup)
    planned = design.Design(args.repeats or exp.repeats, exp.design == "sequential")
    plan = planned.within(budget, fixed, pair)
    reach = plan.looks
    if args.without_closing:
        plan, reach = planned, tuple(n for n in planned.looks if fixed + n * pair <= budget)
    data = np.array(repeats)
    rng = np.random.default_rng(args.seed)
    if args.parametric:
        draws = rng.normal(
            data.mean(0), data.std(0, ddof=1), (args.runs, plan.max_pairs, data.shape[1])
        )
    else:
        draws = data[rng.integers(0, len(data), (args.runs, plan.max_pairs))]
    decided = np.zeros(args.runs, dtype=bool)
    minutes = np.full(args.runs, math.nan)
    for n in reach:
        ways = np.stack(
            [intervals.decisions(draws[:, :n, k], plan.level(n)) for k in range(data.shape[1])]
        )
        now = (ways != 0).all(axis=0) & ~decided
        minutes[now] = (fixed + n * pair) / 60
        decided |= now
    print(
        f"{len(repeats)} recorded repeats from {len(args.runs_dirs)} run(s) of "
        f"{', '.join(metrics)} (the headline targets simulated; not in every run: "
        f"{', '.join(m for _, m in project_targets.HEADLINE if m not in metrics) or 'none'}): "
        "log-ratios "
        f"past the threshold, mean {', '.join(f'{m:+.3f}' for m in data.mean(0))}, "
        f"sd {', '.join(f'{s:.3f}' for s in data.std(0, ddof=1))}; a repeat {pair:.0f} s, "
        f"set-up {fixed:.0f} s"
    )
    print(f"design: {plan.describe()}; budget {budget / 60:g} min")
    done = minutes[decided]
    print(
        f"{'normal draws' if args.parametric else 'resampled repeats'}: every headline target "
        f"decided in {int(decided.sum())} of {args.runs} simulated demos"
        + (
            f", in {np.median(done):.1f} min (median; at most {done.max():.1f})"
            if done.size
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
