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
from testbed import validation, vocab


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
docs/results/narrative/extender-cost.md, 2026-11-22, 4fbb091)."""


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
            for n, obj in enumerate(_flatten(_documents(f)), 1):
                yield _checked(f, n, obj)


def _checked(path: Path, n: int, obj: Any) -> dict[str, Any]:
    """A Kubernetes object: a mapping with a kind and, for the kinds the extender uses, a
    name. Anything else (plain text, a list of numbers, a nameless Node) is an error, not a
    silently empty cluster."""
    if not isinstance(obj, dict):
        raise FilesError(
            f"{path}: object {n} is {type(obj).__name__} {validation.shown(obj)}, "
            "not a Kubernetes object"
        )
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise FilesError(f"{path}: object {n} has no kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if kind in KINDS and (not isinstance(name, str) or not name):
        raise FilesError(f"{path}: object {n} ({kind}) has no metadata.name")
    return obj


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text()
    except OSError as e:
        raise FilesError(f"cannot read {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise FilesError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    try:
        if text.lstrip().startswith(("{", "[")):
            return _json(text)
        return [d for d in yaml.load_all(text, Loader=_YAML_LOADER) if d is not None]
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise FilesError(f"cannot parse {path}: {validation.syntax_error(e)}") from e
    except RecursionError:
        raise FilesError(f"cannot parse {path}: too deeply nested") from None


def _json(text: str) -> list[Any]:
    """One JSON document, or JSON lines (an error names the file's line)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as e:
        if "Extra data" not in e.msg:
            raise
    docs = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                docs.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise json.JSONDecodeError(e.msg, text, _offset(text, number) + e.pos) from None
    return docs


def _offset(text: str, line: int) -> int:
    """Where `line` (1-based) starts in `text`."""
    pos = 0
    for _ in range(line - 1):
        pos = text.index("\n", pos) + 1
    return pos


def _flatten(docs: list[Any]) -> Iterator[Any]:
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            yield from _flatten(doc["items"])
        else:
            yield doc
