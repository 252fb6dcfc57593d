"""Whether the extender judges capacity ranges in milli-units, from the gates the API server
reports and its release (pure)."""

from __future__ import annotations

from extender import gates
from testbed.cluster import feature_gates

METRICS = """# HELP kubernetes_feature_enabled [BETA] ...
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="BETA"} 1
kubernetes_feature_enabled{name="DRAFractionalCapacityRange",stage="BETA"} {on}
"""


def state(on: int) -> dict[str, bool]:
    return feature_gates.enabled_in(METRICS.replace("{on}", str(on)))


def test_the_gate_as_the_api_server_reports_it() -> None:
    assert gates.fractional(state(1), (1, 37)) is True
    assert gates.fractional(state(0), (1, 37)) is False
    assert gates.fractional(state(1), None) is True


def test_releases_without_the_gate_round_to_whole_units() -> None:
    # 1.35 and 1.36 report no such gate, and nothing they report changes it.
    assert gates.fractional({"DRAConsumableCapacity": True}, (1, 36)) is False
    assert gates.fractional(None, (1, 35)) is False
    assert gates.fractional(state(1), (1, 36)) is False


def test_a_gate_list_without_it_is_off() -> None:
    assert gates.fractional({"DRAConsumableCapacity": True}, (1, 37)) is False


def test_unreadable_on_a_release_with_the_gate_judges_in_milli_units() -> None:
    assert gates.fractional(None, (1, 37)) is True
    assert gates.fractional(None, None) is True
