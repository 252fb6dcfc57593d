"""The gates `testbed up` sets, how --feature-gates adds to them, and reading them back."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from testbed.cluster import binaries, local
from testbed.cluster import feature_gates as fg


def test_every_dra_gate_is_on_and_the_users_gates_add_or_override() -> None:
    g = fg.gates({"DRADeviceTaintRules": True, "DRAAdminAccess": False})
    assert all(g[name] for name in fg.NEEDED if name != "DRAAdminAccess")
    assert g["DRADeviceTaintRules"] is True and g["DRAAdminAccess"] is False
    assert fg.gates() == dict.fromkeys(fg.NEEDED, True)


def test_the_dra_shapes_the_testbed_uses_are_all_gated_on() -> None:
    for gate in (
        "DynamicResourceAllocation",
        "DRAPrioritizedList",
        "DRAAdminAccess",
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRAExtendedResource",
        "DRADeviceTaints",
    ):
        assert gate in fg.NEEDED


def test_flag_value_is_sorted_and_round_trips() -> None:
    value = fg.flag_value({"B": False, "A": True})
    assert value == "A=true,B=false"
    assert fg.parse(value) == {"A": True, "B": False}
    assert fg.parse(" A=TRUE, ,B=false ") == {"A": True, "B": False}
    assert fg.parse("") == {}


@pytest.mark.parametrize("bad", ["A", "A=yes", "=true", "a=true", "A=true,B"])
def test_a_malformed_gate_is_named(bad: str) -> None:
    with pytest.raises(fg.GateError, match="is not Name=true or Name=false"):
        fg.parse(bad)


def test_device_taint_rules_get_their_api_served_in_each_release() -> None:
    on = fg.gates({"DRADeviceTaintRules": True})
    assert fg.runtime_config("1.36", on) == ["resource.k8s.io/v1beta2=true"]
    assert fg.runtime_config("1.35", on) == ["resource.k8s.io/v1alpha3=true"]
    assert fg.runtime_config("1.36", fg.gates()) == []


def test_create_command_passes_the_gates_and_their_apis_to_kwokctl(tmp_path: Path) -> None:
    b = binaries.Binaries(tmp_path)
    plain = local.create_command(local.ClusterConfig(name="x", home=tmp_path), b, tmp_path / "s")
    args = dict(itertools.pairwise(plain))
    assert fg.parse(args["--kube-feature-gates"]) == fg.gates()
    assert "--kube-runtime-config" not in plain
    config = local.ClusterConfig(
        name="x", home=tmp_path, kubernetes="1.35", feature_gates={"DRADeviceTaintRules": True}
    )
    args = dict(itertools.pairwise(local.create_command(config, b, tmp_path / "s")))
    assert fg.parse(args["--kube-feature-gates"])["DRADeviceTaintRules"] is True
    assert args["--kube-runtime-config"] == "resource.k8s.io/v1alpha3=true"


def test_gates_are_read_back_from_a_components_metrics() -> None:
    text = (
        "# HELP kubernetes_feature_enabled [BETA] ...\n"
        'kubernetes_feature_enabled{name="DRAAdminAccess",stage=""} 1\n'
        'kubernetes_feature_enabled{name="DRADeviceTaintRules",stage="BETA"} 0\n'
        'kubernetes_build_info{git_version="v1.36.3"} 1\n'
    )
    assert fg.enabled_in(text) == {"DRAAdminAccess": True, "DRADeviceTaintRules": False}


def test_a_release_is_known_by_its_minor_and_found_in_a_cache_path() -> None:
    assert binaries.check_release("1.36") == "1.36"
    assert binaries.check_release("v1.36.3") == "1.36"
    with pytest.raises(binaries.UnknownRelease, match=r"no pinned module for Kubernetes '1\.2'"):
        binaries.check_release("1.2")
    path = "/c/dra-testbed/bin/kube-v1.35.4_etcd-v3.6.10_kwok-v0.8.0/kube-apiserver"
    assert binaries.release_of(path) == "1.35"
    assert binaries.release_of("/usr/local/bin/kube-apiserver") is None
