"""The fleet's record: self-contained, and the judge of whether a fleet is complete."""

from __future__ import annotations

import json
from typing import Any

from fleet import layout, record, render, status
from fleet.profiles import parse
from fleet.spec import for_profile, from_data
from testbed import vocab


def _cluster(desired: layout.DesiredFleet) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    out = render.render(desired)
    for i, n in enumerate(out.nodes):
        n["metadata"]["uid"] = f"u{i}"
    uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in out.nodes}
    slices = render.render(desired, owner_uids=uids).slices
    return out.nodes, slices


def test_the_record_inlines_profiles_from_files_but_not_built_ins() -> None:
    mine = parse(
        {
            "name": "mine",
            "nics": {"n": {"rdma": True, "pciVendor": "V", "pciDevice": "D"}},
            "roots": [{"bus": 1, "nics": 1}],
        },
        "test",
    )
    fleet = from_data(
        {
            "name": "r",
            "pools": [
                {"name": "a", "profile": "mine", "count": 1},
                {"name": "b", "profile": "dgx-h100", "count": 1},
            ],
        }
    )
    desired = render.validate(fleet, layout.resolve_profiles(fleet, {"mine": mine}))
    doc = json.loads(desired.record)
    assert [p["name"] for p in doc["spec"]["profiles"]] == ["mine"]
    again = render.validate(from_data(doc))  # no profile files needed
    assert [n.name for n in again.nodes] == [n.name for n in desired.nodes]


def test_a_fleet_that_matches_its_record_is_complete() -> None:
    desired = render.validate(for_profile("l4-4gpu", 3, name="c"))
    nodes, slices = _cluster(desired)
    cm = record.record_object(desired, "kube-system")
    assert status.status_problems(cm, nodes, slices, desired) == []


def test_objects_without_a_record_are_an_unfinished_apply() -> None:
    desired = render.validate(for_profile("l4-4gpu", 3, name="c"))
    nodes, slices = _cluster(desired)
    (problem,) = status.status_problems(None, nodes, slices, None)
    assert "no record" in problem
    assert status.status_problems(None, [], [], None) == []


def test_a_missing_node_or_a_marked_record_is_incomplete() -> None:
    desired = render.validate(for_profile("l4-4gpu", 3, name="c"))
    nodes, slices = _cluster(desired)
    cm = record.record_object(desired, "kube-system")
    (problem,) = status.status_problems(cm, nodes[:2], slices, desired)
    assert "1 missing nodes" in problem
    cm["metadata"]["annotations"] = {vocab.ANNOTATION_FLEET_APPLYING: "2026-01-01T00:00:00Z"}
    problems = status.status_problems(cm, nodes, slices, desired)
    assert problems == [
        "an apply of a changed spec started 2026-01-01T00:00:00Z and did not finish"
    ]
