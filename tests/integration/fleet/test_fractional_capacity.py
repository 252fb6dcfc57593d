"""Fractional capacity ranges judged by the real allocator, on the gated cluster
(DRAFractionalCapacityRange on): a shared GPU's `compute: 1` in 100m steps."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from fleet import profiles, render
from fleet.reconcile import Reconciler
from fleet.spec import from_data
from testbed import vocab
from testbed.kube.client import Kube
from testbed.kube.resources import RESOURCE_CLAIMS
from tests.integration.fleet import dra_objects as dra
from tests.support import own_clusters

pytestmark = pytest.mark.cluster


@pytest.fixture
async def ns(gated_kube: Kube) -> AsyncIterator[str]:
    async with own_clusters.namespace(gated_kube, "frac") as name:
        yield name


async def test_compute_requests_round_up_to_milli_steps_and_the_default_caps_sharing(
    gated_kube: Kube, ns: str
) -> None:
    kube = gated_kube
    fleet = f"frac-{secrets.token_hex(3)}"
    prof = profiles.builtin()["dgx-h100-fractional"].model_dump(by_alias=True)
    prof.update(name="frac1", roots=[{"bus": 0x10, "gpus": 1}], nics={})
    desired = render.validate(
        from_data(
            {
                "name": fleet,
                "pools": [{"name": "p", "profile": "frac1", "count": 1}],
                "profiles": [prof],
            }
        )
    )
    rec = Reconciler(kube)
    try:
        await rec.apply(desired)
        await rec.wait_ready(desired, within=120)
        assert (await rec.apply(desired)).writes == 0  # the API server kept the range as sent

        # 250m is no multiple of 100m from 100m: rounded up to 300m, milli-unit arithmetic.
        await dra.run_with_claim(
            kube, ns, fleet, "a", dra.claim("a", vocab.CLASS_GPU, compute="250m")
        )
        (result,) = (await kube.get(RESOURCE_CLAIMS, "a", ns))["status"]["allocation"]["devices"][
            "results"
        ]
        assert result["consumedCapacity"][vocab.GPU_CAP_COMPUTE] == "300m"
        # A claim that names no compute takes the default 100m: 7 more fit beside 300m ...
        for i in range(7):
            await dra.run_with_claim(kube, ns, fleet, f"d{i}", dra.claim(f"d{i}", vocab.CLASS_GPU))
        # ... and the GPU's whole compute is taken, so the next one stays Pending.
        await dra.pending_with_claim(kube, ns, fleet, "over", dra.claim("over", vocab.CLASS_GPU))
    finally:
        await rec.delete(fleet)
