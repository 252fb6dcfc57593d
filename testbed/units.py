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
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?\Z")
_SUFFIX = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6}
_SUFFIX.update({"G": 10**9, "T": 10**12})


def quantity_bytes(text: str) -> int:
    """A Kubernetes Quantity (`81559Mi`, `10Gi`, `4.5G`, `1000`) as an integer, rounded up;
    ValueError if it is not one (exponents and milli-units are not needed here)."""
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"{text[:40]!r} is not a quantity like 10Gi or 81559Mi")
    return math.ceil(Fraction(m.group(1)) * _SUFFIX[m.group(2)])


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
