"""Limits before writes, the record written last, and `fleet status` naming unfinished fleets
(against the real API server)."""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import layout
from fleet.reconcile import Reconciler
from testbed.kube.client import Kube
from testbed.kube.resources import NODES
from testbed.kube.watching import Change, Snapshot, informer
from tests.integration.fleet import fleet_cli

pytestmark = pytest.mark.cluster


def _spec(path: Path, name: str, pools: list[dict[str, Any]], **extra: Any) -> str:
    path.write_text(yaml.safe_dump({"name": name, "pools": pools, **extra}))
    return str(path)


async def _status(name: str, kubeconfig: str) -> dict[str, Any]:
    code, out, err = await fleet_cli.run(
        "status", "--name", name, "-o", "json", kubeconfig=kubeconfig
    )
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


async def test_oversize_specs_exit_2_naming_file_and_field_and_create_nothing(
    kubeconfig: str, kube: Kube, tmp_path: Path
) -> None:
    name = f"lim-{secrets.token_hex(3)}"
    pools = [
        {"name": f"p{i}", "profile": "cpu-only", "count": 1, "labels": {"x.io/k": "v" * 60}}
        for i in range(100_000)
    ]
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"name": name, "pools": pools}))
    assert big.stat().st_size > 10_000_000
    notes = {f"a.io/k{i}": "v" * 1000 for i in range(300)}
    annotated = _spec(
        tmp_path / "ann.yaml",
        name,
        [{"name": "p", "profile": "cpu-only", "count": 2}],
        annotations=notes,
    )
    try:
        for path, field in ((str(big), "spec.pools"), (annotated, "spec.annotations")):
            code, _, err = await fleet_cli.run("apply", "-f", path, kubeconfig=kubeconfig)
            assert code == 2, err
            assert f"{path}: {field}: " in err and len(err.strip().splitlines()) == 1
            assert await fleet_cli.count_objects(kube, name) == 0
            assert await Reconciler(kube).read_record(name) is None
    finally:
        await Reconciler(kube).delete(name)


async def test_status_marks_a_fleet_missing_nodes_and_a_reapply_converges(
    kubeconfig: str, kube: Kube, tmp_path: Path
) -> None:
    name = f"inc-{secrets.token_hex(3)}"
    spec = _spec(tmp_path / "f.yaml", name, [{"name": "p", "profile": "l4-4gpu", "count": 4}])
    try:
        code, _, err = await fleet_cli.run("apply", "-f", spec, kubeconfig=kubeconfig)
        assert code == 0, err
        st = await _status(name, kubeconfig)
        assert st["complete"] and st["problems"] == []
        assert st["pools"][0]["desired_slices"] == st["pools"][0]["slices"] == 8

        await kube.delete(NODES, f"{name}-p-3")
        st = await _status(name, kubeconfig)
        assert not st["complete"] and "missing nodes" in st["problems"][0]
        code, out, err = await fleet_cli.run("status", "--name", name, kubeconfig=kubeconfig)
        assert code == 0 and "INCOMPLETE" in out
        assert f"fleet {name} is incomplete" in err and "apply its spec again" in err

        code, _, err = await fleet_cli.run("apply", "-f", spec, kubeconfig=kubeconfig)
        assert code == 0, err
        assert (await _status(name, kubeconfig))["complete"]
    finally:
        await Reconciler(kube).delete(name)


async def _kill_once_a_node_of(
    pool: str, proc: asyncio.subprocess.Process, kube: Kube, name: str
) -> None:
    """SIGKILL `proc` as soon as a node of `pool` shows up (mid-apply)."""
    prefix = f"{name}-{pool}-"
    async for ev in informer(kube, NODES, label_selector=layout.fleet_selector(name)):
        items = (
            ev.items if isinstance(ev, Snapshot) else [ev.object] if isinstance(ev, Change) else []
        )
        if any(o["metadata"]["name"].startswith(prefix) for o in items):
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            return


async def test_a_killed_apply_leaves_the_fleet_marked_incomplete_until_reapplied(
    kubeconfig: str, kube: Kube, tmp_path: Path
) -> None:
    name = f"kil-{secrets.token_hex(3)}"
    first = _spec(tmp_path / "a.yaml", name, [{"name": "a", "profile": "cpu-only", "count": 150}])
    grown = _spec(
        tmp_path / "b.yaml",
        name,
        [
            {"name": "a", "profile": "cpu-only", "count": 150},
            {"name": "b", "profile": "cpu-only", "count": 150},
        ],
    )
    try:
        # A first apply killed mid-way: objects, no record.
        proc = await fleet_cli.start(
            "apply", "-f", first, "--concurrency", "4", "--qps", "50", kubeconfig=kubeconfig
        )
        await asyncio.wait_for(_kill_once_a_node_of("a", proc, kube, name), 120)
        st = await _status(name, kubeconfig)
        assert not st["recorded"] and not st["complete"]
        assert "no record of a finished apply" in st["problems"][0]

        code, _, err = await fleet_cli.run("apply", "-f", first, "--no-wait", kubeconfig=kubeconfig)
        assert code == 0, err
        assert (await _status(name, kubeconfig))["complete"]

        # A changed spec killed mid-way: the old record is marked until the spec converges.
        proc = await fleet_cli.start(
            "apply", "-f", grown, "--concurrency", "4", "--qps", "50", kubeconfig=kubeconfig
        )
        await asyncio.wait_for(_kill_once_a_node_of("b", proc, kube, name), 120)
        st = await _status(name, kubeconfig)
        assert st["recorded"] and not st["complete"]
        assert any("a changed spec" in p for p in st["problems"]), st["problems"]

        code, _, err = await fleet_cli.run("apply", "-f", grown, "--no-wait", kubeconfig=kubeconfig)
        assert code == 0, err
        st = await _status(name, kubeconfig)
        assert st["complete"] and st["desired"] == 300, st
    finally:
        await Reconciler(kube).delete(name)
