"""Scenarios: named ones with parameters, or YAML files of phases; both become a `Scenario`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from loadgen.scenarios.model import Claim, Phase, Scenario, resolve
from loadgen.scenarios.named import NAMED
from testbed import documents, validation, vocab

__all__ = ["NAMED", "Claim", "Phase", "Scenario", "ScenarioError", "load", "resolve"]


class ScenarioError(ValueError):
    """Bad scenario name, parameter or file: the message is one line for the user."""


def load(name_or_file: str, params: dict[str, Any] | None = None) -> Scenario:
    """A named scenario built with `params`, or a YAML scenario file (which takes none)."""
    params = params or {}
    if name_or_file in NAMED:
        named = NAMED[name_or_file]
        try:
            p = named.params.model_validate(params)
        except ValidationError as e:
            raise ScenarioError(f"scenario {name_or_file}: {validation.one_line(e)}") from e
        try:  # parameters valid alone can still build a phase past a limit (pods=10**400)
            scenario = named.build(p)
        except ValidationError as e:
            raise ScenarioError(f"scenario {name_or_file}: {validation.one_line(e)}") from e
        if p.pool:
            scenario = scenario.model_copy(update={"node_selector": {vocab.LABEL_POOL: p.pool}})
        return scenario
    path = Path(name_or_file)
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        known = ", ".join(sorted(NAMED))
        raise ScenarioError(f"unknown scenario {name_or_file!r} (known: {known}, or a .yaml file)")
    if params:
        raise ScenarioError(f"a scenario file takes no parameters (got {', '.join(params)})")
    try:
        data = documents.load(path)
    except documents.DocumentError as e:
        raise ScenarioError(str(e)) from e
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with name and phases")
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(f"{path}: {validation.one_line(e)}") from e
