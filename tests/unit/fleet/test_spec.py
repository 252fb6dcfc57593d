"""The fleet spec: file shapes, defaults, and one-line errors that name the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import spec
from fleet.spec import SpecError
from testbed import vocab

EXAMPLES = Path(__file__).parents[3] / "manifests" / "fleet" / "examples"


def _fleet(**spec_over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"pools": [{"name": "a", "profile": "dgx-h100", "count": 2}]}
    body.update(spec_over)
    return {
        "apiVersion": spec.API_VERSION,
        "kind": "Fleet",
        "metadata": {"name": "f"},
        "spec": body,
    }


def test_a_fleet_object_parses_with_defaults() -> None:
    f = spec.from_data(_fleet())
    assert f.name == "f"
    assert f.spec.total_nodes == 2
    assert f.spec.taints == [spec.KWOK_TAINT]
    assert f.spec.topology.block_label == vocab.LABEL_BLOCK
    assert not f.spec.extended_resources


def test_a_bare_spec_with_a_name_parses_too() -> None:
    f = spec.from_data({"name": "g", "pools": [{"name": "a", "profile": "x", "count": 1}]})
    assert f.name == "g"


def test_the_name_flag_overrides_the_file() -> None:
    assert spec.from_data(_fleet(), name="other").name == "other"


def test_to_object_round_trips() -> None:
    f = spec.from_data(_fleet(seed=3, extendedResources=True))
    assert spec.from_data(f.to_object()) == f


def test_for_profile_is_one_pool_named_after_the_profile() -> None:
    f = spec.for_profile("dgx-h100", 5, name="n1")
    assert (f.name, f.spec.pools[0].name, f.spec.pools[0].count) == ("n1", "dgx-h100", 5)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (_fleet(pools=[{"name": "a", "profile": "p", "count": -1}]), "spec.pools.0.count"),
        (_fleet(pools=[]), "spec.pools"),
        (
            _fleet(pools=[{"name": "a", "profile": "p", "count": 1}] * 2),
            "duplicate pool name 'a'",
        ),
        (_fleet(pools=[{"name": "A_b", "profile": "p", "count": 1}]), "not a DNS label"),
        # A trailing newline is not part of a DNS label (regex `$` would let it through).
        (_fleet(pools=[{"name": "a\n", "profile": "p", "count": 1}]), "not a DNS label"),
        (_fleet(labels={"k": "v\n"}), "not a valid label value"),
        (_fleet(taints=[{"key": "k", "effect": "Sometimes"}]), "spec.taints.0.effect"),
        (_fleet(labels={"bad key!": "v"}), "not a valid label key"),
        (_fleet(topology={"hostsPerRack": 0}), "hostsPerRack"),
        (_fleet(colour="red"), "spec.colour"),
        ({**_fleet(), "kind": "Node"}, "kind is 'Node'"),
        ([1, 2], "expected a mapping"),
    ],
)
def test_bad_specs_fail_in_one_line_naming_the_field(data: Any, needle: str) -> None:
    with pytest.raises(SpecError) as e:
        spec.from_data(data, source="f.yaml")
    assert needle in str(e.value)
    assert str(e.value).startswith("f.yaml: ")
    assert "\n" not in str(e.value)


def test_load_reads_yaml_and_json(tmp_path: Path) -> None:
    y = tmp_path / "f.yaml"
    y.write_text(yaml.safe_dump(_fleet()))
    j = tmp_path / "f.json"
    j.write_text('{"name": "j", "pools": [{"name": "a", "profile": "p", "count": 1}]}')
    assert spec.load(y).name == "f"
    assert spec.load(j).name == "j"


def test_load_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        spec.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: [\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        spec.load(bad)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_in_manifests_is_a_valid_fleet(path: Path) -> None:
    assert spec.load(path).spec.total_nodes > 0


def test_there_is_an_example_per_builtin_profile() -> None:
    used = {p.profile for path in EXAMPLES.glob("*.yaml") for p in spec.load(path).spec.pools}
    assert {"dgx-h100", "a4-highgpu-8g", "h100-4nic", "l4-4gpu", "cpu-only"} <= used
