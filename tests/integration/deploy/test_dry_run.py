"""Every manifest passes `kubectl apply --server-side --dry-run=server` (strict field
validation) against the real local API server. Namespaced objects are retargeted into a test
namespace; kinds whose CRD the cluster does not serve (Fleet, kwok's Stage, the Operator's
ServiceMonitor/PrometheusRule) are validated against their CRD installed under a throwaway
API group, so shared CRDs are never touched."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.integration.deploy import cluster as c
from tests.support import deploy as s
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

Obj = dict[str, Any]


def render_kwok_overlay() -> list[Obj]:
    """manifests/kwok as `kubectl apply -k` sees it: kwok's release base is generated into
    the directory from the pinned module, so nothing is fetched."""
    out = subprocess.run(
        [s.kubectl(), "kustomize", str(s.MANIFESTS / "kwok")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, f"kubectl kustomize manifests/kwok: {out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def all_manifests(tmp: Path) -> list[tuple[str, Obj]]:
    """(where, object) for every object of every kustomization, every loose manifest (the
    Fleet examples, loadgen's admin-access grant), and the kwok overlay; duplicates (base
    inside kind) once."""
    found: list[tuple[str, Obj]] = []
    for name in s.KUSTOMIZATIONS:
        found += [(s.origin(o), o) for o in s.render(name)]
    loose = [*sorted((s.MANIFESTS / "fleet" / "examples").glob("*.yaml")), s.ADMIN_ACCESS_GRANT]
    for path in loose:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append((f"{path.relative_to(s.REPO)}: {s.describe(doc)}", doc))
    for o in render_kwok_overlay():
        found.append((f"manifests/kwok (kwok release or stages.yaml): {s.describe(o)}", o))
    unique: dict[str, tuple[str, Obj]] = {}
    for where, o in found:
        unique.setdefault(json.dumps(o, sort_keys=True), (where, o))
    return list(unique.values())


async def test_every_manifest_passes_server_side_dry_run(
    kube: Kube, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    manifests = all_manifests(tmp_path)
    crds = {
        (crd["spec"]["group"], crd["spec"]["names"]["kind"]): crd
        for crd in [
            *(o for _, o in manifests if o["kind"] == "CustomResourceDefinition"),
            *c.test_crds(),
        ]
    }
    suffix = secrets.token_hex(3)
    installed: list[str] = []
    failures: list[str] = []
    served: dict[str, set[str]] = {}
    try:
        for where, obj in manifests:
            obj = c.retarget(obj, namespace)
            api_version = obj["apiVersion"]
            if api_version not in served:
                served[api_version] = await c.served(kube, api_version)
            if obj["kind"] not in served[api_version]:
                group, _, version = api_version.rpartition("/")
                crd = crds.get((group, obj["kind"]))
                if crd is None:
                    failures.append(
                        f"{where}: the cluster does not serve {api_version} "
                        f"{obj['kind']} and no manifest defines its CRD"
                    )
                    continue
                standin = c.stand_in(crd, suffix)
                name = standin["metadata"]["name"]
                if name not in installed:
                    await kube.create(r.CRDS, standin)
                    installed.append(name)
                    await wait_for(
                        kube,
                        r.CRDS,
                        lambda o: any(
                            cond["type"] == "Established" and cond["status"] == "True"
                            for cond in (o.get("status") or {}).get("conditions") or []
                        ),
                        name=name,
                        timeout=60,
                    )
                obj = {**obj, "apiVersion": f"{standin['spec']['group']}/{version}"}
            problem = c.dry_run(kubeconfig, obj, where, tmp_path)
            if problem:
                failures.append(problem)
    finally:
        for name in installed:
            await kube.delete(r.CRDS, name)
    assert not failures, f"{len(failures)} of {len(manifests)} objects rejected:\n" + "\n".join(
        failures
    )
    assert len(manifests) > 40


async def test_a_bad_manifest_is_rejected_and_named(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    (dep,) = [
        o
        for o in s.render("base")
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "dra-testbed-extender"
    ]
    dep = c.retarget(dep, namespace)
    dep["spec"]["replicaz"] = 2  # a typo: strict validation must refuse it
    problem = c.dry_run(kubeconfig, dep, s.origin(dep), tmp_path)
    assert problem is not None
    assert problem.startswith("manifests/extender/deployment.yaml: Deployment ")
    assert "replicaz" in problem
