"""`testbed experiment run` and `testbed demo` with --kubeconfig/--context: bad input is one
line and the right exit code, before anything is created (no output directory, nothing in
the cluster, the local cluster `--name` names neither started nor made)."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.sites import cluster_objects as co
from experiment.sites import existing_site as es
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.kubeconfigs import with_dead_context

pytestmark = pytest.mark.cluster

TESTBED = str(Path(sys.executable).parent / "testbed")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "experiments"


def exists(kubeconfig: str) -> bool:
    """Whether the site's namespace exists (the first thing an opened site creates)."""

    async def go() -> bool:
        async with await Kube.connect(kubeconfig=kubeconfig) as kube:
            return await es.exists(kube, r.NAMESPACES, {"metadata": {"name": co.NAMESPACE}})

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("command", "flags", "code", "says"),
    [
        (["experiment", "run", str(EXAMPLES / "scheduler-knob-sweep.yaml")],
         ["--kubeconfig", "{absent}"], 2, "cannot read kubeconfig"),
        (["experiment", "run", str(EXAMPLES / "scheduler-knob-sweep.yaml")],
         ["--kubeconfig", "{two}", "--context", "nope"], 2, "no context 'nope'"),
        (["experiment", "run", str(EXAMPLES / "scheduler-knob-sweep.yaml")],
         ["--kubeconfig", "{two}", "--context", "dead"], 1, "cannot reach the cluster"),
        (["experiment", "run", str(EXAMPLES / "releases.yaml")],
         ["--kubeconfig", "{two}"], 2, "one Kubernetes release"),
        (["demo", "--nodes", "10"],
         ["--kubeconfig", "{two}", "--context", "dead"], 1, "cannot reach the cluster"),
        (["demo", "--nodes", "10"],
         ["--kubeconfig", "{two}", "--context", "nope"], 2, "no context 'nope'"),
    ],
)  # fmt: skip
def test_bad_cluster_input_is_one_line_and_creates_nothing(
    kubeconfig: str,
    tmp_path: Path,
    command: list[str],
    flags: list[str],
    code: int,
    says: str,
) -> None:
    two = with_dead_context(kubeconfig, tmp_path / "two-contexts")
    had_namespace = exists(kubeconfig)
    out = tmp_path / "out"
    name = f"never-{secrets.token_hex(3)}"
    argv = [TESTBED, "--name", name, *command, "--output-dir", str(out)]
    argv += [f.format(absent=tmp_path / "absent", two=two) for f in flags]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert not out.exists()
    assert exists(kubeconfig) == had_namespace
    status = subprocess.run(
        [TESTBED, "--name", name, "status"], capture_output=True, text=True, check=False
    )
    assert "does not exist" in status.stdout, status.stdout
