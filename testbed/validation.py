"""pydantic validation errors as the one-line messages users see, naming the field."""

from __future__ import annotations

import re

from pydantic import ValidationError

# Model validators name their own sub-field ("roots[0].nic: ..."): it is joined to the path.
_SUBFIELD = re.compile(r"^([A-Za-z][\w\[\].]*): (.*)$", re.S)


def first_error(err: ValidationError) -> tuple[str, str]:
    """The first problem as (dotted field path, message); the path may be empty."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    if loc and (m := _SUBFIELD.match(msg)):
        loc, msg = f"{loc}.{m.group(1)}", m.group(2)
    return loc, msg


def one_line(err: ValidationError) -> str:
    """`field.path: message`, plus how many more problems there are."""
    loc, msg = first_error(err)
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


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
