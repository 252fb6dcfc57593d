"""The conventions all four commands share (testbed.cliconv): durations, versions, one-line
usage errors, output formats, a silent or odd API server in one line, a reader that goes
away, tables that do not wrap in logs. The servers are sockets on 127.0.0.1."""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testbed import cliconv, units
from tests.support.children import BIN

COMMANDS = ("testbed", "fleet", "extender", "loadgen")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1m30s", 90.0),
        ("1h2m3.5s", 3723.5),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("90", 90.0),
        ("2.5", 2.5),
        ("0", 0.0),
        ("250us", 250e-6),
    ],
)
def test_go_durations_and_plain_seconds_are_accepted(text: str, seconds: float) -> None:
    assert units.parse_duration(text) == pytest.approx(seconds)
    assert cliconv.duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["-5s", "5x", "", "1m30", "s", "1e3", "nan", "inf", "1 m"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        cliconv.duration(text)


def test_a_duration_past_a_year_or_of_zero_where_one_is_needed_is_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="longer than a year"):
        cliconv.duration("9" * 400 + "h")
    with pytest.raises(argparse.ArgumentTypeError, match="longer than 0"):
        cliconv.positive_duration("0s")


def _run(*argv: str, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=env, check=False, **kw
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_version_and_one_line_usage_errors(command: str) -> None:
    version = _run(str(BIN / command), "--version")
    assert version.returncode == 0 and version.stdout.startswith(f"{command} (dra-testbed) ")
    bad = _run(str(BIN / command), "--no-such-flag")
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and f"{command}: error:" in bad.stderr


def _kubeconfig(tmp: Path, port: int) -> Path:
    path = tmp / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections (the kernel completes the handshake) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield int(s.getsockname()[1])


class _Empty404(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        self.wfile.write(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


@pytest.fixture
def empty_404_server() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Empty404)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _cluster_commands(kubeconfig: Path, out: Path) -> dict[str, list[str]]:
    cluster = ["--kubeconfig", str(kubeconfig), "--request-timeout", "1s"]
    return {
        "loadgen runs": [str(BIN / "loadgen"), "runs", *cluster],
        "loadgen observe": [
            str(BIN / "loadgen"), "observe", "-A", "--timeout", "5s", "--output-dir",
            str(out / "observe"), *cluster,
        ],
        "loadgen cleanup": [str(BIN / "loadgen"), "cleanup", "--all", *cluster],
        "loadgen run": [
            str(BIN / "loadgen"), "--pods", "1", "--output-dir", str(out / "run"), *cluster,
        ],
        "fleet status": [str(BIN / "fleet"), "status", *cluster],
        "fleet apply": [
            str(BIN / "fleet"), "apply", "--profile", "cpu-only", "--nodes", "1", *cluster,
        ],
        "testbed demo": [
            str(BIN / "testbed"), "demo", "--output-dir", str(out / "demo"), *cluster,
        ],
        "testbed experiment run": [
            str(BIN / "testbed"), "experiment", "run", "builtin:demo",
            "--output-dir", str(out / "experiment"), *cluster,
        ],
    }  # fmt: skip


def _all(commands: dict[str, list[str]]) -> dict[str, tuple[int, str]]:
    """Run them side by side (each starts in seconds on a loaded machine)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    procs = {
        name: subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for name, argv in commands.items()
    }
    results = {}
    for name, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=120)  # a hang fails here
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        results[name] = (proc.returncode, err)
    return results


def _error_lines(stderr: str) -> list[str]:
    # A run prints its id only once its namespace exists: never before a failure like these.
    assert "loadgen: run " not in stderr, stderr
    return stderr.splitlines()


def test_a_server_that_never_answers_is_one_line_within_the_request_timeout(
    tmp_path: Path, silent_server: int
) -> None:
    kubeconfig = _kubeconfig(tmp_path, silent_server)
    for name, (code, err) in _all(_cluster_commands(kubeconfig, tmp_path)).items():
        lines = _error_lines(err)
        assert code == 1, (name, err)
        assert len(lines) == 1 and "did not answer within 1s (--request-timeout)" in lines[0], (
            name,
            err,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig"]  # nothing written


def test_a_404_with_an_empty_body_says_so(tmp_path: Path, empty_404_server: int) -> None:
    kubeconfig = _kubeconfig(tmp_path, empty_404_server)
    commands = _cluster_commands(kubeconfig, tmp_path)
    picked = {k: commands[k] for k in ("loadgen runs", "fleet status")}
    for name, (code, err) in _all(picked).items():
        lines = _error_lines(err)
        assert code == 1 and len(lines) == 1, (name, err)
        assert "HTTP 404 Not Found with an empty body" in lines[0], (name, err)


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    argv = [str(BIN / "fleet"), "render", "--profile", "dgx-h100", "--nodes", "200"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"---\n"
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cliconv.EXIT_BROKEN_PIPE
    assert err == ""


def test_tables_do_not_wrap_when_stdout_is_not_a_terminal() -> None:
    proc = _run(str(BIN / "fleet"), "profiles")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.lstrip().startswith("dgx-h100 "))
    assert len(row.rstrip()) > 80 and "…" not in row  # one line, nothing cut


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_listings_speak_json_and_yaml(fmt: str) -> None:
    proc = _run(str(BIN / "fleet"), "profiles", "-o", fmt)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout) if fmt == "json" else yaml.safe_load(proc.stdout)
    assert any(r["profile"] == "cpu-only" and r["gpus"] == 0 for r in rows), rows


def test_a_section_rule_stays_short_on_a_console_as_wide_as_its_tables() -> None:
    from rich.console import Console

    console = Console(width=cliconv.WIDE, record=True, file=io.StringIO())
    cliconv.rule(console, "arm 1/9: gang-4 / native")
    lines = console.export_text().splitlines()
    assert lines and "arm 1/9: gang-4 / native" in lines[0]
    assert max(len(line) for line in lines) == cliconv.RULE_WIDTH


@pytest.mark.parametrize("breaker", ["\n", "\r", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_usage_error_echoing_any_line_breaker_stays_one_line(breaker: str) -> None:
    """str.splitlines breaks at C1 controls and U+2028/9 too, not only \\r and \\n (the CLI
    fuzz found \\x85 echoed back as an unrecognized argument)."""
    assert len(cliconv.one_line(f"unrecognized arguments: a{breaker}b").splitlines()) == 1
