"""GPU-NIC NUMA alignment by a derived attribute (DRADerivedAttributes, alpha in 1.37), placed
by the real kube-scheduler on the derived cluster (the gate on), and refused where it is off.

Each GPU request maps the standard `resource.kubernetes.io/numaNode` (the NVIDIA driver's
only NUMA attribute) and each NIC request DRANet's `dra.net/numaNode` to `derived/numaNode`,
which one `matchAttribute` constraint spans. On one dgx-h100 node (4 GPUs + 4 NICs per NUMA
node) a first pod takes 2 GPUs + 2 NICs of one NUMA node; then two pods of 3 + 3: the first
fits the untouched NUMA node, the second fits neither (2 and 1 GPUs left) and is refused,
where without the constraint both would be placed (3 GPUs are free) and the second split
across NUMA nodes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loadgen import records, runner, scenarios, templates
from loadgen.scenarios import Claim, Phase, Scenario
from testbed import vocab
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import (
    Fleet,
    loadgen_args,
    namespace_gone,
    private_fleet,
    run_loadgen,
)

pytestmark = pytest.mark.cluster


@pytest.fixture
async def derived_fleet(derived_kube: Kube, derived_kubeconfig: str) -> AsyncIterator[Fleet]:
    async with private_fleet(derived_kube, derived_kubeconfig, nodes=1) as f:
        yield f


def _fill_then_two_aligned() -> Scenario:
    fill = Claim(gpus=2, nics=2, align=False, numa=True)
    derived = Claim(gpus=3, nics=3, align=False, numa=True, derived=True)
    return Scenario(
        name="derived",
        phases=[
            Phase(name="fill", kind="pods", count=1, claim=fill),
            Phase(name="aligned", kind="pods", count=2, claim=derived, wait="settled", timeout=120),
        ],
    )


async def test_derived_numa_pods_are_placed_aligned_and_refused_where_alignment_is_impossible(
    derived_kube: Kube, derived_fleet: Fleet
) -> None:
    settings = derived_fleet.settings(qps=50, allow_unschedulable=True, stall_timeout=90)
    res = await runner.run(derived_kube, _fill_then_two_aligned(), settings)
    assert res.error is None, res.error
    assert records.phase_counts(res.records, "fill").scheduled == 1
    aligned = records.phase_counts(res.records, "aligned")
    assert (aligned.seen, aligned.scheduled) == (2, 1), aligned
    refused = [p for p in res.records.pods.values() if p.phase == "aligned" and not p.node]
    assert len(refused) == 1 and refused[0].unschedulable, refused
    allocated = {
        res.records.pods[c.pod].phase: c
        for c in res.records.claims.values()
        if c.pod and c.allocated is not None
    }
    fill, placed = allocated["fill"], allocated["aligned"]
    assert len(placed.gpu_numa) == len(placed.nic_numa) == 3, placed
    # Every GPU and NIC of the claim on one NUMA node, the one the fill left whole.
    assert len(set(placed.gpu_numa + placed.nic_numa)) == 1, placed
    assert placed.gpu_numa[0] != fill.gpu_numa[0], (fill, placed)


async def test_the_claim_template_keeps_its_derived_attributes_where_the_gate_is_on(
    derived_kube: Kube, derived_fleet: Fleet
) -> None:
    """The API server keeps the alpha field (off, it would drop it silently)."""
    params = {"gpus": "5", "nics": "5", "numa": "true", "derived": "true", "fill": "0"}
    sc = scenarios.load("alignment", params)
    settings = derived_fleet.settings(qps=50, allow_unschedulable=True, stall_timeout=60)
    ns = templates.namespace_name(settings.run_id)
    seen: list[dict[str, object]] = []

    async def on_measured(_: object) -> None:
        seen.extend((await derived_kube.list(r.RESOURCE_CLAIM_TEMPLATES, namespace=ns)).items)

    res = await runner.run(derived_kube, sc, settings, on_measured=on_measured)
    assert res.error is None, res.error
    # 5 GPUs never fit one NUMA node of 4 (without the constraint, the node's 8 would hold
    # them): the pod is refused.
    counts = records.phase_counts(res.records, "aligned5")
    assert counts.seen == 1 and counts.scheduled == 0, counts
    (tmpl,) = seen
    requests = tmpl["spec"]["spec"]["devices"]["requests"]  # type: ignore[index]
    assert [q["exactly"]["derivedAttributes"][0]["name"] for q in requests] == [
        vocab.DERIVED_NUMA_NODE
    ] * 2
    await namespace_gone(derived_kube, res.run_id)


async def test_derived_without_the_gate_is_one_line_exit_2_nothing_created(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"noderived-{fleet.suffix}"
    code, out, err = await run_loadgen(
        "run", "alignment", "numa=true", "derived=true", "gpus=2", "nics=2",
        *loadgen_args(fleet, kubeconfig, tmp_path, run_id),
    )  # fmt: skip
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"loadgen: run {run_id}" not in err, err
    assert "(testbed up --feature-gates DRADerivedAttributes=true)" in lines[0], err
    assert "Traceback" not in err
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, templates.namespace_name(run_id))
