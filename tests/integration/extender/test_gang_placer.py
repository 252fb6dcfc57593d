"""The gang placer on the real local control plane, with the real kube-scheduler calling the
extender: gangs created gated are placed in the fewest blocks that hold them and every pod
runs; a gang that fits nowhere stays gated and is named; a gated pod without its gang's size
is named and left gated.

The extender runs in this process where the cluster's scheduler calls it (the `extender`
fixture of test_scheduler_path). The test's own kwok nodes, in blocks named for the test, and
its pods pinned to them (nodeSelector on the run label, which the placer honours).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web

from extender import app as app_mod
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.integration.extender.test_scheduler_path import (  # noqa: F401 (fixtures)
    World,
    devices_known,
    extender,
    until,
    world,
)
from tests.support import extender_objects as objects
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
NODES = {"b0": 3, "b1": 2, "b2": 1}
"""DGX nodes per block (8 GPUs + 8 aligned NICs each: one 8-pair pod per node)."""


def _member(w: World, gang: str, i: int, size: int | None) -> Obj:
    annotations = {} if size is None else {vocab.ANNOTATION_GANG_SIZE: str(size)}
    pod = w.pod(f"{gang}-{i}", "pairs", labels={vocab.LABEL_GANG: gang}, annotations=annotations)
    pod["spec"]["schedulingGates"] = [{"name": vocab.GATE_GANG_PLACEMENT}]
    return pod


def _placements(app: web.Application, outcome: str) -> float:
    registry = app[app_mod.REGISTRY]
    return registry.get_sample_value("extender_gang_placements_total", {"outcome": outcome}) or 0.0


def _running(pod: Obj) -> bool:
    return bool(pod["spec"].get("nodeName")) and pod.get("status", {}).get("phase") == "Running"


def _told(pod: Obj) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == vocab.CONDITION_GANG_PLACEMENT for c in conditions)


async def _still_gated(kube: Kube, w: World, name: str) -> dict[str, Any]:
    """The pod, still gated and placed nowhere; its placer condition."""
    pod = await kube.get(r.PODS, name, w.namespace)
    assert pod["spec"].get("schedulingGates") == [{"name": vocab.GATE_GANG_PLACEMENT}], name
    assert not pod["spec"].get("nodeName") and "affinity" not in pod["spec"], name
    said = [
        c
        for c in pod.get("status", {}).get("conditions") or []
        if c["type"] == vocab.CONDITION_GANG_PLACEMENT
    ]
    assert len(said) == 1 and said[0]["status"] == "False", (name, pod.get("status"))
    return dict(said[0])


async def test_gated_gangs_run_in_the_fewest_blocks_and_one_that_fits_nowhere_waits(
    extender: web.Application,  # noqa: F811
    world: World,  # noqa: F811
    kube: Kube,
    caplog: pytest.LogCaptureFixture,
) -> None:
    block = {b: world.name(b) for b in NODES}
    made = []
    for b, count in NODES.items():
        for i in range(count):
            made.append(await world.add_node(objects.dgx(world.name(f"{b}-n{i}"), block=block[b])))
    await until(extender, devices_known(extender, made, 16), "test nodes and slices")
    await world.add_template(
        extender, objects.template(world.namespace, "pairs", objects.pair_spec(8))
    )
    placed_before = _placements(extender, "placed_one_block")

    # Two gangs at once: 2 pods fit best in b1 (exactly its room), 3 only in b0.
    for gang, size in (("a", 2), ("b", 3)):
        for i in range(size):
            await kube.create(r.PODS, _member(world, gang, i, size))
    where: dict[str, set[str]] = {}
    for gang, size in (("a", 2), ("b", 3)):
        for i in range(size):
            pod = await wait_for(
                kube, r.PODS, _running, name=f"{gang}-{i}", namespace=world.namespace, timeout=300
            )
            node = pod["spec"]["nodeName"]
            where.setdefault(gang, set()).add(node.rsplit("-n", 1)[0].rsplit("-", 1)[-1])
            assert not pod["spec"].get("schedulingGates")
    assert where == {"a": {"b1"}, "b": {"b0"}}
    assert _placements(extender, "placed_one_block") - placed_before == 2

    # b2's one node is all the room left: a gang of 2 fits nowhere, stays gated, is named.
    no_room = _placements(extender, "no_room")
    with caplog.at_level(logging.WARNING, logger="extender.gangs.placer"):
        for i in range(2):
            await kube.create(r.PODS, _member(world, "c", i, 2))
        unsized = _member(world, "d", 0, None)
        await kube.create(r.PODS, unsized)
        await until(
            extender, lambda: _placements(extender, "no_room") > no_room, "gang c said to wait"
        )
        await until(extender, lambda: any("d-0" in m for m in caplog.messages), "pod d-0 named")
        for name in ("c-0", "c-1", "d-0"):  # their conditions written (the placer's ticks)
            await wait_for(kube, r.PODS, _told, name=name, namespace=world.namespace, timeout=60)
    said = "\n".join(caplog.messages)
    assert f"gang {world.namespace}/c of 2 pods fits in no blocks now" in said
    assert f"pod {world.namespace}/d-0 is gated for gang placement" in said
    assert "names no gang size" in said
    for name in ("c-0", "c-1"):
        condition = await _still_gated(kube, world, name)
        assert condition["reason"] == "NoRoom"
        assert condition["message"].startswith(f"gang {world.namespace}/c of 2 pods fits in no")
    assert (await _still_gated(kube, world, "d-0"))["reason"] == "BadInput"
