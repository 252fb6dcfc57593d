"""The one wrapper of tools/k8s's pinned-build scripts (build.sh, scheduler-perf.sh), against
the scripts themselves: their shared contract without building anything (`--releases`,
`--print-dir`, exit 2 for a release with no pinned module)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedperf import build
from testbed.cluster import binaries


def test_both_scripts_list_the_releases_the_checkout_pins() -> None:
    assert binaries.script_releases("build.sh") == binaries.releases()
    # A preview builds kube-scheduler alone: scheduler_perf's framework needs its full release.
    full = [r for r in binaries.releases() if binaries.control_plane(r) is None]
    assert binaries.script_releases("scheduler-perf.sh") == full


def test_a_preview_is_cached_under_both_its_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRA_TESTBED_BIN_DIR", raising=False)
    found = binaries.script_dir("build.sh", "1.38-beta", "--print-dir")
    assert found.name.startswith("kube-v1.38.0-beta.0+v1.37.") and "_etcd-v3.7." in found.name
    assert binaries.release_of(str(found / "kube-scheduler")) == "1.38-beta"


def test_a_release_not_served_yet_names_its_missing_modules_and_builds_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DRA_TESTBED_BIN_DIR", raising=False)
    monkeypatch.setenv("DRA_TESTBED_CACHE", str(tmp_path))
    with pytest.raises(binaries.UnknownRelease) as e:
        binaries.script_build("build.sh", "1.38")
    said = str(e.value)
    assert said.startswith("Kubernetes 1.38 is not buildable yet: missing ") or (
        "served now" in said and "tools/k8s/pin.sh kubernetes kubernetes-1.38 v1.38.0" in said
    ), said
    assert "k8s.io/apiextensions-api@v0.38.0" in said and "\n" not in said
    assert list(tmp_path.iterdir()) == []


def test_the_control_plane_cache_directory_is_named_by_the_pinned_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DRA_TESTBED_BIN_DIR", raising=False)
    found = binaries.script_dir("build.sh", "1.37", "--print-dir")
    assert found.name.startswith("kube-v1.37.") and "_etcd-v3.7." in found.name
    assert binaries.release_of(str(found) + "/kube-apiserver") == "1.37"


def test_the_benchmark_cache_directory_tells_its_versions() -> None:
    bench = build.Build(binaries.script_dir(build.SCRIPT, "1.36", "--print-dir"))
    assert bench.kubernetes_version.startswith("v1.36.")
    assert bench.etcd_version.startswith("v3.6.")


@pytest.mark.parametrize("script", ["build.sh", "scheduler-perf.sh"])
def test_a_release_with_no_pinned_module_is_a_usage_error_naming_those_with_one(
    script: str,
) -> None:
    known = re.escape(", ".join(binaries.script_releases(script)))
    with pytest.raises(binaries.UnknownRelease, match=rf"'1\.2'; releases: {known}$"):
        binaries.script_dir(script, "1.2", "--print-dir")
    with pytest.raises(build.UnknownRelease):  # schedperf's name for the same error
        build.upstream_dir("1.2")
