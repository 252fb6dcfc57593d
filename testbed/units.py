"""Figures in the units people read: MiB, s, %, thousands separated, and the units people
write: Go-style durations (`90s`, `1m30s`) and Kubernetes quantities (pure).

One place for the console and HTML reports of every tool, so `rss_bytes 8.05183e+08` reads
`RSS 767.9 MiB` everywhere, and one parser per unit for every flag and file.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_KIB = 1024.0
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_BINARY = Fraction(2**63 - 1)
"""resource.Quantity caps a binary-suffixed amount at the largest int64."""
_NANO = 10**9
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
MAX_QUANTITY_DIGITS = 40
"""Integer digits a quantity may have (after its suffix or exponent is applied): 10^40 is
past any amount of bytes, devices or cores, and the parser stays linear in the text."""
_FRACTION_DIGITS = 60
"""Fraction digits kept exactly; any further non-zero digit only rounds up (see below)."""


def parse_quantity(text: str) -> Fraction:
    """A Kubernetes resource.Quantity as its exact value: `[+-]number[suffix]` where number
    is `1`, `1.5`, `1.` or `.5`, and suffix a decimal SI one (n u m k M G T P E), a binary
    one (Ki Mi Gi Ti Pi Ei) or an exponent (`e3`, `E-6`, `e+9`). As Kubernetes does, a
    non-zero amount is rounded up (away from zero) to whole nano units, and a binary one is
    capped at 2^63-1; no whitespace. ValueError otherwise. Linear in the text's length."""
    m = _NUMBER.match(text)  # greedy and unanchored: never backtracks
    whole, fraction = (m.group(2), m.group(3)) if m else ("", None)
    negative = m is not None and m.group(1) == "-"
    if m is None or (not whole and fraction is None):
        raise ValueError(f"{text[:40]!r} is not a quantity like 10Gi, 500m or 1e9")
    fraction = fraction or ""
    suffix = text[m.end() :]
    if suffix in _DECIMAL_SI:
        exponent, binary = _DECIMAL_SI[suffix], 0
    elif suffix in _BINARY_SI:
        exponent, binary = 0, _BINARY_SI[suffix]
    elif (
        len(suffix) > 1
        and suffix[0] in "eE"
        and (digits := suffix[2:] if suffix[1] in "+-" else suffix[1:])
        and digits.isascii()
        and digits.isdigit()
        and len(digits) <= 6
    ):
        exponent, binary = int(suffix[1:]), 0
    else:
        raise ValueError(f"{text[:40]!r} is not a quantity like 10Gi, 500m or 1e9")
    whole = whole.lstrip("0")
    fraction = fraction.rstrip("0")
    if len(whole) + max(exponent, 0) + (binary * 3 + 9) // 10 > MAX_QUANTITY_DIGITS:
        raise ValueError(f"{text[:40]!r}... is too large a quantity")
    # Beyond 60 fraction digits only whether anything is left matters: it rounds up (the
    # trailing zeros are gone, so anything left is not zero).
    sticky = len(fraction) > _FRACTION_DIGITS
    fraction = fraction[:_FRACTION_DIGITS]
    value = Fraction(int(whole + fraction or "0"), 10 ** len(fraction))
    if not value and not sticky:
        return Fraction(0)
    if sticky:
        value += Fraction(1, 10 ** (_FRACTION_DIGITS + 1))
    if exponent < -_FRACTION_DIGITS:
        value = Fraction(1, 10 ** (_FRACTION_DIGITS + 1))  # far below a nano unit: rounds to 1n
    else:
        value *= Fraction(10) ** exponent
    value *= 2**binary
    value = Fraction(math.ceil(value * _NANO), _NANO)  # up to whole nano units
    if binary and value > _MAX_BINARY:
        value = _MAX_BINARY
    return -value if negative else value


def quantity_bytes(text: str) -> int:
    """A Kubernetes quantity (`81559Mi`, `10Gi`, `1e9`, `1Pi`) as a whole number, rounded up
    (`500m` of bytes is one byte); ValueError if it is not one, or negative."""
    value = parse_quantity(text)
    if value < 0:
        raise ValueError(f"{text[:40]!r} is negative")
    return math.ceil(value)


# Go's time.ParseDuration units (µ as the micro sign or the Greek letter).
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS.update({"m": 60.0, "h": 3600.0})
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION = re.compile(r"(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+\Z")
_SECONDS = re.compile(r"(?:\d+\.?\d*|\.\d+)\Z")
MAX_DURATION_CHARS = 1000
"""Longer duration strings are refused unread: no flag needs more, and nothing is slow."""


def parse_duration(text: str) -> float:
    """Seconds from a Go duration (`90s`, `5m`, `1m30s`, `1.5h`, `500ms`) or a plain number of
    seconds (`90`, `2.5`); ValueError on anything else, negative durations included."""
    t = text.strip()
    if len(t) > MAX_DURATION_CHARS:
        raise ValueError(f"{t[:20]!r}... is not a duration (too long)")
    if _SECONDS.match(t):
        return float(t)
    if not _DURATION.match(t):
        raise ValueError(f"{t[:40]!r} is not a duration like 90s, 5m, 1m30s or 500ms")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in _DURATION_PART.findall(t))


def size(n_bytes: float) -> str:
    """Binary units: 512 B, 3.0 KiB, 767.9 MiB, 1.25 GiB (negative for shrinkage)."""
    if math.isnan(n_bytes):
        return "-"
    sign, n = ("-" if n_bytes < 0 else ""), abs(n_bytes)
    if n < _KIB:
        return f"{sign}{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= _KIB
        if n < _KIB or unit == "GiB":
            return f"{sign}{n:.2f} {unit}" if unit == "GiB" else f"{sign}{n:.1f} {unit}"
    raise AssertionError("unreachable")


def duration(seconds: float) -> str:
    """Seconds at a readable precision: 850 µs, 12 ms, 3.40 s, 95.2 s, 12m05s."""
    if math.isnan(seconds):
        return "-"
    s = abs(seconds)
    sign = "-" if seconds < 0 else ""
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{sign}{s * 1e6:.0f} µs"
    if s < 1:
        return f"{sign}{s * 1e3:.0f} ms"
    if s < 10:
        return f"{sign}{s:.2f} s"
    if s < 600:
        return f"{sign}{s:.1f} s"
    minutes, rest = divmod(round(s), 60)
    return f"{sign}{minutes}m{rest:02d}s"


def millis(ms: float) -> str:
    """A latency given in milliseconds, in the unit that reads best (`duration`)."""
    return duration(ms / 1e3)


def percent(ratio: float, digits: int = 1) -> str:
    """A ratio (0.25) as a percentage (25.0 %)."""
    if math.isnan(ratio):
        return "-"
    return f"{ratio * 100:.{digits}f} %"


def count(n: float) -> str:
    """A count with thousands separated; fractional counts keep one decimal."""
    if math.isnan(n):
        return "-"
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def counted(n: int, noun: str) -> str:
    """`n` and its noun, singular for one: "1 GPU", "8 GPUs"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def change(pct: float | None) -> str:
    """A relative change in percent (+12.5 %); n/a when undefined."""
    return "n/a" if pct is None or math.isnan(pct) else f"{pct:+.1f} %"


def by_name(name: str, value: float) -> str:
    """A figure formatted by the suffix of its name: *_bytes sizes, *_seconds durations,
    *_ms latencies, *_ratio and *_share percentages, anything else a count."""
    if name.endswith("_bytes"):
        return size(value)
    if name.endswith("_seconds"):
        return duration(value)
    if name.endswith("_ms"):
        return millis(value)
    if name.endswith(("_ratio", "_share")):
        return percent(value)
    return count(value)


def label(name: str) -> str:
    """A figure's name without its unit suffix, in words: rss_growth_bytes -> rss growth."""
    for suffix in ("_bytes", "_seconds", "_ms", "_ratio", "_share"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("_", " ")
