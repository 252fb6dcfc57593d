"""slo: parsing `--slo` and checking it."""

from __future__ import annotations

import pytest

from loadgen import slo


def test_parse_and_check() -> None:
    s = slo.parse("pod_startup.p99=5s")
    assert (s.metric, s.stat, s.threshold_ms) == ("pod_startup", "p99", 5000.0)
    assert slo.check(s, {"pod_startup": {"count": 3, "Perc99": 4000.0}}) == (4000.0, True)
    assert slo.check(s, {"pod_startup": {"count": 3, "Perc99": 6000.0}}) == (6000.0, False)


def test_no_samples_violates() -> None:
    assert slo.check(slo.parse("pod_startup.p50=1s"), {}) == (0.0, False)


@pytest.mark.parametrize("bad", ["pod_startup=5s", "nope.p99=5s", "pod_startup.p99=fast"])
def test_bad_specs_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="--slo"):
        slo.parse(bad)
