"""The Dockerfile: hadolint-clean, the image's shape, and its exact default command serving."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support import deploy as s

pytestmark = pytest.mark.timeout(120)


def hadolint() -> str:
    found = shutil.which("hadolint") or str(s.REPO / ".venv/bin/hadolint")
    assert Path(found).is_file(), "hadolint missing: run hack/install-test-deps.sh"
    return found


def test_dockerfile_is_hadolint_clean() -> None:
    out = subprocess.run(
        [hadolint(), "--failure-threshold", "info", str(s.DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, f"hadolint Dockerfile:\n{out.stdout}{out.stderr}"


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    # The check can fail: an unpinned base and a root user are reported.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install gcc\nCMD extender serve\n")
    out = subprocess.run([hadolint(), str(bad)], capture_output=True, text=True, check=False)
    assert out.returncode != 0
    assert "DL3007" in out.stdout  # latest tag


def test_image_is_multi_stage_pinned_non_root_and_labelled() -> None:
    _, stages = s.dockerfile_stages()
    assert len(stages) >= 2, "multi-stage: a build stage and a runtime stage"
    build, final = stages[0], stages[-1]
    for stage in stages:
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*", stage.base), (
            f"base image {stage.base!r} is not pinned to a full version"
        )
    user = final.last("USER")
    assert user is not None and user.split(":")[0] not in ("0", "root"), "runs as non-root"
    assert user.split(":")[0].isdigit(), "numeric UID, so runAsNonRoot can verify it"
    labels = " ".join(final.all("LABEL"))
    for key in ("org.opencontainers.image.title", "org.opencontainers.image.version"):
        assert key in labels
    # No build tools in the final stage: nothing installed there beyond the user, and the
    # packages come over from the build stage as a finished venv.
    runs = " ".join(final.all("RUN"))
    for tool in ("gcc", "build-essential", "pip install", "apt-get install", "make "):
        assert tool not in runs, f"final stage installs {tool!r}"
    copies = final.all("COPY")
    assert any(f"--from={build.alias}" in c for c in copies), "the venv comes from the build stage"
    assert any("uvloop" in r for r in build.all("RUN")), "the build checks uvloop installed"


def test_default_command_is_exec_form_and_names_a_console_script() -> None:
    argv, _ = s.image_command()
    assert argv, "the image has a default command"
    assert argv[0] in ("extender", "fleet", "loadgen"), argv
    assert (s.REPO / ".venv/bin" / argv[0]).exists()


def test_image_command_serves_healthz_offline(tmp_path: Path) -> None:
    """The image's exact ENTRYPOINT+CMD and ENV, run as a process from this checkout's venv;
    offline (--from-files) so it needs no cluster. The cluster variant is in
    tests/integration/deploy/test_entrypoint.py."""
    argv, image_env = s.image_command()
    node = tmp_path / "state" / "node.yaml"
    node.parent.mkdir()
    node.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n")
    port = s.free_port()
    env = {
        **os.environ,
        **image_env,
        # Loopback only in tests (the image listens on 0.0.0.0), and never the shared 8888.
        "EXTENDER_ADDRESS": "127.0.0.1",
        "EXTENDER_PORT": str(port),
    }
    with s.running([*argv, "--from-files", str(node.parent)], tmp_path / "log", env) as proc:
        assert s.wait_http(f"http://127.0.0.1:{port}/healthz", proc, limit=30) == "ok"
        s.wait_http(f"http://127.0.0.1:{port}/readyz", proc, limit=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, "SIGTERM is a clean shutdown"


def test_dockerignore_keeps_the_context_to_the_sources() -> None:
    lines = [
        ln.strip()
        for ln in (s.REPO / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert lines[0] == "*", "deny everything, then allow the sources"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    _, stages = s.dockerfile_stages()
    for copy in stages[0].all("COPY"):
        for src in copy.split()[:-1]:
            if not src.startswith("--"):
                assert src.rstrip("/") in allowed, f"COPY {src} is excluded by .dockerignore"
