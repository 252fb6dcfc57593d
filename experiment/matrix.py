"""An experiment's run order: which cluster runs which arms, in turn (pure).

A file's variants x workloads become `plan.Arm`s (comparison = workload, variant = variant,
scheduler = the variant's name). Variants needing different clusters (release, feature gates)
run in stages, one cluster at a time; with `order: alternating` every other repeat reverses
both the clusters and the variants within one, so drift (a warming machine, a growing etcd)
cancels out of the ratios. Consecutive stages on the same cluster share it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from experiment import plan
from experiment.site import SchedulerSetup
from experiment.spec import Experiment, Variant, Workload

ClusterKey = tuple[str, tuple[tuple[str, bool], ...]]


@dataclass(frozen=True)
class Stage:
    cluster: ClusterKey
    """(release, feature gates) of the cluster the arms run in."""
    arms: tuple[plan.Arm, ...]
    """The arms in run order; () for the built-in comparisons, planned once the fleet's
    shape is known (`plan.arms`)."""


def setup(variant: Variant) -> SchedulerSetup:
    return SchedulerSetup(
        extender=variant.extender, extender_args=variant.extender_args, config=variant.scheduler
    )


def builtin_setups() -> dict[str, SchedulerSetup]:
    """The demo's two schedulers: the cluster's own with the extender, and a plain one."""
    return {plan.EXTENDER: SchedulerSetup(), plan.PLAIN: SchedulerSetup(extender=False)}


def setups(exp: Experiment) -> dict[str, SchedulerSetup]:
    """Scheduler key (`plan.Arm.scheduler`) -> what it asks of the site."""
    if exp.builtin is not None:
        return builtin_setups()
    return {v.name: setup(v) for v in exp.variants}


def builtin_workload(exp: Experiment) -> plan.Workload:
    b = exp.builtin
    assert b is not None
    nodes = exp.fleet.nodes or 0
    return plan.Workload(
        pods=b.pods,
        repeat=exp.repeats,
        comparisons=tuple(b.comparisons),
        scale_nodes=b.scale_nodes if b.scale_nodes is not None else 5 * nodes,
    )


def _arm(workload: Workload, variant: Variant, rep: int) -> plan.Arm:
    is_file = workload.scenario.endswith((".yaml", ".yml"))
    return plan.Arm(
        comparison=workload.name,
        variant=variant.name,
        scenario=workload.scenario,
        params={} if is_file else workload.loadgen_params(variant),
        scheduler=variant.name,
        repeat=rep,
    )


def _latency_arm(arm: plan.Arm) -> plan.Arm:
    params = dict(arm.params)
    if "pods" in params:
        params["pods"] = str(min(int(params["pods"]), plan.LATENCY_PODS))
    return dataclasses.replace(arm, params=params, latency_of=arm.name)


def stages(exp: Experiment) -> list[Stage]:
    """Every stage in run order; consecutive repeats on one cluster merge into one stage."""
    clusters: list[ClusterKey] = exp.clusters()
    if exp.builtin is not None:
        return [Stage(clusters[0], ())]
    out: list[Stage] = []
    for rep in range(exp.repeats):
        reverse = exp.order == "alternating" and rep % 2 == 1
        for cluster in reversed(clusters) if reverse else clusters:
            variants = [v for v in exp.variants if v.cluster_key == cluster]
            if reverse:
                variants.reverse()
            arms: list[plan.Arm] = []
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
