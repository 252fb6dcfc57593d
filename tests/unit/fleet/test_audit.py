"""audit: is the cluster exactly the fleet? Checked on rendered objects (no cluster)."""

from __future__ import annotations

import copy
from typing import Any

from fleet import audit, drivers, layout, render
from fleet.spec import for_profile
from testbed import vocab

Obj = dict[str, Any]


def _cluster(nodes: int = 3) -> tuple[list[layout.DesiredNode], list[Obj], list[Obj]]:
    """The fleet's desired nodes and its objects as the API server would hold them (with uids)."""
    fleet = for_profile("dgx-h100", nodes, name="f")
    wanted = layout.desired_nodes(fleet)
    node_objs, slice_objs = [], []
    for p in wanted:
        node = render.node_object(fleet, p)
        node["metadata"]["uid"] = f"uid-{p.name}"
        node_objs.append(node)
        slice_objs += drivers.slice_objects(fleet, p, f"uid-{p.name}")
    return wanted, node_objs, slice_objs


def test_the_fleet_as_rendered_is_converged() -> None:
    wanted, nodes, slices = _cluster()
    result = audit.audit(wanted, nodes, slices)
    assert result.converged, result.summary()
    assert (result.nodes, result.slices) == (3, 6)
    assert result.summary() == "3 nodes, 6 slices"


def test_a_slice_of_a_wanted_node_that_the_render_does_not_make_is_a_duplicate() -> None:
    wanted, nodes, slices = _cluster()
    extra = copy.deepcopy(next(s for s in slices if s["spec"]["driver"] == vocab.GPU_DRIVER))
    extra["metadata"]["name"] += "-x"
    extra["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"  # the later one
    result = audit.audit(wanted, nodes, [*slices, extra])
    assert result.duplicate_slices == [extra["metadata"]["name"]]
    assert not result.converged


def test_slices_of_a_missing_node_or_a_stale_uid_are_orphans() -> None:
    wanted, nodes, slices = _cluster()
    gone = nodes.pop()  # its two slices now name a node that does not exist
    nodes[0]["metadata"]["uid"] = "recreated"  # owner uid of node 0's slices is stale
    result = audit.audit(wanted, nodes, slices)
    assert result.missing_nodes == [gone["metadata"]["name"]]
    assert len(result.orphan_slices) == 4
    # node 0 exists but its only slices are orphans: both its drivers count as missing
    name = nodes[0]["metadata"]["name"]
    assert sorted(result.missing_slices) == sorted(
        f"{name}-{d}" for d in (vocab.GPU_DRIVER, vocab.NIC_DRIVER)
    )
    assert "1 missing nodes" in result.summary() and "4 orphan slices" in result.summary()


def test_nodes_beyond_the_spec_are_extra() -> None:
    wanted, nodes, slices = _cluster(3)
    result = audit.audit(wanted[:2], nodes, slices)
    assert result.extra_nodes == [nodes[2]["metadata"]["name"]]
