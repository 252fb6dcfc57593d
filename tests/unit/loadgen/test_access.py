"""access: the RoleBinding loadgen makes to read its run's pods, to itself only."""

from __future__ import annotations

from loadgen import access


def test_a_service_account_is_bound_as_one_and_anyone_else_as_a_user() -> None:
    assert access.subject("system:serviceaccount:dra-testbed:dra-testbed-loadgen") == {
        "kind": "ServiceAccount",
        "name": "dra-testbed-loadgen",
        "namespace": "dra-testbed",
    }
    assert access.subject("kubernetes-admin") == {
        "kind": "User",
        "apiGroup": "rbac.authorization.k8s.io",
        "name": "kubernetes-admin",
    }


def test_the_binding_names_the_role_in_the_run_namespace_for_one_subject() -> None:
    b = access.binding("loadgen-r1", "reader", "system:serviceaccount:ns:sa", {"k": "v"})
    assert b["metadata"] == {
        "name": access.BINDING,
        "namespace": "loadgen-r1",
        "labels": {"k": "v"},
    }
    assert b["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "reader",
    }
    assert [s["name"] for s in b["subjects"]] == ["sa"]
