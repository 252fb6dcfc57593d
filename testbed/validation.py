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
