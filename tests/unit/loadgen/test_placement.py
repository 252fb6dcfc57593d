"""placement: GPU-NIC pairing and gang spans."""

from __future__ import annotations

from loadgen import placement


def test_pairs_need_a_distinct_nic_on_the_same_root() -> None:
    assert placement.aligned_pairs(["a", "b"], ["a", "b"]) == 2
    assert placement.aligned_pairs(["a", "a"], ["a", "b"]) == 1
    assert placement.aligned_pairs(["a"], ["b"]) == 0
    assert placement.aligned_pairs([None], [None]) == 0


def test_span_counts_distinct_label_values_and_unlabelled_nodes_separately() -> None:
    labels = {"n1": {"rack": "r1"}, "n2": {"rack": "r1"}, "n3": {"rack": "r2"}, "n4": {}}
    assert placement.span(["n1", "n2"], labels, "rack") == 1
    assert placement.span(["n1", "n3"], labels, "rack") == 2
    assert placement.span(["n1", "n4", "n5"], labels, "rack") == 3
