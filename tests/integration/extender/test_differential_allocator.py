"""The extender's verdict against the real allocator: seeded fleets and claims, one pod per
node per round, pinned to its node. kube-scheduler (its DRA plugin) schedules it or finds it
unschedulable; the extender said beforehand whether the node's devices can satisfy the claim.

The fleet mixes whole GPUs (product, memory capacity, driver version, PCIe roots, the
standard NUMA attribute), NICs (RDMA or not), MIG-style partitions consuming shared counters,
NICs shared by capacity (allowMultipleAllocations) and shared GPUs as dgx-h100-fractional
publishes them (memory in 1Gi steps to 79Gi, `compute: 1` in 100m or 250m steps from the step
or 500m). Classes select with capacity comparisons and semver. Claims (`SHAPES`) use request
selectors, count, All, firstAvailable, adminAccess, matchAttribute (PCIe root, and the in-tree
NUMA constraint across GPU and NIC requests, a shared GPU's too)/distinctAttribute, capacity
requests (shared NICs; shared GPUs' compute and memory in range, off-step, below the minimum,
over the maximum, or none named so the defaults apply), and a selector that fails at run
time. The agreement is printed per shape.

It runs on the session cluster, on the gated one, whose allocator steps fractional ranges in
milli-units (DRAFractionalCapacityRange), as the extender reads from its API server, on the
derived one (DRADerivedAttributes on too: kube-scheduler's experimental allocator), where
claims also constrain derived attributes (`DERIVED_SHAPES`), and on 1.36 and 1.35 clusters,
whose allocators have no such gates and check distinctAttribute as the extender does for
releases before 1.37.

Size: DRA_TESTBED_DIFF_NODES x DRA_TESTBED_DIFF_ROUNDS pairs (default 50 x 10 = 500; the gated
run DRA_TESTBED_DIFF_GATED_ROUNDS, the derived one DRA_TESTBED_DIFF_DERIVED_ROUNDS, older
releases' DRA_TESTBED_DIFF_OLDER_ROUNDS, 10 each),
seed DRA_TESTBED_DIFF_SEED. Every disagreement is printed with the claim and the verdict.
Agreement must reach TARGET over all pairs and SHAPE_TARGET within every shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from extender import app as app_mod
from extender import handlers
from testbed import vocab
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import pinned_pods as pinned

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(3600)]

Obj = dict[str, Any]
GPU = "gpu.nvidia.com"
NIC = "dra.net"
NODES = int(os.environ.get("DRA_TESTBED_DIFF_NODES", "50"))
ROUNDS = int(os.environ.get("DRA_TESTBED_DIFF_ROUNDS", "10"))
GATED_ROUNDS = int(os.environ.get("DRA_TESTBED_DIFF_GATED_ROUNDS", "10"))
OLDER_ROUNDS = int(os.environ.get("DRA_TESTBED_DIFF_OLDER_ROUNDS", "10"))
DERIVED_ROUNDS = int(os.environ.get("DRA_TESTBED_DIFF_DERIVED_ROUNDS", "10"))
SEED = int(os.environ.get("DRA_TESTBED_DIFF_SEED", "1"))
TARGET = 0.99
SHAPE_TARGET = 0.95
"""Each shape's own floor: one shape judged wrong throughout must fail the test even where
the others keep the whole above TARGET (a shape has ~30 pairs at the default size)."""


def _type_is(kind: str) -> str:
    return f"device.driver == '{GPU}' && device.attributes['{GPU}'].type == '{kind}'"


def classes(prefix: str) -> list[Obj]:
    exprs = {
        "gpu": _type_is("gpu"),
        "gpu-big": _type_is("gpu")
        + f" && device.capacity['{GPU}'].memory.compareTo(quantity('80Gi')) >= 0",
        "gpu-new": _type_is("gpu")
        + f" && device.attributes['{GPU}'].driverVersion.isGreaterThan(semver('550.0.0'))",
        "mig": _type_is("mig"),
        "nic": f"device.driver == '{NIC}' && !device.allowMultipleAllocations",
        "rdma": f"device.driver == '{NIC}' && device.attributes['{NIC}'].rdma == true",
        "vnic": f"device.driver == '{NIC}' && device.allowMultipleAllocations",
        "sgpu": _type_is("shared"),
    }
    return [
        {
            "apiVersion": vocab.RESOURCE_API_VERSION,
            "kind": "DeviceClass",
            "metadata": {"name": f"{prefix}-{name}"},
            "spec": {"selectors": [{"cel": {"expression": e}}]},
        }
        for name, e in exprs.items()
    ]


def node_devices(rng: random.Random, node: str) -> list[Obj]:
    """The ResourceSlices of one generated node."""
    roots = rng.choice([1, 2, 4])
    gpus: list[Obj] = []
    for i in range(rng.choice([2, 4, 8])):
        gpus.append(
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "index": {"int": i},
                    "productName": {"string": rng.choice(["H100", "A100"])},
                    "driverVersion": {"version": rng.choice(["535.104.5", "550.54.15", "560.1.0"])},
                    vocab.ATTR_PCIE_ROOT: {"string": f"pci-{i % roots}"},
                    vocab.ATTR_NUMA_NODE: {"int": (i % roots) % 2},
                },
                "capacity": {"memory": {"value": rng.choice(["40Gi", "80Gi"])}},
            }
        )
    if rng.random() < 0.6:
        # A shared GPU as dgx-h100-fractional publishes one: memory in 1Gi steps up to 79Gi,
        # compute in milli-unit steps, here from a minimum that is the step or above it.
        step = rng.choice(["100m", "250m"])
        low = rng.choice([step, "500m"])
        gpus.append(
            {
                "name": "sgpu",
                "allowMultipleAllocations": True,
                "attributes": {
                    "type": {"string": "shared"},
                    vocab.ATTR_NUMA_NODE: {"int": rng.randrange(2)},
                },
                "capacity": {
                    "compute": {
                        "value": "1",
                        "requestPolicy": {
                            "default": low,
                            "validRange": {"min": low, "max": "1", "step": step},
                        },
                    },
                    "memory": {
                        "value": "80Gi",
                        "requestPolicy": {
                            "default": "1Gi",
                            "validRange": {"min": "1Gi", "max": "79Gi", "step": "1Gi"},
                        },
                    },
                },
            }
        )
    nics: list[Obj] = []
    for i in range(rng.choice([0, 2, 4])):
        nics.append(
            {
                "name": f"nic-{i}",
                "attributes": {
                    "rdma": {"bool": rng.random() < 0.7},
                    vocab.ATTR_PCIE_ROOT: {"string": f"pci-{i % roots}"},
                    vocab.ATTR_NUMA_NODE: {"int": (i % roots) % 2},
                    vocab.NIC_ATTR_NUMA: {"int": (i % roots) % 2},  # DRANet's own name
                },
            }
        )
    if rng.random() < 0.3:
        nics.append(
            {
                "name": "vnic",
                "allowMultipleAllocations": True,
                "attributes": {"rdma": {"bool": False}, vocab.ATTR_PCIE_ROOT: {"string": "pci-0"}},
                "capacity": {"bandwidth": {"value": "100G"}},
            }
        )
    slices = [pinned.resource_slice(node, GPU, node, gpus)]
    if nics:
        slices.append(pinned.resource_slice(node, NIC, node, nics))
    if rng.random() < 0.3:
        pool = f"{node}-mig"
        counters = {"name": "gpu-0-mem", "counters": {"memory": {"value": "40Gi"}}}
        migs = [
            {
                "name": f"mig-{j}",
                "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
                "consumesCounters": [
                    {"counterSet": "gpu-0-mem", "counters": {"memory": {"value": "10Gi"}}}
                ],
            }
            for j in range(6)
        ]
        slices.append(pinned.resource_slice(node, GPU, pool, migs, count=2, suffix="mig"))
        counter_slice = pinned.resource_slice(node, GPU, pool, [], count=2, suffix="mig-counters")
        del counter_slice["spec"]["devices"]
        counter_slice["spec"]["sharedCounters"] = [counters]
        slices.append(counter_slice)
    return slices


SHAPES = (
    "count",
    "class-capacity-semver",
    "selector",
    "all",
    "first-available",
    "pcie-match",
    "distinct",
    "admin",
    "mig-counters",
    "vnic-capacity",
    "cel-runtime-error",
    "gpu+rdma",
    "numa-match",
    "fraction-compute",
    "fraction-memory",
    "fraction-default",
    "numa-match-shared",
)
"""The claim shapes, in the order `claim_spec` draws them (the last five: issue 29's)."""
DERIVED_SHAPES = (*SHAPES, "numa-derived")
"""With DRADerivedAttributes on: derived attributes in constraints too."""


def _derived_claim(rng: random.Random, req: Any) -> tuple[list[Obj], list[Obj]]:
    """GPU and NIC requests whose constraint names a derived attribute: each driver's NUMA
    attribute mapped to one name (as ints, or as strings), a type mismatch (never), a shared
    NIC without NUMA (a runtime error), the standard name shadowed on the GPUs (the NUMA node
    flipped), or distinct derived values across GPUs."""
    std, own = (
        "device.attributes['resource.kubernetes.io'].numaNode",
        ("device.attributes['dra.net'].numaNode"),
    )
    kind = rng.choice(["int", "string", "mismatch", "vnic", "shadow", "distinct"])
    name = "derived/numa"
    gpu_expr, nic_expr = std, own
    if kind == "string":
        gpu_expr, nic_expr = f"string({std})", f"string({own})"
    elif kind == "mismatch":
        gpu_expr = f"string({std})"
    elif kind == "shadow":
        name, gpu_expr = vocab.ATTR_NUMA_NODE, f"1 - {std}"

    def derived(expr: str) -> dict[str, Any]:
        return {"derivedAttributes": [{"name": name, "expression": expr}]}

    if kind == "distinct":
        reqs = [req("g", "gpu", 2, **derived(std))]  # two NUMA nodes at most
        return reqs, [{"requests": ["g"], "distinctAttribute": name}]
    nic = rng.choice(["nic", "rdma"]) if kind != "vnic" else "vnic"
    reqs = [
        req("g", "gpu", rng.randint(1, 2), **derived(gpu_expr)),
        req("n", nic, 1, **({} if kind == "shadow" else derived(nic_expr))),
    ]
    return reqs, [{"requests": ["g", "n"], "matchAttribute": name}]


def claim_spec(rng: random.Random, p: str, shapes: tuple[str, ...] = SHAPES) -> tuple[str, Obj]:
    """One generated claim spec (class names prefixed with `p`) and its shape's name, drawn
    from `shapes` (SHAPES, or DERIVED_SHAPES)."""

    def req(name: str, cls: str, count: int | None = 1, **kw: Any) -> Obj:
        body: Obj = {"deviceClassName": f"{p}-{cls}", **kw}
        if count is None:
            body["allocationMode"] = "All"
        else:
            body["count"] = count
        return {"name": name, "exactly": body}

    def cel(expr: str) -> list[Obj]:
        return [{"cel": {"expression": expr}}]

    def share(name: str) -> Obj:
        """A capacity request on a shared GPU: in range, off-step, below min, over max."""
        values = {
            "compute": ["50m", "100m", "250m", "300m", "600m", "1", "1100m"],
            "memory": ["512Mi", "1Gi", "1500Mi", "40Gi", "79Gi", "80Gi"],
        }
        return {"requests": {name: rng.choice(values[name])}}

    k = rng.randrange(len(shapes))
    n = rng.randint(1, 6)
    constraints: list[Obj] = []
    if k == 0:
        reqs = [req("g", "gpu", n)]
    elif k == 1:
        reqs = [req("g", rng.choice(["gpu-big", "gpu-new"]), rng.randint(1, 4))]
    elif k == 2:
        sel = rng.choice(
            [
                f"device.attributes['{GPU}'].productName == 'H100'",
                f"device.capacity['{GPU}'].memory.isGreaterThan(quantity('40Gi'))",
                f"device.attributes['{GPU}'].driverVersion.major() >= 550",
                f"device.attributes['{GPU}'].index in [0, 1, 2]",
                f"device.attributes['{GPU}'].driverVersion.compareTo(semver('560.0.0')) < 0",
            ]
        )
        reqs = [req("g", "gpu", rng.randint(1, 4), selectors=cel(sel))]
    elif k == 3:
        reqs = [req("g", rng.choice(["gpu", "gpu-big", "nic", "rdma"]), None)]
    elif k == 4:
        reqs = [
            {
                "name": "g",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": f"{p}-gpu-big", "count": rng.randint(2, 8)},
                    {"name": "any", "deviceClassName": f"{p}-gpu", "count": rng.randint(1, 8)},
                ],
            }
        ]
    elif k == 5:
        g = rng.randint(1, 2)
        reqs = [req("g", "gpu", g), req("n", rng.choice(["nic", "rdma"]), g)]
        constraints = [{"requests": ["g", "n"], "matchAttribute": vocab.ATTR_PCIE_ROOT}]
    elif k == 6:
        reqs = [req("g", "gpu", rng.randint(2, 4))]
        attr = rng.choice([vocab.ATTR_PCIE_ROOT, vocab.ATTR_NUMA_NODE])
        constraints = [{"requests": ["g"], "distinctAttribute": attr}]
    elif k == 7:
        reqs = [req("g", "gpu", rng.randint(1, 9), adminAccess=True)]
    elif k == 8:
        reqs = [req("m", "mig", rng.randint(1, 5))]
    elif k == 9:
        bw = rng.choice(["10G", "60G", "100G", "150G"])
        reqs = [req("v", "vnic", 1, capacity={"requests": {"bandwidth": bw}})]
        if rng.random() < 0.5:
            reqs.append(req("w", "vnic", 1, capacity={"requests": {"bandwidth": "50G"}}))
    elif k == 10:
        reqs = [req("g", "gpu", 1, selectors=cel(f"device.attributes['{GPU}'].missing == 1"))]
    elif k == 12:
        # The in-tree alignment across drivers; the shared NIC has no NUMA node, so never.
        reqs = [
            req("g", "gpu", rng.randint(1, 4)),
            req("n", rng.choice(["nic", "rdma", "vnic"]), rng.randint(1, 2)),
        ]
        constraints = [{"requests": ["g", "n"], "matchAttribute": vocab.ATTR_NUMA_NODE}]
    elif k == 13:
        # Two shares of one GPU: whole units round each share up to all of `compute: 1`.
        reqs = [req(r, "sgpu", 1, capacity=share("compute")) for r in ("s", "t")]
    elif k == 14:
        cap = share("memory")
        if rng.random() < 0.5:
            cap["requests"].update(share("compute")["requests"])
        reqs = [req("s", "sgpu", 1, capacity=cap)]
        if rng.random() < 0.5:
            reqs.append(req("t", "sgpu", 1, capacity=share("memory")))
    elif k == 15:
        # No capacity named: each request takes the policies' defaults.
        reqs = [req(f"s{i}", "sgpu", 1) for i in range(rng.randint(1, 3))]
    elif k == 16:
        reqs = [
            req("s", "sgpu", 1, capacity=share("compute")),
            req("n", rng.choice(["nic", "rdma"]), 1),
        ]
        constraints = [{"requests": ["s", "n"], "matchAttribute": vocab.ATTR_NUMA_NODE}]
    elif k == 17:
        reqs, constraints = _derived_claim(rng, req)
    else:
        reqs = [req("g", "gpu", n), req("n", "rdma", rng.randint(1, 2))]
    return shapes[k], {"devices": {"requests": reqs, "constraints": constraints}}


@pytest.fixture(scope="module")
async def extender(kube: Kube, extender_port: int) -> AsyncIterator[web.Application]:
    async with pinned.extender_on(kube, extender_port) as app:
        assert not app[app_mod.STORE].index.fractional  # the gate at 1.37's default
        yield app


@pytest.fixture(scope="module")
async def gated_extender(gated_kube: Kube) -> AsyncIterator[web.Application]:
    """On the gated cluster, which it reads steps capacity ranges in milli-units."""
    async with pinned.extender_on(gated_kube) as app:
        assert app[app_mod.STORE].index.fractional
        yield app


@pytest.fixture(scope="module")
async def derived_extender(derived_kube: Kube) -> AsyncIterator[web.Application]:
    """On the derived cluster (the gated one's gates and DRADerivedAttributes)."""
    async with pinned.extender_on(derived_kube) as app:
        assert app[app_mod.STORE].index.fractional
        yield app


@pytest.fixture(scope="module")
async def older_extender(
    older_kube: Kube, older_kubeconfig: tuple[str, str]
) -> AsyncIterator[web.Application]:
    """On 1.36 or 1.35, whose allocator checks distinctAttribute against one value per
    request and has no fractional capacity ranges."""
    async with pinned.extender_on(older_kube) as app:
        index = app[app_mod.STORE].index
        major, minor = older_kubeconfig[0].split(".")
        assert index.release == (int(major), int(minor)) and not index.fractional
        yield app


async def test_the_extender_agrees_with_the_real_allocator(
    kube: Kube, extender: web.Application
) -> None:
    await _differential(kube, extender, ROUNDS)


async def test_the_extender_agrees_with_the_allocator_stepping_fractions_in_milli_units(
    gated_kube: Kube, gated_extender: web.Application
) -> None:
    await _differential(gated_kube, gated_extender, GATED_ROUNDS)


async def test_the_extender_agrees_with_the_allocator_evaluating_derived_attributes(
    derived_kube: Kube, derived_extender: web.Application
) -> None:
    await _differential(derived_kube, derived_extender, DERIVED_ROUNDS, DERIVED_SHAPES)


async def test_the_extender_agrees_with_an_older_releases_allocator(
    older_kube: Kube, older_extender: web.Application
) -> None:
    await _differential(older_kube, older_extender, OLDER_ROUNDS)


async def _differential(
    kube: Kube, extender: web.Application, rounds: int, shapes: tuple[str, ...] = SHAPES
) -> None:
    rng = random.Random(SEED)
    run = secrets.token_hex(3)
    prefix = f"diff-{run}"
    ns = prefix
    core = extender[handlers.CORE]
    index = core.index
    nodes = [f"{prefix}-n{i}" for i in range(NODES)]
    await kube.create(
        r.NAMESPACES,
        {"metadata": {"name": ns, "labels": {"resource.kubernetes.io/admin-access": "true"}}},
    )
    created_classes = classes(prefix)
    try:
        for cls in created_classes:
            await kube.create(r.DEVICE_CLASSES, cls)
        for name in nodes:
            await kube.create(r.NODES, pinned.node(name, run))
            for s in node_devices(rng, name):
                await kube.create(r.RESOURCE_SLICES, s)
        await pinned.until(
            "extender sees the classes and nodes",
            lambda: (
                all(c["metadata"]["name"] in index.classes for c in created_classes)
                and all(
                    n in index.nodes and index.nodes[n].known and index.nodes[n].devices
                    for n in nodes
                )
            ),
        )
        await pinned.wait_ready(kube, nodes)
        pairs: list[dict[str, Any]] = []
        for rnd in range(rounds):
            pairs += await _round(kube, core, ns, prefix, nodes, rng, rnd, shapes)
            print(f"round {rnd}: {len(pairs)} pairs", flush=True)
        judged = [p for p in pairs if p["fits"] is not None]
        agree = [p for p in judged if p["fits"] == (p["kube"] == "scheduled")]
        print(
            f"pairs {len(pairs)}, judged {len(judged)}, agree {len(agree)} "
            f"({len(agree) / max(1, len(judged)):.2%}); not judged {len(pairs) - len(judged)}; "
            f"kube scheduled {sum(p['kube'] == 'scheduled' for p in pairs)}"
        )
        for p in pairs:
            if p["fits"] is None or p["fits"] != (p["kube"] == "scheduled"):
                print("DISAGREE" if p["fits"] is not None else "NOT JUDGED", json.dumps(p))
        print(_by_shape(pairs, shapes))
        assert len(pairs) >= NODES * rounds
        assert len(agree) >= TARGET * len(pairs)
        for shape in shapes:
            mine = [p for p in pairs if p["shape"] == shape]
            ok = [p for p in mine if p["fits"] == (p["kube"] == "scheduled")]
            assert mine and len(ok) >= SHAPE_TARGET * len(mine), (shape, len(ok), len(mine))
    finally:
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.NAMESPACES, ns)
        for n in nodes:
            with contextlib.suppress(errors.KubeError):
                await kube.delete(r.NODES, n)
        with contextlib.suppress(errors.KubeError):
            await kube.delete_collection(
                r.RESOURCE_SLICES, label_selector=f"{vocab.LABEL_RUN}={run}"
            )
        for n in nodes:
            for drv in (GPU, NIC):
                for suffix in ("", "-mig", "-mig-counters"):
                    with contextlib.suppress(errors.KubeError):
                        await kube.delete(r.RESOURCE_SLICES, f"{n}-{drv}{suffix}")
        for cls in created_classes:
            with contextlib.suppress(errors.KubeError):
                await kube.delete(r.DEVICE_CLASSES, cls["metadata"]["name"])


def _by_shape(pairs: list[dict[str, Any]], shapes: tuple[str, ...]) -> str:
    """Pairs, agreements and the real allocator's outcomes per claim shape, as a table."""
    rows = [f"{'shape':<22}{'pairs':>6}{'agree':>6}{'differ':>7}{'unjudged':>9}{'kube ok':>8}"]
    for shape in shapes:
        mine = [p for p in pairs if p["shape"] == shape]
        judged = [p for p in mine if p["fits"] is not None]
        agree = sum(p["fits"] == (p["kube"] == "scheduled") for p in judged)
        ok = sum(p["kube"] == "scheduled" for p in mine)
        rows.append(
            f"{shape:<22}{len(mine):>6}{agree:>6}{len(judged) - agree:>7}"
            f"{len(mine) - len(judged):>9}{ok:>8}"
        )
    return "\n".join(rows)


async def _round(
    kube: Kube,
    core: Any,
    ns: str,
    prefix: str,
    nodes: list[str],
    rng: random.Random,
    rnd: int,
    shapes: tuple[str, ...],
) -> list[dict[str, Any]]:
    index = core.index
    drawn = {n: claim_spec(rng, prefix, shapes) for n in nodes}
    specs = {n: spec for n, (_, spec) in drawn.items()}
    claims = {n: f"c{rnd}-{i}" for i, n in enumerate(nodes)}
    for n in nodes:
        body = {"metadata": {"name": claims[n], "namespace": ns}, "spec": specs[n]}
        await kube.create(r.RESOURCE_CLAIMS, body)
    await pinned.until(
        "extender sees the claims", lambda: all(index.claim(ns, claims[n]) for n in nodes)
    )
    # Every device on these nodes free again (last round's claims are gone).
    await pinned.until(
        "devices free",
        lambda: all(len(index.free_devices(n)) == len(index.nodes[n].devices) for n in nodes),
    )
    pods = {n: pinned.pod(ns, f"p{rnd}-{i}", claims[n], n) for i, n in enumerate(nodes)}
    verdicts = {}
    for n in nodes:
        d = core.demand(pods[n])
        verdicts[n] = core.verdicts(d, [n]).get(n)
    for n in nodes:
        await kube.create(r.PODS, pods[n])
    outcomes: dict[str, str] = {}
    deadline = time.monotonic() + 600
    while len(outcomes) < len(nodes) and time.monotonic() < deadline:
        listed = await kube.list(r.PODS, namespace=ns)
        for pod in listed.items:
            node = pod["spec"].get("nodeSelector", {}).get("kubernetes.io/hostname")
            out = pinned.outcome(pod)
            if (
                node in pods
                and out is not None
                and pod["metadata"]["name"] == pods[node]["metadata"]["name"]
            ):
                outcomes[node] = out
        await asyncio.sleep(1)
    result = []
    for n in nodes:
        v = verdicts[n]
        result.append(
            {
                "shape": drawn[n][0],
                "node": n,
                "kube": outcomes.get(n, "pending"),
                "fits": None if v is None else v.fits,
                "reason": "" if v is None else v.reason,
                "claim": specs[n],
                "devices": sorted(k[2] for k in index.nodes[n].devices),
            }
        )
    for n in nodes:
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.PODS, pods[n]["metadata"]["name"], ns, grace_seconds=0)
    for n in nodes:
        with contextlib.suppress(errors.KubeError):
            await kube.delete(r.RESOURCE_CLAIMS, claims[n], ns)
    await pinned.until(
        "pods and claims gone",
        lambda: not any(index.claim(ns, claims[n]) for n in nodes),
        timeout=600,
    )
    return result
