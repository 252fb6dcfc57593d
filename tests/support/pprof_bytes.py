"""CPU profiles built byte by byte in pprof's format (profile.proto, gzip-compressed), for
tests of the decoder and the reports: a handful of stacks, laid out as Go's runtime/pprof
writes them."""

from __future__ import annotations

import gzip


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(num: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def _packed(num: int, values: list[int]) -> bytes:
    return _field(num, b"".join(_varint(v) for v in values))


def encode(stacks: list[tuple[list[str], int]], *, duration_ns: int = 10**9) -> bytes:
    """A CPU profile of `stacks` (names leaf first, nanoseconds), one location per function,
    as Go's runtime/pprof lays it out (packed sample fields)."""
    strings = ["", "samples", "count", "cpu", "nanoseconds"]
    funcs: dict[str, int] = {}
    body = _field(1, _field(1, 1) + _field(2, 2)) + _field(1, _field(1, 3) + _field(2, 4))
    for names, nanos in stacks:
        for name in names:
            if name not in funcs:
                funcs[name] = len(funcs) + 1
                strings.append(name)
        locs = [funcs[n] for n in names]
        body += _field(2, _packed(1, locs) + _packed(2, [nanos // 10**7, nanos]))
    for name, fid in funcs.items():
        body += _field(4, _field(1, fid) + _field(4, _field(1, fid)))
        body += _field(5, _field(1, fid) + _field(2, strings.index(name)))
    for s in strings:
        body += _field(6, s.encode())
    body += _field(10, duration_ns)
    return gzip.compress(body)
