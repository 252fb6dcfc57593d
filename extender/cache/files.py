"""Offline mode: cluster state from YAML/JSON files (e.g. `fleet render` output).

Files hold one object, a `List` with `items`, several YAML documents, or JSON lines (one object
per line, as `fleet render --format json` writes). Directories are read recursively (`*.yaml`,
`*.yml`, `*.json`, `*.jsonl`). Kinds the extender does not use are skipped.
When the files hold no DeviceClass, the testbed's standard classes are assumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from extender.cache.store import KINDS, Store
from testbed import vocab


class FilesError(ValueError):
    """A file that cannot be read or parsed; the message is one line naming the file."""


_GPU = f"device.driver == '{vocab.GPU_DRIVER}'"
_TYPED = f"{_GPU} && device.attributes['{vocab.GPU_DRIVER}'].{vocab.GPU_ATTR_TYPE} == "
_NIC = f"device.driver == '{vocab.NIC_DRIVER}'"

DEFAULT_CLASSES: list[dict[str, Any]] = [
    {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }
    for name, expr in (
        (vocab.CLASS_GPU, f"{_TYPED}'{vocab.GPU_TYPE_GPU}'"),
        (vocab.CLASS_MIG, f"{_TYPED}'{vocab.GPU_TYPE_MIG}'"),
        (vocab.CLASS_NIC, _NIC),
        (vocab.CLASS_RDMA_NIC, f"{_NIC} && device.attributes['{vocab.NIC_DRIVER}'].rdma == true"),
    )
]
"""The testbed's classes as `fleet render` writes them (whole GPUs, MIG partitions, NICs,
RDMA NICs; a unit test holds the two equal), judged like any class by `selectors`."""


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it (its wheels do): the same documents, ~7x faster
than the pure-Python one (5,000 rendered nodes: 40 s of CPU against 283 s; JSON lines 4.4 s;
bench/extender_from_files.py)."""


def load(store: Store, paths: list[str | Path]) -> dict[str, int]:
    """Replace the store's contents with the objects in `paths`; returns counts per kind."""
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for obj in _objects(paths):
        kind = obj.get("kind")
        if isinstance(kind, str) and kind in by_kind:
            by_kind[kind].append(obj)
    if not by_kind["DeviceClass"]:
        by_kind["DeviceClass"] = list(DEFAULT_CLASSES)
    for kind in KINDS:  # classes first (KINDS order)
        store.replace(kind, by_kind[kind])
    return {kind: len(items) for kind, items in by_kind.items()}


def _objects(paths: list[str | Path]) -> Iterator[dict[str, Any]]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
        elif path.is_file():
            files = [path]
        else:
            raise FilesError(f"{path}: no such file or directory")
        for f in files:
            yield from _flatten(_documents(f))


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text()
    except OSError as e:
        raise FilesError(f"cannot read {path}: {e.strerror or e}") from e
    try:
        if text.lstrip().startswith(("{", "[")):
            return _json(text)
        return list(yaml.load_all(text, Loader=_YAML_LOADER))
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise FilesError(f"cannot parse {path}: {first}") from e


def _json(text: str) -> list[Any]:
    """One JSON document, or JSON lines."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as e:
        if "Extra data" not in e.msg:
            raise
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _flatten(docs: list[Any]) -> Iterator[dict[str, Any]]:
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("items"), list):
            yield from _flatten(doc["items"])
        else:
            yield doc
