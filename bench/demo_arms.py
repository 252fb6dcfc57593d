"""What the extender benches share: this interpreter's console scripts, the demo fleet applied
once, and one arm of the demo's extender workload run by loadgen.

Imported by the bench scripts beside it (`python bench/NAME.py` puts this folder on sys.path).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from experiment.demo import plan
from testbed import vocab


def tool(name: str) -> str:
    """A console script of this interpreter's environment (loadgen, fleet, extender)."""
    return str(Path(sys.executable).parent / name)


def apply_demo_fleet(nodes: int, work: Path, env: dict[str, str]) -> None:
    """The demo's mixed fleet of `nodes` nodes, applied idempotently with `fleet apply`."""
    spec = work / "fleet.yaml"
    spec.write_text(yaml.safe_dump(plan.fleet_spec(nodes), sort_keys=False))
    subprocess.run(
        [tool("fleet"), "apply", "-f", str(spec)], env=env, check=True, stdout=subprocess.DEVNULL
    )


def run_arm(
    arm: str,
    pods: int,
    out: Path,
    env: dict[str, str],
    scheduler: str | None,
    *extra: str,
) -> dict[str, Any]:
    """The demo's extender workload (`pods` pods of one GPU on the demo fleet) through
    `scheduler` (None: the cluster's own), with loadgen's `extra` flags; its result.json.
    Exits the bench with a message if loadgen fails."""
    cmd = [tool("loadgen"), "--pods", str(pods), "--gpus", "1", "-q", "--output-dir", str(out)]
    cmd += ["--node-selector", f"{vocab.LABEL_FLEET}={plan.FLEET_NAME}", *extra]
    if scheduler:
        cmd += ["--scheduler-name", scheduler]
    code = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode
    result = out / "result.json"
    if code != 0 or not result.is_file():
        sys.exit(f"loadgen failed in arm {arm} (exit {code}); see {out}")
    doc: dict[str, Any] = json.loads(result.read_text())
    return doc
