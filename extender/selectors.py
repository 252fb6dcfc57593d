"""Device selectors of DeviceClasses: the small, common subset of CEL the extender reads.

A DeviceClass selects devices with CEL. We recognise conjunctions (`&&`) of
    device.driver == 'gpu.nvidia.com'
    device.attributes['dra.net'].rdma == true        (also `== 'x'`, `== 3`)
    device.attributes['dra.net'].rdma                 (a bare bool attribute)
and nothing else. Anything we cannot read makes the class *unknown*: the extender then does
not judge demand for it (it never rejects a node because of a selector it could not read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from extender.topology import AttrValue

_STR = r"'([^'\\]*)'|\"([^\"\\]*)\""
_DRIVER = re.compile(rf"^device\.driver\s*==\s*(?:{_STR})$")
_ATTR = re.compile(
    r"^device\.attributes\[\s*(?:'([^'\\]+)'|\"([^\"\\]+)\")\s*\]\.([A-Za-z][A-Za-z0-9_]*)"
    rf"(?:\s*==\s*(?:{_STR}|(true|false)|(-?\d+)))?$"
)


@dataclass(frozen=True, slots=True)
class Matcher:
    """Devices of `driver` (any driver if None) whose attributes equal `attributes`."""

    driver: str | None
    attributes: tuple[tuple[str, AttrValue], ...] = ()

    def matches(self, driver: str, attributes: dict[str, AttrValue]) -> bool:
        if self.driver is not None and driver != self.driver:
            return False
        return all(attributes.get(k) == v for k, v in self.attributes)


def parse_expression(expression: str) -> Matcher | None:
    """A matcher for one CEL expression, or None when it is outside the subset."""
    driver: str | None = None
    attrs: list[tuple[str, AttrValue]] = []
    text = expression.strip()
    while text.startswith("(") and text.endswith(")") and "(" not in text[1:-1]:
        text = text[1:-1].strip()
    if not text or "||" in text or "!" in text or "?" in text:
        return None  # disjunction, negation, ternary: outside the subset
    for raw in text.split("&&"):
        term = raw.strip()
        while term.startswith("(") and term.endswith(")"):
            term = term[1:-1].strip()
        if m := _DRIVER.match(term):
            value = m.group(1) if m.group(1) is not None else m.group(2)
            if driver is not None and driver != value:
                return None  # contradictory; not worth judging
            driver = value
        elif m := _ATTR.match(term):
            domain = m.group(1) or m.group(2)
            name = f"{domain}/{m.group(3)}"
            if m.group(4) is not None or m.group(5) is not None:
                value_: AttrValue = m.group(4) if m.group(4) is not None else m.group(5)
            elif m.group(6) is not None:
                value_ = m.group(6) == "true"
            elif m.group(7) is not None:
                value_ = int(m.group(7))
            else:
                value_ = True  # a bare attribute reference is a bool test
            attrs.append((name, value_))
        else:
            return None
    return Matcher(driver=driver, attributes=tuple(attrs))


def parse_selectors(selectors: list[dict[str, Any]] | None) -> Matcher | None:
    """All selectors ANDed into one matcher; None if any is unreadable or none name a driver
    (a class that matches every driver's devices is not one we can count)."""
    driver: str | None = None
    attrs: list[tuple[str, AttrValue]] = []
    for sel in selectors or []:
        expr = ((sel or {}).get("cel") or {}).get("expression")
        if not isinstance(expr, str):
            return None
        m = parse_expression(expr)
        if m is None:
            return None
        if m.driver is not None:
            if driver is not None and driver != m.driver:
                return None
            driver = m.driver
        attrs.extend(m.attributes)
    if driver is None:
        return None
    return Matcher(driver=driver, attributes=tuple(attrs))


def parse_device_class(obj: dict[str, Any]) -> Matcher | None:
    return parse_selectors((obj.get("spec") or {}).get("selectors"))
