"""The engine knows its wings only through the registry (`experiment.plan.wing`): it names none of
them, finds a built-in file, the planner of a file's `builtin:` section and a result kind's
page by what a wing registered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from experiment.plan import matrix
from experiment.plan import wing as wings
from experiment.report import rebuild, variants_report
from experiment.spec import spec as specs

EXPERIMENT = Path(__file__).resolve().parents[3] / "experiment"
ABOVE_THE_ENGINE = {"cli.py", "__init__.py"}
"""The commands that register the wings, and the package's map of its floors."""
DATA = {("mixed_fleet.py", 'PROFILE = "demo"')}
"""The experiment files' name for the mixed fleet: data in the file format, not a wing."""


def test_no_engine_module_names_the_demo() -> None:
    engine = [
        p
        for p in EXPERIMENT.rglob("*.py")
        if "demo" not in p.relative_to(EXPERIMENT).parts[:-1] and p.name not in ABOVE_THE_ENGINE
    ]
    assert len(engine) > 20
    found = [
        f"{p.relative_to(EXPERIMENT)}:{n}: {line.strip()}"
        for p in engine
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bdemo", line, re.IGNORECASE) and (p.name, line.strip()) not in DATA
    ]
    assert not found, found


def _file(**over: Any) -> specs.Experiment:
    doc = {"name": "toy", "fleet": {"profile": "dgx-h100", "nodes": 4}, **over}
    return specs.parse(doc, source="toy")


def _page(directory: Path, doc: dict[str, Any]) -> Path:
    page = directory / "index.html"
    page.write_text(f"<p>{doc['kind']}</p>")
    return page


TOY = wings.Wing(
    name="toy",
    builtins=lambda name: _file(builtin={"size": 1}),
    builtin_names=("toy", "toy-large"),
    check=lambda exp: None,
    describe=lambda exp: "toy comparisons",
    planner=matrix.Planner,
    reporter=variants_report.Reporter,
    result=wings.ResultKind(kind="ToyResult", file="toy.json", page=_page),
)


def test_a_builtin_file_is_found_by_the_name_its_wing_registered() -> None:
    registry = wings.Registry()
    with pytest.raises(specs.SpecError, match=r"no built-in experiment 'toy' \(known: none\)"):
        registry.builtin("toy")
    registry.register(TOY)
    registry.register(TOY)  # the commands may register again
    assert registry.wings() == [TOY]
    assert registry.builtin("toy-large").builtin == {"size": 1}
    with pytest.raises(specs.SpecError, match=r"'big' \(known: toy, toy-large\)"):
        registry.builtin("big")


def test_a_file_with_a_builtin_section_is_its_wings_and_any_other_the_engines() -> None:
    registry = wings.Registry()
    own = _file(builtin={"size": 2})
    with pytest.raises(specs.SpecError, match="no wing with built-in comparisons"):
        registry.of(own)
    registry.register(TOY)
    assert registry.of(own) is TOY
    variants = _file(
        variants=[{"name": "a"}, {"name": "b", "extender": False}],
        workloads=[{"name": "w", "scenario": "pods"}],
    )
    assert registry.of(variants) is None


def test_a_wings_result_gets_its_page_back_by_the_kind_it_registered(tmp_path: Path) -> None:
    with pytest.raises(rebuild.NoResults, match=r"no result\.json, toy\.json, experiment\.json"):
        rebuild.rebuild(tmp_path, [TOY.result])
    (tmp_path / "toy.json").write_text(json.dumps({"kind": "ToyResult"}))
    out = rebuild.rebuild(tmp_path, [TOY.result])
    assert out.pages == [tmp_path / "index.html"] and not out.failed
    assert (tmp_path / "index.html").read_text() == "<p>ToyResult</p>"
    # Another kind under the same name is not the wing's.
    (tmp_path / "toy.json").write_text(json.dumps({"kind": "Other"}))
    with pytest.raises(rebuild.NoResults):
        rebuild.rebuild(tmp_path, [TOY.result])
