"""How long the placement oracle takes, and whether it proves its optima, on the placement
workloads at fleet scale (no cluster: the fleet is rendered, the workload resolved by
loadgen's own scenario rules).

    python bench/oracle_scale.py [--nodes 1000] [--time-limit 60] [--output FILE]
    python bench/oracle_scale.py --kept bench/results/<demo run> --nodes N
    python bench/oracle_scale.py --run results/<experiment run> [--output FILE]

The second form holds a kept demo run's placement arms (`<comparison>-<arm>-<repeat>.json`)
against their optima on the demo fleet of N nodes (the run's own size) and prints the
table every report now shows. The third reads an experiment run's arms with the optima the
run computed beside them (`<arm>/result.json`, `<arm>/optimum.json`) and prints today's
table (shares with their intervals, the decisions lost where an arm is short); `--output`
writes its `optimum` section as JSON (`testbed results keep --optimum` keeps it).

Workloads: the demo's `placement` (gangs of 4), `fragmentation` and `alignment` on its mixed
fleet, and the example files' `gang.yaml` (gangs of 4, 16, 64) and `alignment-in-tree.yaml`
(4 + 4 after a quarter fill, with and without the NUMA constraint) on dgx-h100 nodes. Each
arm is taken to have placed what the online optimum places (an optimal scheduler), so the
conditional optima run with the same pods. Per workload: seconds (oracle only; the fleet's
render is not counted), whether every optimum was proven, and the largest gap left.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from experiment.demo import plan
from experiment.measure import arm_record, fleet_shape
from experiment.measure.arms import Arm
from experiment.oracle import arms, inputs, optimum_report, solve
from experiment.spec import mixed_fleet
from fleet import render
from fleet import spec as fleet_spec
from loadgen import scenarios
from loadgen.scenarios import model
from publish import kept


def _fleet(doc: dict[str, Any]) -> tuple[inputs.Fleet, fleet_shape.FleetShape, int]:
    rendered = render.render(fleet_spec.from_data(doc))
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in rendered.nodes}
    shape = fleet_shape.shape_of(rendered.slices)
    return inputs.fleet_of(rendered.slices, labels), shape, shape.gpus


def _result(scenario: model.Scenario, gpus: int) -> dict[str, Any]:
    """A loadgen-result-shaped document of `scenario` resolved for the fleet, every pod
    placed (the probes' counts are set from the online optimum below)."""
    resolved = model.resolve(scenario, gpus)
    doc = resolved.model_dump(mode="json")
    phases = [
        {"name": p.name, "counts": {"expected_pods": p.pods, "pods_scheduled": p.pods}}
        for p in resolved.phases
    ]
    return {"scenario": doc, "phases": phases, "gangs": [], "claims": {}, "fleet": {}}


def _as_placed_by_the_online_optimum(
    doc: dict[str, Any], fleet: inputs.Fleet, limit: float
) -> None:
    workload = inputs.workload_of(arm_record.modelled(doc))
    if workload.gangs or not any(p.refusable for p in workload.phases):
        return
    oracle = solve.Oracle(fleet, workload, limit)
    for phase in doc["phases"]:
        probe = next(p for p in workload.phases if p.name == phase["name"])
        if probe.refusable:
            phase["counts"]["pods_scheduled"] = int(
                oracle.most_placed(probe.name, online=True).value
            )


def kept_run(run: Path, nodes: int, limit: float, output: Path | None) -> int:
    """A kept demo run's placement arms against their optima: the engine's own table."""
    fleet, _, _ = _fleet(mixed_fleet.spec(nodes))
    results = []
    for path in sorted(run.glob("*-*-*.json")):
        comparison, variant, repeat = path.stem.rsplit("-", 2)
        if not repeat.isdigit():
            continue  # latency arms and other files
        rec = arm_record.build(path.read_text())
        got = arms.arm_optimum(rec, fleet, limit)
        if got is not None:
            arm = Arm(comparison, variant, "file", repeat=int(repeat))
            results.append((arm, dataclasses.replace(rec, optimum=got)))
    invalid = json.loads((run / "demo.json").read_text()).get("invalid_arms") or []
    return _table(run, results, invalid, output)


def _table(
    run: Path, results: list[tuple[Arm, arm_record.ArmRecord]], invalid: Any, output: Path | None
) -> int:
    """Print the run's table; `output`: write its section as a document
    `testbed results keep` takes."""
    section = optimum_report.section(results)
    optimum_report.console_table(section, Console(width=200))
    if output:
        doc = {
            "kind": kept.OPTIMUM_KIND,
            "source": str(run),
            "repeat": 1 + max(arm.repeat for arm, _ in results),
            "invalid_arms": invalid,
            "optimum": section.to_json(),
        }
        output.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return 1 if any(r.beats for r in section.rows) else 0


def _variant(stem: str, variants: list[str]) -> tuple[str, str]:
    """(workload, variant) of an arm's name without its repeat (variants may hold dashes)."""
    for v in sorted(variants, key=len, reverse=True):
        if stem.endswith(f"-{v}"):
            return stem[: -len(v) - 1], v
    raise ValueError(f"{stem}: no variant of the run ends it")


def run_table(run: Path, output: Path | None) -> int:
    """An experiment run's arms against the optima it computed: the engine's table."""
    summary = json.loads((run / "experiment.json").read_text())
    variants = [v["name"] for v in summary["spec"]["variants"]]
    results = []
    for path in sorted(run.glob(f"*/{optimum_report.FILE}")):
        stem, _, repeat = path.parent.name.rpartition("-")
        comparison, variant = _variant(stem, variants)
        rec = arm_record.load(path.parent)
        results.append((Arm(comparison, variant, "file", repeat=int(repeat)), rec))
    return _table(run, results, summary.get("invalid_arms") or {}, output)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per MILP")
    parser.add_argument("--output", type=Path, help="write the figures as JSON here")
    parser.add_argument("--kept", type=Path, help="a kept demo run's directory (see above)")
    parser.add_argument("--run", type=Path, help="an experiment run's directory (see above)")
    args = parser.parse_args()
    if args.run:
        return run_table(args.run, args.output)
    if args.kept:
        return kept_run(args.kept, args.nodes, args.time_limit, args.output)
    demo_fleet, demo_shape, demo_gpus = _fleet(mixed_fleet.spec(args.nodes))
    dgx_doc = {
        "name": "dgx",
        "pools": [{"name": "dgx", "profile": "dgx-h100", "count": args.nodes}],
    }
    dgx_fleet, _, dgx_gpus = _fleet(dgx_doc)
    gangs = max(1, demo_shape.aligned_eight_nodes // 32)  # the demo plan's own rule
    workloads: list[tuple[str, inputs.Fleet, model.Scenario, int]] = [
        (
            "demo placement",
            demo_fleet,
            scenarios.load("gang", {"gangs": gangs, "size": 4}),
            demo_gpus,
        ),
        (
            "demo fragmentation",
            demo_fleet,
            model.Scenario.model_validate(plan.fragmentation_scenario(demo_shape)),
            demo_gpus,
        ),
        (
            "demo alignment",
            demo_fleet,
            model.Scenario.model_validate(plan.alignment_scenario(demo_shape)),
            demo_gpus,
        ),
        *(
            (
                f"gang.yaml gang-{size}",
                dgx_fleet,
                scenarios.load("gang", {"gangs": n, "size": size}),
                dgx_gpus,
            )
            for n, size in ((10, 4), (3, 16), (1, 64))
        ),
        *(
            (
                f"alignment-in-tree.yaml numa={numa}",
                dgx_fleet,
                scenarios.load("alignment", {"gpus": 4, "nics": 4, "fill": 0.25, "numa": numa}),
                dgx_gpus,
            )
            for numa in (True, False)
        ),
    ]
    out = []
    clean = True  # every optimum found and within 1 % of proven
    print(f"{'workload':40} {'seconds':>8} {'proven':>7} {'gap':>6}  figures")
    for name, fleet, scenario, gpus in workloads:
        doc = _result(scenario, gpus)
        started = time.monotonic()
        _as_placed_by_the_online_optimum(doc, fleet, args.time_limit)
        got = arms.arm_optimum(arm_record.modelled(doc), fleet, args.time_limit)
        seconds = time.monotonic() - started
        figures = got.figures if got else []
        # Every arm here placed what the online optimum places: each figure has one.
        online = [f.online for f in figures if f.online is not None]
        assert len(online) == len(figures)
        proven = all(f.batch.optimal and o.optimal for f, o in zip(figures, online, strict=True))
        gap = max(
            (max(f.batch.gap, o.gap) for f, o in zip(figures, online, strict=True)), default=0.0
        )
        shown = "; ".join(
            f"{f.metric}: {o.value:.4g}/{f.batch.value:.4g}"
            for f, o in zip(figures, online, strict=True)
        )
        error = got.error if got else None
        print(f"{name:40} {seconds:8.1f} {proven!s:>7} {gap:6.1%}  {error or shown}")
        clean = clean and error is None and gap <= 0.01
        out.append(
            {
                "workload": name,
                "seconds": round(seconds, 2),
                "proven": proven,
                "gap": gap,
                "error": error,
                "figures": [f.model_dump() for f in figures],
            }
        )
    if args.output:
        args.output.write_text(json.dumps({"nodes": args.nodes, "workloads": out}, indent=2) + "\n")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
