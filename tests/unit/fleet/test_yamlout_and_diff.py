"""The fast YAML writer round-trips; the reconciler's comparisons ignore what others add."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from fleet import render, yamlout
from fleet.reconcile import covers, node_matches, slice_matches
from fleet.spec import for_profile
from testbed.kube import resources

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.text(max_size=20),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=10), inner, max_size=4),
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(min_size=1, max_size=10), _values, min_size=1, max_size=5))
def test_yamlout_round_trips_through_yaml_safe_load(obj: dict[str, Any]) -> None:
    assert yaml.safe_load(yamlout.dump(obj)) == obj


def test_yamlout_round_trips_every_rendered_object() -> None:
    for profile in ("dgx-h100", "a4-highgpu-8g", "l4-4gpu"):
        objs = render.render_profile(profile, 2).objects()
        assert [d for d in yaml.safe_load_all(yamlout.dump_all(objs))] == objs


def test_reserved_words_and_numbers_stay_strings() -> None:
    obj = {"a": "true", "b": "no", "c": "110", "d": "0000:16:00.0", "e": "~", "f": ""}
    assert yaml.safe_load(yamlout.dump(obj)) == obj


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
    (p,) = render.plan(f)
    desired = render.slice_objects(f, p, "uid-1")[0]
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
