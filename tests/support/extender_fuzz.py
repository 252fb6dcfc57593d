"""Hypothesis strategies for bad (and some good) extender HTTP calls, and the checks every
reply must pass. Shared by tests/unit/extender/test_fuzz_extender.py (a CI-sized run) and
tests/fuzz/extender.py (100,000 bodies against a served fleet).

A call is a `Call(method, path, body, content_type, names)`; `names` are the candidate
node names when the body is valid ExtenderArgs (None otherwise), so a 200 reply can be
checked against what was asked. The cluster behind it is `fleet_objects()`: a rendered
dgx-h100 fleet, one claim holding devices on its first node, a GPU+NIC pair template and
job siblings, so that real demand, filter and scoring paths run, not only the decoder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st
from pydantic import ValidationError

from fleet.render import render_profile
from testbed import vocab, wire
from tests.support.fuzz_documents import nested

NS = "fuzz"
TEMPLATE = "pairs"
CLAIM = "held"
JOB = "train"
POST_PATHS = ("/filter", "/prioritize")
GET_PATHS = ("/healthz", "/readyz", "/metrics", "/debug/decisions")

# -- the cluster ------------------------------------------------------------------------------


def fleet_objects(nodes: int = 6) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects the extender serves (rendered fleet + claim + template + siblings) and the
    node names."""
    rendered = render_profile("dgx-h100", nodes, name="fz", seed=7)
    names = [n["metadata"]["name"] for n in rendered.nodes]
    first = names[0]
    held = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": CLAIM, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "x"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "g", "driver": vocab.GPU_DRIVER, "pool": first, "device": d}
                        for d in ("gpu-0", "gpu-1", "gpu-2")
                    ]
                }
            }
        },
    }
    requests = [
        {"name": f"{role}-{i}", "exactly": {"deviceClassName": cls}}
        for role, cls in (("gpu", vocab.CLASS_GPU), ("nic", vocab.CLASS_RDMA_NIC))
        for i in range(4)
    ]
    constraints = [
        {"requests": [f"gpu-{i}", f"nic-{i}"], "matchAttribute": vocab.ATTR_PCIE_ROOT}
        for i in range(4)
    ]
    template = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE, "namespace": NS},
        "spec": {"spec": {"devices": {"requests": requests, "constraints": constraints}}},
    }
    siblings = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"sib-{i}",
                "namespace": NS,
                "labels": {vocab.LABEL_JOB_NAME: JOB},
            },
            "spec": {"nodeName": names[i % len(names)]},
            "status": {"phase": "Running"},
        }
        for i in range(2)
    ]
    return [*rendered.objects(), held, template, *siblings], names


# -- values -----------------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202eevil\u202c",  # right-to-left override
    "\u200f\u05e9\u05dc\u05d5\u05dd",  # RTL mark + Hebrew
    "\ufeffbom",
    "\U0001f680\U0001f9e0",
    "e\u0301\u0301\u0301",  # stacked combining marks
    "\ud800",  # lone surrogates: json.dumps escapes them; not valid UTF-8 when raw
    "\udfff\ud800",
    "../../etc/passwd",
    "%00%2e%2e",
    "fz-dgx-h100-0\x00",
    "FZ-DGX-H100-0",
    "a" * 254,
    "é" * 5000,
    "x" * 70_000,
]

odd_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(ODD_STRINGS),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # a lone surrogate
    # long runs are cheap to draw this way (hypothesis draws a long text char by char)
    st.builds(lambda c, n: c * n, st.characters(codec="utf-8"), st.integers(50, 5000)),
)
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 2**63, -(2**63) - 1, 1e308, -0.0]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text)
anything = nested(scalars, odd_text)


def deep(depth: int) -> bytes:
    """JSON nested `depth` levels (written directly: json.dumps itself would recurse)."""
    opens = "".join('{"a":' if i % 2 else "[" for i in range(depth))
    closes = "".join("}" if i % 2 else "]" for i in reversed(range(depth)))
    return (opens + "1" + closes).encode()


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right type, sometimes anything at all (a wrong type at this level)."""
    return st.one_of(good, good, good, anything)


# -- ExtenderArgs, well-typed or wrong at every level ----------------------------------------


_ARGS: dict[tuple[str, ...], st.SearchStrategy[Any]] = {}


def args_strategy(names: list[str]) -> st.SearchStrategy[Any]:
    """ExtenderArgs-shaped values over `names` (built once per name list: building the
    strategy costs more than drawing from it)."""
    key = tuple(names)
    if key not in _ARGS:
        _ARGS[key] = _args_strategy(names)
    return _ARGS[key]


def _args_strategy(names: list[str]) -> st.SearchStrategy[Any]:
    known = st.sampled_from(names)
    node_name = st.one_of(known, known, odd_text, st.sampled_from(["ghost", "fz-dgx-h100-999"]))
    label_values = st.one_of(st.sampled_from([JOB, "other"]), odd_text)
    labels = st.one_of(
        st.dictionaries(
            st.sampled_from([vocab.LABEL_JOB_NAME, vocab.LABEL_GANG, "app"]) | odd_text,
            maybe(label_values),
            max_size=3,
        ),
        anything,
    )
    annotation_values = st.one_of(
        st.sampled_from(["pcie-root", "numa", "rack", "block", "PCIE-ROOT ", "none"]), odd_text
    )
    annotations = st.one_of(
        st.dictionaries(
            st.sampled_from([vocab.ANNOTATION_REQUIRE_ALIGNMENT, vocab.ANNOTATION_REQUIRE_LOCALITY])
            | odd_text,
            maybe(annotation_values),
            max_size=3,
        ),
        anything,
    )
    metadata = st.fixed_dictionaries(
        {},
        optional={
            "name": maybe(odd_text | st.just("p")),
            "namespace": maybe(st.sampled_from([NS, "default"]) | odd_text),
            "uid": maybe(odd_text),
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": st.none(),
        },
    )
    ref_name = st.one_of(st.sampled_from([TEMPLATE, CLAIM, "missing"]), odd_text)
    claim_ref = st.fixed_dictionaries(
        {},
        optional={
            "name": maybe(st.sampled_from(["t0", "c0"]) | odd_text),
            "resourceClaimName": maybe(ref_name) | st.none(),
            "resourceClaimTemplateName": maybe(ref_name) | st.none(),
        },
    )
    spec = st.fixed_dictionaries(
        {},
        optional={
            "resourceClaims": maybe(st.lists(maybe(claim_ref), max_size=4)),
            "containers": maybe(st.lists(anything, max_size=2)),
            "nodeName": maybe(node_name),
        },
    )
    status = st.fixed_dictionaries(
        {},
        optional={
            "resourceClaimStatuses": maybe(
                st.lists(
                    maybe(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "name": maybe(odd_text),
                                "resourceClaimName": maybe(ref_name),
                            },
                        )
                    ),
                    max_size=3,
                )
            ),
            "phase": maybe(st.just("Pending")),
        },
    )
    pod = st.fixed_dictionaries(
        {},
        optional={
            "metadata": maybe(metadata),
            "spec": maybe(spec),
            "status": maybe(status),
            "kind": anything,
        },
    )
    many_names = st.integers(0, 30_000).map(lambda n: [f"fz-dgx-h100-{i}" for i in range(n)])
    node_names = st.one_of(
        st.lists(maybe(node_name), max_size=12),
        st.lists(node_name, max_size=12),
        many_names,
        st.none(),
        anything,
    )
    node_obj = st.fixed_dictionaries(
        {}, optional={"metadata": maybe(st.fixed_dictionaries({"name": maybe(node_name)}))}
    )
    nodes = st.one_of(
        st.none(),
        st.fixed_dictionaries({}, optional={"items": maybe(st.lists(maybe(node_obj), max_size=6))}),
        anything,
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "Pod": maybe(pod),
            "Nodes": nodes,
            "NodeNames": node_names,
            "Extra": anything,
            "pod": anything,  # wrong case: Go would accept it, we need the exact key
        },
    )


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: bytes
    content_type: str | None
    names: list[str] | None
    """The candidate names if `body` is valid ExtenderArgs, else None."""


def _encode(value: Any, ascii_only: bool) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_only, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")  # a raw lone surrogate: invalid UTF-8


def candidate_names(body: bytes) -> list[str] | None:
    try:
        return wire.ExtenderArgs.model_validate_json(body).candidate_names()
    except ValidationError:
        return None


@st.composite
def post_bodies(draw: st.DrawFn, names: list[str], limit: int) -> bytes:
    kind = draw(st.integers(0, 99))
    if kind < 70:  # ExtenderArgs-shaped, right or wrong at any level
        body = _encode(draw(args_strategy(names)), draw(st.booleans()))
    elif kind < 76:  # any JSON at the top level
        body = _encode(draw(anything), draw(st.booleans()))
    elif kind < 84:  # malformed JSON: a valid body cut short or with a byte changed
        good = _encode({"Pod": {"metadata": {"name": "p"}}, "NodeNames": names}, True)
        cut = draw(st.integers(0, len(good)))
        if draw(st.booleans()):
            body = good[:cut]
        else:
            body = good[:cut] + bytes([draw(st.integers(0, 255))]) + good[cut + 1 :]
    elif kind < 90:  # raw bytes
        body = draw(st.binary(max_size=200))
    elif kind < 93:  # nesting deeper than any parser's recursion limit
        body = b'{"Pod": {"metadata": ' + deep(draw(st.integers(100, 5000))) + b"}}"
    elif kind < 96:  # over the size limit
        body = b'{"Pod": {}, "NodeNames": [' + b'"n",' * (limit // 4 + 1) + b'"n"]}'
    else:  # valid JSON wrapped oddly: BOM, NUL, trailing garbage, whitespace
        good = _encode({"Pod": {}, "NodeNames": draw(st.lists(st.sampled_from(names)))}, True)
        wrap = draw(st.sampled_from([b"\xef\xbb\xbf", b"\x00", b" \n\t", b"}", b"[]"]))
        body = wrap + good if draw(st.booleans()) else good + wrap
    return body


CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json",
        "application/json; charset=utf-8",
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "application/json; charset=latin-1",
        "garbage/\u00e9",
    ]
)


@st.composite
def calls(draw: st.DrawFn, names: list[str], limit: int) -> Call:
    """One HTTP call: mostly POSTs of generated bodies, some GETs of the other endpoints."""
    kind = draw(st.integers(0, 99))
    if kind < 88:
        body = draw(post_bodies(names, limit))
        return Call(
            "POST",
            draw(st.sampled_from(POST_PATHS)),
            body,
            draw(CONTENT_TYPES),
            candidate_names(body) if len(body) <= limit else None,
        )
    if kind < 93:
        node = draw(st.one_of(st.sampled_from(names), odd_text.filter(bool)))
        path = f"/debug/nodes/{quote(node, safe='', errors='surrogatepass')}/free"
        return Call("GET", path, b"", None, None)
    if kind < 97:
        query = draw(odd_text)
        path = f"/debug/decisions?pod={quote(query, safe='', errors='surrogatepass')}"
        return Call("GET", path, b"", None, None)
    method = draw(st.sampled_from(["GET", "PUT", "DELETE", "POST"]))
    path = draw(st.sampled_from([*GET_PATHS, *POST_PATHS, "/", "/nope", "/filter/x"]))
    return Call(method, path, b"", None, None)


# -- what every reply must be -----------------------------------------------------------------


def _in_order(listed: list[Any], names: list[str]) -> bool:
    """Whether `listed` is `names` with some left out, in their order."""
    rest = iter(names)
    return all(any(n == m for m in rest) for n in listed)


def check_reply(call: Call, status: int, body: bytes, known: set[str]) -> str | None:
    """None if the reply is acceptable for the call, else what is wrong with it."""
    if status >= 500:
        return f"{status} from {call.method} {call.path}"
    if call.method != "POST" or call.path not in POST_PATHS:
        return None
    if status == 400:
        try:
            err = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            return f"400 without a JSON error: {body[:100]!r}"
        if not isinstance(err, str) or not err or "\n" in err:
            return f"400 error is not one line: {err!r}"
        if call.names is not None:
            return f"400 for valid ExtenderArgs: {err}"
        return None
    if status != 200:
        return f"unexpected status {status}"
    if call.names is None:
        return "200 for a body that is not valid ExtenderArgs"
    try:
        reply = json.loads(body)
    except ValueError:
        return f"200 with a body that is not JSON: {body[:100]!r}"
    names = call.names
    if call.path == "/prioritize":
        # The candidates above the call's lowest score, in order, each less that lowest.
        if not isinstance(reply, list) or not _in_order([h.get("Host") for h in reply], names):
            return "prioritize reply does not list some of the candidates in order"
        scores = [h.get("Score") for h in reply]
        if not all(isinstance(s, int) and 1 <= s <= 10 for s in scores):
            return f"a listed score out of 1..10: {scores[:10]}"
        if any(h["Host"] not in known for h in reply):
            return "an unknown node listed (it scores a known node's floor, the lowest)"
        return None
    try:
        result = wire.ExtenderFilterResult.model_validate(reply)
    except ValidationError as e:
        return f"filter reply is not an ExtenderFilterResult: {e.errors()[0]['msg']}"
    passed = (
        result.NodeNames
        if result.NodeNames is not None
        else (result.Nodes.names() if result.Nodes is not None else None)
    )
    if passed is None:
        return "filter reply sets neither NodeNames nor Nodes (empties the feasible list)"
    asked = set(names)
    if not set(passed) <= asked:
        return "filter passed names it was not asked about"
    rejected = set(result.FailedNodes) | set(result.FailedAndUnresolvableNodes)
    if not rejected <= asked & known:
        return "filter rejected a node it was not asked about or does not know"
    return None
