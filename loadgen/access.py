"""Reading the run's own pods without a cluster-wide right to read pods.

RBAC cannot grant a ClusterRole's verbs in namespaces that do not exist yet, and loadgen's
namespaces are made at run time: a ServiceAccount that could watch its run's pods through
its ClusterRole could read every pod spec in the cluster. With `--pod-reader-role ROLE`
(manifests/loadgen: ClusterRole dra-testbed-loadgen-run-reader, pods get/list/watch),
loadgen instead binds ROLE to its own identity inside each run namespace it made (its
ClusterRole may `bind` that role only, and create RoleBindings only in its own namespaces,
vap.yaml), and waits until the API server's authorizer says so. The binding goes with the
namespace.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from testbed.kube import resources
from testbed.kube.client import Kube

BINDING: Final = "dra-testbed-loadgen-run-reader"
"""The RoleBinding's name in each run namespace."""
SA_PREFIX: Final = "system:serviceaccount:"


async def whoami(kube: Kube) -> str:
    """The username the API server knows this client by (SelfSubjectReview)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    review = await kube.create(resources.SELF_SUBJECT_REVIEWS, body)
    return str(review["status"]["userInfo"]["username"])


def subject(username: str) -> dict[str, str]:
    """The RBAC subject of `username`: a ServiceAccount's own form, else a User."""
    if username.startswith(SA_PREFIX) and username.count(":") == 3:
        namespace, name = username.removeprefix(SA_PREFIX).split(":")
        return {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": username}


def binding(namespace: str, role: str, username: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": BINDING, "namespace": namespace, "labels": dict(labels)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject(username)],
    }


async def may_watch_pods(kube: Kube, namespace: str) -> bool:
    for verb in ("list", "watch"):
        review = await kube.create(
            resources.SELF_SUBJECT_ACCESS_REVIEWS,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {"namespace": namespace, "verb": verb, "resource": "pods"}
                },
            },
        )
        if not (review.get("status") or {}).get("allowed"):
            return False
    return True


class NotGranted(Exception):
    """The binding was made but the authorizer did not honour it in time."""


async def grant_pod_reads(
    kube: Kube, namespace: str, role: str, labels: dict[str, str], within: float = 30.0
) -> None:
    """Bind `role` to this client's identity in `namespace`, then wait (up to `within`
    seconds) until it may list and watch pods there: the authorizer learns of a new binding
    from its own watch, a moment later."""
    await kube.create(resources.ROLE_BINDINGS, binding(namespace, role, await whoami(kube), labels))
    deadline = time.monotonic() + within
    while not await may_watch_pods(kube, namespace):
        if time.monotonic() > deadline:
            raise NotGranted(
                f"RoleBinding {BINDING} to ClusterRole {role} in {namespace} made, but pods "
                f"there were still not readable after {within:g}s"
            )
        await asyncio.sleep(0.2)
