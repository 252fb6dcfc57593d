"""How kube-scheduler's DRA work per pod grows with the fleet, release by release (pure).

Two factors make a pod's cost:

- **Nodes filtered per pod.** With `percentageOfNodesToScore` 0 (the default) the scheduler
  stops filtering once it has found `nodes_to_find(N)` feasible nodes: every node below 100
  nodes, else `N * max(5, 50 - N // 125) // 100` and at least 100. That count rises to ~780
  at 3,000 nodes and falls again (500 at 5,000): a pod's filter work is not monotonic in N.
  On a partly full fleet more nodes are filtered to find that many feasible ones
  (`nodes_filtered`).
- **ResourceSlices visited per filtered node** by the DRA allocator (`slices_scanned`):
  - 1.35: every ResourceSlice in the cluster, for each node (its GatherPools walks the
    whole list and skips the slices of other nodes);
  - 1.36: a per-node index (kubernetes/kubernetes#136588): the node's own slices and the
    shared ones, but every counter-set slice of every node as well (#138917);
  - 1.37: the node's own slices and the shared ones (both fixed).

A pod's cost is then `per_pod + filtered * (per_node[release] + visits * per_visit)`.
The crossover of two releases (`crossover`) is where the slower per-node base of one is
paid back by the other's visits; when both costs are per filtered node the filtered count
cancels and the crossover is the same whatever percentageOfNodesToScore does.

`PREDICTION` is the calibration this model was first published with (2026-11-27): the
1.35/1.36 crossover of upstream's `SchedulingWithResourceClaimTemplate` shape (one slice per
node, no counter sets) predicted before any curve was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

MIN_FEASIBLE_NODES: Final = 100
"""kube-scheduler's minFeasibleNodesToFind."""
MIN_FEASIBLE_PERCENTAGE: Final = 5
"""kube-scheduler's minFeasibleNodesPercentageToFind."""
BASE_PERCENTAGE: Final = 50
"""The adaptive rule's starting percentage (`50 - N/125`)."""
RELEASES: Final = ("1.35", "1.36", "1.37")


def nodes_to_find(nodes: int, percentage: int = 0) -> int:
    """Feasible nodes the scheduler looks for per pod (its numFeasibleNodesToFind);
    `percentage` is percentageOfNodesToScore, 0 for the adaptive rule."""
    if nodes < 0 or not 0 <= percentage <= 100:
        raise ValueError(f"nodes {nodes}, percentage {percentage}: out of range")
    if nodes < MIN_FEASIBLE_NODES or percentage >= 100:
        return nodes
    if percentage == 0:
        percentage = max(BASE_PERCENTAGE - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


def nodes_filtered(nodes: int, full: float = 0.0, percentage: int = 0) -> float:
    """Nodes filtered per pod when a fraction `full` of the nodes is infeasible (spread
    evenly): the search goes on until it has found `nodes_to_find` feasible ones, and never
    past the whole fleet. (The parallel search overshoots by a few nodes; not modelled.)"""
    if not 0.0 <= full <= 1.0:
        raise ValueError(f"full {full}: must be within [0, 1]")
    if full >= 1.0:
        return float(nodes)
    return min(float(nodes), nodes_to_find(nodes, percentage) / (1.0 - full))


@dataclass(frozen=True)
class Fleet:
    """The ResourceSlices of a fleet, per node."""

    nodes: int
    slices_per_node: int = 1
    """Slices published for one node (node-local, no counters)."""
    counter_slices_per_node: int = 0
    """Slices with shared counters (partitionable devices, e.g. MIG) per node."""
    shared_slices: int = 0
    """Slices for all nodes or a node selector (network-attached devices)."""

    @property
    def slices(self) -> int:
        return self.nodes * (self.slices_per_node + self.counter_slices_per_node) + (
            self.shared_slices
        )


def slices_scanned(release: str, fleet: Fleet) -> int:
    """ResourceSlices the DRA allocator visits for one filtered node."""
    own = fleet.slices_per_node + fleet.counter_slices_per_node + fleet.shared_slices
    if release == "1.35":
        return fleet.slices
    if release == "1.36":
        return own + fleet.counter_slices_per_node * (fleet.nodes - 1)
    if release == "1.37":
        return own
    raise ValueError(f"release {release!r}: the model knows {', '.join(RELEASES)}")


@dataclass(frozen=True)
class Costs:
    """CPU per unit of work of one release (any one time unit, the same for all)."""

    per_pod: float
    """What a pod costs whatever the fleet (queueing, claim, binding)."""
    per_node: float
    """Filtering one node, the slice visits aside."""
    per_visit: float
    """Visiting one ResourceSlice in the allocator's pool gathering."""


def work_per_pod(release: str, fleet: Fleet, costs: Costs, full: float = 0.0) -> float:
    """Predicted scheduler CPU per pod, in the unit of `costs`."""
    filtered = nodes_filtered(fleet.nodes, full)
    return costs.per_pod + filtered * (
        costs.per_node + slices_scanned(release, fleet) * costs.per_visit
    )


def crossover(
    cheap_small: tuple[str, Costs],
    cheap_large: tuple[str, Costs],
    *,
    slices_per_node: int = 1,
    counter_slices_per_node: int = 0,
    max_nodes: int = 100_000,
) -> int | None:
    """The smallest node count at which the first release's work per pod reaches the
    second's (None below `max_nodes`): the first is the cheaper on small fleets, and the
    gap between them must only grow with the fleet (true when the first scans more slices
    per node as the fleet grows and the second does not)."""

    def gap(n: int) -> float:
        f = Fleet(n, slices_per_node, counter_slices_per_node)
        return work_per_pod(cheap_small[0], f, cheap_small[1]) - work_per_pod(
            cheap_large[0], f, cheap_large[1]
        )

    if gap(1) >= 0:
        return 1
    if gap(max_nodes) < 0:
        return None
    lo, hi = 1, max_nodes  # gap(lo) < 0 <= gap(hi); gap grows with n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class Prediction:
    """The 1.35/1.36 crossover predicted from recorded figures and stated assumptions."""

    per_node_136_over_135: float
    """1.36's per-node filter cost over 1.35's."""
    visit_over_node: tuple[float, float]
    """One foreign slice visit in 1.35, as a fraction of 1.35's per-node filter cost: the
    low and high ends assumed."""
    slices_per_node: int

    def costs(self, visit_over_node: float) -> dict[str, Costs]:
        node = 1.0
        return {
            "1.35": Costs(per_pod=0.0, per_node=node, per_visit=visit_over_node * node),
            "1.36": Costs(
                per_pod=0.0,
                per_node=node * self.per_node_136_over_135,
                per_visit=visit_over_node * node,
            ),
        }

    def crossover_range(self) -> tuple[int, int]:
        """(nodes, nodes): the crossover for the dearest and the cheapest visit assumed."""
        ends = []
        for v in sorted(self.visit_over_node, reverse=True):
            c = self.costs(v)
            at = crossover(
                ("1.35", c["1.35"]), ("1.36", c["1.36"]), slices_per_node=self.slices_per_node
            )
            ends.append(at if at is not None else math.inf)
        return int(ends[0]), int(ends[1])


PREDICTION: Final = Prediction(
    # 2026-11-27 calibration (docs/results/narrative/releases.md, "Release to release over
    # three releases"):
    # 200 dgx-h100 nodes, both releases filtering ~106 nodes per pod, scheduler CPU per
    # one-GPU pod 28 ms on 1.35.8 and 39 ms on 1.36.4; with the per-pod share taken as
    # small, 1.36's per-node cost is ~1.39x 1.35's.
    per_node_136_over_135=1.39,
    # 28 ms / 106 nodes puts 1.35's per-node filter at ~100-260 us of CPU on this machine; a
    # foreign slice visit (pointer to an uncached slice, node-name compare, skip) at
    # ~50-100 ns: 1/4000 to 1/1000 of a node.
    visit_over_node=(1 / 4000, 1 / 1000),
    slices_per_node=1,
)
