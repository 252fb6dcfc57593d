"""pydantic validation errors as the one-line messages users see, naming the field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

# Model validators name their own sub-field ("roots[0].nic: ..."): it is joined to the path.
_SUBFIELD = re.compile(r"^([A-Za-z][\w\[\].]*): (.*)$", re.S)


MAX_PROBLEMS = 20
"""Problems one message lists; past it, how many more there are (a 5,000-node spec with one
mistake repeated should not print a screenful per node)."""
MAX_CHARS = 1500
"""A message stops listing problems at this length too (each is cut to PROBLEM_CHARS)."""
PROBLEM_CHARS = 120


def _problem(error: Any) -> tuple[str, str]:
    loc = ".".join(_cut(str(p), 40) for p in error["loc"])
    msg = str(error["msg"]).removeprefix("Value error, ")
    if loc and (m := _SUBFIELD.match(msg)):
        loc, msg = f"{loc}.{m.group(1)}", m.group(2)
    return loc, msg


# Every character str.splitlines breaks at (C0 and C1 controls, U+2028/2029), and DEL.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escaped(text: str) -> str:
    """`text` with its control characters (a user's stray \\r, \\n or \\x85, echoed back)
    escaped: a message that quotes it stays one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _cut(text: str, limit: int) -> str:
    """`text` on one line (control characters, a key's newline say, escaped), cut to
    about `limit` characters."""
    text = escaped(text)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def first_error(err: ValidationError) -> tuple[str, str]:
    """The first problem as (dotted field path, message); the path may be empty."""
    return _problem(err.errors()[0])


def one_line(err: ValidationError, limit: int = MAX_PROBLEMS) -> str:
    """Every problem as `field.path: message`, joined by "; ", up to `limit` of them (and
    MAX_CHARS), then how many more there are."""
    problems = [_problem(e) for e in err.errors()]
    parts: list[str] = []
    for loc, msg in problems[:limit]:
        part = _cut(f"{loc}: {msg}" if loc else msg, PROBLEM_CHARS)
        if parts and sum(len(p) + 2 for p in parts) + len(part) > MAX_CHARS:
            break
        parts.append(part)
    more = len(problems) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def shown(value: object, limit: int = 40) -> str:
    """`repr(value)`, cut to about `limit` characters: a message quotes the bad value without
    becoming a screenful when the value is a 5,000-character string."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def syntax_error(err: BaseException) -> str:
    """A YAML or JSON syntax error in one line that keeps where it is: `line 3, column 7:
    expected ',' or ']', but got '<stream end>'`."""
    import json

    import yaml

    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = ": ".join(p for p in (err.context, err.problem) if p) or type(err).__name__
        if mark is not None:
            return f"line {mark.line + 1}, column {mark.column + 1}: {what}"
        return what
    if isinstance(err, json.JSONDecodeError):
        return f"line {err.lineno}, column {err.colno}: {err.msg}"
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
