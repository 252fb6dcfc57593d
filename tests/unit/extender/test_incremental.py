"""Incremental index updates end in the same state as building the index from scratch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.cache.index import Index
from extender.config import Settings
from extender.core import Core
from testbed import vocab
from testbed.kube.watching import Change
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import store_of

NODES = ["a", "b", "c"]
BASE = [*objects.dgx("a"), *objects.numa_only("b"), *objects.unaligned("c")]
TEMPLATE = objects.template("ns", "pairs", objects.pair_spec(2))
POD = objects.pod("ns", "p", templates=["pairs"])

device = st.tuples(
    st.sampled_from(NODES),
    st.sampled_from([vocab.GPU_DRIVER, vocab.NIC_DRIVER]),
    st.integers(0, 7),
)
op = st.tuples(
    st.sampled_from(["upsert", "delete"]),
    st.integers(0, 5),  # claim number
    st.lists(device, max_size=4, unique=True),
)


def claim(number: int, devices: list[tuple[str, str, int]]) -> dict[str, Any]:
    alloc = [(d, n, f"{'gpu' if d == vocab.GPU_DRIVER else 'nic'}-{i}") for n, d, i in devices]
    return objects.claim("ns", f"c{number}", {}, allocated=alloc)


def state(index: Index) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in NODES:
        s = index.summary(index.nodes[name])
        classes = {cls: (c.total, c.free, c.root_free, c.numa_free) for cls, c in s.classes.items()}
        out[name] = (classes, s.pairs(vocab.CLASS_GPU, vocab.CLASS_RDMA_NIC))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(op, max_size=25))
def test_incremental_equals_rebuild(ops: list[tuple[str, int, list[tuple[str, str, int]]]]) -> None:
    live = store_of([*BASE, TEMPLATE])
    live_core = Core(live.index, Settings(), ready=lambda: True)
    final: dict[int, dict[str, Any]] = {}
    for kind, number, devices in ops:
        obj = claim(number, devices)
        if kind == "upsert":
            live.apply("ResourceClaim", Change("MODIFIED", obj))
            final[number] = obj
        else:
            live.apply("ResourceClaim", Change("DELETED", obj))
            final.pop(number, None)
        state(live.index)  # read in between, as handlers do
        live_core.prioritize(POD, NODES)  # and warm the remembered scores
    rebuilt = store_of([*BASE, TEMPLATE, *final.values()])
    assert state(live.index) == state(rebuilt.index)
    rebuilt_core = Core(rebuilt.index, Settings(), ready=lambda: True)
    assert live_core.prioritize(POD, NODES) == rebuilt_core.prioritize(POD, NODES)
