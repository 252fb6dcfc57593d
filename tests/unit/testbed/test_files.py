"""Result files are replaced whole: never seen half-written, never left truncated."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed import files


def test_a_file_is_written_then_replaced_whole_with_no_temporary_left(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    files.write_atomic(path, '{"run_id": "a"}\n')
    assert path.read_text() == '{"run_id": "a"}\n'
    files.write_atomic(path, '{"run_id": "b"}\n')
    assert path.read_text() == '{"run_id": "b"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    files.write_atomic(path, "old\n")
    with pytest.raises(TypeError):
        files.write_atomic(path, b"not text")  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
