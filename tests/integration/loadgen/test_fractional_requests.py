"""loadgen's fractional compute requests (`compute=250m`) on a dgx-h100-fractional node of the
gated cluster (DRAFractionalCapacityRange on; the profile's GPUs publish `compute: 1`, 100m
to 1 in 100m steps): the real allocator takes a share within the policy, and one above it is
refused, by the pre-flight check with the numbers and by the allocator itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from loadgen import records, runner, scenarios, templates
from loadgen.scenarios import Phase, Scenario
from testbed import vocab
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import Fleet, make_fleet, remove_fleet

pytestmark = pytest.mark.cluster


@pytest.fixture
async def fractional(gated_kube: Kube, gated_kubeconfig: str) -> AsyncIterator[Fleet]:
    f = await make_fleet(gated_kube, gated_kubeconfig, nodes=1, profile="dgx-h100-fractional")
    try:
        yield f
    finally:
        await remove_fleet(gated_kube, gated_kubeconfig, f)


def _pods(pods: int, compute: str, settle: float | None = None) -> Scenario:
    sc = scenarios.load("pods", {"pods": str(pods), "compute": compute})
    if settle is None:
        return sc
    phase = sc.phases[0].model_copy(update={"wait": "settled", "timeout": settle})
    return sc.model_copy(update={"phases": [Phase.model_validate(phase.model_dump())]})


async def test_a_share_within_the_policy_is_allocated_rounded_up_to_its_step(
    gated_kube: Kube, fractional: Fleet
) -> None:
    settings = fractional.settings(qps=50, keep=True)
    res = await runner.run(gated_kube, _pods(3, "250m"), settings)
    assert res.error is None, res.error
    assert res.records.total.scheduled == 3
    ns = templates.namespace_name(res.run_id)
    claims = (await gated_kube.list(r.RESOURCE_CLAIMS, namespace=ns)).items
    assert len(claims) == 3
    for claim in claims:
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        # 250m is off the 100m step: the allocator takes the next step, 300m.
        assert result["consumedCapacity"][vocab.GPU_CAP_COMPUTE] == "300m", result


async def test_a_share_above_every_gpus_max_is_refused_with_the_numbers(
    gated_kube: Kube, fractional: Fleet
) -> None:
    settings = fractional.settings(qps=50)
    with pytest.raises(runner.Unfit) as refused:
        await runner.run(gated_kube, _pods(1, "1500m"), settings)
    assert (
        "phase pods: compute=1500m (1500m) is more than any fleet GPU's request policy lets one "
        "claim take (1000m at most)"
    ) in str(refused.value)
    with pytest.raises(errors.NotFound):
        await gated_kube.get(r.NAMESPACES, templates.namespace_name(settings.run_id))

    # Run anyway: the real allocator refuses it too, and the report says the scheduler's why.
    anyway = fractional.settings(qps=50, allow_unschedulable=True, stall_timeout=60)
    res = await runner.run(gated_kube, _pods(1, "1500m", settle=60.0), anyway)
    assert res.error is None, res.error
    assert res.records.total.scheduled == 0 and res.records.total.unschedulable == 1
    ((reason, count),) = records.pending(res.records).items()
    assert count == 1 and "cannot allocate all claims" in reason, reason
