"""kube-scheduler extender wire models (k8s.io/kube-scheduler/extender/v1).

The Go structs carry no json tags, so kube-scheduler sends and expects the Go field names:
capitalised keys (`Pod`, `NodeNames`, `FailedNodes`, `Host`, `Score`). Go decodes replies
case-insensitively, but we always send the exact names. A nil Go pointer is encoded as
`null`, so every optional field accepts `None`.

The pod and node objects stay raw JSON dicts: the extender reads a few fields and must not
reject a pod because a newer Kubernetes added a field.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

MIN_PRIORITY: Final = 0
MAX_PRIORITY: Final = 10


class _Wire(BaseModel):
    # Unknown keys are ignored (a newer scheduler may add some); types are strict so that
    # `"NodeNames": "a,b"` is an error rather than a silently wrong list.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


# The shapes of the few pod and node fields the extender reads, checked at the edge so that
# a wrong type anywhere in them is a 400 naming the field, never a crash deeper in. Lengths
# are Kubernetes' own limits (names 253, label values 63), which also bounds what a decision
# log entry can hold. Everything else in the objects is left as it came.
_Name = Annotated[str, Field(max_length=253)]


class _Meta(_Wire):
    name: _Name | None = None
    namespace: _Name | None = None
    labels: (
        dict[Annotated[str, Field(max_length=317)], Annotated[str, Field(max_length=63)]] | None
    ) = None
    annotations: dict[str, str] | None = None


class _ClaimRef(_Wire):
    name: _Name | None = None
    resourceClaimName: _Name | None = None
    resourceClaimTemplateName: _Name | None = None


class _PodSpec(_Wire):
    resourceClaims: list[_ClaimRef] | None = None


class _ClaimStatus(_Wire):
    name: _Name | None = None
    resourceClaimName: _Name | None = None


class _PodStatus(_Wire):
    resourceClaimStatuses: list[_ClaimStatus] | None = None


class _PodShape(_Wire):
    metadata: _Meta | None = None
    spec: _PodSpec | None = None
    status: _PodStatus | None = None


class _NodeShape(_Wire):
    metadata: _Meta | None = None


class NodeList(_Wire):
    """v1.NodeList as sent when `nodeCacheCapable` is false: we only keep the items."""

    items: list[dict[str, Any]] | None = None

    @field_validator("items")
    @classmethod
    def _node_shapes(cls, v: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for node in v or ():
            _NodeShape.model_validate(node)
        return v

    def names(self) -> list[str]:
        return [str((n.get("metadata") or {}).get("name", "")) for n in self.items or ()]


class ExtenderArgs(_Wire):
    """The body of a filter or prioritize call."""

    Pod: dict[str, Any]
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None

    @field_validator("Pod")
    @classmethod
    def _pod_shape(cls, v: dict[str, Any]) -> dict[str, Any]:
        _PodShape.model_validate(v)
        return v

    def candidate_names(self) -> list[str]:
        """The candidate node names, whichever way the scheduler sent them."""
        if self.NodeNames is not None:
            return self.NodeNames
        if self.Nodes is not None:
            return self.Nodes.names()
        return []


class ExtenderFilterResult(_Wire):
    """The filter reply. With `nodeCacheCapable` the scheduler reads `NodeNames`; leaving it
    out (`null`) empties the feasible list, so a passing reply always sets it."""

    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = Field(default_factory=dict)
    FailedAndUnresolvableNodes: dict[str, str] = Field(default_factory=dict)
    Error: str = ""


class HostPriority(_Wire):
    Host: str
    Score: int = Field(ge=MIN_PRIORITY, le=MAX_PRIORITY)


class HostPriorityList(RootModel[list[HostPriority]]):
    """The prioritize reply: a bare JSON array."""

    model_config = ConfigDict(strict=True, frozen=True)


class ExtenderBindingArgs(_Wire):
    """The body of a bind call (unused by the testbed's extender; here for completeness)."""

    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(_Wire):
    Error: str = ""
