"""Hypothesis strategies for spec and scenario *files*: YAML/JSON text that is mostly almost
right (wrong types, huge or negative numbers, odd Unicode at any field) and sometimes plainly
wrong (malformed text, bytes that are not UTF-8, nesting past recursion limits, alias bombs,
Python tags). Shared by tests/unit/fleet/test_fuzz_spec.py, tests/unit/loadgen/
test_fuzz_scenario.py and tests/fuzz/parsers.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "\u202eevil\u202c",
    "\u05e9\u05dc\u05d5\u05dd",
    "\ufeff",
    "\U0001f680",
    "e\u0301\u0301",
    "\ud800",
    "~",
    "null",
    "yes",
    "0x1F",
    "1e400",
    ".inf",
    "-.nan",
    "a" * 64,
    "b" * 300,
    "9" * 5000,
    "{{",
    "*alias",
    "&anchor",
    "!!python/object:os.system",
    "1h",
    "-5s",
    "500ms",
    "3.5m",
    "99999999999999999999h",
]
odd_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(ODD_STRINGS),
    st.builds(lambda c, n: c * n, st.characters(codec="utf-8"), st.integers(50, 3000)),
)
numbers = st.one_of(
    st.integers(-5, 200),
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30, 10**400, -(10**20)]),
    st.floats(),  # NaN and infinities included
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text)


def nested(scalars: st.SearchStrategy[Any], keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """`scalars`, and small lists and dicts (keyed by `keys`) of them a few levels deep: any
    JSON-like value, for fields whose type a document may get wrong."""
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)
        ),
        max_leaves=8,
    )


anything = nested(scalars, odd_text)


# Generated documents are large and parsing them slow; the examples are fresh each run.
FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right shape, sometimes anything (a wrong type at this level)."""
    return st.one_of(good, good, good, anything)


def mapping(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {k: maybe(v) for k, v in required.items()},
        optional={**{k: maybe(v) for k, v in optional.items()}, "unknownField": anything},
    )


# -- fleet specs --------------------------------------------------------------------------------

_label_keys = st.sampled_from(["a", "example.com/x", "topology.kubernetes.io/zone"]) | odd_text
_labels = st.dictionaries(_label_keys, st.sampled_from(["v", "x-1"]) | odd_text, max_size=3)
_counts = st.one_of(st.integers(-3, 40), numbers)
_taint = mapping(
    {"key": _label_keys},
    {"value": odd_text, "effect": st.sampled_from(["NoSchedule", "NoExecute", "Bad"])},
)
_root = mapping(
    {"bus": st.integers(-1, 300)},
    {"numaNode": _counts, "gpus": _counts, "nics": _counts, "nic": odd_text},
)
_profile = mapping(
    {"name": st.sampled_from(["mine", "dgx-h100"]) | odd_text},
    {
        "gpu": mapping(
            {
                "productName": odd_text,
                "architecture": odd_text,
                "cudaComputeCapability": st.sampled_from(["9.0.0", "9"]) | odd_text,
                "driverVersion": st.just("1.2.3") | odd_text,
                "cudaDriverVersion": st.just("12.4.0") | odd_text,
            },
            {"memory": st.sampled_from(["80Gi", "-1", "huge"])},
        ),
        "nics": st.dictionaries(
            odd_text,
            mapping({"rdma": st.booleans(), "pciVendor": odd_text, "pciDevice": odd_text}, {}),
            max_size=2,
        ),
        "roots": st.lists(_root, max_size=4),
        "node": mapping({}, {"cpu": odd_text, "labels": _labels}),
    },
)
_pool = mapping(
    {
        "name": st.sampled_from(["gpu", "a"]) | odd_text,
        "profile": st.sampled_from(["dgx-h100", "cpu-only", "l4-4gpu", "mine", "nope"]) | odd_text,
        "count": _counts,
    },
    {"labels": _labels, "taints": st.lists(_taint, max_size=2), "capacity": anything},
)
_spec = mapping(
    {"pools": st.lists(_pool, max_size=3)},
    {
        "seed": numbers,
        "topology": mapping(
            {},
            {
                "hostsPerRack": _counts,
                "racksPerBlock": _counts,
                "blockLabel": _label_keys,
                "rackLabel": _label_keys,
            },
        ),
        "labels": _labels,
        "annotations": st.dictionaries(odd_text, odd_text, max_size=2),
        "taints": st.lists(_taint, max_size=2),
        "extendedResources": st.booleans(),
        "kwokShards": _counts,
        "profiles": st.lists(_profile, max_size=2),
    },
)
fleet_values = st.one_of(
    mapping(
        {"spec": _spec},
        {
            "apiVersion": st.just("testbed.dra.io/v1alpha1"),
            "kind": st.sampled_from(["Fleet", "Pod"]) | odd_text,
            "metadata": mapping({}, {"name": st.sampled_from(["f", "fleet"]) | odd_text}),
        },
    ),
    _spec,  # a bare spec
    anything,
)

# -- loadgen scenarios ---------------------------------------------------------------------------

_durations = st.one_of(
    st.sampled_from(["30s", "500ms", "5m", "1h", "0", "-1s", "1d", "9" * 400, "1e999"]),
    numbers,
)
_claim = mapping(
    {},
    {
        "gpus": _counts,
        "nics": _counts,
        "align": st.booleans(),
        "min_memory": st.sampled_from(["40Gi", "1.5Ti", "lots"]) | odd_text,
        "device_plugin": st.booleans(),
        "gpu_class": odd_text,
        "nic_class": odd_text,
    },
)
_phase = mapping(
    {
        "name": st.sampled_from(["fill", "churn", "p"]) | odd_text,
        "kind": st.sampled_from(["pods", "jobs", "cronjobs"]),
    },
    {
        "count": _counts,
        "sizing": st.sampled_from(["fixed", "fill", "free", "all"]),
        "fill_fraction": numbers,
        "wave_size": _counts,
        "parallelism": _counts,
        "completions": _counts,
        "gang": st.booleans(),
        "run_time": _durations,
        "qps": numbers,
        "arrival": st.sampled_from(["fixed", "poisson", "closed", "burst"]),
        "claim": _claim,
        "wait": st.sampled_from(["running", "complete", "created", "never"]),
        "timeout": _durations,
    },
)
scenario_values = st.one_of(
    mapping(
        {"name": st.sampled_from(["s"]) | odd_text, "phases": st.lists(_phase, max_size=3)},
        {"description": odd_text},
    ),
    anything,
)

# -- the text of a file -----------------------------------------------------------------------


def deep(depth: int, flow: str) -> str:
    """Nesting `depth` levels deep, as YAML/JSON flow text."""
    if flow == "list":
        return "[" * depth + "1" + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def alias_bomb(levels: int, fan: int, field: str) -> str:
    """The billion-laughs shape: each level a list of `fan` aliases of the level below."""
    lines = ["a0: &a0 [lol, lol]"]
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * fan)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"{field}: *a{levels}")
    return "\n".join(lines) + "\n"


NASTY_TEXTS = [
    "",
    "\n",
    "---\n---\n",
    "a: 1\n---\nb: 2\n",
    "!!python/object/apply:os.system ['true']\n",
    "pools: !!binary aGVsbG8=\n",
    "name: &x a\nphases: *y\n",
    "? [a, b]\n: 1\n",
    "a: 1\na: 2\n",
    "base: &b {count: 1}\npools: [{<<: *b, name: a, profile: dgx-h100}]\n",
    "pools:\n\t- name: a\n",
    "name: s\nphases: [{name: p, kind: pods, count: 1, run_time: .inf, timeout: .inf}]\n",
    "pools: [{name: a, profile: dgx-h100, count: " + "9" * 5000 + "}]\n",
    '{"pools": [{"name": "a", "profile": "dgx-h100", "count": ' + "9" * 5000 + "}]}",
    '{"pools": [{"name": "a", "profile": "dgx-h100", "count": 1e999}]}',
    '{"pools": NaN}',
]


@dataclass(frozen=True)
class Document:
    suffix: str
    data: bytes

    def write(self, directory: Path, stem: str = "doc") -> Path:
        path = directory / f"{stem}{self.suffix}"
        path.write_bytes(self.data)
        return path


def _dump(value: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(value)  # NaN/Infinity literals included: Python's loader reads them
    try:
        return str(yaml.safe_dump(value, allow_unicode=True, width=10_000))
    except (yaml.YAMLError, UnicodeEncodeError, ValueError):
        return json.dumps(value)  # YAML is a superset of JSON


@st.composite
def documents(draw: st.DrawFn, values: st.SearchStrategy[Any], field: str) -> Document:
    """A spec/scenario file: suffix and bytes. `field` is a top-level key an alias bomb aims at."""
    kind = draw(st.integers(0, 99))
    as_json = draw(st.booleans())
    suffix = ".json" if as_json else draw(st.sampled_from([".yaml", ".yml"]))
    if kind < 72:
        text = _dump(draw(values), as_json)
    elif kind < 80:  # cut short or one character changed
        text = _dump(draw(values), as_json)
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + (draw(st.characters()) if draw(st.booleans()) else "")
    elif kind < 85:
        text = draw(st.sampled_from(NASTY_TEXTS))
    elif kind < 87:  # past PyYAML's recursion limit (~500 levels, which cost it ~1 s)
        depth = draw(st.integers(50, 600))
        nested = deep(depth, draw(st.sampled_from(["list", "map"])))
        text = f'{{"{field}": {nested}}}' if as_json else f"{field}: {nested}"
    elif kind < 92:
        text = alias_bomb(draw(st.integers(1, 12)), draw(st.integers(2, 10)), field)
    elif kind < 97:  # not UTF-8 at all, or raw surrogates
        data = draw(st.binary(max_size=100)) + b"\xff\xfe\xed\xa0\x80"
        return Document(suffix, draw(st.sampled_from([data, b"\xef\xbb\xbf" + data])))
    else:
        text = draw(st.text(max_size=50))
    return Document(suffix, text.encode("utf-8", "surrogatepass"))


def one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message and len(message) < 2000
