"""DRA consumable capacity: a shared device's capacity request policy, what a request consumes
of the capacity and whether that breaks the policy, as DRA's allocator computes them."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from extender import cel_functions


@dataclass(frozen=True, slots=True)
class Policy:
    """A capacity's requestPolicy: a default, and valid values or a range (min, max, step)."""

    default: Fraction | None = None
    values: tuple[Fraction, ...] = ()
    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None
    ranged: bool = False


def policy_of(raw: Any) -> Policy | None:
    """A capacity's requestPolicy as published (None when it has none)."""
    if not isinstance(raw, dict):
        return None

    def q(v: Any) -> Fraction | None:
        return None if v is None else cel_functions.parse_quantity(str(v))

    rng = raw.get("validRange")
    rng = rng if isinstance(rng, dict) else None
    values = raw.get("validValues")
    return Policy(
        default=q(raw.get("default")),
        values=tuple(cel_functions.parse_quantity(str(v)) for v in values)
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
