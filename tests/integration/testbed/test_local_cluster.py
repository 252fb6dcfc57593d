"""The real local control plane: kwok nodes, DRA allocation by kube-scheduler, kwok pods."""

from __future__ import annotations

import pytest

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.small_world import (
    Env,
    claim_template,
    fake_node,
    one_gpu_pod_running,
    pod,
    ready_node_with_gpus,
)
from tests.support.waiting import condition, wait_for

pytestmark = pytest.mark.cluster


async def test_kwok_node_becomes_ready(kube: Kube, env: Env) -> None:
    await kube.create(r.NODES, fake_node(env.node))
    node = await wait_for(kube, r.NODES, lambda n: condition(n, "Ready") == "True", name=env.node)
    assert node["status"]["allocatable"]["cpu"] == "32"


async def test_pod_with_one_gpu_claim_is_allocated_scheduled_and_running(
    kube: Kube, env: Env
) -> None:
    running = await one_gpu_pod_running(kube, env, node_gpus=2)

    statuses = running["status"].get("resourceClaimStatuses") or []
    assert [s["name"] for s in statuses] == ["gpu"]
    claim = await kube.get(r.RESOURCE_CLAIMS, statuses[0]["resourceClaimName"], env.namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1
    assert results[0]["driver"] == env.driver
    assert results[0]["pool"] == env.node
    assert results[0]["device"] in {"gpu-0", "gpu-1"}
    assert [c["name"] for c in claim["status"]["reservedFor"]] == ["trainer"]


async def test_pod_asking_more_gpus_than_the_node_has_stays_pending(kube: Kube, env: Env) -> None:
    await ready_node_with_gpus(kube, env, gpus=2)
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, claim_template(env, "three-gpus", 3))
    await kube.create(r.PODS, pod(env, "greedy", "three-gpus"))

    # The reason must name the claim: the node is there and tolerated, only devices are short.
    await wait_for(
        kube,
        r.EVENTS,
        lambda e: (
            e.get("reason") == "FailedScheduling"
            and e["involvedObject"]["name"] == "greedy"
            and "claim" in e.get("message", "").lower()
        ),
        namespace=env.namespace,
    )
    current = await kube.get(r.PODS, "greedy", env.namespace)
    assert current["status"]["phase"] == "Pending"
    assert not current["spec"].get("nodeName")
    assert condition(current, "PodScheduled") == "False"
