"""Generated scenario files against the loadgen scenario parser, as `loadgen run FILE` reads
them.

Whatever the file holds, loading it gives a valid Scenario or a ScenarioError with a one-line
message; nothing else escapes, and a valid scenario is one loadgen can run: every duration is
one kwok takes and every phase's arrival schedule can be planned. A few bad files also go
through the real CLI (`loadgen run FILE`, which parses before it touches a cluster): exit 2,
one line on stderr, no traceback. The 100,000-document run is tests/fuzz/parsers.py.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings

from tests.support import fuzz_documents as fd
from tests.support import fuzz_oracles as oracles


@pytest.mark.timeout(120)
@settings(fd.FUZZ, max_examples=250)
@given(doc=fd.documents(fd.scenario_values, "phases"))
def test_any_scenario_file_is_a_scenario_or_a_one_line_error(doc: fd.Document) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        message = oracles.parse_scenario(doc.write(Path(tmp)).rename(Path(tmp) / "s.yaml"))
    assert message is None or fd.one_line(message), message


@pytest.mark.parametrize("text", fd.NASTY_TEXTS)
def test_nasty_scenario_files_are_one_line_errors_or_valid(tmp_path: Path, text: str) -> None:
    message = oracles.parse_scenario(fd.Document(".yaml", text.encode()).write(tmp_path))
    assert message is None or fd.one_line(message)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"name: s\nphases: [\xff\xfe]\n", "not valid UTF-8"),
        (("phases: " + fd.deep(1500, "list")).encode(), "too deeply nested"),
        (b"name: s\nphases: [{name: p, kind: pods, count: " + b"9" * 5000 + b"}]\n", "digits"),
        (b"name: s\nphases: [{name: p, kind: pods, count: 1, timeout: .inf}]\n", "days"),
        (b"name: s\nphases: [{name: p, kind: jobs, count: 1, run_time: 1.0e+308}]\n", "days"),
        (
            b"name: s\nphases: [{name: p, kind: pods, count: 1, timeout: " + b"9" * 400 + b"h}]\n",
            "days",
        ),
        (b"name: s\nphases: [{name: p, kind: pods, count: 1000000000000}]\n", "count"),
        (b"name: s\nphases: [{name: p, kind: pods, count: 1}\n", "cannot read"),
        (fd.alias_bomb(9, 9, "phases").encode(), ""),
    ],
)
def test_found_by_the_fuzzer(tmp_path: Path, data: bytes, says: str) -> None:
    message = oracles.parse_scenario(fd.Document(".yaml", data).write(tmp_path))
    assert message is not None and fd.one_line(message) and says in message, message


@pytest.mark.timeout(120)
@settings(fd.FUZZ, max_examples=4)
@given(doc=fd.documents(fd.scenario_values, "phases"))
def test_bad_files_through_loadgen_run_exit_2_with_one_line(doc: fd.Document) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = doc.write(Path(tmp)).rename(Path(tmp) / "s.yaml")
        assume(oracles.parse_scenario(path) is not None)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "loadgen",
                "run",
                str(path),
                "--kubeconfig",
                "/nonexistent",
                "--output-dir",
                tmp,
            ],
            capture_output=True,
            timeout=60,
        )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("loadgen: error: ")
