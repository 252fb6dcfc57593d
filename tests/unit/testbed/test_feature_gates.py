"""The gates `testbed up` sets, how --feature-gates adds to them, and reading them back."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
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


def test_generic_workload_gets_the_workload_api_served_in_each_release() -> None:
    on = fg.gates({"GenericWorkload": True})
    assert fg.runtime_config("1.37", on) == ["scheduling.k8s.io/v1beta1=true"]
    assert fg.runtime_config("1.36", on) == ["scheduling.k8s.io/v1alpha2=true"]
    assert fg.runtime_config("1.35", on) == ["scheduling.k8s.io/v1alpha1=true"]
    assert fg.runtime_config("1.37", fg.gates()) == []


def test_create_command_passes_the_gates_and_their_apis_to_kwokctl(tmp_path: Path) -> None:
    b = binaries.Binaries(tmp_path)
    plain = local.create_command(local.ClusterConfig(name="x", home=tmp_path), b, tmp_path / "s")
    args = dict(itertools.pairwise(plain))
    assert fg.parse(args["--kube-feature-gates"]) == fg.for_release(binaries.DEFAULT_RELEASE)
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
    assert binaries.versions_of(path) == binaries.Versions("v1.35.4", "v1.35.4")


def test_a_preview_is_known_by_its_pre_release_and_its_cache_path_names_both_versions() -> None:
    assert binaries.check_release("1.38-beta") == "1.38-beta"
    assert binaries.check_release("v1.38.0-beta.0") == "1.38-beta"
    assert binaries.control_plane("1.38-beta") == "1.37"
    assert binaries.control_plane("1.37") is None
    path = "/c/bin/kube-v1.38.0-beta.0+v1.37.2_etcd-v3.7.3_kwok-v0.8.0/kube-scheduler"
    assert binaries.release_of(path) == "1.38-beta"
    assert binaries.versions_of(path) == binaries.Versions("v1.38.0-beta.0", "v1.37.2")
    # Between the release before it and its own full release, in lists and experiment pairs.
    assert sorted(["1.38", "1.38-beta", "1.37"], key=binaries.order) == [
        "1.37",
        "1.38-beta",
        "1.38",
    ]
    assert binaries.at_least("1.38-beta", "1.37") and not binaries.at_least("1.37", "1.38-beta")


def test_a_preview_sets_only_the_gates_both_its_releases_know_and_let_be_set() -> None:
    newer = fg.parse_known(
        "DRAPartitionableDevices GA true true\n"
        "DRAConsumableCapacity GA true false\n"
        "SchedulerPreQueueingHints BETA true false\n"
        "TopologyAwareWorkloadScheduling BETA false false\n"
    )
    older = fg.parse_known(
        "DynamicResourceAllocation GA true true\n"
        "DRAPartitionableDevices BETA true false\n"
        "DRAConsumableCapacity BETA true false\n"
        "SchedulerPreQueueingHints ALPHA false false\n"
    )
    both = fg.common(newer, older)
    # Removed in the newer (DynamicResourceAllocation) or new in it: one component would
    # refuse it. Locked in either: set on neither.
    assert set(both) == {
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "SchedulerPreQueueingHints",
    }
    assert fg.gates(None, both) == {"DRAConsumableCapacity": True}
    with pytest.raises(fg.GateError, match="no feature gate TopologyAwareWorkloadScheduling"):
        fg.check("1.38-beta", {"TopologyAwareWorkloadScheduling": True}, both)
    # The pinned preview: what its API server serves is its control plane's.
    assert fg.for_release("1.38-beta", {"SchedulerPreQueueingHints": True})[
        "SchedulerPreQueueingHints"
    ]
    assert fg.runtime_config("1.38-beta", {"GenericWorkload": True}) == [
        "scheduling.k8s.io/v1beta1=true"
    ]


TABLE = fg.parse_known(
    "# name stage default locked\n"
    "DynamicResourceAllocation GA true true\n"
    "DRAAdminAccess BETA true false\n"
    "DRADeviceTaints ALPHA false false\n"
    "GenericWorkload BETA false false\n"
)


def test_a_release_list_is_read_line_by_line() -> None:
    assert TABLE["DynamicResourceAllocation"] == fg.Gate("GA", default=True, locked=True)
    assert TABLE["DRADeviceTaints"] == fg.Gate("ALPHA", default=False, locked=False)
    assert len(TABLE) == 4


def test_needed_gates_are_set_only_where_the_release_has_them_and_lets_them_be_set() -> None:
    g = fg.gates({"GenericWorkload": True}, TABLE)
    # Locked (GA) and absent gates are left out: a component refuses an unknown gate.
    assert g == {"DRAAdminAccess": True, "DRADeviceTaints": True, "GenericWorkload": True}


def test_a_gate_the_release_lacks_or_a_locked_gate_against_its_default_is_refused() -> None:
    with pytest.raises(fg.GateError, match=r"Kubernetes 1\.37 has no feature gate GangScheduling"):
        fg.check("1.37", {"GangScheduling": True}, TABLE)
    with pytest.raises(fg.GateError, match="locked to true"):
        fg.check("1.37", {"DynamicResourceAllocation": False}, TABLE)
    fg.check("1.37", {"DynamicResourceAllocation": True, "GenericWorkload": True}, TABLE)
    fg.check("1.37", {"Anything": True}, None)  # no list at hand: nothing to check


@pytest.mark.parametrize("release", binaries.releases())
def test_every_pinned_release_has_its_gate_list_and_every_needed_gate(release: str) -> None:
    table = fg.known(release)
    assert table is not None, f"tools/k8s: no feature-gates.txt for {release} (run pin.sh)"
    # 1.38 removes the DynamicResourceAllocation gate (GA since 1.34: always on).
    removed = {"DynamicResourceAllocation"} if binaries.at_least(release, "1.38") else set()
    assert set(fg.NEEDED) - set(table) == removed
    on = fg.for_release(release)
    assert all(on[g] for g in on)
    assert not [g for g in on if table[g].locked]


def test_the_releases_gate_lists_carry_what_changed_upstream() -> None:
    # Read from each release's own registry: GangScheduling was folded into GenericWorkload
    # in 1.37, and 1.35 has DRA's newer shapes as alpha gates that `testbed up` turns on.
    assert "GangScheduling" in (fg.known("1.36") or {})
    assert "GangScheduling" not in (fg.known("1.37") or {})
    assert (fg.known("1.35") or {})["DRAPartitionableDevices"].stage == "ALPHA"
    assert fg.for_release("1.35")["DRAPartitionableDevices"] is True
    with pytest.raises(fg.GateError, match=r"1\.37 has no feature gate GangScheduling"):
        fg.for_release("1.37", {"GangScheduling": True})


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--kubernetes", "1.34"], "no pinned module for Kubernetes '1.34'; releases: 1.35"),
        (["--kubernetes", "1.39"], "no pinned module for Kubernetes '1.39'"),
        # Not served yet: the modules it waits for are named (without go on PATH, as
        # unchecked), nothing is built.
        (
            ["--kubernetes", "1.38"],
            "Kubernetes 1.38 is not buildable yet: missing k8s.io/kubernetes@v1.38.0 ",
        ),
        (["--feature-gates", "GangScheduling=true"], "has no feature gate GangScheduling"),
        (
            ["--kubernetes", "1.36", "--feature-gates", "DRAAdminAccess=false"],
            "DRAAdminAccess is GA and locked to true in Kubernetes 1.36",
        ),
    ],
)
def test_testbed_up_refuses_a_release_or_gate_it_cannot_run_in_one_line(
    tmp_path: Path, args: list[str], says: str
) -> None:
    env = {**os.environ, "DRA_TESTBED_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "testbed", "--name", "gates-refused", "up", "--no-build", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and says in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written
