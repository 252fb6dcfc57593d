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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from extender import expressions
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
            capacity.append((str(cap_name), expressions.parse_quantity(str(qty))))
        except expressions.CelError:
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
                    amount = expressions.parse_quantity(qty)
                except expressions.CelError:
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
            total = expressions.parse_quantity(text)
            policy = _policy(dev.policies.get(name))
        except expressions.CelError:
            return None
        amount = consumed_capacity(wanted.get(name), total, policy, fractional)
        if policy is not None and violates(amount, policy, fractional):
            return None
        held = in_use.get((key, name), Fraction(0)) + st.capacity.get((key, name), Fraction(0))
        if held + amount > total:
            return None
        out.append(((key, name), amount))
    return out


@dataclass(frozen=True, slots=True)
class Policy:
    """A capacity's requestPolicy: a default, and valid values or a range (min, max, step)."""

    default: Fraction | None = None
    values: tuple[Fraction, ...] = ()
    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None
    ranged: bool = False


def _policy(raw: Any) -> Policy | None:
    if not isinstance(raw, dict):
        return None

    def q(v: Any) -> Fraction | None:
        return None if v is None else expressions.parse_quantity(str(v))

    rng = raw.get("validRange")
    rng = rng if isinstance(rng, dict) else None
    values = raw.get("validValues")
    return Policy(
        default=q(raw.get("default")),
        values=tuple(expressions.parse_quantity(str(v)) for v in values)
        if isinstance(values, list)
        else (),
        min=q(rng.get("min")) if rng else None,
        max=q(rng.get("max")) if rng else None,
        step=q(rng.get("step")) if rng else None,
        ranged=rng is not None,
    )


def consumed_capacity(
    requested: Fraction | None, total: Fraction, policy: Policy | None, fractional: bool = False
) -> Fraction:
    """How much of a capacity a request consumes (the allocator's calculateConsumedCapacity):
    a range rounds up to min + n x step, in whole units (Quantity.Value(), which rounds each
    of request, min and step up) or, with `fractional`, in milli-units."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else total
    if policy is None:
        return requested
    if policy.ranged and policy.min is not None:
        if requested < policy.min:
            return policy.min
        if policy.step is None:
            return requested
        unit = Fraction(1, 1000) if fractional else Fraction(1)
        req, low, step = (_ceil(q / unit) for q in (requested, policy.min, policy.step))
        steps = -((low - req) // step)  # ceil((req - min) / step)
        return (low + step * steps) * unit
    if policy.values:
        return next((v for v in policy.values if requested <= v), requested)
    return requested


def violates(amount: Fraction, policy: Policy, fractional: bool = False) -> bool:
    """Whether a consumed amount breaks the policy (the allocator's violatesPolicy)."""
    if policy.default is not None and amount == policy.default:
        return False
    if policy.ranged:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None and policy.min is not None:
            unit = Fraction(1, 1000) if fractional else Fraction(1)
            req, low, step = (_ceil(q / unit) for q in (amount, policy.min, policy.step))
            return (req - low) % step != 0
        return False
    if policy.values:
        return amount not in policy.values
    return False


def _ceil(x: Fraction) -> Fraction:
    """A quantity's integer value, as Quantity.Value() rounds it (up)."""
    return Fraction(-(-x.numerator // x.denominator))
