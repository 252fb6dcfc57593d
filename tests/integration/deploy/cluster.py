"""Cluster-side helpers for the deploy checks: retarget rendered objects into a test
namespace, server-side dry-run them with kubectl, stand in for CRDs the cluster lacks, and
build a kubeconfig that authenticates with a ServiceAccount token."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import deploy as s

Obj = dict[str, Any]
HOME_NAMESPACE = "dra-testbed"
CLUSTER_ROLES = r.Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = r.Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
CRD_DIR = Path(__file__).parent / "crds"


def retarget(obj: Obj, namespace: str) -> Obj:
    """The object as if the manifests' namespace were `namespace` (subjects included)."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    if meta.get("namespace") == HOME_NAMESPACE:
        meta["namespace"] = namespace
    for subject in out.get("subjects") or []:
        if subject.get("namespace") == HOME_NAMESPACE:
            subject["namespace"] = namespace
    if out["kind"] == "Namespace" and meta["name"] == HOME_NAMESPACE:
        meta["name"] = namespace
    return out


def dry_run(kubeconfig: str, obj: Obj, where: str, tmp: Path) -> str | None:
    """None if `kubectl apply --server-side --dry-run=server` (strict field validation)
    accepts `obj`, else one line naming `where` and the API server's complaint."""
    path = tmp / "object.yaml"
    path.write_text(yaml.safe_dump(obj))
    out = subprocess.run(
        [
            s.kubectl(),
            "--kubeconfig",
            kubeconfig,
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=dra-testbed-deploy-test",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if out.returncode == 0:
        return None
    return f"{where}: {(out.stderr or out.stdout).strip()}"


async def served(kube: Kube, api_version: str) -> set[str]:
    """Kinds the API server serves under `api_version` (empty if the group is unknown)."""
    path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    try:
        listing = await kube.request("GET", path)
    except Exception:  # NotFound and friends: the group/version is not served
        return set()
    return {res["kind"] for res in listing.get("resources", []) if "/" not in res["name"]}


def test_crds() -> list[Obj]:
    return [d for d in yaml.safe_load_all((CRD_DIR / "monitoring.coreos.com.yaml").read_text())]


def stand_in(crd: Obj, suffix: str) -> Obj:
    """`crd` under a throwaway group, so installing it never touches a shared CRD."""
    out = copy.deepcopy(crd)
    group = f"{crd['spec']['group'].replace('.', '-')}.{suffix}.deploytest.dra.io"
    out["spec"]["group"] = group
    out["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{group}"}
    return out


async def service_account_token(kube: Kube, namespace: str, service_account: str) -> str:
    """A token from the TokenRequest API (serviceaccounts/<name>/token)."""
    reply = await kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )
    token: str = reply["status"]["token"]
    return token


def token_kubeconfig(admin_kubeconfig: str, token: str, user: str, path: Path) -> Path:
    """A kubeconfig for the same API server that authenticates with `token`."""
    admin = yaml.safe_load(Path(admin_kubeconfig).read_text())
    ctx_name = admin.get("current-context") or admin["contexts"][0]["name"]
    ctx = next(c for c in admin["contexts"] if c["name"] == ctx_name)["context"]
    cluster = next(c for c in admin["clusters"] if c["name"] == ctx["cluster"])["cluster"]
    cluster = dict(cluster)
    ca = cluster.get("certificate-authority")
    if ca and not Path(ca).is_absolute():
        cluster["certificate-authority"] = str(Path(admin_kubeconfig).parent / ca)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": user}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
