"""Kubeconfigs for the bad-input tests of commands that take --kubeconfig/--context."""

from __future__ import annotations

from pathlib import Path

import yaml

DEAD_SERVER = "https://127.0.0.1:1"


def with_dead_context(kubeconfig: str | Path, dest: Path) -> Path:
    """The cluster's kubeconfig plus a context `dead` whose server answers nothing (same user,
    so only the server differs)."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    doc["clusters"].append({"name": "dead", "cluster": {"server": DEAD_SERVER}})
    user = doc["contexts"][0]["context"].get("user")
    doc["contexts"].append({"name": "dead", "context": {"cluster": "dead", "user": user}})
    dest.write_text(yaml.safe_dump(doc))
    return dest
