"""`testbed demo`: the built-in demo experiment (`demo.yaml` beside this file) with the
command's flags laid over it, run on the embedded local cluster by the engine's runner with
the demo's planner and reporter.

Binaries -> cluster -> extender -> second (plain) scheduler -> mixed fleet -> the comparison
arms -> summary, `demo.json`, `index.html` -> tear down (unless --keep).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml
from rich.console import Console

from experiment import local_site, runner
from experiment import spec as specs
from experiment.demo import plan, report, wing
from testbed import cliconv
from testbed.cluster import local

DemoError = runner.RunError
BUILTIN = ("demo",)
"""The built-in experiment files (`builtin:NAME`)."""


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    nodes: int = plan.DEFAULT_NODES
    workload: plan.Workload = field(default_factory=plan.Workload)
    output_dir: Path
    keep: bool = False
    """Leave the fleet, and the cluster if the demo started it, running afterwards."""
    qps: float = plan.DEFAULT_QPS
    """loadgen's creation rate."""
    budget_minutes: float | None = None
    """The sequential design's budget (None: the built-in file's)."""
    cluster: local.ClusterConfig = field(default_factory=local.ClusterConfig)
    request_timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT
    """`--request-timeout` of the demo's fleet and loadgen calls."""


def builtin(name: str = "demo") -> specs.Experiment:
    """A built-in experiment file shipped beside this module (`NAME.yaml`); FileNotFoundError
    if there is none."""
    if name not in BUILTIN:
        raise FileNotFoundError(name)
    text = resources.files("experiment.demo").joinpath(f"{name}.yaml").read_text()
    return specs.parse(yaml.safe_load(text), source=f"built-in {name}")


def experiment(config: DemoConfig) -> specs.Experiment:
    """The built-in demo file with the demo's flags laid over it."""
    base = builtin("demo")
    w = config.workload
    data = base.model_dump(by_alias=True, exclude_none=True)
    data["fleet"] = {**data["fleet"], "nodes": config.nodes}
    data["builtin"] = {
        "comparisons": list(w.comparisons),
        "pods": w.pods,
        **({"scaleNodes": w.scale_nodes} if w.scale_nodes else {}),
        "latencyArms": w.latency_arms,
    }
    data.update(repeats=w.repeat, qps=config.qps)
    if config.budget_minutes is not None:
        data["budgetMinutes"] = config.budget_minutes
    return specs.parse(data, source="demo flags")


def run_experiment(
    exp: specs.Experiment, config: runner.RunConfig, open_site: runner.SiteOpener, console: Console
) -> int:
    """Run an experiment of built-in comparisons (`builtin:`) with the demo's planner and
    reporter."""
    return runner.run(
        exp, config, open_site, console, planner=wing.Planner(), reporter=report.Reporter()
    )


def run(config: DemoConfig, console: Console, open_site: runner.SiteOpener | None = None) -> int:
    """Run the demo; 0 when every arm accounted for every pod and ran as labelled, else 1.
    `open_site`: where (default: the local cluster `config.cluster`)."""
    exp = experiment(config)
    if open_site is None:
        open_site = local_site.opener(
            config.cluster, exp.clusters(), console, explicit_release=False, keep=config.keep
        )
    return run_experiment(
        exp,
        runner.RunConfig(
            output_dir=config.output_dir,
            keep=config.keep,
            request_timeout=config.request_timeout,
        ),
        open_site,
        console,
    )
