"""The shipped admission policy for the gang placer (manifests/extender/
gang-placement-policy.yaml), on the real local control plane: a pod gated for the placer
without its gang label or size is refused at creation in one line (the placer would never
release it); pods gated properly, and pods not gated for it, are admitted."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
import yaml

from testbed import vocab
from testbed.cluster import paths
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.integration.extender.test_scheduler_path import World, world  # noqa: F401

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]


def _member(w: World, gang: str, i: int, size: int | None) -> Obj:
    annotations = {} if size is None else {vocab.ANNOTATION_GANG_SIZE: str(size)}
    pod = w.pod(f"{gang}-{i}", "pairs", labels={vocab.LABEL_GANG: gang}, annotations=annotations)
    pod["spec"]["schedulingGates"] = [{"name": vocab.GATE_GANG_PLACEMENT}]
    return pod


POLICIES = {
    "ValidatingAdmissionPolicy": r.Resource(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        False,
    ),
    "ValidatingAdmissionPolicyBinding": r.Resource(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        False,
    ),
}


async def _refusal(kube: Kube, pod: Obj) -> str | None:
    """The API server's refusal of creating `pod` (dry run), or None if it would create it."""
    path = r.PODS.path(pod["metadata"]["namespace"])
    try:
        await kube.request("POST", path, body=pod, query=[("dryRun", "All")])
    except errors.Invalid as e:
        return str(e)
    return None


async def test_the_shipped_policy_refuses_a_gated_pod_without_its_gang_or_size(
    world: World,  # noqa: F811
    kube: Kube,
) -> None:
    source = paths.manifests_dir() / "extender" / "gang-placement-policy.yaml"
    docs = list(yaml.safe_load_all(source.read_text()))
    for doc in docs:
        await kube.create(POLICIES[doc["kind"]], doc)
    try:
        unlabelled = _member(world, "g", 0, 2)
        del unlabelled["metadata"]["labels"][vocab.LABEL_GANG]
        unsized = _member(world, "g", 1, None)
        zero = _member(world, "g", 2, 0)
        whole = _member(world, "g", 3, 2)
        said = None
        for _ in range(120):  # the policy is compiled and bound asynchronously: <= 60 s
            said = await _refusal(kube, unlabelled)
            if said is not None:
                break
            await asyncio.sleep(0.5)
        assert said is not None and "must name its gang in the label testbed.dra.io/gang" in said
        for pod in (unsized, zero):
            said = await _refusal(kube, pod)
            assert said is not None and "testbed.dra.io/gang-size, a positive integer" in said
        assert await _refusal(kube, whole) is None
        ungated = _member(world, "h", 0, None)
        del ungated["spec"]["schedulingGates"]
        assert await _refusal(kube, ungated) is None  # pods not gated for it are left alone
    finally:
        for doc in reversed(docs):
            with contextlib.suppress(errors.NotFound):
                await kube.delete(POLICIES[doc["kind"]], doc["metadata"]["name"])
        # The API server drops a deleted policy asynchronously too: wait until it admits what
        # the policy refused, so the tests after this one (the placer's own, which creates a
        # gated pod without its size on purpose) meet a cluster without it.
        for _ in range(120):
            if await _refusal(kube, _member(world, "g", 1, None)) is None:
                break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError("the deleted gang-placement policy still refuses pods after 60 s")
