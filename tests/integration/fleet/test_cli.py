"""The `fleet` console script against the real cluster, as other helpers' tests call it."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from fleet.reconcile import Reconciler
from testbed.kube.client import Kube
from tests.integration.fleet import fleet_cli

pytestmark = pytest.mark.cluster


async def test_apply_status_delete_round_trip(kubeconfig: str, kube: Kube) -> None:
    name = f"cli-{secrets.token_hex(3)}"
    try:
        code, _, err = await fleet_cli.run(
            "apply", "--profile", "dgx-h100", "--nodes", "5", "--name", name, kubeconfig=kubeconfig
        )
        assert code == 0, err
        assert "5/5 nodes Ready" in err
        assert await fleet_cli.count_objects(kube, name) == 15

        code, out, err = await fleet_cli.run(
            "status", "--name", name, "-o", "json", kubeconfig=kubeconfig
        )
        assert code == 0, err
        st = json.loads(out)
        assert (st["desired"], st["nodes"], st["ready"]) == (5, 5, 5)

        code, _, err = await fleet_cli.run(
            "apply", "--profile", "dgx-h100", "--nodes", "5", "--name", name, kubeconfig=kubeconfig
        )
        assert code == 0 and "created 0, updated 0, deleted 0" in err

        code, _, err = await fleet_cli.run("delete", "--name", name, kubeconfig=kubeconfig)
        assert code == 0, err
        assert await fleet_cli.count_objects(kube, name) == 0
    finally:
        await Reconciler(kube).delete(name)


async def test_bad_input_creates_nothing(kubeconfig: str, kube: Kube, tmp_path: Path) -> None:
    name = f"bad-{secrets.token_hex(3)}"
    code, _, err = await fleet_cli.run(
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
    code, _, err = await fleet_cli.run("apply", "-f", str(spec), kubeconfig=kubeconfig)
    assert code == 2 and "128 devices per slice" in err
    assert await fleet_cli.count_objects(kube, name) == 0
    assert await Reconciler(kube).read_record(name) is None
