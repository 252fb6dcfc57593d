"""The extender wire format, exactly as kube-scheduler's Go encoder writes and reads it."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from testbed import wire

# What encoding/json makes of ExtenderArgs{Pod: &pod, Nodes: nil, NodeNames: &names}: Go
# field names as keys, the nil pointer as null.
SCHEDULER_FILTER_BODY = json.dumps(
    {
        "Pod": {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "creationTimestamp": None},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]},
            "status": {},
        },
        "Nodes": None,
        "NodeNames": ["node-a", "node-b"],
    }
)


def test_nodecachecapable_args_decode_to_names() -> None:
    args = wire.ExtenderArgs.model_validate_json(SCHEDULER_FILTER_BODY)
    assert args.candidate_names() == ["node-a", "node-b"]
    assert args.Pod["metadata"]["name"] == "p"
    assert args.Nodes is None


def test_full_node_list_args_decode_to_names() -> None:
    body = {"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "x"}}]}, "NodeNames": None}
    assert wire.ExtenderArgs.model_validate_json(json.dumps(body)).candidate_names() == ["x"]


def test_unknown_keys_are_ignored() -> None:
    body = {"Pod": {}, "NodeNames": [], "SomethingNew": 1}
    assert wire.ExtenderArgs.model_validate_json(json.dumps(body)).NodeNames == []


@pytest.mark.parametrize(
    "body",
    [
        "{",
        "[]",
        '{"NodeNames": ["a"]}',
        '{"Pod": null, "NodeNames": ["a"]}',
        '{"Pod": {}, "NodeNames": "a,b"}',
        '{"Pod": {}, "NodeNames": [1, 2]}',
        '{"Pod": [], "NodeNames": []}',
    ],
)
def test_bad_args_are_rejected(body: str) -> None:
    with pytest.raises(ValidationError):
        wire.ExtenderArgs.model_validate_json(body)


def test_filter_result_uses_go_field_names() -> None:
    result = wire.ExtenderFilterResult(
        NodeNames=["a"], FailedNodes={"b": "why"}, FailedAndUnresolvableNodes={"c": "never"}
    )
    out = json.loads(result.model_dump_json(exclude_none=True))
    assert out == {
        "NodeNames": ["a"],
        "FailedNodes": {"b": "why"},
        "FailedAndUnresolvableNodes": {"c": "never"},
        "Error": "",
    }


def test_filter_result_round_trips() -> None:
    text = '{"NodeNames":["a"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}'
    assert wire.ExtenderFilterResult.model_validate_json(text).NodeNames == ["a"]


def test_prioritize_reply_is_a_bare_array() -> None:
    reply = wire.HostPriorityList([wire.HostPriority(Host="a", Score=10)])
    assert json.loads(reply.model_dump_json()) == [{"Host": "a", "Score": 10}]
    back = wire.HostPriorityList.model_validate_json('[{"Host":"b","Score":0}]')
    assert back.root[0].Host == "b"


@pytest.mark.parametrize("score", [-1, 11])
def test_scores_outside_zero_to_ten_are_invalid(score: int) -> None:
    with pytest.raises(ValidationError):
        wire.HostPriority(Host="a", Score=score)
