"""Generated spec files against the fleet spec parser, as `fleet render -f` reads them.

Whatever the file holds (wrong types anywhere, huge or negative counts, odd Unicode, bytes
that are not UTF-8, nesting past recursion limits, alias bombs, Python tags), loading it gives
a valid Fleet or a SpecError/ProfileError with a one-line message; nothing else escapes. A few
bad files also go through the real CLI: exit 2, one line on stderr, no traceback. The
100,000-document run is tests/fuzz/parsers.py.
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
@given(doc=fd.documents(fd.fleet_values, "pools"))
def test_any_spec_file_is_a_fleet_or_a_one_line_spec_error(doc: fd.Document) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        message = oracles.parse_fleet_spec(doc.write(Path(tmp)))
    assert message is None or fd.one_line(message), message


@pytest.mark.parametrize("text", fd.NASTY_TEXTS)
def test_nasty_spec_files_are_one_line_errors_or_valid(tmp_path: Path, text: str) -> None:
    message = oracles.parse_fleet_spec(fd.Document(".yaml", text.encode()).write(tmp_path))
    assert message is None or fd.one_line(message)


@pytest.mark.parametrize(
    ("suffix", "data", "says"),
    [
        (".yaml", b"pools: [\xff\xfe]\n", "not valid UTF-8"),
        (".json", b'{"pools": "\xed\xa0\x80"}', "not valid UTF-8"),
        (".yaml", ("pools: " + fd.deep(1500, "list")).encode(), "too deeply nested"),
        (".json", ('{"pools": ' + fd.deep(1500, "map") + "}").encode(), "too deeply nested"),
        (".yaml", fd.alias_bomb(9, 9, "pools").encode(), "pools"),
        (".yaml", b"metadata: [a]\nspec: {pools: []}\n", "metadata"),
    ],
)
def test_found_by_the_fuzzer(tmp_path: Path, suffix: str, data: bytes, says: str) -> None:
    message = oracles.parse_fleet_spec(fd.Document(suffix, data).write(tmp_path))
    assert message is not None and fd.one_line(message) and says in message, message


@pytest.mark.timeout(120)
@settings(fd.FUZZ, max_examples=4)
@given(doc=fd.documents(fd.fleet_values, "pools"))
def test_bad_files_through_fleet_render_exit_2_with_one_line(doc: fd.Document) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = doc.write(Path(tmp))
        assume(oracles.parse_fleet_spec(path) is not None)
        proc = subprocess.run(
            [sys.executable, "-c", "from fleet.cli import main; main()", "render", "-f", str(path)],
            capture_output=True,
            timeout=60,
        )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("fleet: error: ")
