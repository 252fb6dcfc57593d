"""The reconciler against the real control plane: apply, re-apply, scale, update, delete.

Each test uses a fleet with a random name; its fixture deletes the fleet whatever happens.
Writes are counted by an observer on the client, so "re-apply changes nothing" is measured.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from fleet import layout, render
from fleet.reconcile import ReconcileError, Reconciler
from fleet.record import record_name
from fleet.spec import for_profile, from_data
from testbed import vocab
from testbed.kube import errors, resources
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import CONFIG_MAPS, DEVICE_CLASSES, NODES, RESOURCE_SLICES

pytestmark = pytest.mark.cluster


class Writes:
    """Counts every non-GET request by (verb, resource)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def __call__(self, verb: str, resource: str, status: int, seconds: float) -> None:
        if verb != "GET":
            self.calls[(verb, resource)] += 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def by_verb(self, verb: str) -> int:
        return sum(n for (v, _), n in self.calls.items() if v == verb)


@pytest.fixture
async def counted(kubeconfig: str) -> AsyncIterator[tuple[Kube, Writes]]:
    writes = Writes()
    kube = await Kube.connect(
        kubeconfig=kubeconfig, settings=ClientSettings(qps=500, burst=1000), observer=writes
    )
    try:
        yield kube, writes
    finally:
        await kube.close()


@pytest.fixture
async def fleet_name(kube: Kube) -> AsyncIterator[str]:
    name = f"it-{secrets.token_hex(3)}"
    try:
        yield name
    finally:
        await Reconciler(kube).delete(name)


async def _objects(kube: Kube, name: str) -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
    sel = layout.fleet_selector(name)
    nodes = await kube.list(NODES, label_selector=sel)
    slices = await kube.list(RESOURCE_SLICES, label_selector=sel)
    return nodes.items, slices.items


async def test_apply_200_reapply_scale_to_150_then_delete(
    kube: Kube, counted: tuple[Kube, Writes], fleet_name: str
) -> None:
    client, writes = counted
    rec = Reconciler(client)

    # Apply 200: all Ready, each with its two slices of 8 devices, owned by the node.
    fleet = for_profile("dgx-h100", 200, name=fleet_name)
    counts = await rec.apply(render.validate(fleet))
    assert counts.failed == 0
    assert await rec.wait_ready(render.validate(fleet), within=180) == 200
    nodes, slices = await _objects(kube, fleet_name)
    assert len(nodes) == 200 and all(resources.node_ready(n) for n in nodes)
    assert len(slices) == 400
    uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes}
    for s in slices:
        node = s["spec"]["nodeName"]
        assert s["spec"]["pool"]["name"] == node
        assert len(s["spec"]["devices"]) == 8
        (owner,) = s["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", node, uids[node])
        assert owner["controller"] is True
    per_node = Counter(s["spec"]["nodeName"] for s in slices)
    assert set(per_node.values()) == {2}
    drivers = Counter(s["spec"]["driver"] for s in slices)
    assert drivers == {vocab.GPU_DRIVER: 200, vocab.NIC_DRIVER: 200}

    # Re-apply the same spec: zero writes, counted on the wire.
    writes.calls.clear()
    again = await rec.apply(render.validate(fleet))
    assert again.writes == 0 and again.unchanged == 600
    assert writes.total == 0, writes.calls

    # Scale to 150: exactly the last 50 nodes and their 100 slices go; nothing else is written
    # but the record of the spec (marked before the first delete, rewritten after the last).
    writes.calls.clear()
    smaller = for_profile("dgx-h100", 150, name=fleet_name)
    counts = await rec.apply(render.validate(smaller))
    assert (counts.created, counts.updated, counts.deleted) == (0, 0, 150)
    assert writes.by_verb("DELETE") == 150
    assert writes.calls[("PATCH", "configmaps")] == 1  # the record marked: apply under way
    assert writes.calls[("PUT", "configmaps")] == 1  # the record rewritten, last
    assert writes.total == 152, writes.calls
    nodes, slices = await _objects(kube, fleet_name)
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(
        f"{fleet_name}-dgx-h100-{i}" for i in range(150)
    )
    assert len(slices) == 300
    assert {n["metadata"]["uid"] for n in nodes} <= set(uids.values())  # survivors untouched

    # Delete: nothing of the fleet is left, the record neither.
    deleted = await rec.delete(fleet_name)
    assert deleted.deleted == 450
    assert await _objects(kube, fleet_name) == ([], [])
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIG_MAPS, record_name(fleet_name), vocab.NAMESPACE)


async def test_changed_labels_and_capacity_update_in_place_then_settle(
    kube: Kube, fleet_name: str
) -> None:
    rec = Reconciler(kube)
    base = {"name": fleet_name, "pools": [{"name": "p", "profile": "h100-4nic", "count": 4}]}
    await rec.apply(render.validate(from_data(base)))
    before = {
        n["metadata"]["name"]: n["metadata"]["uid"] for n in (await _objects(kube, fleet_name))[0]
    }

    changed = from_data({**base, "labels": {"example.com/team": "a"}, "extendedResources": True})
    counts = await rec.apply(render.validate(changed))
    assert (counts.created, counts.deleted, counts.updated) == (0, 0, 4)
    nodes, _ = await _objects(kube, fleet_name)
    assert {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes} == before
    for n in nodes:
        assert n["metadata"]["labels"]["example.com/team"] == "a"
        assert n["status"]["allocatable"][vocab.EXTENDED_RESOURCE_GPU] == "8"
    assert (await rec.apply(render.validate(changed))).writes == 0

    # Back to the base spec: the extended resource goes away again.
    counts = await rec.apply(render.validate(from_data(base)))
    assert counts.updated == 4
    nodes, _ = await _objects(kube, fleet_name)
    assert all(vocab.EXTENDED_RESOURCE_GPU not in n["status"]["allocatable"] for n in nodes)
    assert (await rec.apply(render.validate(from_data(base)))).writes == 0


async def test_a_changed_slice_is_repaired_and_its_pool_generation_bumped(
    kube: Kube, fleet_name: str
) -> None:
    rec = Reconciler(kube)
    fleet = for_profile("l4-4gpu", 1, name=fleet_name)
    await rec.apply(render.validate(fleet))
    name = f"{fleet_name}-l4-4gpu-0-{vocab.GPU_DRIVER}"
    obj = await kube.get(RESOURCE_SLICES, name)
    obj["spec"]["devices"] = obj["spec"]["devices"][:1]
    await kube.replace(RESOURCE_SLICES, obj)
    counts = await rec.apply(render.validate(fleet))
    assert counts.updated == 1
    repaired = await kube.get(RESOURCE_SLICES, name)
    assert len(repaired["spec"]["devices"]) == 4
    assert repaired["spec"]["pool"]["generation"] == 2


async def test_delete_removes_only_its_own_fleet(kube: Kube, fleet_name: str) -> None:
    other = f"{fleet_name}-x"
    rec = Reconciler(kube)
    try:
        await rec.apply(render.validate(for_profile("cpu-only", 3, name=fleet_name)))
        await rec.apply(render.validate(for_profile("cpu-only", 2, name=other)))
        all_before = {n["metadata"]["name"] for n in (await kube.list(NODES)).items}
        await rec.delete(fleet_name)
        all_after = {n["metadata"]["name"] for n in (await kube.list(NODES)).items}
        mine = {f"{fleet_name}-cpu-only-{i}" for i in range(3)}
        assert mine <= all_before
        # Other helpers create and delete nodes concurrently; only check ours and the other.
        assert not (mine & all_after)
        nodes, slices = await _objects(kube, other)
        assert len(nodes) == 2 and len(slices) == 2
    finally:
        await rec.delete(other)


async def test_status_reports_desired_created_and_ready_per_pool(
    kube: Kube, fleet_name: str
) -> None:
    rec = Reconciler(kube)
    fleet = from_data(
        {
            "name": fleet_name,
            "pools": [
                {"name": "a", "profile": "dgx-h100", "count": 3},
                {"name": "b", "profile": "cpu-only", "count": 2},
            ],
        }
    )
    await rec.apply(render.validate(fleet))
    await rec.wait_ready(render.validate(fleet), within=120)
    st = await rec.status(fleet_name)
    assert st.recorded and st.desired == 5 and st.nodes == 5 and st.ready == 5
    pools = {p.pool: (p.desired, p.nodes, p.ready, p.slices) for p in st.pools}
    assert pools == {"a": (3, 3, 3, 6), "b": (2, 2, 2, 2)}
    assert fleet_name in await rec.list_fleets()


async def test_a_node_of_the_same_name_that_is_not_ours_is_refused_and_left_alone(
    kube: Kube, fleet_name: str
) -> None:
    foreign = f"{fleet_name}-cpu-only-1"
    await kube.create(NODES, {"metadata": {"name": foreign, "labels": {"team": "theirs"}}})
    rec = Reconciler(kube)
    try:
        with pytest.raises(ReconcileError, match=f"Node {foreign} exists and is not this fleet"):
            await rec.apply(render.validate(for_profile("cpu-only", 3, name=fleet_name)))
        node = await kube.get(NODES, foreign)
        assert node["metadata"]["labels"] == {"team": "theirs"}  # nothing applied onto it
        await rec.delete(fleet_name)
        await kube.get(NODES, foreign)  # and `fleet delete` did not remove it
    finally:
        await kube.delete(NODES, foreign)


async def test_a_foreign_device_class_is_used_if_equivalent_and_never_replaced(
    kube: Kube, fleet_name: str
) -> None:
    """A driver's own `gpu.nvidia.com` (no testbed label) that selects what ours does is
    used as it is; one that selects otherwise is refused, naming it, and left untouched."""
    ours = next(c for c in render.device_classes() if c["metadata"]["name"] == vocab.CLASS_GPU)
    rec = Reconciler(kube)
    await rec.apply(render.validate(for_profile("cpu-only", 1, name=fleet_name)))

    async def foreign(spec: dict) -> dict:  # type: ignore[type-arg]
        await kube.delete(DEVICE_CLASSES, vocab.CLASS_GPU)
        body = {"metadata": {"name": vocab.CLASS_GPU, "labels": {"owner": "driver"}}, "spec": spec}
        return await kube.create(DEVICE_CLASSES, body)

    try:
        same = await foreign(ours["spec"])
        await rec.apply(render.validate(for_profile("cpu-only", 2, name=fleet_name)))
        after = await kube.get(DEVICE_CLASSES, vocab.CLASS_GPU)
        assert after["metadata"]["resourceVersion"] == same["metadata"]["resourceVersion"]

        other = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
        theirs = await foreign(other)
        with pytest.raises(ReconcileError, match=f"DeviceClass {vocab.CLASS_GPU} exists"):
            await rec.apply(render.validate(for_profile("cpu-only", 3, name=fleet_name)))
        after = await kube.get(DEVICE_CLASSES, vocab.CLASS_GPU)
        assert after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    finally:
        await kube.delete(DEVICE_CLASSES, vocab.CLASS_GPU)
        await rec.apply(render.validate(for_profile("cpu-only", 1, name=fleet_name)))  # ours back
