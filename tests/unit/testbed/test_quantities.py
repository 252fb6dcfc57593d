"""The project's one quantity parser (testbed.units.parse_quantity) against the cases
Kubernetes' own resource.Quantity tests hold (apimachinery pkg/api/resource, TestQuantityParse:
the inputs and the values they must come to, including its rounding up to nano units and its
cap of binary amounts), and everything that reads quantities through it."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from extender import cel_functions
from loadgen import scenarios, watch_events
from testbed import units

N = Fraction(1, 10**9)
MAX_INT64 = 2**63 - 1

# Kubernetes' table, as values: input -> the exact amount.
KUBERNETES_CASES: list[tuple[str, Fraction | int]] = [
    ("0", 0), ("0n", 0), ("0u", 0), ("0m", 0), ("0Ki", 0), ("0k", 0), ("0Mi", 0), ("0M", 0),
    ("0Gi", 0), ("0G", 0), ("0Ti", 0), ("0T", 0),
    ("1", 1),
    ("1Ki", 1024), ("8Ki", 8 * 1024), ("7Mi", 7 * 2**20), ("6Gi", 6 * 2**30),
    ("5Ti", 5 * 2**40), ("4Pi", 4 * 2**50), ("3Ei", 3 * 2**60), ("10Ti", 10 * 2**40),
    ("100Ti", 100 * 2**40),
    ("5n", 5 * N), ("4u", Fraction(4, 10**6)), ("3m", Fraction(3, 1000)), ("9", 9),
    ("8k", 8000), ("50k", 50000), ("7M", 7 * 10**6), ("6G", 6 * 10**9), ("5T", 5 * 10**12),
    ("40T", 4 * 10**13), ("300T", 3 * 10**14), ("2P", 2 * 10**15), ("1E", 10**18),
    ("1E-3", Fraction(1, 1000)), ("1e3", 1000), ("1E6", 10**6), ("1e9", 10**9),
    ("1E12", 10**12), ("1e15", 10**15), ("1E18", 10**18), ("1e14", 10**14), ("1e13", 10**13),
    ("100.035k", 100035),
    ("0.001", Fraction(1, 1000)), ("0.0005k", Fraction(1, 2)), ("0.005", Fraction(5, 1000)),
    ("0.05", Fraction(5, 100)), ("0.5", Fraction(1, 2)), ("0.00050k", Fraction(1, 2)),
    ("0.00500", Fraction(5, 1000)), ("0.05000", Fraction(5, 100)), ("0.50000", Fraction(1, 2)),
    ("0.5e0", Fraction(1, 2)), ("0.5e-1", Fraction(5, 100)), ("0.5e-2", Fraction(5, 1000)),
    ("10.035M", 10035000),
    ("1.2e3", 1200), ("1.3E+6", 1300000), ("1.40e9", 14 * 10**8), ("1.53E12", 153 * 10**10),
    ("1.6e15", 16 * 10**14), ("1.7E18", 17 * 10**17),
    ("9.01", Fraction(901, 100)), ("8.1k", 8100), ("7.123456M", 7123456),
    ("6.987654321G", 6987654321), ("5.444T", 5444 * 10**9), ("40.1T", 401 * 10**11),
    ("300.2T", 3002 * 10**11), ("2.5P", 25 * 10**14), ("1.01E", 101 * 10**16),
    # rounded up to whole nano units, and binary amounts capped at the largest int64
    ("3.001n", 4 * N), ("1.1E-9", 2 * N), ("0.0000000001", N), ("0.0000000005", N),
    ("0.00000000050", N), ("0.5e-9", N), ("0.9n", N), ("0.00000012345", 124 * N),
    ("0.00000012354", 124 * N), ("9Ei", MAX_INT64), ("9223372036854775807Ki", MAX_INT64),
    ("12E", 12 * 10**18),
    ("100.035Ki", Fraction(10243584, 100)), ("0.5Mi", 2**19), ("0.05Gi", Fraction(536870912, 10)),
    ("0.025Ti", Fraction(274877906944, 10)),
    ("0.000000000001Ki", 2 * N), (".001", Fraction(1, 1000)), (".0001k", Fraction(1, 10)),
    ("1.", 1), ("1.G", 10**9),
]  # fmt: skip
KUBERNETES_INVALID = [
    "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", "",
]  # fmt: skip


@pytest.mark.parametrize(("text", "value"), KUBERNETES_CASES)
def test_kubernetes_cases_with_either_sign(text: str, value: Fraction | int) -> None:
    assert units.parse_quantity(text) == value
    assert units.parse_quantity("+" + text) == value
    assert units.parse_quantity("-" + text) == -value


@pytest.mark.parametrize("text", KUBERNETES_INVALID)
def test_kubernetes_invalid_cases_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        units.parse_quantity(text)


@pytest.mark.parametrize(
    "text",
    ["9" * 8000, "0." + "0" * 8000 + "1", "0" * 8000 + "1Ki", "1" + "0" * 8000 + "x", "1e999999"],
)
def test_very_long_quantities_are_read_or_refused_never_slowly(text: str) -> None:
    # Their timing is bench/quantities.py's (docs/results/narrative/control-plane.md); here,
    # the right outcome.
    try:
        value = units.parse_quantity(text)
    except ValueError as e:
        assert "too large" in str(e) or "not a quantity" in str(e)
    else:
        assert value in (N, 1024)


@given(
    st.integers(0, 10**15),
    st.integers(0, 10**6 - 1),
    st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "e3", "e-2"]),
)
@example(2**33, 0, "Gi")  # 2^63 bytes: one past the int64 maximum binary amounts stop at
def test_a_quantity_is_its_number_times_its_suffix_rounded_up_to_nano(
    whole: int, fraction: int, suffix: str
) -> None:
    scale = {"": 1, "n": N, "u": Fraction(1, 10**6), "m": Fraction(1, 10**3), "k": 10**3}
    scale.update({"M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30})
    scale.update({"e3": 1000, "e-2": Fraction(1, 100)})
    exact = (whole + Fraction(fraction, 10**6)) * scale[suffix]
    expected = -(-exact // N) * N  # ceiling, in whole nano units
    if suffix.endswith("i"):  # binary amounts stop at the int64 maximum, as resource.Quantity's
        expected = min(expected, Fraction(2**63 - 1))
    assert units.parse_quantity(f"{whole}.{fraction:06d}{suffix}") == expected


def test_every_reader_of_quantities_uses_it() -> None:
    for text in ("1Pi", "1e9", "500m"):
        assert cel_functions.parse_quantity(text) == units.parse_quantity(text)
        assert watch_events.bytes_of(text) == units.quantity_bytes(text) > 0
        scenario = scenarios.load("pods", {"pods": "1", "memory": text})
        assert scenario.phases[0].claim.memory == text
    assert units.quantity_bytes("500m") == 1  # half a byte is a byte
    with pytest.raises(ValueError, match="negative"):
        units.quantity_bytes("-1Gi")
    with pytest.raises(scenarios.ScenarioError, match="not a quantity"):
        scenarios.load("pods", {"pods": "1", "memory": "1Gb"})
