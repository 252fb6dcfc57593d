"""Which pods and claims a run or `loadgen observe` counts as its own: one namespace, every
namespace, or namespaces by name prefix (the watch of all namespaces sees the others)."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen import cli, fleet_views, observe, records, watch_events


def _pod(namespace: str, name: str, *, node: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": "Running" if node else "Pending"},
    }


def _claim(namespace: str, name: str, pod: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [{"kind": "Pod", "name": pod}],
        },
        "status": {"allocation": {"devices": {"results": [{"driver": "x", "device": "d"}]}}},
    }


def test_one_namespace_keys_pods_by_name_and_ignores_other_namespaces() -> None:
    rec = records.new("team-a")
    watch_events.on_pod(rec, "ADDED", _pod("team-a", "p1"), 1.0)
    watch_events.on_pod(rec, "ADDED", _pod("team-b", "p2"), 1.0)
    assert list(rec.pods) == ["p1"] and rec.total.seen == 1
    assert rec.namespace == "team-a" and rec.scope.watch_namespace == "team-a"


def test_a_prefix_takes_every_matching_namespace_and_keys_by_namespace() -> None:
    rec = records.new(records.Scope(prefix="cl2-x-"))
    for ns in ("cl2-x-1", "cl2-x-2", "cl2-y-1", "default"):
        watch_events.on_pod(rec, "ADDED", _pod(ns, "job-0-abcde"), 1.0)  # the same name in each
        watch_events.on_pod(rec, "MODIFIED", _pod(ns, "job-0-abcde", node="n1"), 1.5)
    assert sorted(rec.pods) == ["cl2-x-1/job-0-abcde", "cl2-x-2/job-0-abcde"]
    assert (rec.total.seen, rec.total.scheduled, rec.total.running) == (2, 2, 2)
    assert rec.namespace == "cl2-x-*" and rec.scope.watch_namespace is None


def test_all_namespaces_take_every_pod_and_join_claims_to_their_pods() -> None:
    rec = records.new(records.Scope())
    watch_events.on_pod(rec, "ADDED", _pod("a", "p"), 1.0)
    watch_events.on_pod(rec, "ADDED", _pod("b", "p"), 1.0)
    watch_events.on_claim(rec, "ADDED", _claim("b", "p-gpu", "p"), 1.2)
    assert sorted(rec.pods) == ["a/p", "b/p"] and rec.namespace == "*"
    assert rec.claims["b/p-gpu"].pod == "b/p"  # the pod's own key: reports join on it
    assert rec.claims["b/p-gpu"].allocated == 1.2
    assert fleet_views.gpus_held_by_others(rec) == {}  # nothing is another namespace's


def test_claims_outside_the_scope_are_others() -> None:
    rec = records.new(records.Scope(prefix="cl2-"))
    watch_events.on_claim(rec, "ADDED", _claim("default", "c", "p"), 1.0)
    watch_events.on_claim(rec, "ADDED", _claim("cl2-1", "c", "p"), 1.0)
    assert list(rec.claims) == ["cl2-1/c"]


def test_an_observe_target_names_its_namespaces() -> None:
    assert observe.where(observe.Target(namespace="team-a").scope) == "namespace team-a"
    assert observe.where(observe.Target(namespace_prefix="cl2-").scope) == "namespaces cl2-*"
    assert observe.where(observe.Target().scope) == "all namespaces"
    with pytest.raises(ValueError, match="exclude each other"):
        observe.Target(namespace="a", namespace_prefix="b")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "a", "-A"], "not allowed with argument"),
        (["-A", "--namespace-prefix", "x"], "not allowed with argument"),
        ([], "one of the arguments"),
        (["--namespace-prefix", ""], "--namespace-prefix must not be empty"),
        (["-n", ""], "--namespace must not be empty"),
    ],
)
def test_observe_takes_exactly_one_non_empty_namespace_choice(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Usage errors exit 2 before any cluster is contacted.
    with pytest.raises(SystemExit) as exit_:
        cli.main(["observe", "--kubeconfig", "/nonexistent", *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
