"""kube-scheduler extender wire models (k8s.io/kube-scheduler/extender/v1).

The Go structs carry no json tags, so kube-scheduler sends and expects the Go field names:
capitalised keys (`Pod`, `NodeNames`, `FailedNodes`, `Host`, `Score`). Go decodes replies
case-insensitively, but we always send the exact names. A nil Go pointer is encoded as
`null`, so every optional field accepts `None`.

The pod and node objects stay raw JSON dicts: the extender reads a few fields and must not
reject a pod because a newer Kubernetes added a field.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, RootModel

MIN_PRIORITY: Final = 0
MAX_PRIORITY: Final = 10


class _Wire(BaseModel):
    # Unknown keys are ignored (a newer scheduler may add some); types are strict so that
    # `"NodeNames": "a,b"` is an error rather than a silently wrong list.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class NodeList(_Wire):
    """v1.NodeList as sent when `nodeCacheCapable` is false: we only keep the items."""

    items: list[dict[str, Any]] | None = None

    def names(self) -> list[str]:
        return [str((n.get("metadata") or {}).get("name", "")) for n in self.items or ()]


class ExtenderArgs(_Wire):
    """The body of a filter or prioritize call."""

    Pod: dict[str, Any]
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None

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
