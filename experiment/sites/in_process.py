"""A variant whose arms run upstream's scheduler_perf in-process instead of loadgen on the
cluster (`harness: scheduler_perf`): the same Nodes, ResourceSlices, DeviceClasses, claim
template and pods as the file's profile fleet and `pods` workload, through
`testbed perf run fleet/<profile>` (`schedperf`, its own command, run as a child) on the
release of the cluster its stage brings up. The benchmark runs the API server, the scheduler
and the claim controller in one process with etcd beside it: no kubelet, kwok, HTTP client
or extender.

What it can express is narrow, and a file asking for more is refused before anything runs
(`check_variant`, `fleet_problem`, `workload_problem`): one built-in GPU profile (scheduler_perf's
`createNodes` makes one node shape), the `pods` scenario with its own claim (one GPU) and an
explicit pod count, no latency follow-up, no scheduler, extender or gate of the variant's own.

Its result is scheduler_perf's, written in loadgen's schema: SchedulingThroughput by
scheduler_perf's own definition, which is loadgen's "scheduling throughput" too; and the CPU of
the benchmark's whole process tree per pod (`process_cpu`). Every other figure is not defined
for it (`figures.defined`), which reports say rather than show a 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from experiment.measure import arm_record, process_cpu, validity
from experiment.measure.arms import Arm
from experiment.sites import children

HARNESS = "scheduler_perf"
LOADGEN = "loadgen"
SCENARIO = "pods"
"""The one loadgen scenario scheduler_perf's fleet workload mirrors (`schedperf.fleetconfig`)."""
ALLOWED_FIELDS = frozenset({"name", "harness", "kubernetes", "extender"})
"""A scheduler_perf variant's fields: its release, and `extender: false` at most."""
COVERS = (
    "the benchmark's whole process tree (scheduler, API server, claim controller and etcd, "
    "and the `testbed perf` command around them)"
)


def variant_defaults(data: object) -> object:
    """A scheduler_perf variant calls no extender: `extender` defaults to false for it."""
    if isinstance(data, dict) and data.get("harness") == HARNESS and "extender" not in data:
        return {**data, "extender": False}
    return data


def check_variant(fields: Mapping[str, Any]) -> None:
    """A scheduler_perf variant's fields as set (aliases); ValueError naming the first it
    cannot honour."""
    if fields.get("extender", True):
        raise ValueError("extender: scheduler_perf runs no HTTP extender (extender: false)")
    for key in fields:
        if key not in ALLOWED_FIELDS:
            raise ValueError(f"{key}: a scheduler_perf variant sets only kubernetes")


class VariantLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def harness(self) -> str: ...
    @property
    def cluster_key(self) -> tuple[str, tuple[tuple[str, bool], ...]]: ...


def pairing_problem(variants: Sequence[VariantLike]) -> str | None:
    """A scheduler_perf variant without a loadgen variant of its release to run beside."""
    beside = {v.cluster_key for v in variants if v.harness != HARNESS}
    for i, v in enumerate(variants):
        if v.harness == HARNESS and v.cluster_key not in beside:
            return (
                f"variants.{i}: scheduler_perf needs a loadgen variant of Kubernetes "
                f"{v.cluster_key[0]} without featureGates beside it"
            )
    return None


def fleet_problem(profile: str | None, gpu_profiles: Sequence[str]) -> str | None:
    """Why scheduler_perf cannot make the file's fleet, or None: it makes `nodes` copies of
    one built-in GPU profile's node."""
    if profile is None:
        return (
            "fleet: a scheduler_perf variant needs a profile fleet (an inline spec's pools are "
            "more than the one node shape scheduler_perf's createNodes makes)"
        )
    if profile not in gpu_profiles:
        return (
            f"fleet.profile: scheduler_perf makes copies of one built-in GPU profile's node, "
            f"not {profile!r} (one of: {', '.join(gpu_profiles)})"
        )
    return None


def workload_problem(
    scenario: str,
    params: Mapping[str, object],
    latency: bool,
    phases: Sequence[Any],
    plain: Sequence[Any],
) -> str | None:
    """Why scheduler_perf cannot run this workload, or None. `phases`: the workload's scenario
    as loadgen builds it; `plain`: the `pods` scenario with its defaults, whose claim
    scheduler_perf's fleet workload uses."""
    if scenario != SCENARIO:
        return f"scheduler_perf runs the {SCENARIO!r} scenario only, not {scenario!r}"
    if "pods" not in params:
        return "a scheduler_perf variant needs params.pods (the pods it measures)"
    if latency:
        return "latency: scheduler_perf has no unsaturated follow-up arm"
    if len(phases) != 1 or phases[0].claim != plain[0].claim:
        changed = ", ".join(sorted(k for k in params if k != "pods")) or "its claim"
        return (
            f"scheduler_perf's fleet workload asks for the {SCENARIO} scenario's default claim "
            f"(one GPU); {changed} cannot be expressed there"
        )
    return None


def command(arm: Arm, arm_dir: Path, *, release: str, profile: str, nodes: int) -> list[str]:
    """`testbed perf run` of the arm's workload, one repeat, into `arm_dir` (pure)."""
    return [
        children.tool("testbed"),
        "perf",
        "run",
        f"fleet/{profile}",
        "--kubernetes",
        release,
        "--nodes",
        str(nodes),
        "--pods",
        arm.params["pods"],
        "--repeat",
        "1",
        "--output-dir",
        str(arm_dir),
    ]


class FleetLike(Protocol):
    @property
    def profile(self) -> str | None: ...
    @property
    def nodes(self) -> int | None: ...


def run_arm(
    arm: Arm, out_dir: Path, release: str, fleet: FleetLike
) -> tuple[arm_record.ArmRecord | None, validity.Validity]:
    """Run the arm through scheduler_perf on `release` and the file's profile `fleet`
    (`spec.check` refuses any other for this harness); its result (None without one) and
    validity. The CPU of its whole process tree is the children's CPU the command adds (it
    waits for the benchmark, and the benchmark for its etcd)."""
    profile, nodes = str(fleet.profile), fleet.nodes or 0
    arm_dir = out_dir / arm.name
    arm_dir.mkdir(parents=True, exist_ok=True)
    result = arm_dir / "result.json"
    result.unlink(missing_ok=True)
    span = process_cpu.Span.start({})
    argv = command(arm, arm_dir, release=release, profile=profile, nodes=nodes)
    code = children.run(argv, dict(os.environ))
    if code != 0 or not result.is_file():
        summary = arm_dir / "repeats.json"
        return None, validity.Validity(
            False, f"testbed perf run exited {code} without a result (see {summary})"
        )
    cpu = process_cpu.kept(span.finish({}, children_as=HARNESS), int(arm.params["pods"]), COVERS)
    return arm_record.build(arm_record.read_result(result), process_cpu=cpu), validity.VALID
