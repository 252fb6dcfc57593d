"""A Go CPU profile (`/debug/pprof/profile`: gzip-compressed protobuf, pprof's
`profile.proto`) as plain data: each sample's call stack by function name and its CPU time.

A minimal decoder rather than `go tool pprof`: reports are built and tested where only
Python is installed (`hack/test.sh --unit`, a result copied to another machine), and a CPU
profile needs only five of the format's messages (samples, locations, lines, functions,
strings). Pure: bytes in, `Profile` out; anything it cannot read is `ProfileError`, one line.

    profile = pprof.decode(Path("kube-scheduler-000.pb.gz").read_bytes())
    for stack, nanos in profile.stacks: ...   # stack: function names, leaf first
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

# profile.proto field numbers.
_PROFILE_SAMPLE_TYPE, _PROFILE_SAMPLE, _PROFILE_LOCATION, _PROFILE_FUNCTION = 1, 2, 4, 5
_PROFILE_STRINGS, _PROFILE_DURATION, _PROFILE_PERIOD = 6, 10, 12
_SAMPLE_LOCATIONS, _SAMPLE_VALUES = 1, 2
_LOCATION_ID, _LOCATION_LINE = 1, 4
_LINE_FUNCTION = 1
_FUNCTION_ID, _FUNCTION_NAME = 1, 2
_VALUE_TYPE_TYPE, _VALUE_TYPE_UNIT = 1, 2
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


class ProfileError(ValueError):
    """Not a readable profile: empty, not gzip, or not pprof's protobuf (one line)."""


@dataclass(frozen=True)
class Profile:
    sample_type: str
    """What each stack's value counts: "cpu" (nanoseconds) in a CPU profile."""
    unit: str
    duration_seconds: float
    stacks: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    """(function names from the leaf to the root, inlined frames included; value), one per
    sample."""

    @property
    def total(self) -> int:
        return sum(v for _, v in self.stacks)


def decode(data: bytes) -> Profile:
    """The profile in `data` (gzip-compressed or not)."""
    if not data:
        raise ProfileError("empty profile")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ProfileError(f"not a gzip-compressed profile: {e}") from None
    try:
        return _profile(data)
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise ProfileError(f"not a pprof profile: {e}") from None


def _profile(data: bytes) -> Profile:
    sample_types: list[tuple[int, int]] = []
    samples: list[tuple[list[int], list[int]]] = []
    locations: dict[int, list[int]] = {}  # id -> function ids, leaf (innermost inline) first
    functions: dict[int, int] = {}  # id -> name's string index
    strings: list[str] = []
    duration = 0
    for num, _, value in _fields(data):
        if num == _PROFILE_SAMPLE_TYPE and isinstance(value, bytes):
            t = dict(_scalars(value))
            sample_types.append((t.get(_VALUE_TYPE_TYPE, 0), t.get(_VALUE_TYPE_UNIT, 0)))
        elif num == _PROFILE_SAMPLE and isinstance(value, bytes):
            samples.append(_sample(value))
        elif num == _PROFILE_LOCATION and isinstance(value, bytes):
            loc_id, funcs = _location(value)
            locations[loc_id] = funcs
        elif num == _PROFILE_FUNCTION and isinstance(value, bytes):
            f = dict(_scalars(value))
            functions[f.get(_FUNCTION_ID, 0)] = f.get(_FUNCTION_NAME, 0)
        elif num == _PROFILE_STRINGS and isinstance(value, bytes):
            strings.append(value.decode("utf-8"))
        elif num == _PROFILE_DURATION and isinstance(value, int):
            duration = value
    if not sample_types or not strings:
        raise ProfileError("not a pprof profile: no sample types or strings")
    names = [strings[t] for t, _ in sample_types]
    # CPU profiles carry (samples/count, cpu/nanoseconds): the time is what we want.
    index = names.index("cpu") if "cpu" in names else len(names) - 1
    name_of = {fid: strings[s] for fid, s in functions.items()}
    stacks = []
    for loc_ids, values in samples:
        if index >= len(values):
            raise ProfileError("not a pprof profile: a sample lacks its value")
        stack = tuple(name_of.get(f, "?") for loc in loc_ids for f in locations.get(loc, ()))
        stacks.append((stack, values[index]))
    unit = strings[sample_types[index][1]]
    return Profile(names[index], unit, duration / 1e9, stacks)


def _sample(data: bytes) -> tuple[list[int], list[int]]:
    locs: list[int] = []
    values: list[int] = []
    for num, wire, value in _fields(data):
        if num == _SAMPLE_LOCATIONS:
            locs.extend(_ints(wire, value))
        elif num == _SAMPLE_VALUES:
            values.extend(_signed(v) for v in _ints(wire, value))
    return locs, values


def _location(data: bytes) -> tuple[int, list[int]]:
    loc_id, funcs = 0, []
    for num, _, value in _fields(data):
        if num == _LOCATION_ID and isinstance(value, int):
            loc_id = value
        elif num == _LOCATION_LINE and isinstance(value, bytes):
            funcs.append(dict(_scalars(value)).get(_LINE_FUNCTION, 0))
    return loc_id, funcs


def _ints(wire: int, value: int | bytes) -> list[int]:
    """A repeated integer field: one varint, or a packed run of them."""
    if isinstance(value, int):
        return [value]
    out, pos = [], 0
    while pos < len(value):
        n, pos = _varint(value, pos)
        out.append(n)
    return out


def _signed(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _scalars(data: bytes) -> Iterator[tuple[int, int]]:
    for num, _, value in _fields(data):
        if isinstance(value, int):
            yield num, value


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field of one message."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            yield num, wire, value
        elif wire == _BYTES:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise ValueError("truncated field")
            yield num, wire, data[pos : pos + size]
            pos += size
        elif wire == _FIXED64:
            pos += 8
        elif wire == _FIXED32:
            pos += 4
        else:
            raise ValueError(f"unknown wire type {wire}")
    if pos != end:
        raise ValueError("truncated message")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]  # IndexError past the end: truncated
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
