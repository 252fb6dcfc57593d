"""The `fleet` console script against the real cluster, as other helpers' tests call it."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from pathlib import Path

import pytest

from fleet import render
from fleet.reconcile import Reconciler
from testbed.kube.client import Kube
from testbed.kube.resources import NODES, RESOURCE_SLICES

pytestmark = pytest.mark.cluster

FLEET = str(Path(sys.executable).with_name("fleet"))


async def _fleet(*args: str, kubeconfig: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        FLEET,
        *args,
        "--kubeconfig",
        kubeconfig,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode or 0, out.decode(), err.decode()


async def _count(kube: Kube, name: str) -> int:
    sel = render.fleet_selector(name)
    nodes = await kube.list(NODES, label_selector=sel)
    slices = await kube.list(RESOURCE_SLICES, label_selector=sel)
    return len(nodes.items) + len(slices.items)


async def test_apply_status_delete_round_trip(kubeconfig: str, kube: Kube) -> None:
    name = f"cli-{secrets.token_hex(3)}"
    try:
        code, _, err = await _fleet(
            "apply", "--profile", "dgx-h100", "--nodes", "5", "--name", name, kubeconfig=kubeconfig
        )
        assert code == 0, err
        assert "5/5 nodes Ready" in err
        assert await _count(kube, name) == 15

        code, out, err = await _fleet("status", "--name", name, "-o", "json", kubeconfig=kubeconfig)
        assert code == 0, err
        st = json.loads(out)
        assert (st["desired"], st["nodes"], st["ready"]) == (5, 5, 5)

        code, _, err = await _fleet(
            "apply", "--profile", "dgx-h100", "--nodes", "5", "--name", name, kubeconfig=kubeconfig
        )
        assert code == 0 and "created 0, updated 0, deleted 0" in err

        code, _, err = await _fleet("delete", "--name", name, kubeconfig=kubeconfig)
        assert code == 0, err
        assert await _count(kube, name) == 0
    finally:
        await Reconciler(kube).delete(name)


async def test_bad_input_creates_nothing(kubeconfig: str, kube: Kube, tmp_path: Path) -> None:
    name = f"bad-{secrets.token_hex(3)}"
    code, _, err = await _fleet(
        "apply", "--profile", "no-such", "--nodes", "3", "--name", name, kubeconfig=kubeconfig
    )
    assert code == 2 and "unknown profile" in err and len(err.strip().splitlines()) == 1

    spec = tmp_path / "limit.yaml"
    spec.write_text(
        f"name: {name}\npools:\n- {{name: ok, profile: dgx-h100, count: 2}}\n"
        "- {name: big, profile: huge, count: 1}\nprofiles:\n"
        "- name: huge\n  nics: {n: {rdma: true, pciVendor: V, pciDevice: D}}\n"
        "  roots: [{bus: 1, nics: 200}]\n"
    )
    code, _, err = await _fleet("apply", "-f", str(spec), kubeconfig=kubeconfig)
    assert code == 2 and "128 devices per slice" in err
    assert await _count(kube, name) == 0
    assert await Reconciler(kube).read_record(name) is None
