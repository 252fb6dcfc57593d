"""The reconciler's comparisons: what others add to our objects is ignored, what changes
scheduling is not."""

from __future__ import annotations

import copy
from typing import Any

from fleet import diff, drivers, layout, render
from fleet.diff import covers, node_matches, slice_matches
from fleet.spec import for_profile, from_data
from testbed import vocab
from testbed.kube import resources


def test_covers_allows_extra_keys_but_not_extra_list_items() -> None:
    assert covers({"a": 1, "b": 2}, {"a": 1})
    assert not covers({"a": 1}, {"a": 1, "b": 2})
    assert covers([{"x": 1, "y": 2}], [{"x": 1}])
    assert not covers([{"x": 1}, {"x": 2}], [{"x": 1}])


def _server_side(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server and kwok add to a node."""
    out = copy.deepcopy(obj)
    out["metadata"].update(uid="u1", resourceVersion="7")
    out["metadata"]["labels"]["beta.kubernetes.io/os"] = "linux"
    out["spec"]["taints"].append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    out["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return out


def test_a_node_as_the_server_returns_it_matches_its_render() -> None:
    node = render.render_profile("dgx-h100", 1).nodes[0]
    actual = _server_side(node)
    assert node_matches(node, actual)
    assert resources.node_ready(actual)


def test_a_changed_label_taint_or_capacity_does_not_match() -> None:
    node = render.render_profile("dgx-h100", 1).nodes[0]
    edits: list[tuple[tuple[str, ...], str, Any]] = [
        (("metadata", "labels"), "testbed.dra.io/pool", "x"),
        (("spec",), "taints", []),
        (("status", "capacity"), "cpu", "1"),
        (("status", "allocatable"), "nvidia.com/gpu", "8"),
    ]
    for path, key, value in edits:
        actual = _server_side(node)
        target = actual
        for part in path:
            target = target[part]
        target[key] = value
        assert not node_matches(node, actual), (path, key)


def test_slice_match_ignores_generation_but_not_devices_or_owner() -> None:
    f = for_profile("dgx-h100", 1)
    (p,) = layout.desired_nodes(f)
    desired = drivers.slice_objects(f, p, "uid-1")[0]
    actual = copy.deepcopy(desired)
    actual["spec"]["pool"]["generation"] = 5
    actual["metadata"]["resourceVersion"] = "9"
    assert slice_matches(desired, actual)
    changed = copy.deepcopy(actual)
    changed["spec"]["devices"].pop()
    assert not slice_matches(desired, changed)
    reowned = copy.deepcopy(actual)
    reowned["metadata"]["ownerReferences"][0]["uid"] = "uid-2"
    assert not slice_matches(desired, reowned)


def test_the_status_patch_sets_capacity_and_drops_an_unwanted_device_plugin_count() -> None:
    node = render.render_profile("dgx-h100", 1).nodes[0]
    actual = _server_side(node)
    actual["status"]["capacity"][vocab.EXTENDED_RESOURCE_GPU] = "8"
    assert not diff.capacity_matches(node, actual)
    patch = diff.node_status_patch(node, actual)
    assert patch["status"]["capacity"][vocab.EXTENDED_RESOURCE_GPU] is None
    assert patch["status"]["allocatable"]["cpu"] == node["status"]["allocatable"]["cpu"]


def test_the_apply_body_owns_labels_annotations_and_taints_only() -> None:
    node = render.render_profile("dgx-h100", 1).nodes[0]
    body = diff.node_apply_body(node)
    assert "status" not in body
    assert body["spec"]["taints"] == node["spec"]["taints"]
    assert body["metadata"]["labels"] == node["metadata"]["labels"]


def test_with_version_copies_the_resource_version_without_touching_desired() -> None:
    desired = {"metadata": {"name": "a"}, "spec": {}}
    body = diff.with_version(desired, {"metadata": {"resourceVersion": "42"}})
    assert body["metadata"]["resourceVersion"] == "42"
    assert "resourceVersion" not in desired["metadata"]


def test_a_device_field_the_spec_dropped_is_a_difference_but_timeadded_is_not() -> None:
    f = from_data(
        {
            "name": "t",
            "pools": [{"name": "p", "profile": "l4-4gpu", "count": 1}],
            "deviceTaints": [{"share": 1.0}],
        }
    )
    (node,) = layout.desired_nodes(f)
    tainted = drivers.slice_objects(f, node, "uid-1")[0]
    actual = copy.deepcopy(tainted)
    for d in actual["spec"]["devices"]:
        d["taints"][0]["timeAdded"] = "2026-01-01T00:00:00Z"  # the API server adds it
    assert slice_matches(tainted, actual)
    plain = for_profile("l4-4gpu", 1, name="t")
    (untainted,) = layout.desired_nodes(plain)
    clean = drivers.slice_objects(plain, untainted, "uid-1")[0]
    clean["metadata"]["labels"] = tainted["metadata"]["labels"]
    assert not slice_matches(clean, actual)  # the taint must be removed
