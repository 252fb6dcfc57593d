"""The demo's planner: its fleet (and the variants some comparisons add), its comparisons and
their arms, planned once the fleet's shape is known (pure).

Every comparison runs its arms on the same fleet with the same workload, rotating the order
between repeats (A B, B A, ...; A B C D, B C D A, ...) so machine drift cancels out of the
ratios.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from experiment.measure import arms as arm_types
from experiment.measure.arms import Arm
from experiment.measure.fleet_shape import FleetShape
from experiment.spec import mixed_fleet
from testbed import vocab

FLEET_NAME = "demo"
MIN_NODES = 10
"""The smallest fleet the demo's comparisons are planned for."""
PLAIN = "plain"
"""The second scheduler's key: kube-scheduler without the extender."""
EXTENDER = arm_types.DEFAULT_SCHEDULER
"""The cluster's own scheduler, which calls the extender."""


# Fleet variants: pools (and device taints) some comparisons add to the demo's fleet while
# their arms run, each arm's pods kept on its pool by the scenario's `pool` parameter.
SHARING = "sharing"
EXTENDED_RESOURCE = "extended-resource"
TAINTS = "taints"
TAINTS_CLEAN = "taints-clean"
FLEET_VARIANTS = (SHARING, EXTENDED_RESOURCE, TAINTS, TAINTS_CLEAN)
POOL_MIG = "sharing-mig"
"""Partitionable H100s: the device plugin's, whole-GPU and MIG arms."""
POOL_SHARED = "sharing-shared"
"""The same H100s with consumable memory capacity: the capacity arm."""
POOL_PLUGIN = "er-plugin"
"""H100s with nvidia.com/gpu in node capacity: the device plugin serves such pods."""
POOL_DRA_ONLY = "er-dra"
"""H100s without it: DRA serves the same pods (DeviceClass extendedResourceName)."""
POOL_TAINTS = "taints"
TAINTED_SHARE = 0.05
"""Share of the taints pool's GPUs given a NoSchedule device taint (failing GPUs)."""
SHARING_FOOTPRINTS_GB = (5, 10, 20, 40, 80)
SHARING_DEMAND = 2
"""The sharing probe asks this many pods per GPU of its pool: twice what the device plugin
can place, so every arm is at saturation or has placed the whole mix."""
SHARING_ROUNDS = 4


VARIANT_NODES = 16
"""Nodes (8 H100s each) of every pool a fleet variant adds, whatever the fleet's size: the
question is how devices are shared, not fleet size (the rest of the fleet is still there
for the scheduler to filter)."""


def _variant_pools(variant: str) -> list[dict[str, Any]]:
    k = VARIANT_NODES
    if variant == SHARING:
        return [
            {"name": POOL_MIG, "profile": "dgx-h100-mig", "count": k},
            {"name": POOL_SHARED, "profile": "dgx-h100-shared", "count": k},
        ]
    if variant == EXTENDED_RESOURCE:
        return [
            {"name": POOL_PLUGIN, "profile": "dgx-h100", "count": k},
            {"name": POOL_DRA_ONLY, "profile": "dgx-h100", "count": k, "extendedResources": False},
        ]
    if variant in (TAINTS, TAINTS_CLEAN):
        return [{"name": POOL_TAINTS, "profile": "dgx-h100", "count": k}]
    raise ValueError(f"unknown fleet variant {variant!r} (known: {', '.join(FLEET_VARIANTS)})")


def fleet_spec(nodes: int, seed: int = 0, variant: str = "") -> dict[str, Any]:
    """The mixed fleet (`mixed_fleet`) of `nodes` nodes; with a `variant` (FLEET_VARIANTS),
    the pools and device taints that variant adds."""
    spec = {**mixed_fleet.spec(nodes, seed), "name": FLEET_NAME}
    if variant:
        spec["pools"] = [*spec["pools"], *_variant_pools(variant)]
    if variant == TAINTS:
        spec["deviceTaints"] = [
            {"effect": "NoSchedule", "share": TAINTED_SHARE, "pools": [POOL_TAINTS]}
        ]
    return spec


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What the demo's arms are planned from: an experiment file's `builtin:` section over
    the built-in file's (`wing.workload_of`; the defaults are `demo.yaml`'s)."""

    pods: int
    """Pods per arm of the throughput and DRA-vs-device-plugin comparisons."""
    repeat: int
    """How many times each comparison's pair of arms runs at most (order alternates)."""
    comparisons: tuple[str, ...]
    latency_arms: bool
    """Follow each throughput arm with an unsaturated latency arm (Poisson arrivals below its
    sustained rate; `arms.latency_rate`)."""
    scale_nodes: int
    """Fleet size of the `scale` comparison's large arm (`scale_nodes`)."""


def scale_nodes(nodes: int, given: int | None) -> int:
    """The `scale` comparison's large fleet: `given`, else five times the fleet."""
    return given if given is not None else 5 * nodes


# Opt-in besides ALL_COMPARISONS' heavier ones: `placement`, `fragmentation` and `alignment`
# (each two more arms per repeat; placement outcomes repeat tightly, and at the default 50
# nodes the alignment probes find room in both arms).
# Comparisons at saturation; with `latency_arms`, each of their arms is followed by an
# unsaturated latency arm.
THROUGHPUT_COMPARISONS = ("extender", "dra", "scale", EXTENDED_RESOURCE)
# Opt-in: `scale` grows the fleet, and 10,000 pods per arm take longer than the demo's
# budget; `sharing`, `extended-resource` and `taints` each add pools to the fleet (MIG
# slices are the heaviest objects it publishes) and four or two more arms per repeat.
ALL_COMPARISONS = (
    "extender",
    "placement",
    "fragmentation",
    "alignment",
    "dra",
    "scale",
    SHARING,
    EXTENDED_RESOURCE,
    TAINTS,
)
BASELINES = {SHARING: "device-plugin", EXTENDED_RESOURCE: "device-plugin", TAINTS: "clean"}
"""Comparisons of more than two arms, or whose B arm is named here: every other arm is
compared with this one (each row: that arm vs the baseline)."""


def fragmentation_scenario(shape: FleetShape) -> dict[str, Any]:
    """Fill a quarter of the GPUs with 1/2/4-GPU pods, then ask for as many 8-GPU pods as
    perfect packing keeps 8-GPU nodes whole (even if the whole fill landed on them): every
    probe that does not fit is fragmentation. (A quarter, not more: at 1,000 nodes the DRA
    fill is the demo's longest phase. Half the 8-GPU nodes was too few to tell: the default
    scheduler's spread fill also left that many whole.)"""
    fill_gpus = shape.gpus // 4
    sizes = (1, 2, 4)
    per_size = max(1, fill_gpus // sum(sizes))
    packed_nodes = -(-per_size * sum(sizes) // 8)
    whole = max(1, shape.eight_gpu_nodes - packed_nodes)
    phases: list[dict[str, Any]] = [
        {"name": f"fill{size}", "kind": "pods", "count": per_size, "claim": {"gpus": size}}
        for size in sizes
    ]
    phases.append(
        {
            "name": "whole",
            "kind": "pods",
            "count": whole,
            "claim": {"gpus": 8},
            # Until each probe is placed or found unschedulable: how many fit, not how many
            # a busy scheduler gets to in a fixed time.
            "wait": "settled",
            "timeout": "300s",
        }
    )
    return {
        "name": "fragmentation",
        "description": "mixed-size fill, then whole-node 8-GPU pods",
        "phases": phases,
    }


def alignment_scenario(shape: FleetShape) -> dict[str, Any]:
    """Fragment the PCIe roots of the aligned 8-GPU nodes, then ask for aligned pairs.

    The fill (a quarter of those nodes' GPUs) mixes 1-GPU, 1 GPU + 1 NIC aligned, 1 GPU + 1
    NIC with no alignment constraint, and 2-GPU claims: each takes a GPU or NIC from a root
    and leaves its partner stranded. Then aligned 8 GPU + 8 NIC pods, then aligned 4 + 4
    pods, as many as perfect packing of the fill leaves room for, each left until placed or
    refused. Nothing forces alignment onto the fill, so where the fill lands decides how
    many aligned probes fit: this comparison can fail."""
    fill_gpus = shape.aligned_eight_nodes * 8 // 4
    kinds: list[tuple[str, dict[str, Any]]] = [
        ("fill-gpu", {"gpus": 1}),
        ("fill-pair", {"gpus": 1, "nics": 1, "align": True}),
        ("fill-loose", {"gpus": 1, "nics": 1, "align": False}),
        ("fill-gpu2", {"gpus": 2}),
    ]
    per_kind = max(1, fill_gpus // sum(c["gpus"] for _, c in kinds))
    packed_nodes = -(-per_kind * sum(c["gpus"] for _, c in kinds) // 8)
    whole = max(2, shape.aligned_eight_nodes - packed_nodes)
    eights = whole // 2
    phases: list[dict[str, Any]] = [
        {"name": name, "kind": "pods", "count": per_kind, "claim": claim} for name, claim in kinds
    ]
    for name, count, size in (("aligned8", eights, 8), ("aligned4", 2 * (whole - eights), 4)):
        phases.append(
            {
                "name": name,
                "kind": "pods",
                "count": count,
                "claim": {"gpus": size, "nics": size, "align": True},
                "wait": "settled",
                "timeout": "300s",
            }
        )
    return {
        "name": "alignment",
        "description": "PCIe roots fragmented by a mixed fill, then aligned 8+8 and 4+4 pods",
        "phases": phases,
    }


def sharing_arms() -> tuple[Arm, ...]:
    """One inference mix (footprints in GB) on the same partitionable H100s four ways: the
    device plugin (a whole GPU per pod), DRA whole GPUs, the smallest MIG partition that
    holds each footprint, and a capacity share of exactly the footprint on the same number
    of shareable H100s. A placeability probe: SHARING_DEMAND pods per GPU, interleaved
    footprints, each pod left until placed or refused, on the plain scheduler (DRA's own
    allocator, no extender)."""
    gpus = VARIANT_NODES * 8
    per_footprint = max(SHARING_ROUNDS, SHARING_DEMAND * gpus // len(SHARING_FOOTPRINTS_GB))
    common = {
        "probe": "true",
        "jobs": str(per_footprint),
        "rounds": str(SHARING_ROUNDS),
        "footprints": ",".join(str(gb) for gb in SHARING_FOOTPRINTS_GB),
    }
    mig = {**common, "pool": POOL_MIG}

    def arm(variant: str, params: dict[str, str]) -> Arm:
        return Arm(SHARING, variant, "inference", params, PLAIN, fleet=SHARING)

    return (
        arm("device-plugin", {**mig, "shape": "whole", "device_plugin": "true"}),
        arm("whole", {**mig, "shape": "whole"}),
        arm("mig", {**mig, "shape": "mig"}),
        arm("capacity", {**common, "shape": "capacity", "pool": POOL_SHARED}),
    )


def extended_resource_arms(workload: Workload) -> tuple[Arm, ...]:
    """The same `nvidia.com/gpu: 1` pods (no claim) on H100s whose nodes publish the
    extended resource (the device plugin) and on H100s that do not (DRA serves them through
    the DeviceClass's extendedResourceName, making a claim per pod); plain scheduler."""
    pods = str(min(workload.pods, VARIANT_NODES * 8))
    params = {"pods": pods, "gpus": "1", "device_plugin": "true"}

    def arm(variant: str, pool: str) -> Arm:
        return Arm(
            EXTENDED_RESOURCE,
            variant,
            "pods",
            {**params, "pool": pool},
            PLAIN,
            fleet=EXTENDED_RESOURCE,
        )

    return arm("dra", POOL_DRA_ONLY), arm("device-plugin", POOL_PLUGIN)


def taints_scenario() -> dict[str, Any]:
    """One 1-GPU pod per GPU of the taints pool, each left until placed or refused: with
    TAINTED_SHARE of them tainted NoSchedule, that many pods must be refused."""
    return {
        "name": "taints",
        "description": "one 1-GPU pod per GPU of a pool, some of whose GPUs may be tainted",
        "node_selector": {vocab.LABEL_POOL: POOL_TAINTS},
        "phases": [
            {
                "name": "every-gpu",
                "kind": "pods",
                "count": VARIANT_NODES * 8,
                "claim": {"gpus": 1},
                "wait": "settled",
                "timeout": "300s",
            }
        ],
    }


def taints_arms() -> tuple[Arm, ...]:
    doc = taints_scenario()
    return (
        Arm(TAINTS, "tainted", "file", scheduler=PLAIN, scenario_doc=doc, fleet=TAINTS),
        Arm(TAINTS, "clean", "file", scheduler=PLAIN, scenario_doc=doc, fleet=TAINTS_CLEAN),
    )


def arms(shape: FleetShape, workload: Workload) -> list[Arm]:
    """Every arm in run order: each comparison's pair, alternating order per repeat."""
    throughput = [c for c in workload.comparisons if c != "scale"]
    if throughput and workload.pods > shape.gpus:
        raise ValueError(f"--pods {workload.pods} exceeds the fleet's {shape.gpus} GPUs")
    # One 4-pod gang per 32 aligned 8-GPU nodes (~1/8 of them busy): enough gangs to see
    # spans, while each 8 GPU + 8 NIC aligned claim costs the scheduler ~0.5 s at 1,000 nodes.
    gangs = max(1, shape.aligned_eight_nodes // 32)
    pairs: dict[str, tuple[Arm, ...]] = {
        "extender": (
            Arm("extender", "on", "pods", {"pods": str(workload.pods), "gpus": "1"}),
            Arm("extender", "off", "pods", {"pods": str(workload.pods), "gpus": "1"}, PLAIN),
        ),
        "placement": (
            Arm("placement", "on", "gang", {"gangs": str(gangs), "size": "4"}),
            Arm("placement", "off", "gang", {"gangs": str(gangs), "size": "4"}, PLAIN),
        ),
        "fragmentation": _scenario_pair("fragmentation", fragmentation_scenario(shape)),
        "alignment": _scenario_pair("alignment", alignment_scenario(shape)),
        # DRA's own cost: both arms on the plain scheduler, so the extender is not in it.
        "dra": (
            Arm("dra", "claims", "pods", {"pods": str(workload.pods), "gpus": "1"}, PLAIN),
            Arm(
                "dra",
                "device-plugin",
                "pods",
                {"pods": str(workload.pods), "gpus": "1", "device_plugin": "true"},
                PLAIN,
            ),
        ),
    }
    if SHARING in workload.comparisons:
        pairs[SHARING] = sharing_arms()
    if EXTENDED_RESOURCE in workload.comparisons:
        pairs[EXTENDED_RESOURCE] = extended_resource_arms(workload)
    if TAINTS in workload.comparisons:
        pairs[TAINTS] = taints_arms()
    if "scale" in workload.comparisons:
        if workload.scale_nodes <= 0:
            raise ValueError("the scale comparison needs a larger fleet size (--scale-nodes)")
        pairs["scale"] = _scale_pair(shape, workload)
    unknown = set(workload.comparisons) - set(pairs)
    if unknown:
        raise ValueError(f"unknown comparison(s): {', '.join(sorted(unknown))}")
    out: list[Arm] = []
    for rep in range(workload.repeat):
        for name in workload.comparisons:
            group = pairs[name]
            turn = rep % len(group)  # rotate: every arm runs first once per len(group) repeats
            for arm in (_with_repeat(a, rep) for a in (*group[turn:], *group[:turn])):
                out.append(arm)
                if workload.latency_arms and name in THROUGHPUT_COMPARISONS:
                    out.append(_latency_arm(arm, workload))
    # No arm reuses another comparison's result (DRA claims on the plain scheduler runs what
    # the extender comparison's "off" arm runs): a reused arm always ran before the other arm
    # of its own pair, which defeats the alternation its ratio relies on.
    return out


def _latency_arm(arm: Arm, workload: Workload) -> Arm:
    pods = str(min(workload.pods, arm_types.LATENCY_PODS))
    return dataclasses.replace(arm, params={**arm.params, "pods": pods}, latency_of=arm.name)


def _scenario_pair(comparison: str, doc: dict[str, Any]) -> tuple[Arm, Arm]:
    """A scenario file's two arms: extender on (the cluster's scheduler) vs the plain one."""
    return (
        Arm(comparison, "on", "file", scenario_doc=doc),
        Arm(comparison, "off", "file", scheduler=PLAIN, scenario_doc=doc),
    )


def _scale_pair(shape: FleetShape, workload: Workload) -> tuple[Arm, Arm]:
    """The same pods on the demo's fleet and on a larger one of the same mix. Pods hold one
    GPU each when they fit the smaller fleet's GPUs, else no claim (10,000 pods do not fit
    1,000 nodes' GPUs): then this compares the scheduler's general cost of fleet size."""
    gpus = "1" if workload.pods <= shape.gpus else "0"
    params = {"pods": str(workload.pods), "gpus": gpus}
    # Small first: the first repeat starts on the fleet as provisioned and grows it once.
    return (
        Arm("scale", "small", "pods", params),
        Arm("scale", "large", "pods", params, fleet_nodes=workload.scale_nodes),
    )


def _with_repeat(arm: Arm, rep: int) -> Arm:
    return dataclasses.replace(arm, repeat=rep)
