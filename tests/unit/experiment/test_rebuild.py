"""`testbed report DIR`: pages rebuilt from kept JSON (bench/results' own directories, in a
copy), the JSON untouched, every link of the index leading to a page; a directory without
results is one line and exit 2."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.demo import command
from experiment.report import rebuild

KEPT = Path(__file__).resolve().parents[3] / "bench" / "results"


def digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.rglob("*.json")}


def test_arms_are_named_by_the_documents_own_comparisons_and_variants() -> None:
    pairs = {("dra", "claims"), ("dra", "device-plugin"), ("dra-device", "x")}
    names = [
        "dra-device-plugin-0",
        "dra-claims-1-latency",
        "dra-device-x-2",
        "other-0",
        "dra-claims",
    ]
    arms = rebuild.arms_from_names(names, pairs)
    assert [(a.comparison, a.variant, a.repeat, bool(a.latency_of)) for a in arms] == [
        ("dra", "device-plugin", 0, False),
        ("dra", "claims", 1, True),
        ("dra-device", "x", 2, False),
    ]
    assert [a.name for a in arms] == names[:3]


@pytest.mark.parametrize("kept", ["demo-scale-1000-5000-20261122T0708", "releases-20261122T1830"])
def test_a_kept_directory_gets_its_pages_back_and_keeps_its_json(kept: str, tmp_path: Path) -> None:
    directory = tmp_path / kept
    shutil.copytree(KEPT / kept, directory)
    before = digests(directory)
    out = rebuild.rebuild(directory, [command.WING.result])
    assert not out.failed, out.failed
    assert digests(directory) == before
    index = directory / "index.html"
    assert index in out.pages
    tops = (command.WING.result.file, "experiment.json")
    arms = [p for p in directory.glob("*.json") if p.name not in tops]
    assert {p.with_suffix(".html") for p in arms} <= set(out.pages)
    links = re.findall(r"<li><a href='([^']+)'>", index.read_text())
    assert links and all((directory / link).is_file() for link in links), links


def test_a_directory_without_results_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"kind": "Something"}')
    with pytest.raises(rebuild.NoResults):
        rebuild.rebuild(tmp_path, [command.WING.result])
    run = subprocess.run(
        [sys.executable, "-m", "testbed", "report", str(tmp_path)], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "holds no results" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "notes.json"]
