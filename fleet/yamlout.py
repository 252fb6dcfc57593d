"""A small block-style YAML writer for plain API objects (dicts, lists, str, int, bool, None).

PyYAML, even with libyaml, needs ~20 s for the 15,000 objects of a 5,000-node fleet; this
writer handles only what `render` produces and is an order of magnitude faster. Strings that
are not plainly safe are written as JSON strings, which YAML reads back unchanged; a unit test
round-trips its output through `yaml.safe_load`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# \Z, not $: `$` also matches before a trailing newline ("A\n" is not plain).
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*\Z")
# Compared lower-cased: YAML 1.1 readers turn these into bools, null or floats.
_RESERVED = frozenset(
    ["y", "n", "yes", "no", "true", "false", "on", "off", "null", "none", "nan", "inf", "~"]
)


# An escaped backslash, or a surrogate-pair escape (scanned left to right, so `\\\\ud800` is
# a backslash followed by the text "ud800", not a pair).
_PAIR = re.compile(r"\\\\|\\ud([89ab][0-9a-f]{2})\\ud([c-f][0-9a-f]{2})")


def _quoted(text: str) -> str:
    """A JSON string, except that YAML wants astral characters as \\U........, not as pairs."""
    out = json.dumps(text)
    if "\\ud" not in out:
        return out

    def astral(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group(0)
        hi, lo = int("d" + m.group(1), 16), int("d" + m.group(2), 16)
        return f"\\U{0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00):08x}"

    return _PAIR.sub(astral, out)


def scalar(value: Any) -> str:
    # Fleet objects repeat the same few thousand scalars; bools must not share ints' entries.
    return _scalar_cached(value) if isinstance(value, str | int) else _scalar(value)


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return _quoted(text)


_scalar_cached = functools.lru_cache(maxsize=1 << 16, typed=True)(_scalar)


@functools.lru_cache(maxsize=1 << 12)
def _key(value: str) -> str:
    return value if _PLAIN.match(value) and value.lower() not in _RESERVED else _quoted(value)


@dataclass(slots=True)
class Memo:
    """What one dump has written already (every object stays alive for the whole dump, so
    identity is a safe key)."""

    containers: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    """By (identity, indent): the lines of a container met twice (a rendered fleet shares one
    capacity or counter map among thousands of devices), or `_SEEN` after its first time."""
    leaves: dict[str, dict[tuple[object, ...], str]] = field(default_factory=dict)
    """By indent, then (key, inner key, value, value's type): the two lines of a one-entry
    leaf mapping such as an attribute's `{"string": "gpu"}` (the type keeps True apart
    from 1)."""


_SEEN: list[str] = []
_CONTAINERS = (dict, list)


def _emit(obj: Any, indent: str, out: list[str], memo: Memo) -> None:
    """Lines of a mapping or sequence `obj`, each prefixed with `indent`."""
    if isinstance(obj, dict):
        leaves = memo.leaves.get(indent)
        if leaves is None:
            leaves = memo.leaves[indent] = {}
        for k, v in obj.items():
            if type(v) is dict and len(v) == 1:
                # Fast path for attribute values: no recursion, the lines looked up by
                # content (a fleet repeats the same few thousand millions of times).
                ((k2, v2),) = v.items()
                if not isinstance(v2, _CONTAINERS):
                    leaf = (k, k2, v2, type(v2))
                    text = leaves.get(leaf)
                    if text is None:
                        text = f"{indent}{_key(str(k))}:\n{indent}  {_key(str(k2))}: {scalar(v2)}"
                        leaves[leaf] = text
                    out.append(text)
                    continue
            head = f"{indent}{_key(str(k))}:"
            if isinstance(v, dict) and v:
                out.append(head)
                _emit_shared(v, indent + "  ", out, memo)
            elif isinstance(v, list) and v:
                out.append(head)
                _emit_shared(v, indent, out, memo)
            else:
                out.append(f"{head} {_inline(v)}")
    else:
        for item in obj:
            if isinstance(item, dict) and item:
                start = len(out)
                _emit(item, indent + "  ", out, memo)
                first = out[start]
                out[start] = f"{indent}- {first[len(indent) + 2 :]}"
            elif isinstance(item, list) and item:
                out.append(f"{indent}-")
                _emit(item, indent + "  ", out, memo)
            else:
                out.append(f"{indent}- {_inline(item)}")


def _emit_shared(obj: Any, indent: str, out: list[str], memo: Memo) -> None:
    """`_emit`, with the lines kept from the second time `obj` is met at `indent`: written
    straight out the first time (most containers are met once: keeping, and copying, the
    lines of every one cost more than the sharing saved)."""
    key = (id(obj), indent)
    lines = memo.containers.get(key)
    if lines is None:
        memo.containers[key] = _SEEN
        _emit(obj, indent, out, memo)
        return
    if lines is _SEEN:
        lines = memo.containers[key] = []
        _emit(obj, indent, lines, memo)
    out.extend(lines)


def _inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return scalar(v)


def dump(obj: dict[str, Any], memo: Memo | None = None) -> str:
    """One object as a YAML document body (no `---`)."""
    out: list[str] = []
    _emit(obj, "", out, Memo() if memo is None else memo)
    return "\n".join(out) + "\n"


def dump_all(objs: Iterable[dict[str, Any]]) -> str:
    """Objects as a multi-document YAML stream."""
    return "".join(dump_stream(list(objs)))


def dump_stream(objs: Sequence[dict[str, Any]]) -> Iterator[str]:
    """The documents of `dump_all`, one at a time (to write without holding them all). The
    caller keeps `objs` alive until the end: the memo is keyed by identity."""
    memo = Memo()
    for o in objs:
        yield f"---\n{dump(o, memo)}"
