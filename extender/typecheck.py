"""A type check of DRA selector expressions, as kube-apiserver's CEL compiler refuses them.

The interpreter (`common-expression-language`) parses and runs CEL but has no checker, so
without this an expression Kubernetes refuses when the DeviceClass or claim is written would
only fail at run time, device by device. Kubernetes compiles each selector in DRA's declared
environment and refuses it when it does not check; we check the two things a selector gets
wrong in practice, with our own small parser and type rules:

- a field of `device` that does not exist (`device.model`: "undefined field"); `device` has
  `driver` (string), `attributes` (domain -> name -> any), `capacity` (domain -> name ->
  quantity) and `allowMultipleAllocations` (bool);
- a result that cannot be a bool: Kubernetes accepts bool or the unknown type (an attribute
  value), and refuses e.g. `device.driver` or `device.capacity['d'].memory`;
- plus operators on two known, different primitive types (`device.driver == 1`), which the
  checker refuses as having no matching overload.

Anything the parser does not know (message construction, an odd literal) is left unchecked:
the interpreter has compiled it, and the check can only refuse what it understands.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

DYN = "dyn"
_PRIMITIVE = frozenset({"bool", "int", "uint", "double", "string", "bytes"})
_DEVICE_FIELDS = {
    "driver": "string",
    "attributes": "attributes",
    "capacity": "capacity",
    "allowMultipleAllocations": "bool",
}
# What a field or index of a container gives.
_MEMBER = {
    "attributes": "attribute domain",
    "attribute domain": DYN,
    "capacity": "capacity domain",
    "capacity domain": "quantity",
    "map": DYN,
    "list": DYN,
    DYN: DYN,
}
# Return types of the functions of DRA's environment (global or receiver style).
_RETURNS = {
    "quantity": "quantity",
    "isQuantity": "bool",
    "compareTo": "int",
    "isGreaterThan": "bool",
    "isLessThan": "bool",
    "asInteger": "int",
    "asApproximateFloat": "double",
    "isInteger": "bool",
    "sign": "int",
    "add": "quantity",
    "sub": "quantity",
    "semver": "semver",
    "isSemver": "bool",
    "major": "int",
    "minor": "int",
    "patch": "int",
    "size": "int",
    "contains": "bool",
    "startsWith": "bool",
    "endsWith": "bool",
    "matches": "bool",
    "has": "bool",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bool": "bool",
    "bytes": "bytes",
    "all": "bool",
    "exists": "bool",
    "exists_one": "bool",
    "map": "list",
    "filter": "list",
}

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>[rR]?[bB]?[rR]?(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"
                |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[<>+\-*/%!?:.,\[\](){}])
    """,
    re.VERBOSE | re.DOTALL,
)


class _Unchecked(Exception):
    """Syntax this checker does not follow: leave the expression unchecked."""


class Refused(Exception):
    """The expression does not type-check; the message says why, as a one-liner."""


@dataclass(slots=True)
class _Tok:
    kind: str
    text: str


def _tokens(expression: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(expression):
        m = _TOKEN.match(expression, pos)
        if m is None:
            raise _Unchecked(f"unexpected character at {pos}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind != "space":
            out.append(_Tok(kind, m.group()))
    out.append(_Tok("end", ""))
    return out


def words(expression: str) -> list[tuple[str, str]] | None:
    """`expression`'s tokens as the CEL lexer sees them ((kind, text): comments and
    whitespace dropped, string literals whole), or None where this lexer does not follow it."""
    try:
        return [(t.kind, t.text) for t in _tokens(expression)]
    except _Unchecked:
        return None


def _literal_type(tok: _Tok) -> str:
    if tok.kind == "string":
        prefix = tok.text[: min(i for i in (tok.text.find("'"), tok.text.find('"')) if i >= 0)]
        return "bytes" if "b" in prefix.lower() else "string"
    t = tok.text.lower()
    if t.endswith("u"):
        return "uint"
    if not t.startswith("0x") and ("." in t or "e" in t):
        return "double"
    return "int"


class _Parser:
    """CEL's grammar by precedence climbing; each rule returns the type of its expression."""

    def __init__(self, expression: str) -> None:
        self.toks = _tokens(expression)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self, text: str | None = None) -> _Tok:
        tok = self.toks[self.i]
        if text is not None and tok.text != text:
            raise _Unchecked(f"expected {text!r}")
        self.i += 1
        return tok

    def at(self, *texts: str) -> bool:
        tok = self.peek()
        return tok.kind in ("op", "ident") and tok.text in texts

    def expr(self) -> str:
        cond = self.or_()
        if not self.at("?"):
            return cond
        self.take("?")
        _need_bool(cond, "_?_:_")
        a = self.or_()
        self.take(":")
        b = self.expr()
        return a if a == b else DYN

    def or_(self) -> str:
        return self.binary(self.and_, ("||",), _logical)

    def and_(self) -> str:
        return self.binary(self.relation, ("&&",), _logical)

    def relation(self) -> str:
        return self.binary(self.addition, ("==", "!=", "<", "<=", ">", ">=", "in"), _compare)

    def addition(self) -> str:
        return self.binary(self.multiplication, ("+", "-"), _arith)

    def multiplication(self) -> str:
        return self.binary(self.unary, ("*", "/", "%"), _arith)

    def binary(
        self,
        operand: Callable[[], str],
        ops: tuple[str, ...],
        combine: Callable[[str, str, str], str],
    ) -> str:
        """One left-associative precedence level: `operand (op operand)*`, each step typed
        by `combine(left, right, "_op_")`."""
        t = operand()
        while self.at(*ops):
            op = self.take().text
            t = combine(t, operand(), f"_{op}_")
        return t

    def unary(self) -> str:
        if self.at("!"):
            self.take()
            _need_bool(self.unary(), "!_")
            return "bool"
        if self.at("-"):
            self.take()
            return self.unary()
        return self.member()

    def member(self) -> str:
        t = self.primary()
        while True:
            if self.at("."):
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise _Unchecked("expected a field name")
                if self.at("("):
                    self.call_args()
                    t = _RETURNS.get(name.text, DYN)
                else:
                    t = _field(t, name.text)
            elif self.at("["):
                self.take()
                self.expr()
                self.take("]")
                t = _index(t)
            else:
                return t

    def call_args(self) -> None:
        self.take("(")
        while not self.at(")"):
            self.expr()
            if not self.at(")"):
                self.take(",")
        self.take(")")

    def primary(self) -> str:
        tok = self.take()
        if tok.kind in ("string", "number"):
            return _literal_type(tok)
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return "bool"
            if tok.text == "null":
                return "null"
            if self.at("("):
                self.call_args()
                return _RETURNS.get(tok.text, DYN)
            if self.at("{"):
                raise _Unchecked("message construction")
            return "device" if tok.text == "device" else DYN
        if tok.text == "(":
            t = self.expr()
            self.take(")")
            return t
        if tok.text == "[":
            while not self.at("]"):
                self.expr()
                if not self.at("]"):
                    self.take(",")
            self.take("]")
            return "list"
        if tok.text == "{":
            while not self.at("}"):
                self.expr()
                self.take(":")
                self.expr()
                if not self.at("}"):
                    self.take(",")
            self.take("}")
            return "map"
        raise _Unchecked(f"unexpected {tok.text!r}")


def _field(t: str, name: str) -> str:
    if t == "device":
        field = _DEVICE_FIELDS.get(name)
        if field is None:
            raise Refused(f"undefined field '{name}' of device")
        return field
    if t in _MEMBER:
        return _MEMBER[t]
    if t in _PRIMITIVE or t in ("quantity", "semver"):
        raise Refused(f"type '{t}' does not support field selection")
    return DYN


def _index(t: str) -> str:
    if t == "device":
        raise Refused("no matching overload for '_[_]' applied to device")
    if t in _MEMBER:
        return _MEMBER[t]
    if t in _PRIMITIVE or t in ("quantity", "semver"):
        raise Refused(f"no matching overload for '_[_]' applied to '{t}'")
    return DYN


def _need_bool(t: str, op: str) -> None:
    if t not in ("bool", DYN):
        raise Refused(f"no matching overload for '{op}' applied to '{t}'")


def _known(t: str) -> bool:
    return t in _PRIMITIVE


def _same_kind(a: str, b: str, op: str) -> None:
    """Kubernetes' environment compares numbers across int, uint and double; anything else
    must be one type on both sides."""
    if not (_known(a) and _known(b)) or a == b:
        return
    numeric = {"int", "uint", "double"}
    if a in numeric and b in numeric:
        return
    raise Refused(f"no matching overload for '{op}' applied to '({a}, {b})'")


def _logical(a: str, b: str, op: str) -> str:
    _need_bool(a, op)
    _need_bool(b, op)
    return "bool"


def _compare(a: str, b: str, op: str) -> str:
    if op != "_in_":
        _same_kind(a, b, op)
    return "bool"


def _arith(a: str, b: str, op: str) -> str:
    if a == DYN or b == DYN:
        return DYN
    if a == b and (
        a in ("int", "uint", "double") or (op == "_+_" and a in ("string", "bytes", "list"))
    ):
        return a
    plain = (*_PRIMITIVE, "list", "map", "null")
    if a in plain and b in plain:
        raise Refused(f"no matching overload for '{op}' applied to '({a}, {b})'")
    return DYN


_DERIVED_RESULTS = frozenset({"bool", "int", "string", "semver", "list", DYN})
"""What a derived attribute's expression may give: a primitive scalar, a semver, or a list
of them (the element type is not followed here)."""


def check(expression: str, *, derived: bool = False) -> str | None:
    """Why Kubernetes' compiler would refuse `expression` (a one-line reason), or None when
    it checks (or uses syntax this checker leaves alone). `derived`: it computes a derived
    attribute's value, not a selector's bool."""
    try:
        parser = _Parser(expression)
        out = parser.expr()
        if parser.peek().kind != "end":
            return None
    except Refused as e:
        return str(e)
    except (_Unchecked, IndexError, RecursionError):
        return None
    if derived:
        if out in _DERIVED_RESULTS:
            return None
        return (
            "must evaluate to a primitive scalar (string, integer, boolean, semver) or a list "
            f"of these scalars, not {out}"
        )
    if out not in ("bool", DYN):
        return f"must evaluate to bool or the unknown type, not {out}"
    return None
