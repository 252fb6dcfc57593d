"""Can one node's devices satisfy a pod's claims? DRA's request semantics, as a pure search.

Mirrors what kube-scheduler's structured allocator decides for one node (not how it picks):
- a request draws from devices its DeviceClass's selectors and its own selectors both match;
- `count` devices (`ExactCount`), or every matching device on the node (`All`, which fails if
  any of them is in use, or if none matches);
- `firstAvailable`: the alternatives in order, the first with which everything fits;
- `adminAccess`: may use devices in use, and uses none up (nor twice in one claim);
- `matchAttribute` / `distinctAttribute` constraints over the listed requests (a device
  without the attribute breaks either). `distinctAttribute` as the allocator implements it:
  from 1.37 every device's value must differ from all values taken so far; up to 1.36
  (`distinct_all=False`) it remembers one value per request (the last device added), so
  devices of one request are checked against the previous one and other requests' only;
- a device is used by one request unless it allows multiple allocations (consumable
  capacity: each request's capacity must fit the device's);
- a partition consumes its slice's shared counters (MIG): what is in use plus what this
  pod takes must fit each counter set;
- a request's derived attributes (DRADerivedAttributes): a constraint naming one reads, for
  that request's devices, its CEL expression's value instead of a published attribute,
  evaluated when a device is tried, as the allocator does.
A CEL runtime error on any candidate device fails the node, as it fails the allocator there
(for a derived attribute: on a device the search tries).
The search has a step budget: past it the verdict is *not judged*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from extender import cel_functions, consumable, expressions
from extender.claims import Alternative, Constraint, Pod, Request
from extender.expressions import Outcome
from extender.selectors import DeviceClassSelector
from extender.topology import Device, DeviceKey

CounterKey = tuple[str, str, str]
"""(driver, pool, counter set)."""

STEP_BUDGET = 2_000


@dataclass(frozen=True, slots=True)
class Verdict:
    fits: bool | None
    """None when not judged (`reason` says why)."""
    reason: str = ""
    unjudged: str | None = None
    """A low-cardinality reason label when not judged."""


FITS = Verdict(True)


@dataclass(slots=True)
class _State:
    used: dict[DeviceKey, int] = field(default_factory=dict)
    consumed: dict[tuple[CounterKey, str], Fraction] = field(default_factory=dict)
    bound: dict[int, Any] = field(default_factory=dict)
    """Constraint index -> the value a matchAttribute fixed, or the set a distinct took."""
    steps: int = 0
    capacity: dict[tuple[DeviceKey, str], Fraction] = field(default_factory=dict)
    """Capacity of shared (allowMultipleAllocations) devices this pod takes."""


class _OverBudget(Exception):
    pass


def judge(
    pod: Pod,
    devices: Mapping[DeviceKey, Device],
    *,
    in_use: Callable[[DeviceKey], bool],
    counters: Mapping[CounterKey, Mapping[str, Fraction]] | None = None,
    counters_in_use: Mapping[tuple[CounterKey, str], Fraction] | None = None,
    classes: Mapping[str, DeviceClassSelector] | None = None,
    capacity_in_use: Mapping[tuple[DeviceKey, str], Fraction] | None = None,
    fractional: bool = False,
    distinct_all: bool = True,
) -> Verdict:
    """Whether `devices` (one node's) can satisfy `pod`'s requests all at once.
    `capacity_in_use` is what other claims' allocations consume of shared devices'
    capacities (their `consumedCapacity`); `fractional`: the cluster runs with
    DRAFractionalCapacityRange, whose allocator steps capacity ranges in milli-units;
    `distinct_all`: distinctAttribute as 1.37 checks it (False: as up to 1.36)."""
    if pod.unjudged is not None:
        return Verdict(None, pod.reason, pod.unjudged)
    if not pod.requests:
        return FITS
    candidates: list[list[list[DeviceKey]]] = []
    for req in pod.requests:
        per_alt = []
        for alt in req.alternatives:
            keys = []
            for key, dev in devices.items():
                klass = classes.get(alt.cls) if classes is not None else None
                out = (
                    klass.matches(dev)
                    if klass is not None and len(alt.selectors) == len(klass.selectors)
                    else expressions.matches_all(alt.selectors, dev)
                )
                if out is Outcome.ERROR:
                    return Verdict(False, f"request {alt.name}: CEL runtime error on {key[2]}")
                if out is Outcome.MATCH:
                    keys.append(key)
            per_alt.append(keys)
        candidates.append(per_alt)
    short = _not_enough(pod, devices, in_use, candidates)
    if short is not None:
        return Verdict(False, short)
    search = _Search(
        pod,
        devices,
        in_use,
        counters or {},
        counters_in_use or {},
        candidates,
        capacity_in_use,
        fractional=fractional,
        distinct_all=distinct_all,
    )
    try:
        ok = search.request(0, _State())
    except _OverBudget:
        return Verdict(None, "search over budget", "too_complex")
    except expressions.DerivedError as e:
        if not e.judged:
            return Verdict(None, f"derived attribute {e}", "derived_value")
        return Verdict(False, f"derived attribute: {e}")
    if ok:
        return FITS
    return Verdict(False, search.why or "not enough matching free devices")


def _not_enough(
    pod: Pod,
    devices: Mapping[DeviceKey, Device],
    in_use: Callable[[DeviceKey], bool],
    candidates: list[list[list[DeviceKey]]],
) -> str | None:
    """A counting bound before the search: requests whose devices all come from one set
    cannot together take more than its free devices (else pods of 8 identical requests on a
    node one device short would make the search try every permutation)."""
    sets: list[tuple[frozenset[DeviceKey], int, str]] = []
    for req, per_alt in zip(pod.requests, candidates, strict=True):
        if len(req.alternatives) != 1:
            continue
        alt = req.alternatives[0]
        if alt.admin or alt.all_devices or any(devices[k].multi for k in per_alt[0]):
            continue
        sets.append((frozenset(per_alt[0]), alt.count, alt.name))
    for outer, _, name in sets:
        want = sum(count for inner, count, _ in sets if inner <= outer)
        free = sum(1 for k in outer if not in_use(k))
        if want > free:
            return f"request {name}: {want} devices wanted from {free} free that match"
    return None


@dataclass
class _Search:
    pod: Pod
    devices: Mapping[DeviceKey, Device]
    in_use: Callable[[DeviceKey], bool]
    counters: Mapping[CounterKey, Mapping[str, Fraction]]
    counters_in_use: Mapping[tuple[CounterKey, str], Fraction]
    candidates: list[list[list[DeviceKey]]]
    capacity_in_use: Mapping[tuple[DeviceKey, str], Fraction] | None = None
    fractional: bool = False
    distinct_all: bool = True
    why: str = ""

    def request(self, i: int, st: _State) -> bool:
        if i == len(self.pod.requests):
            return True
        req = self.pod.requests[i]
        for ai, alt in enumerate(req.alternatives):
            keys = self.candidates[i][ai]
            if alt.all_devices:
                ok = self._take_all(i, req, alt, keys, st)
            else:
                ok = self._take(i, req, alt, keys, 0, alt.count, st)
            if ok:
                return True
        if not self.why:
            self.why = f"request {req.name}: no fit on this node"
        return False

    def _take_all(
        self, i: int, req: Request, alt: Alternative, keys: list[DeviceKey], st: _State
    ) -> bool:
        if not keys:
            self.why = f"request {alt.name}: all devices, but none matches"
            return False
        undo: list[Callable[[], None]] = []
        for key in keys:
            u = self._use(req, alt, key, st)
            if u is None:
                for f in reversed(undo):
                    f()
                self.why = f"request {alt.name}: all devices, but {key[2]} is not available"
                return False
            undo.append(u)
        ok = self.request(i + 1, st)
        for f in reversed(undo):
            f()
        return ok

    def _take(
        self,
        i: int,
        req: Request,
        alt: Alternative,
        keys: list[DeviceKey],
        start: int,
        left: int,
        st: _State,
    ) -> bool:
        if left == 0:
            return self.request(i + 1, st)
        for j in range(start, len(keys) - left + 1):
            st.steps += 1
            if st.steps > STEP_BUDGET:
                raise _OverBudget
            u = self._use(req, alt, keys[j], st)
            if u is None:
                continue
            ok = self._take(i, req, alt, keys, j + 1, left - 1, st)
            u()
            if ok:
                return True
        return False

    def _use(
        self, req: Request, alt: Alternative, key: DeviceKey, st: _State
    ) -> Callable[[], None] | None:
        """Take `key` for `alt` if it can be; returns how to give it back."""
        dev = self.devices[key]
        if alt.admin:
            if st.used.get(key, 0) and not dev.multi:
                return None
        else:
            if (st.used.get(key, 0) or self.in_use(key)) and not dev.multi:
                return None
            if (
                alt.capacity
                and not dev.multi
                and _shares(key, dev, alt, _State(), {}, self.fractional) is None
            ):
                return None  # asks more than the device has
        taken: list[tuple[int, Any]] = []
        for j, con in enumerate(self.pod.constraints):
            if con.claim != req.claim or not _covers(con, req.name, alt.name):
                continue
            value = _attribute(alt, dev, con.attribute)
            if value is None:
                return None
            if con.distinct and self.distinct_all:
                # 1.37: every value taken so far.
                if value in st.bound.setdefault(j, []):
                    return None
                taken.append((j, (req.name, value)))
            elif con.distinct:
                # Up to 1.36: {request: its last value}; the first device always fits.
                seen: dict[str, Any] = st.bound.setdefault(j, {})
                if seen and value in seen.values():
                    return None
                taken.append((j, (req.name, value)))
            else:
                fixed = st.bound.get(j)
                if fixed is None:
                    taken.append((j, value))
                elif fixed[0] != value:
                    return None
        consumed: list[tuple[tuple[CounterKey, str], Fraction]] = []
        if not alt.admin and dev.consumes:
            for counter_set, counter, qty in dev.consumes:
                ck = ((key[0], key[1], counter_set), counter)
                total = self.counters.get(ck[0], {}).get(counter)
                try:
                    amount = cel_functions.parse_quantity(qty)
                except cel_functions.CelError:
                    return None
                if total is None:
                    return None
                held = self.counters_in_use.get(ck, Fraction(0)) + st.consumed.get(ck, Fraction(0))
                if held + amount > total:
                    return None
                consumed.append((ck, amount))
        shares: list[tuple[tuple[DeviceKey, str], Fraction]] = []
        if dev.multi and not alt.admin:
            taken_share = _shares(key, dev, alt, st, self.capacity_in_use or {}, self.fractional)
            if taken_share is None:
                return None
            shares = taken_share
        # Commit.
        for ck2, amount in shares:
            st.capacity[ck2] = st.capacity.get(ck2, Fraction(0)) + amount
        st.used[key] = st.used.get(key, 0) + 1
        for j, value in taken:
            if self.pod.constraints[j].distinct and self.distinct_all:
                st.bound[j].append(value[1])
            elif self.pod.constraints[j].distinct:
                st.bound[j][value[0]] = value[1]
            else:
                st.bound[j] = (value,)  # the first device fixes the value
        for ck, amount in consumed:
            st.consumed[ck] = st.consumed.get(ck, Fraction(0)) + amount

        def undo() -> None:
            st.used[key] -= 1
            if not st.used[key]:
                del st.used[key]
            for j, value in taken:
                if self.pod.constraints[j].distinct and self.distinct_all:
                    st.bound[j].remove(value[1])
                elif self.pod.constraints[j].distinct:
                    # The allocator forgets the request's value on removal, whatever the
                    # request's other devices hold.
                    st.bound[j].pop(value[0], None)
                else:
                    del st.bound[j]
            for ck, amount in consumed:
                st.consumed[ck] -= amount
            for ck2, amount in shares:
                st.capacity[ck2] -= amount

        return undo


def _attribute(alt: Alternative, dev: Device, name: str) -> Any:
    """The value a constraint on `name` sees of `dev` taken for `alt`: the request's derived
    attribute of that name (DerivedError when it has none), else the device's own."""
    for derived, sel in alt.derived:
        if derived == name:
            return sel.evaluator.derived_value(sel, dev)
    return dev.attributes.get(_qualified(name, dev.driver))


def _covers(con: Constraint, request: str, alternative: str) -> bool:
    return con.requests is None or request in con.requests or alternative in con.requests


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _shares(
    key: DeviceKey,
    dev: Device,
    alt: Alternative,
    st: _State,
    in_use: Mapping[tuple[DeviceKey, str], Fraction],
    fractional: bool = False,
) -> list[tuple[tuple[DeviceKey, str], Fraction]] | None:
    """What `alt` consumes of a shared device's capacities, or None if that breaks the
    capacity's request policy or does not fit next to what other claims (`in_use`) and this
    pod already took. As DRA's allocator: a capacity the request names is consumed as the
    policy rounds it, one it does not name takes the policy's default, else all of it."""
    wanted = {_qualified(n, dev.driver): q for n, q in alt.capacity}
    if any(name not in dev.capacity for name in wanted):
        return None  # a capacity the device does not have
    out = []
    for name, text in dev.capacity.items():
        try:
            total = cel_functions.parse_quantity(text)
            policy = consumable.policy_of(dev.policies.get(name))
        except cel_functions.CelError:
            return None
        amount = consumable.consumed_capacity(wanted.get(name), total, policy, fractional)
        if policy is not None and consumable.violates(amount, policy, fractional):
            return None
        held = in_use.get((key, name), Fraction(0)) + st.capacity.get((key, name), Fraction(0))
        if held + amount > total:
            return None
        out.append(((key, name), amount))
    return out
