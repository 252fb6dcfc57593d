"""Why a component stopped, read from its log: the causes a restart cures are found even when
the component logged more lines as it unwound."""

from pathlib import Path

from testbed.cluster import supervision

KCM_GAVE_UP = (
    'E1126 04:20:01.5 controllermanager.go:301] "Error starting controllers" '
    'err="failed to wait for apiserver being healthy: timed out waiting for the condition"'
)


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "component.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_api_server_slow_to_answer_is_transient_though_lines_follow(tmp_path: Path) -> None:
    log = _log(tmp_path, "I starting", KCM_GAVE_UP, "I shutting down", "")
    reason = supervision.exit_reason(log)
    assert reason == KCM_GAVE_UP
    assert supervision.transient(reason)


def test_a_taken_port_is_transient(tmp_path: Path) -> None:
    log = _log(tmp_path, "listen tcp 127.0.0.1:6443: bind: address already in use", "exit")
    assert supervision.transient(supervision.exit_reason(log))


def test_any_other_exit_is_the_last_line_and_not_transient(tmp_path: Path) -> None:
    log = _log(tmp_path, "I starting", "F invalid flag --bogus")
    reason = supervision.exit_reason(log)
    assert reason == "F invalid flag --bogus"
    assert not supervision.transient(reason)
    assert supervision.exit_reason(tmp_path / "missing.log") == "no output"
