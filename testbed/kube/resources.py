"""Resource kinds and their REST paths, and views over objects as plain dicts (name, labels,
node readiness): pure, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource, enough to build its URL paths."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection path, or an object path when `name` is given."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        return base


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
JOBS = Resource("batch", "v1", "jobs", "Job", namespaced=True)
ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", namespaced=True
)
SELF_SUBJECT_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False
)
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    namespaced=False,
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
DEVICE_CLASSES = Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True
)
WORKLOADS = Resource("scheduling.k8s.io", "v1beta1", "workloads", "Workload", namespaced=True)
POD_GROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", namespaced=True)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)

BUILTIN: dict[str, Resource] = {
    r.kind: r
    for r in (
        NAMESPACES,
        NODES,
        PODS,
        EVENTS,
        SERVICE_ACCOUNTS,
        CONFIG_MAPS,
        JOBS,
        LEASES,
        RESOURCE_SLICES,
        DEVICE_CLASSES,
        RESOURCE_CLAIMS,
        RESOURCE_CLAIM_TEMPLATES,
        WORKLOADS,
        POD_GROUPS,
        CRDS,
    )
}


def resource_of(path: str) -> str:
    """The resource plural a request path addresses (`pods` for a pod's path, status
    subresource or collection); the last segment for non-resource paths like /version."""
    segs = path.split("?", 1)[0].strip("/").split("/")
    if segs[0] == "api":
        rest = segs[2:]
    elif segs[0] == "apis":
        rest = segs[3:]
    else:
        return segs[-1]
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    return rest[0] if rest else segs[-1]


def name_of(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def namespace_of(obj: dict[str, Any]) -> str | None:
    ns = obj.get("metadata", {}).get("namespace")
    return str(ns) if ns else None


def key_of(obj: dict[str, Any]) -> str:
    """`namespace/name` for namespaced objects, `name` otherwise (client-go's cache key)."""
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("labels") or {})


def node_ready(node: dict[str, Any]) -> bool:
    """The node's Ready condition is True (kwok's stages set it as a kubelet would)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def label_selector(labels: dict[str, str]) -> str:
    """An equality-based label selector string from a dict."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
