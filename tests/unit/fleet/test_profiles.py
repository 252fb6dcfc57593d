"""Hardware profiles: the built-ins mirror real machines; bad profiles fail naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet import profiles
from fleet.profiles import ProfileError

BUILTIN = profiles.builtin()


def _minimal(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "tiny",
        "gpu": {
            "productName": "X",
            "architecture": "Y",
            "cudaComputeCapability": "9.0.0",
            "driverVersion": "550.54.15",
            "cudaDriverVersion": "12.4.0",
            "memory": "1Gi",
        },
        "nics": {"n": {"rdma": True, "pciVendor": "V", "pciDevice": "D"}},
        "roots": [{"bus": 16, "gpus": 1, "nics": 1}],
    }
    data.update(over)
    return data


def test_the_five_required_profiles_are_built_in() -> None:
    assert {"dgx-h100", "a4-highgpu-8g", "h100-4nic", "l4-4gpu", "cpu-only"} <= set(BUILTIN)


def test_dgx_h100_has_one_gpu_and_one_rdma_nic_per_root_on_two_numa_nodes() -> None:
    p = BUILTIN["dgx-h100"]
    assert (p.gpu_count, p.nic_count, p.numa_nodes) == (8, 8, 2)
    assert all(r.gpus == 1 and r.nics == 1 for r in p.roots)
    assert all(m.rdma for m in p.nics.values())
    assert p.gpu is not None and p.gpu.product_name == "NVIDIA H100 80GB HBM3"


def test_a4_highgpu_8g_has_8_b200_8_rdma_nics_and_2_host_nics() -> None:
    p = BUILTIN["a4-highgpu-8g"]
    rdma = sum(r.nics for r in p.roots if p.nics[p.nic_model_name(r)].rdma)
    assert (p.gpu_count, p.nic_count, rdma) == (8, 10, 8)
    assert p.gpu is not None and "B200" in p.gpu.product_name
    assert p.gce_topology


def test_h100_4nic_puts_two_gpus_on_each_nic_root() -> None:
    p = BUILTIN["h100-4nic"]
    assert (p.gpu_count, p.nic_count) == (8, 4)
    assert all(r.gpus == 2 and r.nics == 1 for r in p.roots)


def test_l4_host_has_four_gpus_and_no_rdma() -> None:
    p = BUILTIN["l4-4gpu"]
    assert p.gpu_count == 4
    assert not any(m.rdma for m in p.nics.values())


def test_cpu_only_has_no_gpus() -> None:
    p = BUILTIN["cpu-only"]
    assert p.gpu is None and p.gpu_count == 0


def test_a_minimal_profile_parses() -> None:
    assert profiles.parse(_minimal(), "x").gpu_count == 1


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"roots": [{"bus": 16, "gpus": 129}]}, "129 GPUs in one ResourceSlice"),
        ({"roots": [{"bus": 16, "nics": 1, "nic": "nope"}]}, "roots[0].nic: unknown NIC model"),
        ({"gpu": None}, "`gpu` (the GPU model) is missing"),
        ({"name": "Not_DNS"}, "name:"),
        ({"roots": [{"bus": 16, "gpus": 1}, {"bus": 16, "nics": 1}]}, "share a bus"),
        ({"roots": [{"bus": 250, "gpus": 1}]}, "roots.0.bus"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_profiles_fail_naming_the_field(over: dict[str, Any], needle: str) -> None:
    with pytest.raises(ProfileError) as e:
        profiles.parse(_minimal(**over), "test.yaml")
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_a_gpu_string_attribute_over_64_characters_is_rejected() -> None:
    data = _minimal()
    data["gpu"] = {**data["gpu"], "productName": "X" * 65}
    with pytest.raises(ProfileError, match=r"gpu\.productName"):
        profiles.parse(data, "test.yaml")


def test_versions_must_be_semantic() -> None:
    data = _minimal()
    data["gpu"] = {**data["gpu"], "driverVersion": "570.124.06.1"}
    with pytest.raises(ProfileError, match="driverVersion"):
        profiles.parse(data, "test.yaml")


def test_user_profiles_load_from_a_directory_and_override_builtins(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "name: dgx-h100\nnics: {n: {rdma: false, pciVendor: V, pciDevice: D}}\n"
        "roots: [{bus: 1, nics: 1}]\n---\nname: other\n"
    )
    extra = profiles.load_paths([tmp_path])
    assert set(extra) == {"dgx-h100", "other"}
    merged = profiles.catalogue(extra)
    assert merged["dgx-h100"].gpu_count == 0
    assert "l4-4gpu" in merged


def test_an_unreadable_profile_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ProfileError, match="cannot read profile file"):
        profiles.load_paths([bad])
