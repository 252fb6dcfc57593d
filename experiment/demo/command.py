"""`testbed demo`: the built-in demo experiment (`demo.yaml` beside this module) with the
command's flags laid over it, and the demo wing as it registers with the engine (`WING`): the
engine's runner runs it with the demo's planner and reporter.

Binaries -> cluster -> extender -> second (plain) scheduler -> mixed fleet -> the comparison
arms -> summary, `demo.json`, `index.html` -> tear down (unless --keep).
"""

from __future__ import annotations

from collections.abc import Sequence

from experiment.demo import defaults, report, wing
from experiment.plan import wing as wings
from experiment.spec import spec as specs


def builtin(name: str = "demo") -> specs.Experiment:
    """A built-in experiment file shipped beside this module (`NAME.yaml`); FileNotFoundError
    if there is none."""
    return specs.parse(defaults.document(name), source=f"built-in {name}")


def experiment(
    *,
    nodes: int,
    pods: int,
    repeats: int,
    comparisons: Sequence[str],
    scale_nodes: int | None,
    latency_arms: bool,
    qps: float,
    budget_minutes: float | None,
) -> specs.Experiment:
    """The built-in demo file with `testbed demo`'s flags laid over it, checked as any file
    of built-in comparisons is; SpecError names what is wrong."""
    data = builtin("demo").model_dump(by_alias=True, exclude_none=True)
    data["fleet"] = {**data["fleet"], "nodes": nodes}
    data["builtin"] = {
        "comparisons": list(comparisons),
        "pods": pods,
        **({"scaleNodes": scale_nodes} if scale_nodes is not None else {}),
        "latencyArms": latency_arms,
    }
    data.update(repeats=repeats, qps=qps)
    if budget_minutes is not None:
        data["budgetMinutes"] = budget_minutes
    source = "demo flags"
    exp = specs.parse(data, source=source)
    try:
        wing.check(exp)
    except specs.SpecError as e:
        raise specs.SpecError(f"{source}: {e}") from None
    return exp


WING = wings.Wing(
    name="demo",
    builtins=builtin,
    builtin_names=defaults.BUILTIN_NAMES,
    check=wing.check,
    describe=wing.describe,
    planner=wing.Planner,
    reporter=report.Reporter,
    result=wings.ResultKind(kind=report.KIND, file=report.FILE, page=report.rebuild_page),
)
"""The demo wing, as the commands register it (`experiment.plan.wing.WINGS`)."""
