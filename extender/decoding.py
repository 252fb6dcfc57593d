"""The scheduler's call bodies, decoded fast: msgspec for what kube-scheduler sends.

`testbed.wire.ExtenderArgs` (pydantic) is the definition of a valid body and words every
error. At 1,000 candidate names it takes ~1 ms to validate a body; msgspec checks the same
shapes (the pod fields the extender reads, strict types, Kubernetes' length limits) in about
a tenth of that. A body the fast path does not take — anything malformed, or `Nodes` objects
(a scheduler that is not nodeCacheCapable) — goes through ExtenderArgs, so a bad body is
refused with the same message either way, and the fast path never accepts a body
ExtenderArgs would refuse (its shapes are the same or stricter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from testbed.wire import ExtenderArgs

_Name = Annotated[str, msgspec.Meta(max_length=253)]


class _Meta(msgspec.Struct):
    name: _Name | None = None
    namespace: _Name | None = None
    labels: (
        dict[
            Annotated[str, msgspec.Meta(max_length=317)],
            Annotated[str, msgspec.Meta(max_length=63)],
        ]
        | None
    ) = None
    annotations: dict[str, str] | None = None


class _ClaimRef(msgspec.Struct):
    name: _Name | None = None
    resourceClaimName: _Name | None = None
    resourceClaimTemplateName: _Name | None = None


class _PodSpec(msgspec.Struct):
    resourceClaims: list[_ClaimRef] | None = None


class _ClaimStatus(msgspec.Struct):
    name: _Name | None = None
    resourceClaimName: _Name | None = None


class _PodStatus(msgspec.Struct):
    resourceClaimStatuses: list[_ClaimStatus] | None = None


class _PodShape(msgspec.Struct):
    metadata: _Meta | None = None
    spec: _PodSpec | None = None
    status: _PodStatus | None = None


class _Args(msgspec.Struct):
    Pod: msgspec.Raw
    Nodes: msgspec.Raw | None = None
    NodeNames: list[str] | None = None


_args = msgspec.json.Decoder(_Args)
_shape = msgspec.json.Decoder(_PodShape)
_any = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class Call:
    pod: dict[str, Any]
    names: list[str]
    """The candidate node names, whichever way the scheduler sent them."""
    nodes: list[dict[str, Any]] | None = None
    """The Node objects when the scheduler sent only those (not nodeCacheCapable): the
    filter then answers with the objects that passed."""


def call(body: bytes) -> Call:
    """A filter or prioritize body. Raises pydantic's ValidationError for a body
    ExtenderArgs refuses."""
    try:
        if not body.isascii():
            body.decode()  # msgspec skips unknown keys without checking their UTF-8
        a = _args.decode(body)
        if a.Nodes is None:
            _shape.decode(a.Pod)
            pod = _any.decode(a.Pod)
            if isinstance(pod, dict):
                return Call(pod, a.NodeNames if a.NodeNames is not None else [])
    except (msgspec.MsgspecError, ValueError, RecursionError):  # not UTF-8; nested too deep
        pass
    full = ExtenderArgs.model_validate_json(body)
    nodes = None
    if full.NodeNames is None and full.Nodes is not None:
        nodes = list(full.Nodes.items or ())
    return Call(full.Pod, full.candidate_names(), nodes)
