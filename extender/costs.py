"""What an expression's length does not bound, read from what it compiled to.

The interpreter counts no cost and holds the GIL while it evaluates: an expression whose
work its length bounds runs inline, anything else in the sandbox (`extender.sandbox`), with a
deadline. Unbounded are comprehensions (`.all`, `.exists`, `.exists_one`, `.map`,
`.filter`: nested, their steps multiply) and regular expressions (`matches`: the
interpreter compiles the pattern at each evaluation, ~57 ms for `\\w{200}`, and a 10 KB chain
of them ran 14.5 s). Judged on the compiled program (its functions and variables: macros
expanded, comments gone) and on the lexer's tokens (a comprehension whose variable shadows
`device` leaves no other trace), never on a regular expression over the text: a `//`
comment hid a comprehension from that (pure).
"""

from __future__ import annotations

from collections.abc import Iterable

from extender import typecheck

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
"""CEL's comprehension macros."""
_EXPANDED = frozenset({"@not_strictly_false"})
"""Functions only a comprehension's expansion calls (`.all`, `.exists`)."""
REGEX = frozenset({"matches"})
"""Functions whose cost is a regular expression's."""


def unbounded(expression: str, functions: Iterable[str], variables: Iterable[str]) -> str | None:
    """Why evaluating `expression` (which compiled to a program calling `functions` over
    `variables`) may cost more than its length bounds: "comprehension", "regular expression"
    (or "unread syntax" where the lexer does not follow it); None when it cannot."""
    called = set(functions)
    if called & REGEX:
        return "regular expression"
    if called & _EXPANDED or any(v != "device" for v in variables):
        return "comprehension"  # a comprehension's variable, or its expansion
    words = typecheck.words(expression)
    if words is None:
        return "unread syntax"
    if bound_names(words):
        return "comprehension"
    return None


def bound_names(words: list[tuple[str, str]]) -> set[str]:
    """Names bound by comprehension macros (`x` in `list.all(x, ...)`), from the tokens."""
    out = set()
    for i in range(1, len(words) - 3):
        if (
            words[i - 1] == ("op", ".")
            and words[i][0] == "ident"
            and words[i][1] in MACROS
            and words[i + 1] == ("op", "(")
            and words[i + 2][0] == "ident"
            and words[i + 3] == ("op", ",")
        ):
            out.add(words[i + 2][1])
    return out
