"""The plain second scheduler schedules exactly the pods that ask for it by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.cluster import second_scheduler
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.small_world import (
    Env,
    claim_template,
    pod,
    ready_node_with_gpus,
)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster


async def test_pod_naming_the_plain_scheduler_is_scheduled_by_it(
    kube: Kube, env: Env, kubeconfig: str, tmp_path: Path
) -> None:
    await ready_node_with_gpus(kube, env, gpus=1)
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, claim_template(env, "one-gpu", 1))
    body = pod(env, "plain", "one-gpu")
    body["spec"]["schedulerName"] = second_scheduler.PLAIN_SCHEDULER_NAME
    with second_scheduler.running(Path(kubeconfig), tmp_path) as second:
        await kube.create(r.PODS, body)
        event = await wait_for(
            kube,
            r.EVENTS,
            lambda e: e.get("reason") == "Scheduled" and e["involvedObject"]["name"] == "plain",
            namespace=env.namespace,
        )
    assert second.name == second_scheduler.PLAIN_SCHEDULER_NAME
    assert (event.get("reportingComponent") or event["source"]["component"]) == second.name
