"""A pod's claims as the allocator's search takes them: requests (each a list of alternatives:
a DeviceClass and selectors, a count or all devices, admin access, capacity, derived
attributes) and constraints over them; or why they cannot be judged (a request shape, an
allocation mode, a class or selector not judged here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from extender import cel_functions, expressions
from extender.selectors import DeviceClassSelector


@dataclass(frozen=True, slots=True)
class Alternative:
    name: str
    cls: str
    selectors: tuple[expressions.Selector, ...]
    all_devices: bool
    count: int
    admin: bool
    capacity: tuple[tuple[str, Fraction], ...] = ()
    derived: tuple[tuple[str, expressions.Selector], ...] = ()
    """Derived attributes: (name, compiled expression)."""


@dataclass(frozen=True, slots=True)
class Request:
    claim: int
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True, slots=True)
class Constraint:
    claim: int
    requests: frozenset[str] | None
    """Request names it covers (None: all of the claim's); `req/sub` names a subrequest."""
    attribute: str
    distinct: bool


@dataclass(frozen=True, slots=True)
class Pod:
    """What a pod's unallocated claims ask for, parsed; or why it cannot be judged."""

    requests: tuple[Request, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    unjudged: str | None = None
    reason: str = ""


def parse_claims(
    specs: Sequence[Mapping[str, Any]],
    classes: Mapping[str, DeviceClassSelector],
    evaluator: expressions.Evaluator,
) -> Pod:
    """The requests and constraints of claim specs (`spec` of ResourceClaims); `evaluator`
    compiles the requests' own selectors."""
    requests: list[Request] = []
    constraints: list[Constraint] = []
    for ci, spec in enumerate(specs):
        devices = spec.get("devices") or {}
        for raw in devices.get("requests") or []:
            if not isinstance(raw, dict):
                continue
            name = str(raw.get("name", ""))
            if isinstance(raw.get("exactly"), dict):
                subs = [(name, raw["exactly"])]
            elif isinstance(raw.get("firstAvailable"), list):
                subs = [
                    (f"{name}/{s.get('name', '')}", s)
                    for s in raw["firstAvailable"]
                    if isinstance(s, dict)
                ]
            else:
                return Pod(unjudged="request_shape", reason=f"request {name}: unknown shape")
            alts: list[Alternative] = []
            for sub_name, sub in subs:
                alt = _alternative(sub_name, sub, classes, evaluator)
                if isinstance(alt, Pod):
                    return alt
                alts.append(alt)
            requests.append(Request(ci, name, tuple(alts)))
        for con in devices.get("constraints") or []:
            if not isinstance(con, dict):
                continue
            names = con.get("requests")
            covered = frozenset(str(n) for n in names) if names else None
            if con.get("matchAttribute"):
                constraints.append(Constraint(ci, covered, str(con["matchAttribute"]), False))
            elif con.get("distinctAttribute"):
                constraints.append(Constraint(ci, covered, str(con["distinctAttribute"]), True))
    return Pod(tuple(requests), tuple(constraints))


def _alternative(
    name: str,
    raw: Mapping[str, Any],
    classes: Mapping[str, DeviceClassSelector],
    evaluator: expressions.Evaluator,
) -> Alternative | Pod:
    cls = str(raw.get("deviceClassName", ""))
    klass = classes.get(cls)
    if klass is None:
        return Pod(unjudged="unknown_class", reason=f"request {name}: DeviceClass {cls!r} unknown")
    if klass.not_judged is not None:
        return Pod(unjudged=klass.not_judged, reason=f"DeviceClass {cls}: {klass.not_judged}")
    own, why = evaluator.selectors_of(raw.get("selectors"))
    if why is not None:
        return Pod(unjudged=why, reason=f"request {name}: selectors not judged ({why})")
    if any(s.error is not None for s in own):
        return Pod(unjudged="does_not_compile", reason=f"request {name}: CEL does not compile")
    mode = raw.get("allocationMode") or "ExactCount"
    count = raw.get("count", 1)
    if mode not in ("ExactCount", "All"):
        return Pod(unjudged="allocation_mode", reason=f"request {name}: allocationMode {mode}")
    if mode == "ExactCount" and (
        not isinstance(count, int) or isinstance(count, bool) or count < 1
    ):
        return Pod(unjudged="bad_count", reason=f"request {name}: count {count!r}")
    capacity: list[tuple[str, Fraction]] = []
    for cap_name, qty in ((raw.get("capacity") or {}).get("requests") or {}).items():
        try:
            capacity.append((str(cap_name), cel_functions.parse_quantity(str(qty))))
        except cel_functions.CelError:
            return Pod(unjudged="bad_capacity", reason=f"request {name}: capacity {qty!r}")
    derived = _derived(name, raw.get("derivedAttributes"), evaluator)
    if isinstance(derived, Pod):
        return derived
    return Alternative(
        name=name,
        cls=cls,
        selectors=klass.selectors + own,
        all_devices=mode == "All",
        count=int(count) if mode == "ExactCount" else 0,
        admin=raw.get("adminAccess") is True,
        capacity=tuple(capacity),
        derived=derived,
    )


def _derived(
    name: str, items: Any, evaluator: expressions.Evaluator
) -> tuple[tuple[str, expressions.Selector], ...] | Pod:
    out = []
    for item in items or ():
        expr = item.get("expression") if isinstance(item, dict) else None
        if not isinstance(expr, str) or not item.get("name"):
            return Pod(unjudged="request_shape", reason=f"request {name}: bad derived attribute")
        sel = evaluator.compile_derived(expr)
        if sel.unsupported is not None:
            return Pod(
                unjudged="unsupported_function",
                reason=f"request {name}: derived attribute not judged ({sel.unsupported})",
            )
        if sel.error is not None:
            return Pod(
                unjudged="does_not_compile",
                reason=f"request {name}: derived attribute does not compile ({sel.error})",
            )
        out.append((str(item["name"]), sel))
    return tuple(out)
