"""What `fleet apply` reports: each object counted once across the passes of one apply."""

from __future__ import annotations

from fleet.progress import Counts


def test_an_object_found_matching_by_two_passes_counts_once() -> None:
    counts = Counts()
    counts.same("Node", "a")  # a pass cut short by an outage found it
    counts.same("Node", "a")  # and the resumed pass finds it again
    counts.same("ResourceSlice", "a")  # another kind under the same name is another object
    assert counts.unchanged == 2


def test_an_object_written_then_found_matching_counts_as_written_only() -> None:
    counts = Counts()
    counts.wrote("Node", "created", "a")
    counts.same("Node", "a")
    counts.same("Node", "b")
    assert (counts.created, counts.unchanged) == (1, 1)
