"""manifests/loadgen grants every kind loadgen creates in its run namespaces, and its
own-namespaces policy confines each of them (a kind granted but not matched there could be
written to any namespace)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import vocab
from testbed.kube import resources as r
from testbed.kube import workloads

ROOT = Path(__file__).resolve().parents[3] / "manifests" / "loadgen"

CREATED = [
    r.PODS,
    r.JOBS,
    r.RESOURCE_CLAIMS,
    r.RESOURCE_CLAIM_TEMPLATES,
    r.ROLE_BINDINGS,
    workloads.workloads(vocab.WORKLOAD_VERSION),  # RBAC and policies name no version
    workloads.pod_groups(vocab.WORKLOAD_VERSION),
]
"""What loadgen/runner.py and loadgen/access.py create inside a run namespace."""


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / name).read_text()) if d]


def _named(kind: str, name: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


@pytest.mark.parametrize("res", CREATED, ids=lambda x: f"{x.group or 'core'}/{x.plural}")
def test_loadgen_may_create_it_and_only_in_its_own_namespaces(res: r.Resource) -> None:
    role = _named("ClusterRole", "dra-testbed-loadgen", _docs("rbac.yaml"))
    granted = [
        rule
        for rule in role["rules"]
        if res.group in rule.get("apiGroups", ())
        and res.plural in rule.get("resources", ())
        and "create" in rule["verbs"]
    ]
    assert granted, f"loadgen's ClusterRole does not let it create {res.plural}"
    policy = _named(
        "ValidatingAdmissionPolicy", "dra-testbed-loadgen-own-namespaces", _docs("vap.yaml")
    )
    matched = [
        rule
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        if res.group in rule["apiGroups"]
        and res.plural in rule["resources"]
        and "CREATE" in rule["operations"]
    ]
    assert matched, f"the own-namespaces policy does not confine loadgen's {res.plural}"
