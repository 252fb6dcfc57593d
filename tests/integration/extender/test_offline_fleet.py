"""Offline mode on what `fleet render` writes (the fleet's CLI, run as a user would)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from extender.cache import files
from extender.cache.index import Index
from extender.cache.store import Store
from extender.config import Settings
from testbed import vocab


async def fleet(*args: str) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from fleet.cli import main; main()",
        "render",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out


def pairs(store: Store, node: str) -> tuple[int, int]:
    index = store.index
    return index.summary(index.nodes[node]).pairs(vocab.CLASS_GPU, vocab.CLASS_RDMA_NIC)


async def test_rendered_yaml_directory_and_json_lines(tmp_path: Path) -> None:
    await fleet(
        "--profile",
        "dgx-h100",
        "--nodes",
        "3",
        "--name",
        "off",
        "--output-dir",
        str(tmp_path / "d"),
    )
    lines = await fleet(
        "--profile", "h100-4nic", "--nodes", "2", "--name", "four", "--format", "json"
    )
    (tmp_path / "four.json").write_bytes(lines)
    store = Store(Index(Settings()))
    counts = files.load(store, [tmp_path / "d", tmp_path / "four.json"])
    assert counts["Node"] == 5 and counts["ResourceSlice"] == 10 and counts["DeviceClass"] == 8
    nodes = store.index.nodes
    dgx = sorted(n for n in nodes if n.startswith("off-"))
    four = sorted(n for n in nodes if n.startswith("four-"))
    assert len(dgx) == 3 and len(four) == 2
    # dgx-h100: a NIC on every GPU's PCIe root; h100-4nic: 2 GPUs share a root with one NIC.
    assert all(pairs(store, n) == (8, 8) for n in dgx)
    assert all(pairs(store, n)[0] == 4 for n in four)
    assert all(nodes[n].rack is not None and nodes[n].block is not None for n in dgx + four)
