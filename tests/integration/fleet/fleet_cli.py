"""Running the `fleet` console script against the test cluster, and counting what it made."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fleet import layout
from testbed.kube.client import Kube
from testbed.kube.resources import NODES, RESOURCE_SLICES

FLEET = str(Path(sys.executable).with_name("fleet"))


async def start(*args: str, kubeconfig: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        FLEET,
        *args,
        "--kubeconfig",
        kubeconfig,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def run(*args: str, kubeconfig: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `fleet ARGS --kubeconfig KUBECONFIG` (5 minutes at most)."""
    proc = await start(*args, kubeconfig=kubeconfig)
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode or 0, out.decode(), err.decode()


async def count_objects(kube: Kube, name: str) -> int:
    """Nodes plus ResourceSlices carrying fleet `name`'s labels."""
    sel = layout.fleet_selector(name)
    nodes = await kube.list(NODES, label_selector=sel)
    slices = await kube.list(RESOURCE_SLICES, label_selector=sel)
    return len(nodes.items) + len(slices.items)
