"""The existing-cluster site reads manifests/ without kustomize (experiment.sites.cluster_objects);
what it reads must be what `kubectl kustomize` renders from the same directories, so the two
ways of deploying never drift apart."""

from __future__ import annotations

from typing import Any

from experiment.sites import cluster_objects as co
from tests.support import deploy as s

M = co.Manifests.load(s.MANIFESTS)


def keyed(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s.describe(o): o for o in objs}


def test_kwok_objects_are_the_kustomize_render() -> None:
    assert keyed(co.kwok(M)) == keyed(s.render("kwok"))


def test_device_classes_are_the_kustomize_render() -> None:
    assert keyed(M.device_classes) == keyed(s.render("deviceclasses"))


def test_shared_objects_are_the_base_render() -> None:
    base = keyed(s.render("base"))
    for obj in co.shared(M):
        assert base[s.describe(obj)] == obj


def test_the_second_scheduler_variants_start_from_is_the_kustomize_render() -> None:
    rendered = keyed(s.render("second-scheduler"))
    assert rendered[s.describe(M.scheduler_deployment)] == M.scheduler_deployment
