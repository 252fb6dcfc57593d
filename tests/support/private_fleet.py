"""A private fleet per test, made by the real `fleet` CLI: dgx-h100 nodes (8 GPUs + 8 RDMA
NICs, one pair per PCIe root, 2 NUMA nodes) under a unique fleet name, so pods are pinned
to them with a node selector on the fleet label. Other helpers' tests share the cluster, so
everything is uniquely named and removed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen import outcome, templates
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from testbed.kube.watching import Change, Snapshot, informer
from tests.support.waiting import condition, wait_for

FLEET = str(Path(sys.executable).parent / "fleet")
FLEET_LABEL = vocab.LABEL_FLEET


@dataclass
class Fleet:
    suffix: str
    """The fleet's name (unique per test)."""
    nodes: list[str]
    gpu_class: str = vocab.CLASS_GPU
    nic_class: str = vocab.CLASS_RDMA_NIC
    run_ids: list[str] = field(default_factory=list)

    @property
    def selector(self) -> dict[str, str]:
        return {FLEET_LABEL: self.suffix}

    def settings(self, **kw: Any) -> outcome.Settings:
        s = outcome.Settings(node_selector=self.selector, **kw)
        self.run_ids.append(s.run_id)
        return s

    def params(self) -> dict[str, str]:
        return {"gpu_class": self.gpu_class, "nic_class": self.nic_class}


async def _fleet_cli(kubeconfig: str, *args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        FLEET, *args, "--kubeconfig", kubeconfig,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, f"fleet {' '.join(args)}: {out.decode()}"


def _schedulable(node: dict[str, Any]) -> bool:
    """Ready, and the node lifecycle controller has lifted its not-ready taint."""
    taints = {t["key"] for t in node.get("spec", {}).get("taints") or []}
    return condition(node, "Ready") == "True" and taints == {vocab.KWOK_TAINT_KEY}


async def make_fleet(kube: Kube, kubeconfig: str, nodes: int, profile: str = "dgx-h100") -> Fleet:
    name = f"lg-{secrets.token_hex(3)}"
    await _fleet_cli(kubeconfig, "apply", "--profile", profile, "--nodes", str(nodes),
                     "--name", name)  # fmt: skip
    listed = await kube.list(r.NODES, label_selector=f"{FLEET_LABEL}={name}")
    fleet = Fleet(suffix=name, nodes=sorted(n["metadata"]["name"] for n in listed.items))
    assert len(fleet.nodes) == nodes
    await asyncio.gather(
        *(wait_for(kube, r.NODES, _schedulable, name=n, timeout=120) for n in fleet.nodes)
    )
    return fleet


async def remove_fleet(kube: Kube, kubeconfig: str, fleet: Fleet) -> None:
    for run_id in fleet.run_ids:  # a failed test may have left its run behind
        await kube.delete(r.NAMESPACES, templates.namespace_name(run_id))
    await _fleet_cli(kubeconfig, "delete", "--name", fleet.suffix)


@contextlib.asynccontextmanager
async def private_fleet(
    kube: Kube, kubeconfig: str, nodes: int, profile: str = "dgx-h100"
) -> AsyncIterator[Fleet]:
    """`make_fleet` until the block ends, then `remove_fleet` (what a fleet fixture yields)."""
    fleet = await make_fleet(kube, kubeconfig, nodes, profile)
    try:
        yield fleet
    finally:
        await remove_fleet(kube, kubeconfig, fleet)


async def namespace_gone(kube: Kube, run_id: str, within: float = 120) -> None:
    """Wait (on a watch) until the run's namespace no longer exists."""
    name = templates.namespace_name(run_id)

    async def watch() -> None:
        async for ev in informer(kube, r.NAMESPACES, field_selector=f"metadata.name={name}"):
            if (isinstance(ev, Snapshot) and not ev.items) or (
                isinstance(ev, Change) and ev.type == "DELETED"
            ):
                return

    try:
        await asyncio.wait_for(watch(), within)
    except TimeoutError:
        raise AssertionError(f"namespace {name} still exists after {within}s") from None


LOADGEN = str(Path(sys.executable).parent / "loadgen")


async def run_loadgen(*args: str) -> tuple[int, str, str]:
    """`loadgen ARGS` to completion (at most 120 s): exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        LOADGEN, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def loadgen_args(fleet: Fleet, kubeconfig: str, out: Path, run_id: str) -> list[str]:
    """loadgen's flags for a quiet run `run_id` on `fleet`, its reports in `out` (the run is
    remembered, so the fixture removes it if the test does not)."""
    fleet.run_ids.append(run_id)
    return [
        "--kubeconfig", kubeconfig, "--node-selector", f"{FLEET_LABEL}={fleet.suffix}",
        "--output-dir", str(out), "--run-id", run_id, "-q",
    ]  # fmt: skip
