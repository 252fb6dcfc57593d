"""Scenarios: named ones with parameters, or YAML files of phases; both become a `Scenario`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from loadgen.scenarios.model import Claim, Phase, Scenario, resolve
from loadgen.scenarios.named import NAMED
from testbed import validation, vocab

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
        scenario = named.build(p)
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
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioError(f"cannot read {path}: {validation.syntax_error(e)}") from e
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not valid UTF-8 text ({e.reason} at byte {e.start})") from e
    except ValueError as e:  # a scalar YAML reads but Python will not (a 5,000-digit integer)
        raise ScenarioError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from e
    except RecursionError:  # the YAML parser recurses per nesting level
        raise ScenarioError(f"{path}: not valid YAML: too deeply nested") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with name and phases")
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(f"{path}: {validation.one_line(e)}") from e
