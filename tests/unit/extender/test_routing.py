"""Which pods reach the filter: those asking for the placement resource. A pod that requires a
placement without asking for it is said once, since its requirement is not enforced."""

from __future__ import annotations

import logging

import pytest

from testbed import scheduler_profiles, vocab
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import cluster_objects, core_of, pair_pod

ALIGNED = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"}


def test_a_required_placement_without_the_resource_is_said_once_per_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = core_of(cluster_objects())
    said: list[str] = []
    core.on_unjudged = said.append
    pod = pair_pod(annotations=ALIGNED)
    with caplog.at_level(logging.WARNING, logger="extender.core"):
        core.prioritize(pod, ["un", "al"])
        core.prioritize(pod, ["un", "al"])
    assert said.count("requirement_not_routed") == 1
    (record,) = [r for r in caplog.records if "requires a placement" in r.getMessage()]
    assert vocab.PLACEMENT_RESOURCE in record.getMessage() and "/p " in record.getMessage()


@pytest.mark.parametrize("where", ["limits", "requests"])
def test_a_pod_that_asks_for_the_placement_resource_is_routed(where: str) -> None:
    core = core_of(cluster_objects())
    said: list[str] = []
    core.on_unjudged = said.append
    pod = pair_pod(annotations=ALIGNED)
    main = pod["spec"]["containers"][0]
    main["resources"] = {where: objects.routed_to_filter({}, ALIGNED)["limits"]}
    core.prioritize(pod, ["un", "al"])
    assert "requirement_not_routed" not in said


def test_pods_that_require_nothing_are_not_told_anything() -> None:
    core = core_of(cluster_objects())
    said: list[str] = []
    core.on_unjudged = said.append
    core.prioritize(pair_pod(), ["un", "al"])
    assert "requirement_not_routed" not in said


def test_a_pod_naming_the_gang_profile_without_a_gang_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = core_of(cluster_objects())
    said: list[str] = []
    core.on_unjudged = said.append
    loner = pair_pod()
    loner["spec"]["schedulerName"] = scheduler_profiles.gang_profile(None)
    with caplog.at_level(logging.WARNING, logger="extender.core"):
        core.prioritize(loner, ["un", "al"])
        core.prioritize(loner, ["un", "al"])
    assert said.count("gang_profile_without_gang") == 1
    assert any("belongs to no gang" in r.getMessage() for r in caplog.records)


def test_a_gang_pod_on_the_gang_profile_is_not_told_anything() -> None:
    core = core_of(cluster_objects())
    said: list[str] = []
    core.on_unjudged = said.append
    member = pair_pod(labels={vocab.LABEL_GANG: "g"})
    member["spec"]["schedulerName"] = scheduler_profiles.gang_profile(None)
    core.prioritize(member, ["un", "al"])
    assert "gang_profile_without_gang" not in said
