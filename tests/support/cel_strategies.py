"""Hypothesis strategies for CEL device selectors: DRA-shaped expressions, mutations of
them, and plain garbage. Shared by tests/unit/extender/test_fuzz_cel.py (a CI-sized run)
and tests/fuzz/cel.py (>= 20,000 expressions through the served app)."""

from __future__ import annotations

from hypothesis import strategies as st

DOMAINS = ["gpu.nvidia.com", "dra.net", "resource.kubernetes.io", "x.io", ""]
NAMES = ["productName", "index", "driverVersion", "rdma", "pcieRoot", "memory", "missing", "9"]
QUANTITIES = [
    "40Gi",
    "80Gi",
    "500m",
    "1e3",
    "1.5k",
    "-1",
    "",
    "abc",
    "1Zi",
    "99999999999999999999Ei",
]
VERSIONS = ["550.0.0", "1.2.3-rc.1", "v1.2", "1.2", "", "01.2.3", "1.2.3+build"]


def _quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


literals = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["true", "false", "null", "1u", "2.5", "[]", "{}", "[1, 'a']"]),
    st.text(max_size=12).map(_quote),
    st.sampled_from(QUANTITIES).map(lambda q: f"quantity({_quote(q)})"),
    st.sampled_from(VERSIONS).map(lambda v: f"semver({_quote(v)})"),
    st.sampled_from(VERSIONS).map(lambda v: f"semver({_quote(v)}, true)"),
)
accessors = st.one_of(
    st.just("device.driver"),
    st.just("device.allowMultipleAllocations"),
    st.builds(
        lambda kind, d, n: (
            f"device.{kind}[{_quote(d)}].{n}"
            if n.isidentifier()
            else f"device.{kind}[{_quote(d)}][{_quote(n)}]"
        ),
        st.sampled_from(["attributes", "capacity"]),
        st.sampled_from(DOMAINS),
        st.sampled_from(NAMES),
    ),
    st.sampled_from(["device.attributes", "device.capacity", "device"]),
)
methods = st.sampled_from(
    [
        ".compareTo({})", ".isGreaterThan({})", ".isLessThan({})", ".startsWith({})",
        ".matches({})", ".contains({})", ".add({})", ".sub({})", ".major()", ".asInteger()",
        ".asApproximateFloat()", ".sign()", ".isInteger()", ".lowerAscii()", ".exists(k, {})",
        ".all(k, {})", ".size()",
    ]
)  # fmt: skip
ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "&&", "||", "in", "+", "-", "*", "/", "%"])


def _term(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, o, b: f"{a} {o} {b}", children, ops, children),
        st.builds(lambda a, m, b: a + m.format(b), children, methods, children),
        st.builds(lambda a: f"!({a})", children),
        st.builds(lambda a: f"has({a})", accessors),
        st.builds(lambda a, b, c: f"{a} ? {b} : {c}", children, children, children),
        st.builds(
            lambda f, a: f"{f}({a})",
            st.sampled_from(["size", "int", "string", "isQuantity", "isSemver", "dyn", "type"]),
            children,
        ),
    )


shaped = st.recursive(st.one_of(literals, accessors), _term, max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A shaped expression with a few characters cut, doubled or replaced."""
    text = draw(shaped)
    for _ in range(draw(st.integers(1, 3))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["cut", "dup", "swap"]))
        if op == "cut":
            text = text[:i] + text[i + 1 :]
        elif op == "dup":
            text = text[:i] + text[i] + text[i:]
        else:
            text = (
                text[:i] + draw(st.sampled_from(list("()[]{}'\".,!&|?:\\ \x00é😀"))) + text[i + 1 :]
            )
    return text


expressions_any = st.one_of(shaped, shaped, mutated(), st.text(max_size=40))
