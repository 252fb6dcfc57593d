"""API limits checked before any write: each names the spec field and the limit it breaks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import cli, limits, render
from fleet.spec import SpecError, from_data


def _run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    return int(e.value.code or 0)


def _slice(devices: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"devices": devices, **spec},
    }


def test_a_ten_megabyte_spec_exits_2_naming_the_file_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pools = [
        {"name": f"p{i}", "profile": "cpu-only", "count": 1, "labels": {"x.io/k": "v" * 60}}
        for i in range(100_000)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"name": "big", "pools": pools}))
    assert path.stat().st_size > 10_000_000
    assert _run(["render", "-f", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"fleet: error: {path}: spec.pools: ")
    assert "ConfigMap" in err and len(err.splitlines()) == 1


def test_300_kilobytes_of_annotations_exit_2_naming_spec_annotations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {
        "name": "ann",
        "annotations": {f"a.io/k{i}": "v" * 1000 for i in range(300)},
        "pools": [{"name": "p", "profile": "cpu-only", "count": 1}],
    }
    path = tmp_path / "ann.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert _run(["apply", "-f", str(path), "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: spec.annotations: " in err and "256.0 KiB" in err


def test_annotations_just_under_the_limit_are_accepted() -> None:
    value = "v" * (limits.MAX_ANNOTATIONS_BYTES - 200)
    f = from_data(
        {
            "annotations": {"a.io/k": value},
            "pools": [{"name": "p", "profile": "cpu-only", "count": 1}],
        }
    )
    assert render.render(f).nodes[0]["metadata"]["annotations"]["a.io/k"] == value


def test_an_annotation_key_that_is_not_a_qualified_name_is_refused() -> None:
    with pytest.raises(SpecError, match=r"annotations: .* not a valid label key"):
        from_data(
            {
                "annotations": {"bad key": "x"},
                "pools": [{"name": "p", "profile": "cpu-only", "count": 1}],
            }
        )


def test_a_node_over_the_object_limit_names_the_pool() -> None:
    labels = {f"x.io/k{i}": "v" * 63 for i in range(20_000)}
    f = from_data(
        {"name": "n", "pools": [{"name": "p", "profile": "cpu-only", "count": 1, "labels": labels}]}
    )
    with pytest.raises(SpecError) as e:
        render.validate(f)
    # The record fills first (labels are in the spec): either way the field is named.
    assert "spec.pools" in str(e.value) or "pools[0]" in str(e.value)


def test_check_object_measures_annotations_and_size() -> None:
    big = {"kind": "Node", "metadata": {"name": "n", "annotations": {"a": "x" * 300_000}}}
    with pytest.raises(limits.LimitError, match="annotations"):
        limits.check_object(big)
    huge = {"kind": "Node", "metadata": {"name": "n"}, "spec": {"x": "y" * 2_000_000}}
    with pytest.raises(limits.LimitError, match=r"etcd accepts 1\.5 MiB"):
        limits.check_object(huge)


def test_slice_device_counts_depend_on_advanced_features() -> None:
    plain = [{"name": f"d{i}"} for i in range(100)]
    limits.check_slice(_slice(plain))
    counted = [
        {
            "name": f"d{i}",
            "consumesCounters": [{"counterSet": "c", "counters": {"m": {"value": "1"}}}],
        }
        for i in range(65)
    ]
    with pytest.raises(limits.LimitError, match="64 per slice with taints or counters"):
        limits.check_slice(_slice(counted))


def test_counter_sets_and_counters_are_bounded() -> None:
    sets = [{"name": f"c{i}", "counters": {"m": {"value": "1"}}} for i in range(9)]
    with pytest.raises(limits.LimitError, match="9 counter sets; the API allows 8"):
        limits.check_slice(_slice([], sharedCounters=sets))
    many = {f"m{i}": {"value": "1"} for i in range(33)}
    with pytest.raises(limits.LimitError, match="33 counters; the API allows 32"):
        limits.check_slice(_slice([], sharedCounters=[{"name": "c", "counters": many}]))
    with pytest.raises(limits.LimitError, match="not a DNS label"):
        limits.check_slice(
            _slice([], sharedCounters=[{"name": "C_1", "counters": {"m": {"value": "1"}}}])
        )


def test_devices_and_counters_never_share_a_slice() -> None:
    both = _slice(
        [{"name": "d"}], sharedCounters=[{"name": "c", "counters": {"m": {"value": "1"}}}]
    )
    with pytest.raises(limits.LimitError, match="devices and sharedCounters"):
        limits.check_slice(both)


def test_device_names_attribute_names_and_taints_are_checked() -> None:
    with pytest.raises(limits.LimitError, match="device name"):
        limits.check_slice(_slice([{"name": "gpu_0"}]))
    with pytest.raises(limits.LimitError, match="C identifier"):
        limits.check_slice(_slice([{"name": "d", "attributes": {"x" * 33: {"int": 1}}}]))
    taints = [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(17)]
    with pytest.raises(limits.LimitError, match="17 taints; the API allows 16"):
        limits.check_slice(_slice([{"name": "d", "taints": taints}]))
    two = [{"counterSet": f"c{i}", "counters": {"m": {"value": "1"}}} for i in range(3)]
    with pytest.raises(limits.LimitError, match="3 counter sets; the API allows 2"):
        limits.check_slice(_slice([{"name": "d", "consumesCounters": two}]))
