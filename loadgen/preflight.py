"""Pre-flight: can a scenario's demand fit the fleet's free GPUs at all? (pure)

Checked before anything is created, so a run that cannot succeed says why at once instead
of waiting out its timeout with pods Pending. Demand is counted per phase as the GPUs held
at once while it runs: its own concurrent pods plus those of earlier phases that keep
theirs (every phase but `wait: complete` ones). Free GPUs are what the fleet publishes less
what other namespaces' claims hold. Device selectors (`min_memory`), NICs and capacity
shares are left to the scheduler: this check only refuses what no placement could satisfy.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.scenarios import Phase, Scenario
from loadgen.scenarios.model import compute_milli
from testbed import units


@dataclass(frozen=True)
class Capacity:
    gpus: int
    """GPUs the fleet's nodes publish."""
    held_by_others: int
    """Of those, held by claims of other namespaces (other runs) when the run starts."""
    largest_node: int
    """Most GPUs one fleet node publishes."""
    compute_max: int | None = None
    """Most `compute` one claim may take of a fleet GPU, milli-units (its request policy's
    max); None: no fleet GPU publishes compute."""

    @property
    def free(self) -> int:
        return max(0, self.gpus - self.held_by_others)


def probes_saturation(scenario: Scenario) -> bool:
    """A placeability probe (`wait: settled`) means to ask for more than fits."""
    return any(p.wait == "settled" for p in scenario.phases)


def problems(scenario: Scenario, cap: Capacity) -> list[str]:
    """One line per phase whose demand cannot fit; empty when everything may fit."""
    out: list[str] = []
    kept = 0
    for p in scenario.phases:
        claim = p.claim
        if claim.uses_dra and claim.compute is not None:
            out += _compute_problems(p.name, claim.compute, cap)
        if not (claim.uses_dra and claim.gpus) or claim.shares:
            continue  # no DRA GPUs, or shares of GPUs only the scheduler can count
        smallest = min((a.gpus for a in claim.first_available), default=claim.gpus)
        if smallest > cap.largest_node and not claim.all_gpus:
            out.append(
                f"phase {p.name}: each pod asks {units.counted(smallest, 'GPU')}, no fleet node "
                f"has more than {cap.largest_node}"
            )
        if (too_big := gang_problem(p, cap.free)) is not None:
            out.append(too_big)
            continue
        need = kept + p.gpus_held
        if need > cap.free:
            held = f", {kept} of them held by earlier phases" if kept else ""
            others = (
                f" ({cap.held_by_others} of its {cap.gpus} held by other runs)"
                if cap.held_by_others
                else ""
            )
            out.append(
                f"phase {p.name}: needs {units.counted(need, 'GPU')} at once{held}; the fleet has "
                f"{cap.free} free{others}{_nodes_needed(need + cap.held_by_others, cap)}"
            )
        if p.wait != "complete":
            kept += p.gpus_held
    return out


def _nodes_needed(gpus: int, cap: Capacity) -> str:
    """How many nodes like the fleet's largest would hold `gpus` (at least: pods of several
    GPUs may leave some of a node's unused)."""
    if cap.largest_node <= 0:
        return ""
    nodes = -(-gpus // cap.largest_node)
    return f"; at least {units.count(nodes)} nodes of {cap.largest_node} GPUs would hold it"


def gang_problem(phase: Phase, gpus: int) -> str | None:
    """One line if a gang of `phase` needs more GPUs at once than `gpus`: all or nothing, it
    never runs however long the run waits (a native one never binds a pod). Also what an
    experiment file is checked with against its fleet's GPUs, before any cluster exists."""
    per_pod = phase.claim.gpus_per_claim
    gang = phase.concurrent * per_pod
    if not phase.gang or gang <= gpus:
        return None
    return (
        f"phase {phase.name}: one gang needs {phase.concurrent} pods x "
        f"{units.counted(per_pod, 'GPU')} = {gang} GPUs at once; the fleet has {gpus} free"
    )


def _compute_problems(phase: str, compute: str, cap: Capacity) -> list[str]:
    """A compute share no fleet GPU's policy admits: the allocator would refuse every pod
    (below the policy's min or off its step it rounds up instead, which fits)."""
    asked = compute_milli(compute) or 0
    if cap.compute_max is None:
        return [
            f"phase {phase}: compute={compute} asks a share of a GPU's compute, but no fleet "
            "GPU publishes compute capacity (a fractional profile such as "
            "dgx-h100-fractional does)"
        ]
    if asked > cap.compute_max:
        return [
            f"phase {phase}: compute={compute} ({asked}m) is more than any fleet GPU's "
            f"request policy lets one claim take ({cap.compute_max}m at most)"
        ]
    return []
