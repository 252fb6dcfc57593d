"""`fleet serve`'s controller and HTTP app: a Fleet object drives the fleet; status follows."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from fleet import crd, layout, service
from fleet.metrics import FleetMetrics
from fleet.reconcile import Reconciler
from testbed import vocab
from testbed.kube import errors
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import NODES, RESOURCE_SLICES
from testbed.kube.watching import Change, Snapshot, informer
from tests.integration.fleet import fleet_cli
from tests.support import api_proxy, fleet_objects
from tests.support.waiting import condition, wait_for

pytestmark = pytest.mark.cluster


@pytest.fixture
async def client(kube: Kube, kubeconfig: str) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    """The service's app with its own client (API latency metrics need the observer)."""
    await service.install_crd(kube)
    registry = CollectorRegistry()
    metrics = FleetMetrics(registry)
    own = await Kube.connect(
        kubeconfig=kubeconfig,
        settings=ClientSettings(qps=500, burst=1000),
        observer=metrics.observe_request,
    )
    controller = service.FleetController(
        own,
        Reconciler(own, metrics=metrics),
        metrics,
        service.ControllerSettings(ready_timeout=120),
    )
    try:
        async with TestClient(TestServer(service.make_app(controller, registry))) as c:
            yield c
    finally:
        await own.close()


async def _gone(kube: Kube, name: str) -> None:
    """Return once the Fleet object no longer exists (seen on a watch)."""
    async for ev in informer(kube, crd.FLEETS, field_selector=f"metadata.name={name}"):
        if isinstance(ev, Snapshot) and not ev.items:
            return
        if isinstance(ev, Change) and ev.type == "DELETED":
            return


async def test_a_fleet_object_grows_shrinks_and_is_cleaned_up(
    kube: Kube,
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    name = f"svc-{secrets.token_hex(3)}"
    sel = layout.fleet_selector(name)
    resp = await client.get("/healthz")
    assert resp.status == 200
    try:
        await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 20))
        obj = await wait_for(
            kube, crd.FLEETS, fleet_objects.ready_at(1, 20), name=name, timeout=180
        )
        assert obj["status"]["phase"] == "Ready"
        assert vocab.FLEET_FINALIZER in obj["metadata"]["finalizers"]
        assert len((await kube.list(NODES, label_selector=sel)).items) == 20
        assert len((await kube.list(RESOURCE_SLICES, label_selector=sel)).items) == 40
        assert (await client.get("/readyz")).status == 200

        await kube.patch(
            crd.FLEETS,
            name,
            {"spec": {"pools": [{"name": "h", "profile": "dgx-h100", "count": 12}]}},
        )
        obj = await wait_for(
            kube, crd.FLEETS, fleet_objects.ready_at(2, 12), name=name, timeout=180
        )
        assert obj["status"]["lastReconcile"]["deleted"] == 24
        assert len((await kube.list(NODES, label_selector=sel)).items) == 12

        # An invalid spec is reported on the object, and nothing changes.
        await kube.patch(
            crd.FLEETS, name, {"spec": {"pools": [{"name": "h", "profile": "nope", "count": 1}]}}
        )
        obj = await wait_for(
            kube,
            crd.FLEETS,
            lambda o: (
                (o.get("status") or {}).get("observedGeneration") == 3
                and condition(o, "Ready") == "False"
            ),
            name=name,
            timeout=60,
        )
        assert "unknown profile 'nope'" in obj["status"]["conditions"][0]["message"]
        assert len((await kube.list(NODES, label_selector=sel)).items) == 12

        metrics = await (await client.get("/metrics")).text()
        assert 'fleet_objects_total{action="created",kind="Node"}' in metrics
        assert "fleet_reconcile_duration_seconds_count" in metrics
        assert "fleet_api_request_duration_seconds_bucket" in metrics

        # Deleting the Fleet deletes its nodes and slices (the finalizer holds it until then).
        await kube.delete(crd.FLEETS, name)
        await asyncio.wait_for(_gone(kube, name), 120)
        assert (await kube.list(NODES, label_selector=sel)).items == []
        assert (await kube.list(RESOURCE_SLICES, label_selector=sel)).items == []
    finally:
        await Reconciler(kube).delete(name)
        try:
            await kube.patch(crd.FLEETS, name, {"metadata": {"finalizers": None}})
            await kube.delete(crd.FLEETS, name)
        except errors.NotFound:
            pass


async def test_the_service_survives_the_api_server_going_away(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    await service.install_crd(kube)
    proxy, via_proxy = await api_proxy.proxied(kube, kubeconfig, tmp_path)

    registry = CollectorRegistry()
    metrics = FleetMetrics(registry)
    own = await Kube.connect(kubeconfig=via_proxy, settings=ClientSettings(qps=500, burst=1000))
    controller = service.FleetController(
        own, Reconciler(own, metrics=metrics), metrics, service.ControllerSettings(retry_max=2)
    )
    task = asyncio.create_task(controller.run())
    name = f"svc-{secrets.token_hex(3)}"
    try:
        await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 3))
        await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(1, 3), name=name, timeout=120)

        await proxy.stop()  # the service loses its API server, watch and all
        await kube.patch(
            crd.FLEETS,
            name,
            {"spec": {"pools": [{"name": "h", "profile": "dgx-h100", "count": 5}]}},
        )
        await asyncio.sleep(1.0)  # an outage, not a blip: the watch must notice and back off
        await proxy.start()  # same port

        await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(2, 5), name=name, timeout=120)
        nodes = await kube.list(NODES, label_selector=layout.fleet_selector(name))
        assert len(nodes.items) == 5
        assert (
            sum(
                s.value
                for m in registry.collect()
                if m.name == "fleet_watch_restarts"
                for s in m.samples
                if s.name == "fleet_watch_restarts_total"
            )
            >= 1
        )
    finally:
        await _stopped(controller, task)
        await own.close()
        await proxy.stop()
        with contextlib.suppress(errors.NotFound):
            await kube.patch(crd.FLEETS, name, {"metadata": {"finalizers": None}})
            await kube.delete(crd.FLEETS, name)
        await Reconciler(kube).delete(name)


async def test_apply_through_the_service_waits_for_it_and_delete_goes_through_it(
    kube: Kube,
    kubeconfig: str,
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    """`fleet apply --through-service` writes the Fleet object and returns once the running
    service reports it Ready; `fleet delete` then deletes the object, and the service its
    nodes; the service's metrics count the writes."""
    name = f"via-{secrets.token_hex(3)}"
    sel = layout.fleet_selector(name)
    args = ("--profile", "dgx-h100", "--name", name, "--through-service", "--timeout", "120s")
    try:
        code, _, err = await fleet_cli.run("apply", *args, "--nodes", "3", kubeconfig=kubeconfig)
        assert code == 0, err
        assert "3/3 nodes Ready through fleet serve" in err, err
        obj = await kube.get(crd.FLEETS, name)
        assert fleet_objects.ready_at(1, 3)(obj), obj.get("status")
        assert len((await kube.list(NODES, label_selector=sel)).items) == 3
        # A new spec is a new generation; the command waits for that one, not the last.
        code, _, err = await fleet_cli.run("apply", *args, "--nodes", "2", kubeconfig=kubeconfig)
        assert code == 0 and "2/2 nodes Ready" in err, err
        assert len((await kube.list(NODES, label_selector=sel)).items) == 2
        metrics = await (await client.get("/metrics")).text()
        assert 'fleet_nodes{fleet="' + name + '",state="ready"} 2.0' in metrics, metrics

        code, _, err = await fleet_cli.run("delete", "--name", name, kubeconfig=kubeconfig)
        assert code == 0 and "deleted by fleet serve" in err, err
        assert (await kube.list(crd.FLEETS, field_selector=f"metadata.name={name}")).items == []
        assert (await kube.list(NODES, label_selector=sel)).items == []
    finally:
        await _force_remove(kube, name)


async def test_apply_through_the_service_without_one_fails_in_its_timeout(
    kube: Kube, kubeconfig: str
) -> None:
    await service.install_crd(kube)
    name = f"nosvc-{secrets.token_hex(3)}"
    try:
        code, _, err = await fleet_cli.run(
            "apply", "--profile", "dgx-h100", "--nodes", "1", "--name", name,
            "--through-service", "--timeout", "3s", kubeconfig=kubeconfig,
        )  # fmt: skip
        assert code == 1, err
        assert "not Ready after 3s" in err and "is `fleet serve` running?" in err, err
        assert (await kube.list(NODES, label_selector=layout.fleet_selector(name))).items == []
    finally:
        await kube.delete(crd.FLEETS, name)


async def test_delete_with_no_service_left_deletes_directly_in_seconds(
    kube: Kube, kubeconfig: str
) -> None:
    """A Fleet the service reconciled (finalizer on), then the service stopped: `fleet delete`
    does not wait out its timeout for a service that never comes, but deletes the fleet's
    nodes and slices itself, then releases the Fleet object; exit 0."""
    await service.install_crd(kube)
    registry = CollectorRegistry()
    metrics = FleetMetrics(registry)
    own = await Kube.connect(kubeconfig=kubeconfig, settings=ClientSettings(qps=500, burst=1000))
    controller = service.FleetController(own, Reconciler(own, metrics=metrics), metrics)
    task = asyncio.create_task(controller.run())
    name = f"gone-{secrets.token_hex(3)}"
    sel = layout.fleet_selector(name)
    try:
        await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 3))
        await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(1, 3), name=name, timeout=120)
        await _stopped(controller, task)
        assert vocab.FLEET_FINALIZER in (await kube.get(crd.FLEETS, name))["metadata"]["finalizers"]

        # Before the fallback, this waited the whole --timeout and failed with exit 1.
        code, _, err = await fleet_cli.run(
            "delete", "--name", name, "--timeout", "60s", kubeconfig=kubeconfig
        )
        assert code == 0, err
        assert "no fleet serve took up the Fleet object; deleted its 9 objects directly" in err
        assert len(err.strip().splitlines()) == 1, err
        assert (await kube.list(crd.FLEETS, field_selector=f"metadata.name={name}")).items == []
        assert await fleet_cli.count_objects(kube, name) == 0
        assert (await kube.list(NODES, label_selector=sel)).items == []
    finally:
        await _stopped(controller, task)
        await own.close()
        await _force_remove(kube, name)


async def test_delete_of_a_fleet_object_no_service_ever_took_up(
    kube: Kube, kubeconfig: str
) -> None:
    """No finalizer (no service ever reconciled it): the object goes at once, and the nodes of
    a fleet of that name applied directly go too, by their labels, as before Fleet objects."""
    await service.install_crd(kube)
    name = f"never-{secrets.token_hex(3)}"
    try:
        code, _, err = await fleet_cli.run(
            "apply", "--profile", "dgx-h100", "--nodes", "2", "--name", name,
            kubeconfig=kubeconfig,
        )  # fmt: skip
        assert code == 0, err
        await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 2))
        code, _, err = await fleet_cli.run("delete", "--name", name, kubeconfig=kubeconfig)
        assert code == 0, err
        assert "no fleet serve took up the Fleet object; deleted its 6 objects directly" in err
        assert (await kube.list(crd.FLEETS, field_selector=f"metadata.name={name}")).items == []
        assert await fleet_cli.count_objects(kube, name) == 0
    finally:
        await _force_remove(kube, name)


async def _force_remove(kube: Kube, name: str) -> None:
    """Whatever a test left of fleet `name`: its nodes and slices, then its Fleet object
    with the service's finalizer dropped."""
    await Reconciler(kube).delete(name)
    with contextlib.suppress(errors.NotFound):
        await kube.patch(crd.FLEETS, name, {"metadata": {"finalizers": None}})
        await kube.delete(crd.FLEETS, name)


async def _stopped(controller: service.FleetController, task: asyncio.Task[None]) -> None:
    """The controller told to stop and its task cancelled and waited out."""
    controller.stop.set()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
