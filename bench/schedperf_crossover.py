"""The crossover of two releases' cost curves, measured, against the cost model's prediction.

Reads the `curve.json` files of `bench/schedperf_curves.py` of two releases (`--small`: the
release cheaper on small fleets, 1.35; `--large`: the other, 1.36; several files of one
release, e.g. runs taken side by side, are merged into one curve by `curves.merge`) and, per
figure, prints the cost ratio at each size both
have, the two measured sizes it crosses 1 between, where the least-squares line through the
ratios reaches 1 with its 95 % interval (`schedperf.curves.crossover`), and whether that fell
in `costmodel.PREDICTION`'s range. DynamicResources' Filter per node is the figure the model
speaks of (its per-node cost, the filtered count aside); Filter per pod and CPU per pod carry
the filtered count and everything else a pod costs. Writes `<out>/crossover.json`, each
release's merged curve as `<out>/curve-<release>.json`, and `<out>/crossover.html` (each
figure's mean per size, these releases and any `--also` overlaid).

    .venv/bin/python bench/schedperf_crossover.py --small results/curve-1.35/curve.json \\
        --large results/curve-1.36/curve.json --also results/curve-1.37/curve.json \\
        --out results/crossover-1.35-1.36
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from schedperf import costmodel, curves

FIGURES = ("dra_filter_ms_per_node", "filter_ms_per_pod", "cpu_ms_per_pod", "throughput")


def _load(path: Path) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a curve ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "SchedulerCostCurve":
        raise ValueError(f"{path}: not a curve (kind SchedulerCostCurve)")
    return doc


def _merged(paths: list[Path]) -> dict[str, Any]:
    return curves.merge(*(_load(path) for path in paths))


def _fits(doc: dict[str, Any]) -> None:
    for figure, lines in doc["fits"].items():
        for name, line in lines.items():
            print(
                f"    {figure} {name}: {line['slope']:.6g} [{line['slope_low']:.6g}, "
                f"{line['slope_high']:.6g}], intercept {line['intercept']:.4g}, r2 "
                f"{line['r2']:.3f}, n {line['n']}"
            )


def _sizes(c: curves.Crossover) -> str:
    if c.at is None:
        return "no line"
    low = f"{c.low:,.0f}" if c.low is not None else "open"
    high = f"{c.high:,.0f}" if c.high is not None else "open"
    return f"{c.at:,.0f} [{low}, {high}]"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--small",
        type=Path,
        nargs="+",
        required=True,
        help="curve.json files of the release cheaper on small fleets",
    )
    p.add_argument(
        "--large", type=Path, nargs="+", required=True, help="curve.json files of the other"
    )
    p.add_argument(
        "--also", type=Path, nargs="*", default=[], help="curve.json files of another release"
    )
    p.add_argument("--out", type=Path, required=True, help="results directory")
    args = p.parse_args()
    try:
        a, b = _merged(args.small), _merged(args.large)
        others = [_merged(args.also)] if args.also else []
    except ValueError as e:
        p.error(str(e))
    if a["way"] != b["way"] or a["pods"] != b["pods"]:
        p.error("the two curves were taken another way or with other pods per run")
    pa = [curves.Point(**x) for x in a["points"]]
    pb = [curves.Point(**x) for x in b["points"]]
    low, high = costmodel.PREDICTION.crossover_range()
    print(f"{a['kubernetes']} / {b['kubernetes']}: predicted crossover {low:,}-{high:,} nodes")
    for doc in (a, b, *others):
        print(f"  {doc['kubernetes']}: {len(doc['points'])} runs; growth (95 % intervals):")
        _fits(doc)
    found = {}
    for figure in FIGURES:
        c = curves.crossover(pa, pb, figure)
        ratios = ", ".join(f"{n}: {r:.2f}" for n, r in c.ratios.items())
        bracket = f"{c.bracket[0]}-{c.bracket[1]}" if c.bracket else "none"
        print(
            f"  {figure}: ratio {ratios}; crosses between {bracket}; line {_sizes(c)}; "
            f"in the predicted range: {c.within(low, high)}"
        )
        found[figure] = {**asdict(c), "within_prediction": c.within(low, high)}
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "kind": "SchedulerCostCrossover",
        "small": {k: a[k] for k in ("release", "kubernetes", "started", "command")},
        "large": {k: b[k] for k in ("release", "kubernetes", "started", "command")},
        "pods": a["pods"],
        "predicted": [low, high],
        "crossovers": found,
    }
    (args.out / "crossover.json").write_text(json.dumps(doc, indent=1) + "\n")
    for doc in (a, b, *others):
        path = args.out / f"curve-{doc['release']}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
    (args.out / "crossover.html").write_text(curves.releases_page([a, b, *others]))
    print(f"crossover: {args.out / 'crossover.json'}, {args.out / 'crossover.html'}")


if __name__ == "__main__":
    main()
