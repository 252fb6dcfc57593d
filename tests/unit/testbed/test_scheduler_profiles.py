"""The shipped scheduler profiles, and their names under another scheduler."""

from __future__ import annotations

from pathlib import Path

import yaml

from testbed import scheduler_profiles
from testbed.cluster import local, paths, second_scheduler


def _shipped() -> list[dict[str, object]]:
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    return list(yaml.safe_load(local.scheduler_config_text(source, extender=True))["profiles"])


def test_the_shipped_configuration_serves_gangs_with_every_node_scored() -> None:
    profiles = {p["schedulerName"]: p for p in _shipped()}
    gang = profiles[scheduler_profiles.gang_profile(None)]
    assert gang["percentageOfNodesToScore"] == 100
    assert "percentageOfNodesToScore" not in profiles["default-scheduler"]


def test_another_scheduler_serves_its_gangs_under_its_own_name() -> None:
    renamed = scheduler_profiles.renamed(_shipped(), "knob")
    assert [p["schedulerName"] for p in renamed] == ["knob", "knob-gang"]
    assert renamed[1]["percentageOfNodesToScore"] == 100


def test_profiles_other_than_the_two_are_not_carried_over() -> None:
    profiles = [{"schedulerName": "default-scheduler"}, {"schedulerName": "mine"}]
    assert scheduler_profiles.renamed(profiles, "x") == [{"schedulerName": "x"}]
    assert scheduler_profiles.renamed([], "x") == [{"schedulerName": "x"}]


def test_the_second_scheduler_keeps_the_gang_profile(tmp_path: Path) -> None:
    doc = yaml.safe_load(second_scheduler.config_text(tmp_path / "kc", "plain-scheduler"))
    names = [p["schedulerName"] for p in doc["profiles"]]
    assert names == ["plain-scheduler", "plain-scheduler-gang"]
    assert "extenders" not in doc
