"""The fast decoder of scheduler calls agrees with ExtenderArgs, the definition of a valid body:
whatever it accepts, ExtenderArgs accepts with the same pod and names; the rest is refused
with ExtenderArgs' own error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError

from extender import decoding
from testbed.wire import ExtenderArgs
from tests.support import extender_fuzz as fz

_, NAMES = fz.fleet_objects()


def reference(body: bytes) -> decoding.Call | None:
    try:
        a = ExtenderArgs.model_validate_json(body)
    except ValidationError:
        return None
    nodes = list(a.Nodes.items or ()) if a.NodeNames is None and a.Nodes is not None else None
    return decoding.Call(a.Pod, a.candidate_names(), nodes)


def decoded(body: bytes) -> decoding.Call | None:
    try:
        return decoding.call(body)
    except ValidationError:
        return None


@settings(
    max_examples=1500,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(call=fz.calls(NAMES, 64 * 1024))
def test_fast_path_agrees_with_extender_args(call: fz.Call) -> None:
    if call.method != "POST" or call.path not in fz.POST_PATHS or not call.body:
        return
    assert decoded(call.body) == reference(call.body)


@pytest.mark.parametrize(
    "body",
    [
        {"Pod": {"metadata": {"labels": {"k": "x" * 64}}}, "NodeNames": ["a"]},
        {"Pod": {"metadata": {"name": 5}}, "NodeNames": ["a"]},
        {"Pod": {"spec": {"resourceClaims": [{"name": None}, 3]}}, "NodeNames": []},
        {"Pod": [], "NodeNames": ["a"]},
        {"Pod": {}, "NodeNames": "a"},
        {"NodeNames": ["a"]},
    ],
)
def test_bodies_extender_args_refuses_are_refused(body: object) -> None:
    raw = json.dumps(body).encode()
    with pytest.raises(ValidationError):
        decoding.call(raw)


def test_a_valid_body_decodes_to_its_pod_and_names() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}
    call = decoding.call(json.dumps({"Pod": pod, "NodeNames": ["a", "b"]}).encode())
    assert call == decoding.Call(pod, ["a", "b"], None)
    nodes = [{"metadata": {"name": "a"}}]
    call = decoding.call(json.dumps({"Pod": pod, "Nodes": {"items": nodes}}).encode())
    assert call == decoding.Call(pod, ["a"], nodes)
