"""The CLI without a cluster: render output, one-line errors and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet import cli


def _run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    return int(e.value.code or 0)


def test_render_writes_all_objects_as_yaml_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["render", "--profile", "dgx-h100", "--nodes", "2", "--name", "r"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["DeviceClass"] * 4 + ["Node"] * 2 + ["ResourceSlice"] * 4


def test_render_to_a_directory_writes_one_file_per_kind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run(["render", "--profile", "l4-4gpu", "--nodes", "3", "--output-dir", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "deviceclasses.yaml",
        "nodes.yaml",
        "resourceslices.yaml",
    ]
    assert len(list(yaml.safe_load_all((out / "nodes.yaml").read_text()))) == 3


def test_render_kwok_shards_labels_the_one_pool_fleet_round_robin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["render", "--profile", "cpu-only", "--nodes", "5", "--kwok-shards", "2"]
    assert _run(argv) == 0
    nodes = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d and d["kind"] == "Node"]
    shards = [n["metadata"]["labels"]["testbed.dra.io/kwok-shard"] for n in nodes]
    assert shards == ["0", "1", "0", "1", "0"]


def test_render_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["render", "--profile", "cpu-only", "--nodes", "1", "--format", "json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4 + 1 + 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["render", "--profile", "nope", "--nodes", "1"], "unknown profile 'nope'"),
        (["render", "--profile", "dgx-h100"], "--profile needs --nodes"),
        (["render"], "give a fleet spec"),
        (["render", "-f", "/nonexistent.yaml"], "cannot read"),
        (["apply", "--profile", "nope", "--nodes", "1"], "unknown profile"),
        (["render", "--profile", "dgx-h100", "--nodes", "1", "--name", "Bad_Name"], "name"),
        (["render", "-f", "spec.yaml", "--kwok-shards", "2"], "--kwok-shards go with --profile"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


def test_a_negative_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["apply", "--profile", "dgx-h100", "--nodes", "-3"]) == 2
    assert "negative" in capsys.readouterr().err
    assert _run(["apply", "--profile", "dgx-h100", "--nodes", "3", "--kwok-shards", "0"]) == 2
    assert "--kwok-shards: must be at least 1" in capsys.readouterr().err


def test_a_spec_breaking_a_slice_limit_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "name: big\npools: [{name: p, profile: huge, count: 1}]\nprofiles:\n"
        "- name: huge\n  nics: {n: {rdma: true, pciVendor: V, pciDevice: D}}\n"
        "  roots: [{bus: 1, nics: 129}]\n"
    )
    assert _run(["apply", "-f", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "spec.profiles.0.roots" in err and "128 devices per slice" in err


def test_an_unreachable_cluster_is_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    argv = ["apply", "--profile", "dgx-h100", "--nodes", "1", "--kubeconfig", str(kubeconfig)]
    assert _run(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "cannot reach the API server" in err and len(err.splitlines()) == 1


def test_a_missing_kubeconfig_is_bad_input_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["status", "--kubeconfig", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_no_command_prints_help_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([]) == 2
    assert "render" in capsys.readouterr().err


def test_profiles_lists_the_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["profiles"]) == 0
    assert "a4-highgpu-8g" in capsys.readouterr().out


def test_taint_needs_exactly_one_of_share_and_clear(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["taint", "--name", "x"]) == 2
    assert "give --share S to taint, or --clear" in capsys.readouterr().err
    assert _run(["taint", "--name", "x", "--share", "0.1", "--clear"]) == 2
    assert _run(["taint", "--name", "x", "--share", "1.5"]) == 2
    assert "not a share in (0, 1]" in capsys.readouterr().err


def test_profiles_lists_the_gpu_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["profiles"]) == 0
    out = capsys.readouterr().out
    assert "dgx-h100-mig" in out and "mig" in out and "shared" in out
