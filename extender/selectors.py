"""DeviceClass selectors: a class's CEL expressions compiled once, and its verdict per device.

A class is judged when every selector compiles and uses only functions of DRA's environment
(see `expressions`); otherwise it is *not judged* with a reason, and the extender never
rejects a node because of it. A class's verdict on a device is kept on the device (dropped
with it when its slice changes) and all verdicts are dropped when a class changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from extender import expressions
from extender.expressions import Outcome
from extender.topology import Device

_DRIVER_EQ = re.compile(r"""\bdevice\s*\.\s*driver\s*==\s*(?:'([^'\\]*)'|"([^"\\]*)")""")


@dataclass(frozen=True, slots=True)
class DeviceClassSelector:
    name: str
    selectors: tuple[expressions.Selector, ...] = ()
    driver: str | None = None
    """The driver a selector pins with `device.driver == '...'` (what makes it a GPU or a NIC
    class for the scoring terms), if any."""
    not_judged: str | None = None
    """Why the class is not judged (a metric label: unsupported_function, no_selector...)."""

    @property
    def expressions(self) -> tuple[str, ...]:
        return tuple(s.expression for s in self.selectors)

    def matches(self, device: Device) -> Outcome:
        """This class's verdict on `device`, memoised on the device."""
        memo = device.classes
        if memo is None:
            memo = device.classes = {}
        hit = memo.get(self.name)
        if hit is not None and hit[0] is self:
            out: Outcome = hit[1]
            return out
        out = expressions.matches_all(self.selectors, device)
        memo[self.name] = (self, out)
        return out


def driver_of(selectors: tuple[expressions.Selector, ...]) -> str | None:
    for sel in selectors:
        m = _DRIVER_EQ.search(sel.expression)
        if m is not None:
            return m.group(1) if m.group(1) is not None else m.group(2)
    return None


def parse_device_class(
    obj: dict[str, Any], evaluator: expressions.Evaluator
) -> DeviceClassSelector:
    name = str((obj.get("metadata") or {}).get("name") or "")
    selectors, reason = evaluator.selectors_of((obj.get("spec") or {}).get("selectors"))
    if reason is not None:
        return DeviceClassSelector(name, not_judged=reason)
    broken = next((s for s in selectors if s.error is not None), None)
    return DeviceClassSelector(
        name,
        selectors,
        driver=driver_of(selectors),
        not_judged="does_not_compile" if broken is not None else None,
    )
