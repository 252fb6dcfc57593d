"""DRA's CEL environment for device selectors, as kube-scheduler's allocator defines it.

An expression sees one variable, `device`, with
    device.driver                      the driver's name (string)
    device.attributes[domain][name]    int, bool, string or semver; an attribute's domain is
                                       its qualified prefix, else the driver's (so
                                       `device.attributes['gpu.nvidia.com'].model` also
                                       reads the unqualified `model` of that driver)
    device.capacity[domain][name]      a quantity
    device.allowMultipleAllocations    bool
and Kubernetes' quantity and semver libraries: `quantity('40Gi')`, `isQuantity(s)`,
`q.compareTo(q)`, `q.isGreaterThan(q)`, `q.isLessThan(q)`, `q.asInteger()`,
`q.asApproximateFloat()`, `q.isInteger()`, `q.sign()`, `q.add(x)`, `q.sub(x)`;
`semver('1.2.3')` (and `semver(s, true)` to normalize), `isSemver(s)`, `v.major()`,
`v.minor()`, `v.patch()`, `v.compareTo(v)`, `v.isGreaterThan(v)`, `v.isLessThan(v)`.

The evaluator is the Rust CEL interpreter behind `common-expression-language` (~5-70 µs per
evaluation here, against ~1 ms for the pure-Python `cel-python` on the same expressions; both
parse the whole language). Where the two environments differ we follow kube-scheduler:
- A domain the device lacks reads as an empty map when indexed (kube-scheduler's default
  map), while `in` and `has()` see only the domains the device has; a name the domain lacks
  is a runtime error ("no such key"), as is a type error.
- What Kubernetes' compiler refuses (an unknown field of `device`, a result that cannot be a
  bool...) does not compile here either (`typecheck`); a non-bool result the check could not
  foresee is a runtime error.
- A runtime error fails the request on that node: the allocator stops with "CEL runtime
  error" and the pod is not scheduled there. `Outcome.ERROR` carries that verdict.
- Functions outside the environment we implement (Kubernetes' string, list, IP, CIDR, URL
  libraries...) make the expression *not judged*, never an error.

A derived attribute (DRADerivedAttributes, alpha in 1.37) is an expression in the same
environment whose value, not a bool, stands for a virtual attribute in a request's constraints:
an int, bool, string or semver (`Evaluator.derived_value`). Another result is a runtime
error, as in kube-scheduler; a list (DRAListTypeAttributes' form) is not judged.

Evaluation results are cached per (expression, what the expression reads of the device): an
expression that reads only `device.driver` and one attribute is evaluated once per distinct
(driver, value), however many devices share them. The caches belong to an `Evaluator` (the
extender's index owns one), never to the module: two apps, or two tests, share nothing.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import re
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import cel

from extender import costs, sandbox, typecheck
from extender.cel_functions import (
    BUILTINS,
    FUNCTIONS,
    OPERATOR,
    SEMVER_TAG,
    CelError,
    quantity_value,
)
from extender.topology import Device

log = logging.getLogger(__name__)
# The binding logs every failed call of our functions (a bad quantity string, per device);
# we log each expression's first error once ourselves.
logging.getLogger("cel").setLevel(logging.CRITICAL)


class Outcome(enum.Enum):
    MATCH = "match"
    NO_MATCH = "no_match"
    ERROR = "error"
    """A runtime error: kube-scheduler fails the allocation on that node."""


class DerivedError(Exception):
    """A derived attribute has no value on a device: a runtime error (kube-scheduler then
    fails the pod's allocation), or a value not judged here (`judged` False)."""

    def __init__(self, reason: str, *, judged: bool = True) -> None:
        super().__init__(reason)
        self.judged = judged


class NotJudged(Exception):
    """What the call was judging cannot be judged now: the call answers "not judged" (every
    node passes, every score 0); `reason` is a metric label."""

    reason = "cel_not_judged"


class OverBudget(NotJudged):
    """The call's CEL time ran out (`Budget`)."""

    reason = "cel_budget"

    def __init__(self, budget: Budget) -> None:
        names = ", ".join(f"{e[:120]!r} {t * 1e3:.0f} ms" for e, t in budget.costliest(3))
        super().__init__(f"CEL budget of {budget.seconds:g}s spent, most by: {names}")
        self.budget = budget


class NeedsSandbox(Exception):
    """An evaluation inline only (`Evaluator.inline_only`) needs the sandbox: the caller
    judges the whole call again off the event loop (`extender.judging`)."""


class Budget:
    """The CEL time one call may still spend, and what spent it (per expression)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.left = seconds
        self.spent: dict[str, float] = {}

    def charge(self, expression: str, seconds: float) -> None:
        self.left -= seconds
        self.spent[expression] = self.spent.get(expression, 0.0) + seconds

    def costliest(self, n: int) -> list[tuple[str, float]]:
        return sorted(self.spent.items(), key=lambda kv: -kv[1])[:n]


# -- compiled selectors ------------------------------------------------------------------------

_STR = r"""(?:'([^'\\]*)'|"([^"\\]*)")"""
_IDENT = r"([A-Za-z_][A-Za-z0-9_]*)"
_ACCESS = re.compile(
    rf"\bdevice\s*\.\s*(attributes|capacity)\s*\[\s*{_STR}\s*\]\s*"
    rf"(?:\.\s*{_IDENT}|\[\s*{_STR}\s*\])"
)
_DOMAIN = re.compile(rf"\bdevice\s*\.\s*(attributes|capacity)\s*\[\s*{_STR}\s*\]")
_PLAIN = re.compile(r"\bdevice\s*\.\s*(driver|allowMultipleAllocations)\b")
_DEVICE = re.compile(r"\bdevice\b")

Ref = tuple[str, str, str]
"""(attributes|capacity, domain, name): one value an expression reads."""


@dataclass(frozen=True, slots=True)
class Selector:
    """One compiled CEL expression."""

    expression: str
    evaluator: Evaluator = field(compare=False, repr=False)
    """The evaluator that compiled it, whose caches its evaluations use."""
    program: Any = None
    error: str | None = None
    """Why it does not compile (kube-scheduler would fail every allocation that uses it)."""
    unsupported: str | None = None
    """A function outside our environment: the selector is not judged."""
    refs: tuple[Ref, ...] | None = None
    """What it reads of a device beyond driver and allowMultipleAllocations; None when it
    reads the device some other way (a macro over the attributes...): then results are
    cached per device, not per value."""
    domains: tuple[tuple[str, str], ...] = ()
    """(attributes|capacity, domain) it indexes by a literal: absent ones read as empty."""
    source: str = ""
    """The text compiled (the expression with missing domains read as empty)."""
    sandboxed: bool = False
    """It has a comprehension (`.all`, `.map`...) or a regular expression, whose cost the
    expression's length does not bound (`extender.costs`): evaluated in the sandbox
    (`extender.sandbox`), with a hard deadline."""

    @property
    def judged(self) -> bool:
        return self.error is None and self.unsupported is None


MAX_EXPRESSION_BYTES = 10 * 1024
"""Kubernetes' limit on a selector expression (resource.k8s.io CELSelectorExpressionMaxLength);
a longer one is not judged."""
MAX_EVALUATION_SECONDS = 0.05
"""Kubernetes bounds an expression's cost (estimated when the object is written, counted when
it runs); the interpreter here counts none, so an expression one evaluation of which took
longer than this of CPU is not judged from then on (a cost limit by time). An evaluation is
timed on the wall clock; only one past the limit is evaluated once more on the thread's CPU
clock to confirm it: a preempted process on a busy machine is not a costly expression (trivial
selectors took 50-98 ms of wall time at load 15 on 2 cores, and verdicts changed). A costly
expression costs at most two slow evaluations, once. One with a comprehension runs in the
sandbox and is abandoned past `sandbox.DEADLINE_SECONDS` instead: it never holds the event
loop longer. The call that found it evaluates it as a runtime error (as kube-scheduler's
runtime cost limit does); claims parsed afterwards (`Evaluator.costly_version`) are not
judged."""

MAX_ABANDONED = 3
ABANDONED_WINDOW_SECONDS = 10.0
"""At most MAX_ABANDONED sandboxed evaluations abandoned per this window (see `_in_sandbox`)."""

_COMPILED_LIMIT = 4096
_RESULTS_LIMIT = 1 << 18
_LOGGED_LIMIT = 4096


class Evaluator:
    """Compiles selector expressions and evaluates them on devices, with the caches that make
    that cheap: compiled selectors, results per what an expression reads, the expressions
    already logged."""

    def __init__(self) -> None:
        self._compiled: dict[str, Selector] = {}
        self._derived: dict[str, Selector] = {}
        self._results: dict[tuple[str, object], Outcome] = {}
        self._values: dict[tuple[str, object], object] = {}
        self._logged: set[str] = set()
        self._costly: set[str] = set()
        self._unjudgeable: dict[str, str] = {}
        """Expressions whose evaluation found something not judged here, and what."""
        self.costly_version = 0
        """Counts the expressions found too costly: a caller holding compiled selectors
        compiles them again when it changes."""
        self._proven: set[str] = set()
        """Sandboxed expressions evaluated in time at least once."""
        self._abandoned: deque[float] = deque()
        """When recent sandboxed evaluations were abandoned (monotonic seconds)."""
        self.sandbox = sandbox.Sandbox()
        """Where expressions with comprehensions are evaluated (a worker process, started
        when first needed); `close()` stops it."""
        self._budget: Budget | None = None
        """The CEL time the call being judged may still spend (`spending`); None: unbounded."""
        self.inline_only = False
        """Set (by `extender.judging`, on the event loop): an evaluation that needs the
        sandbox (not cached) raises NeedsSandbox rather than wait for a worker."""

    def spend(self, budget: Budget | None) -> Budget | None:
        """Evaluations from now on charge `budget` (None: none); returns the one they
        charged before, to be put back (`spending` as two calls)."""
        outer, self._budget = self._budget, budget
        return outer

    @contextlib.contextmanager
    def spending(self, budget: Budget) -> Iterator[Budget]:
        """Evaluations inside the block charge `budget`; one past it raises OverBudget (and
        a sandboxed one waits no longer than it has left)."""
        outer, self._budget = self._budget, budget
        try:
            yield budget
        finally:
            self._budget = outer

    def close(self) -> None:
        """Stop the sandbox's worker, if one runs; from then on nothing is evaluated (a call
        still being judged, in a thread too, ends at its next evaluation, not judged).
        Callable from the event loop while a thread judges (`sandbox.Sandbox.close`)."""
        self.sandbox.close()

    def compile_selector(self, expression: str) -> Selector:
        """The compiled selector for `expression`, compiled once per evaluator."""
        hit = self._compiled.get(expression)
        if hit is not None:
            return hit
        sel = self._compile_into(self._compiled, expression, derived=False)
        if sel.error is not None:
            self._log_once(
                expression, f"CEL expression does not compile ({sel.error}): {expression!r}"
            )
        elif sel.unsupported is not None:
            self._log_once(
                expression, f"CEL expression uses {sel.unsupported}; not judged: {expression!r}"
            )
        return sel

    def compile_derived(self, expression: str) -> Selector:
        """The compiled expression of a derived attribute, compiled once per evaluator."""
        hit = self._derived.get(expression)
        if hit is not None:
            return hit
        return self._compile_into(self._derived, expression, derived=True)

    def _compile_into(
        self, cache: dict[str, Selector], expression: str, *, derived: bool
    ) -> Selector:
        """Compile `expression` and keep it in `cache` (emptied when full)."""
        sel = _compile(expression, self, derived=derived)
        if len(cache) >= _COMPILED_LIMIT:
            cache.clear()
        cache[expression] = sel
        return sel

    def derived_value(self, sel: Selector, device: Device) -> object:
        """The value of derived attribute `sel` on `device` as the device's own attributes
        hold theirs (int, bool, str; a semver as its text); DerivedError when it has none.
        Cached as `evaluate` caches."""
        key = self._device_key(sel, device)
        cache_key = (sel.expression, key)
        hit = self._values.get(cache_key, _MISSING)
        if hit is _MISSING:
            try:
                hit = _attribute_value(self._execute(sel, device))
            except _Unknown as e:
                raise DerivedError(str(e), judged=False) from None
            except _Failed:
                hit = DerivedError("CEL runtime error")
            except DerivedError as e:
                hit = e
                self._log_once(sel.expression, f"derived attribute {e}: {sel.expression!r}")
            if len(self._values) >= _RESULTS_LIMIT:
                self._values.clear()
            if sel.refs is not None:
                self._values[cache_key] = hit
        if isinstance(hit, DerivedError):
            raise hit
        return hit

    def selectors_of(self, items: Any) -> tuple[tuple[Selector, ...], str | None]:
        """Compiled selectors of a DeviceClass's or request's `selectors` list, and why they
        are not judged (None when all are)."""
        out: list[Selector] = []
        for item in items or []:
            expr = (
                ((item or {}).get("cel") or {}).get("expression")
                if isinstance(item, dict)
                else None
            )
            if not isinstance(expr, str):
                return (), "selector without a CEL expression"
            sel = self.compile_selector(expr)
            if sel.unsupported is not None:
                return (), "unsupported_function"
            out.append(sel)
        return tuple(out), None

    def evaluate(self, sel: Selector, device: Device) -> Outcome:
        """Does `device` match `sel`? Cached per (expression, what it reads of the device)."""
        cache_key = (sel.expression, self._device_key(sel, device))
        hit = self._results.get(cache_key)
        if hit is not None:
            return hit
        try:
            out = self._run(sel, device)
        except _Unknown:
            return Outcome.ERROR  # this time only: not cached
        if len(self._results) >= _RESULTS_LIMIT:
            self._results.clear()
        if sel.refs is not None:
            self._results[cache_key] = out
        return out

    @staticmethod
    def _device_key(sel: Selector, device: Device) -> object:
        """What `sel` reads of `device` (the device itself when that is not known)."""
        if sel.refs is None:
            return id(device), device
        return (device.driver, device.multi, *(_read(device, r) for r in sel.refs))

    def _run(self, sel: Selector, device: Device) -> Outcome:
        try:
            result = self._execute(sel, device)
        except _Unknown:
            raise
        except _Failed:
            return Outcome.ERROR
        if result is True:
            return Outcome.MATCH
        if result is False:
            return Outcome.NO_MATCH
        self._log_once(
            sel.expression, f"CEL result {type(result).__name__}, not bool, in {sel.expression!r}"
        )
        return Outcome.ERROR

    def _execute(self, sel: Selector, device: Device) -> Any:
        """`sel`'s result on `device`; _Failed on a runtime error (logged once) or when the
        expression proved too costly."""
        if sel.expression in self._costly:
            raise _Failed
        if self.sandbox.closed:
            raise NotJudged("the extender is stopping: CEL expressions are no longer evaluated")
        why = self._unjudgeable.get(sel.expression)
        if why is not None:
            raise NotJudged(why)
        budget = self._budget
        if budget is not None and budget.left <= 0:
            raise OverBudget(budget)
        if sel.sandboxed:
            return self._in_sandbox(sel, device, budget)
        started = time.perf_counter()
        try:
            return _inline(sel, device)
        except Exception as e:  # KeyError, TypeError, ValueError, RuntimeError... from the binding
            self._log_once(
                sel.expression, f"CEL runtime error ({_first_line(e)}) in {sel.expression!r}"
            )
            raise _Failed from None
        finally:
            took = time.perf_counter() - started
            if took > MAX_EVALUATION_SECONDS:  # preempted, or costly? Its CPU time says.
                cpu = _cpu_seconds(sel, device)
                took = time.perf_counter() - started  # the call waited for both
                if cpu > MAX_EVALUATION_SECONDS:
                    self._too_costly(sel, f"one evaluation took {cpu * 1e3:.0f} ms of CPU")
            if budget is not None:
                budget.charge(sel.expression, took)

    def _in_sandbox(self, sel: Selector, device: Device, budget: Budget | None) -> Any:
        """`sel`'s result on `device` from the sandbox. After MAX_ABANDONED abandoned
        expressions within ABANDONED_WINDOW_SECONDS, one never evaluated in time before is
        not tried (`_Unknown`): many distinct costly expressions cost at most that many
        deadlines of the event loop per window."""
        now = time.monotonic()
        while self._abandoned and now - self._abandoned[0] > ABANDONED_WINDOW_SECONDS:
            self._abandoned.popleft()
        if len(self._abandoned) >= MAX_ABANDONED and sel.expression not in self._proven:
            raise _Unknown(f"{len(self._abandoned)} costly CEL expressions abandoned just now")
        if self.inline_only:
            raise NeedsSandbox(sel.expression)
        deadline = self.sandbox.deadline
        # All the budget left: the sandbox waits at most its deadline for the evaluation, and
        # for a worker still starting (off the event loop: `extender.judging`) up to this.
        within = None if budget is None else max(0.0, budget.left)
        started = time.perf_counter()
        try:
            result = self.sandbox.evaluate(
                sel.source, {"device": device_input(sel, device)}, within=within
            )
        except sandbox.Failed as e:
            self._log_once(sel.expression, f"CEL runtime error ({e}) in {sel.expression!r}")
            raise _Failed from None
        except sandbox.Unjudged as e:
            self._not_judged(sel, str(e))
            if len(self._unjudgeable) >= _COMPILED_LIMIT:
                self._unjudgeable.clear()
            why = self._unjudgeable[sel.expression] = f"{e} in {sel.expression[:200]!r}"
            self._log_once(sel.expression, f"CEL expression not judged: {why}")
            raise NotJudged(why) from None
        except sandbox.Starting as e:  # not waited for within the call's budget
            raise NotJudged(str(e)) from None
        except sandbox.Unavailable as e:
            if self.sandbox.closed:
                raise NotJudged(f"the extender is stopping: {e}") from None
            self._log_once("sandbox", f"CEL expression not evaluated: {e}")
            raise _Unknown(str(e)) from None
        except sandbox.TooCostly as e:
            if budget is not None and within is not None and within < deadline:
                # The call's budget ran out first: the expression is not proven costly.
                budget.charge(sel.expression, time.perf_counter() - started)
                raise OverBudget(budget) from None
            self._abandoned.append(now)
            self._too_costly(sel, f"abandoned: {e}")
            raise _Failed from None
        finally:
            if budget is not None and budget.left > 0:
                budget.charge(sel.expression, time.perf_counter() - started)
        if len(self._proven) >= _COMPILED_LIMIT:
            self._proven.clear()
        self._proven.add(sel.expression)
        return result

    def _too_costly(self, sel: Selector, why: str) -> None:
        """From now on `sel`'s expression is never evaluated (a runtime error in the call
        that found it) and compiles as not judged (callers that look it up again skip it)."""
        self._costly.add(sel.expression)
        self._not_judged(sel, f"its cost ({why})")
        self._log_once(
            sel.expression, f"CEL expression too costly ({why}), not judged: {sel.expression!r}"
        )

    def _not_judged(self, sel: Selector, why: str) -> None:
        """From now on `sel`'s expression compiles as not judged, for `why`."""
        self._compiled[sel.expression] = Selector(sel.expression, self, unsupported=why)
        self.costly_version += 1

    def _log_once(self, key: str, message: str) -> None:
        if key in self._logged:
            return
        if len(self._logged) >= _LOGGED_LIMIT:
            self._logged.clear()
        self._logged.add(key)
        log.warning("%s", message[:500])


def _inline(sel: Selector, device: Device) -> Any:
    """`sel`'s result on `device`, evaluated in this thread."""
    context = cel.Context(variables={"device": device_input(sel, device)}, functions=FUNCTIONS)
    return sel.program.execute(context)


def _cpu_seconds(sel: Selector, device: Device) -> float:
    """The CPU time this thread spends on one more evaluation of `sel` on `device` (the time
    it is not running, preempted or waiting for the GIL, does not count)."""
    started = time.thread_time()
    with contextlib.suppress(Exception):  # a runtime error: the first evaluation reported it
        _inline(sel, device)
    return time.thread_time() - started


class _Failed(Exception):
    """An evaluation ended in a runtime error."""


class _Unknown(_Failed):
    """The expression was not evaluated this time (the sandbox could not take it): a runtime
    error for this evaluation only, never cached."""


def _attribute_value(result: Any) -> object:
    """A derived attribute's CEL result as an attribute value (kube-scheduler's
    valToDeviceAttribute: bool, int, string or semver; a list is not judged here)."""
    if isinstance(result, bool | int | str):
        return result
    if isinstance(result, dict) and SEMVER_TAG in result and len(result) == 1:
        return str(result[SEMVER_TAG])
    if isinstance(result, list | tuple):
        raise DerivedError("gives a list", judged=False)
    raise DerivedError(f"gives a {type(result).__name__}, not a scalar")


def _compile(expression: str, owner: Evaluator, *, derived: bool = False) -> Selector:
    if not isinstance(expression, str) or not expression.strip():
        return Selector(str(expression), owner, error="empty expression")
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        return Selector(
            expression, owner, unsupported=f"an expression over {MAX_EXPRESSION_BYTES} bytes"
        )
    source = _DOMAIN.sub(_defaulted, expression)
    try:
        program = cel.compile(source)
        functions = program.functions()
        variables = program.variables()
    except Exception as e:  # the binding raises ValueError, and more on odd input
        return Selector(expression, owner, error=_first_line(e))
    unknown = sorted(
        f for f in functions if f not in FUNCTIONS and f not in BUILTINS and not OPERATOR.match(f)
    )
    if unknown:
        return Selector(expression, owner, program, unsupported=f"function {unknown[0]}")
    refused = typecheck.check(expression, derived=derived)
    if refused is not None:
        return Selector(expression, owner, program, error=refused)
    free = [v for v in variables if v != "device"]
    words = typecheck.words(expression)
    bound = costs.bound_names(words) if words is not None else set(free)
    if any(v not in bound for v in free):
        return Selector(expression, owner, program, error=f"undeclared reference to {free[0]!r}")
    refs: list[Ref] = []
    domains: set[tuple[str, str]] = set()
    for m in _DOMAIN.finditer(expression):
        domains.add((m.group(1), m.group(2) if m.group(2) is not None else m.group(3)))
    rest = expression
    for m in _ACCESS.finditer(expression):
        domain = m.group(2) if m.group(2) is not None else m.group(3)
        name = m.group(4) or (m.group(5) if m.group(5) is not None else m.group(6))
        refs.append((m.group(1), domain, name))
    rest = _PLAIN.sub("", _ACCESS.sub("", rest))
    projected = not _DEVICE.search(rest)
    return Selector(
        expression,
        owner,
        program,
        refs=tuple(sorted(set(refs))) if projected else None,
        domains=tuple(sorted(domains)),
        source=source,
        sandboxed=costs.unbounded(expression, functions, variables) is not None,
    )


def attributes_read(expression: str) -> set[tuple[str, str]]:
    """(domain, name) of each attribute `expression` reads by literal names (pure)."""
    out = set()
    for m in _ACCESS.finditer(expression):
        if m.group(1) == "attributes":
            domain = m.group(2) if m.group(2) is not None else m.group(3)
            out.add((domain, m.group(4) or (m.group(5) if m.group(5) is not None else m.group(6))))
    return out


def _defaulted(m: re.Match[str]) -> str:
    """`device.attributes['d']` read from the map where a missing domain is empty: in
    kube-scheduler a missing domain reads as an empty map when indexed, while `'d' in
    device.attributes` and `has()` see only the domains the device has."""
    domain = m.group(2) if m.group(2) is not None else m.group(3)
    return f"device.{m.group(1)}{_DEFAULTED}[{domain!r}]"


_DEFAULTED = "OrEmpty"


def _read(device: Device, ref: Ref) -> object:
    kind, domain, name = ref
    qualified = (
        name if domain == device.driver and name in device.attributes else f"{domain}/{name}"
    )
    if kind == "attributes":
        value = device.attributes.get(f"{domain}/{name}", _MISSING)
        if value is _MISSING and domain == device.driver:
            value = device.attributes.get(name, _MISSING)
        return (value, f"{domain}/{name}" in device.versions) if value is not _MISSING else _MISSING
    del qualified
    return device.capacity.get(f"{domain}/{name}", _MISSING)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def device_input(sel: Selector, device: Device) -> dict[str, Any]:
    """The `device` variable as the expression sees it."""
    attributes: dict[str, dict[str, Any]] = {}
    for qualified, value in device.attributes.items():
        domain, _, name = qualified.rpartition("/")
        domain = domain or device.driver
        attributes.setdefault(domain, {})[name] = (
            {SEMVER_TAG: value}
            if qualified in device.versions and isinstance(value, str)
            else value
        )
    capacity: dict[str, dict[str, Any]] = {}
    for qualified, text in device.capacity.items():
        domain, _, name = qualified.rpartition("/")
        try:
            capacity.setdefault(domain or device.driver, {})[name] = quantity_value(text)
        except CelError:
            continue
    out: dict[str, Any] = {
        "driver": device.driver,
        "allowMultipleAllocations": device.multi,
        "attributes": attributes,
        "capacity": capacity,
    }
    if sel.domains:
        attributes_or_empty = dict(attributes)
        capacity_or_empty = dict(capacity)
        for kind, domain in sel.domains:
            (attributes_or_empty if kind == "attributes" else capacity_or_empty).setdefault(
                domain, {}
            )
        out["attributes" + _DEFAULTED] = attributes_or_empty
        out["capacity" + _DEFAULTED] = capacity_or_empty
    return out


def matches_all(selectors: tuple[Selector, ...], device: Device) -> Outcome:
    """All of `selectors` in order, as the allocator runs them: the first non-match or error
    decides."""
    for sel in selectors:
        out = sel.evaluator.evaluate(sel, device)
        if out is not Outcome.MATCH:
            return out
    return Outcome.MATCH


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else type(e).__name__
