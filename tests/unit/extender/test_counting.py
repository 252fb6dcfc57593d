"""The index's counting shortcut (`Index.counts_suffice`): where it says a pod's claims fit a
node, the allocator's search says so too, over random allocations and claims that mix
classes (overlapping ones among them), counts, a request selector, constraints and a class
that errs on the node's devices."""

from __future__ import annotations

import random
from typing import Any

from extender import claims
from extender.topology import DeviceKey
from testbed import vocab
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import store_of

ERRING = "erring.example.com"
CLASSES = [vocab.CLASS_GPU, vocab.CLASS_NIC, vocab.CLASS_RDMA_NIC, ERRING]


def _request(rng: random.Random, i: int) -> dict[str, Any]:
    req = objects.request(f"r{i}", rng.choice(CLASSES), rng.randint(1, 9))
    if rng.random() < 0.1:  # a selector of its own: the search's to judge
        req["exactly"]["selectors"] = [{"cel": {"expression": "device.driver != ''"}}]
    return req


def test_where_counting_says_fits_the_search_agrees() -> None:
    rng = random.Random(11)
    erring = objects.device_class(ERRING, "device.attributes['no.such.domain'].x == 'y'")
    index = store_of([*objects.dgx("n0"), erring]).index
    view = index.nodes["n0"]
    keys: list[DeviceKey] = sorted(view.devices)
    counted = refused = 0
    for trial in range(400):
        taken = rng.sample(keys, rng.randint(0, len(keys)))
        index.upsert(
            "ResourceClaim",
            objects.claim("ns", "busy", {"devices": {"requests": []}}, allocated=taken),
        )
        spec = objects.claim_spec(
            [_request(rng, i) for i in range(rng.randint(1, 3))],
            aligned=[["r0", "r1"]] if rng.random() < 0.1 else [],
        )
        pod = claims.parse_claims([spec], index.classes, index.evaluator)
        searched = index.search(view, pod).fits
        if index.counts_suffice(view, pod):
            counted += 1
            assert searched is True, (trial, spec, len(taken))
            assert index.judge(view, pod).fits is True
        else:
            refused += searched is False
            assert index.judge(view, pod).fits == searched
    # Both ways were taken often: the shortcut answers, and the search decides the rest.
    assert counted > 40 and refused > 40, (counted, refused)


def test_counting_leaves_to_the_search_what_it_cannot_count() -> None:
    erring = objects.device_class(ERRING, "device.attributes['no.such.domain'].x == 'y'")
    index = store_of([*objects.dgx("n0"), erring]).index
    view = index.nodes["n0"]

    def counts(*requests: dict[str, Any], aligned: list[list[str]] | None = None) -> bool:
        spec = objects.claim_spec(requests, aligned=aligned or [])
        pod = claims.parse_claims([spec], index.classes, index.evaluator)
        return index.counts_suffice(view, pod)

    assert counts(objects.request("a", vocab.CLASS_GPU, 8))
    assert not counts(objects.request("a", vocab.CLASS_GPU, 9))  # not enough: the search says why
    assert counts(objects.request("a", vocab.CLASS_GPU), objects.request("b", vocab.CLASS_NIC))
    # RDMA NICs are NICs: two classes over the same devices are not counted apart.
    assert not counts(
        objects.request("a", vocab.CLASS_NIC), objects.request("b", vocab.CLASS_RDMA_NIC)
    )
    assert not counts(objects.request("a", ERRING))  # fails the node, as the allocator does
    assert not counts(
        objects.request("a", vocab.CLASS_GPU),
        objects.request("b", vocab.CLASS_RDMA_NIC),
        aligned=[["a", "b"]],
    )
    assert not counts(
        {"name": "a", "exactly": {"deviceClassName": vocab.CLASS_GPU, "allocationMode": "All"}}
    )
