"""Which node leases a kwok controller started again may take over: only those its dead
process held (its identity, from its own log), never a live shard's."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.cluster import kwok_leases


def _line(identity: str, msg: str) -> str:
    return json.dumps({"level": "INFO", "msg": msg, "id": identity}, separators=(",", ":"))


def test_the_last_process_that_wrote_the_log_is_the_dead_one(tmp_path: Path) -> None:
    log = tmp_path / "kwok-controller.log"
    log.write_text(
        "\n".join(
            [
                _line("host_first", "Watch all nodes"),
                "a line of plain text",
                _line("host_second", "Creating lease"),
                "",
            ]
        )
    )
    assert kwok_leases.last_identity(log) == "host_second"
    assert kwok_leases.last_identity(tmp_path / "missing.log") is None
    (tmp_path / "empty.log").write_text("no identity here\n")
    assert kwok_leases.last_identity(tmp_path / "empty.log") is None


def test_only_stopped_kwok_controllers_name_identities(tmp_path: Path) -> None:
    for name, identity in (
        ("kwok-controller", "host_a"),
        ("kwok-controller-shard-1", "host_b"),
        ("kwok-controller-shard-2", "host_c"),
    ):
        (tmp_path / f"{name}.log").write_text(_line(identity, "x") + "\n")
    stopped = ["kwok-controller", "kwok-controller-shard-2", "kube-scheduler"]
    assert kwok_leases.identities(tmp_path, stopped) == {"host_a", "host_c"}


def test_leases_held_by_live_controllers_are_left_alone() -> None:
    leases = {
        "items": [
            {"metadata": {"name": "n0"}, "spec": {"holderIdentity": "host_dead"}},
            {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "host_live"}},
            {"metadata": {"name": "n2"}, "spec": {}},
            {"metadata": {"name": "n3"}, "spec": {"holderIdentity": "host_dead"}},
        ]
    }
    assert kwok_leases.held_by(json.dumps(leases), {"host_dead"}) == ["n0", "n3"]
    assert kwok_leases.held_by(json.dumps({"items": []}), {"host_dead"}) == []
