"""The demo's defaults, read from the one place they are written: the built-in file
`demo.yaml` beside this module. Light (YAML only, no experiment parser): `testbed demo`'s
flags show them at every `testbed` start.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

BUILTIN_NAMES = ("demo",)
"""The built-in experiment files (`builtin:NAME`), each `NAME.yaml` beside this module."""


def document(name: str = "demo") -> dict[str, Any]:
    """The built-in file `name` as decoded YAML; FileNotFoundError if there is none."""
    if name not in BUILTIN_NAMES:
        raise FileNotFoundError(name)
    return _decoded(name)


@functools.cache
def _decoded(name: str) -> dict[str, Any]:
    text = resources.files("experiment.demo").joinpath(f"{name}.yaml").read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@dataclass(frozen=True)
class Defaults:
    """What `testbed demo` runs without flags (`demo.yaml`)."""

    nodes: int
    pods: int
    repeats: int
    comparisons: tuple[str, ...]
    latency_arms: bool
    qps: float
    budget_minutes: float


def defaults() -> Defaults:
    data = document()
    section = data["builtin"]
    return Defaults(
        nodes=int(data["fleet"]["nodes"]),
        pods=int(section["pods"]),
        repeats=int(data["repeats"]),
        comparisons=tuple(section["comparisons"]),
        latency_arms=bool(section["latencyArms"]),
        qps=float(data["qps"]),
        budget_minutes=float(data["budgetMinutes"]),
    )
