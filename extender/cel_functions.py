"""Kubernetes' quantity and semver CEL libraries, as functions the CEL interpreter calls.

A quantity is a CEL map tagged with its exact value (`{"k8s.io/quantity": "n/d"}`), a semver
one tagged with its text, so equal values compare equal with `==` as in kube-scheduler; a
function given the wrong kind raises `CelError` ("no such overload"), a runtime error. Also
the names of the interpreter's own functions that kube-scheduler's environment has too
(`BUILTINS`, `OPERATOR`): `expressions` judges no expression that calls anything else.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from testbed import units

_Q = "k8s.io/quantity"
SEMVER_TAG = "k8s.io/semver"

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_INT64 = 2**63


class CelError(ValueError):
    """A runtime error raised by one of our functions."""


def parse_quantity(text: str) -> Fraction:
    """A Kubernetes quantity (`80Gi`, `500m`, `1e3`) as its exact value, as
    resource.ParseQuantity reads it (testbed.units, the project's one quantity parser)."""
    try:
        if isinstance(text, str):
            return units.parse_quantity(text)
    except ValueError:
        pass
    raise CelError(f"invalid quantity {text!r:.60}")


def quantity_value(text: str) -> dict[str, str]:
    """A quantity as a CEL value: a tagged map holding the exact number (equal quantities
    compare equal with `==`, as in kube-scheduler)."""
    return _qv(parse_quantity(text))


def _qv(number: Fraction) -> dict[str, str]:
    return {_Q: f"{number.numerator}/{number.denominator}"}


def _q(value: Any) -> Fraction:
    if isinstance(value, dict) and _Q in value:
        return Fraction(value[_Q])
    raise CelError("no such overload: expected a quantity")


def parse_semver(text: str, normalize: bool = False) -> tuple[int, int, int, tuple[Any, ...]]:
    if not isinstance(text, str):
        raise CelError("no such overload: semver takes a string")
    if normalize:
        text = _normalize(text)
    m = _SEMVER.match(text)
    if m is None:
        raise CelError(f"invalid semver {text!r}")
    pre = tuple(int(p) if p.isdigit() else p for p in m.group(4).split(".")) if m.group(4) else ()
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre


def _normalize(text: str) -> str:
    """kube's normalization: no `v` prefix, missing minor/patch as 0, no leading zeros."""
    core, sep, rest = text.removeprefix("v").partition("-")
    if not sep:
        core, sep, rest = core.partition("+")
    parts = core.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + (sep + rest if sep else "")


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    parse_semver(text, normalize)
    return {SEMVER_TAG: _normalize(text) if normalize else text}


def _v(value: Any) -> tuple[int, int, int, tuple[Any, ...]]:
    if isinstance(value, dict) and SEMVER_TAG in value:
        return parse_semver(value[SEMVER_TAG])
    raise CelError("no such overload: expected a semver")


def _semver_cmp(a: Any, b: Any) -> int:
    x, y = _v(a), _v(b)
    if x[:3] != y[:3]:
        return -1 if x[:3] < y[:3] else 1
    return _pre_cmp(x[3], y[3])


def _pre_cmp(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    """Semver precedence of pre-releases: none ranks above any; numbers below words."""
    if a == b:
        return 0
    if not a or not b:
        return 1 if not a else -1
    for p, q in zip(a, b, strict=False):
        if p == q:
            continue
        if isinstance(p, int) != isinstance(q, int):
            return -1 if isinstance(p, int) else 1
        return -1 if p < q else 1
    return -1 if len(a) < len(b) else 1


def _compare_to(a: Any, b: Any) -> int:
    if isinstance(a, dict) and SEMVER_TAG in a:
        return _semver_cmp(a, b)
    x, y = _q(a), _q(b)
    return (x > y) - (x < y)


def _as_integer(a: Any) -> int:
    x = _q(a)
    if x.denominator != 1 or not -_INT64 <= x.numerator < _INT64:
        raise CelError("cannot convert value to integer")
    return x.numerator


def _add(a: Any, b: Any) -> dict[str, str]:
    return _qv(_q(a) + (b if isinstance(b, int) and not isinstance(b, bool) else _q(b)))


def _sub(a: Any, b: Any) -> dict[str, str]:
    return _qv(_q(a) - (b if isinstance(b, int) and not isinstance(b, bool) else _q(b)))


def _is(parse: Any) -> Any:
    def check(text: Any, *flag: Any) -> bool:
        try:
            parse(text, *flag)
        except (CelError, ValueError, ZeroDivisionError):
            return False
        return True

    return check


def _semver(text: Any, normalize: Any = False) -> dict[str, str]:
    return semver_value(text, bool(normalize))


def _part(index: int) -> Any:
    def get(v: Any) -> Any:
        return _v(v)[index]

    return get


FUNCTIONS: dict[str, Any] = {
    "quantity": quantity_value,
    "isQuantity": _is(parse_quantity),
    "compareTo": _compare_to,
    "isGreaterThan": lambda a, b: _compare_to(a, b) > 0,
    "isLessThan": lambda a, b: _compare_to(a, b) < 0,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda a: float(_q(a)),
    "isInteger": lambda a: _q(a).denominator == 1 and -_INT64 <= _q(a).numerator < _INT64,
    "sign": lambda a: (_q(a) > 0) - (_q(a) < 0),
    "add": _add,
    "sub": _sub,
    "semver": _semver,
    "isSemver": _is(parse_semver),
    "major": _part(0),
    "minor": _part(1),
    "patch": _part(2),
}

# What the Rust interpreter offers that kube-scheduler's environment also has (the standard
# library, macros and operators); anything else named in an expression is not judged.
BUILTINS = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches", "has", "int", "uint",
        "double", "string", "bool", "bytes", "dyn", "type", "all", "exists", "exists_one",
        "map", "filter", "duration", "timestamp",
    }
)  # fmt: skip
OPERATOR = re.compile(r"^(?:_|!_|-_|@)")
