"""An experiment's run order: which cluster runs which arms, in turn (pure).

A file's variants x workloads become `Arm`s (comparison = workload, variant = variant,
scheduler = the variant's name). Variants needing different clusters (release, feature gates)
run in stages, one cluster at a time; with `order: alternating` every other repeat reverses
both the clusters and the variants within one, so drift (a warming machine, a growing etcd)
cancels out of the ratios. Consecutive stages on the same cluster share it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from experiment.measure import arms as arm_types
from experiment.measure.arms import Arm
from experiment.measure.fleet_shape import FleetShape
from experiment.sites import in_process
from experiment.sites.site import SchedulerSetup
from experiment.spec.spec import Experiment, Variant, Workload

ClusterKey = tuple[str, tuple[tuple[str, bool], ...]]


@dataclass(frozen=True)
class Stage:
    cluster: ClusterKey
    """(release, feature gates) of the cluster the arms run in."""
    arms: tuple[Arm, ...]
    """The arms in run order; () where a planner plans them once the fleet's shape is known
    (a wing's may)."""


def setup(variant: Variant) -> SchedulerSetup:
    return variant.scheduler_setup


def setups(exp: Experiment) -> dict[str, SchedulerSetup]:
    """Scheduler key (`Arm.scheduler`, the variant's name) -> what it asks of the site."""
    return {v.name: setup(v) for v in exp.variants if v.harness != in_process.HARNESS}


def _arm(workload: Workload, variant: Variant, rep: int) -> Arm:
    is_file = workload.scenario.endswith((".yaml", ".yml"))
    return Arm(
        comparison=workload.name,
        variant=variant.name,
        scenario=workload.scenario,
        params={} if is_file else workload.loadgen_params(variant),
        # loadgen's and ClusterLoader2's pods go to the site's scheduler of the variant.
        scheduler=variant.name if variant.harness != in_process.HARNESS else "",
        repeat=rep,
        harness=variant.harness,
    )


def _latency_arm(arm: Arm) -> Arm:
    params = dict(arm.params)
    if "pods" in params:
        params["pods"] = str(min(int(params["pods"]), arm_types.LATENCY_PODS))
    return dataclasses.replace(arm, params=params, latency_of=arm.name)


def stages(exp: Experiment) -> list[Stage]:
    """Every stage in run order; consecutive repeats on one cluster merge into one stage."""
    clusters: list[ClusterKey] = exp.clusters()
    out: list[Stage] = []
    for rep in range(exp.repeats):
        reverse = exp.order == "alternating" and rep % 2 == 1
        for cluster in reversed(clusters) if reverse else clusters:
            variants = [v for v in exp.variants if v.cluster_key == cluster]
            if reverse:
                variants.reverse()
            arms: list[Arm] = []
            for workload in exp.workloads:
                for variant in variants:
                    arm = _arm(workload, variant, rep)
                    arms.append(arm)
                    if workload.latency:
                        arms.append(_latency_arm(arm))
            if out and out[-1].cluster == cluster:
                out[-1] = Stage(cluster, (*out[-1].arms, *arms))
            else:
                out.append(Stage(cluster, tuple(arms)))
    return out


class Planner:
    """The engine's own planner (`experiment.plan.wing.Planner`) for a file's variants x
    workloads: its arms are known before the fleet is up, on the file's own fleet."""

    def stages(self, exp: Experiment) -> list[Stage]:
        return stages(exp)

    def arms(self, exp: Experiment, stage: Stage, shape: FleetShape) -> list[Arm]:
        return list(stage.arms)

    def setups(self, exp: Experiment) -> dict[str, SchedulerSetup]:
        return setups(exp)

    def fleet(self, exp: Experiment, nodes: int, variant: str) -> dict[str, Any]:
        raise ValueError("a file's arms run on its own fleet: none asks for another")
