"""A fuzz pass over the four commands' flags: out-of-range numbers, durations, ports, paths
and odd text, in any order. Every outcome is an exit code (0, 1 or 2) and, when it is not 0,
one line naming the problem; never a traceback, never a hang. Commands that would start
something (a cluster, a server, a demo) are only parsed; the others run against a kubeconfig
that does not exist, so nothing connects and nothing is created."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender import cli as extender_cli
from fleet import cli as fleet_cli
from loadgen import cli as loadgen_cli
from testbed import cli as testbed_cli

NASTY = [
    "-1", "0", "1", "2", "65535", "65536", "99999", "1e309", "nan", "inf", "-inf", "", " ",
    "1m30s", "90s", "5m", "-5s", "5x", "9" * 400, "9" * 400 + "h", "1_000", "0x10", "1.5",
    "true", "é", "--", "-", "a=b", "=", "pod_startup.p99=5s", "x.y=1s", "k=v,k2",
    "/nonexistent/dir", "../..", "/dev/null", ".",
]  # fmt: skip
# No NUL (execve's strings end there) and no surrogates but those Python decodes bytes that
# are not UTF-8 into (U+DC80..U+DCFF), which is all a command line can hold.
VALUES = st.one_of(
    st.sampled_from([*NASTY, "\udcff", "a\udc80b"]),
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12),
)
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]

# command prefix -> (flags to fuzz, a base that makes the rest of the command valid)
COMMANDS: dict[str, tuple[tuple[str, ...], list[str]]] = {
    "fleet apply": (
        ("--nodes", "--seed", "--kwok-shards", "--qps", "--burst", "--concurrency", "--timeout",
         "--request-timeout", "--name", "--profile", "-f", "--profiles", "--context"),
        ["--profile", "cpu-only", "--nodes", "1", *NO_CLUSTER],
    ),
    "fleet render": (
        ("--seed", "--kwok-shards", "--name", "--profile", "-o", "-f", "--output-dir"),
        ["--profile", "cpu-only", "--nodes", "1"],
    ),
    "fleet status": (("--name", "-o", "--qps", "--request-timeout"), NO_CLUSTER),
    "fleet delete": (("--name", "--timeout", "--burst"), NO_CLUSTER),
    "fleet taint": (("--share", "--effect", "--key", "--pool", "--name"), NO_CLUSTER),
    "fleet profiles": (("-o", "--profiles"), []),
    "loadgen": (
        ("--pods", "--gpus", "--qps", "--max-in-flight", "--arrival", "--seed", "--timeout",
         "--stall-timeout", "--heartbeat-interval", "--run-id", "--slo", "--scrape",
         "--node-selector", "--output-dir", "--request-timeout", "--scheduler-name", "--context"),
        NO_CLUSTER,
    ),
    "loadgen observe": (
        ("--count", "--timeout", "-n", "--namespace-prefix", "-l", "--slo", "--output-dir",
         "--scrape", "--request-timeout"),
        ["-A", *NO_CLUSTER],
    ),
    "loadgen cleanup": (("--wait",), ["--all", *NO_CLUSTER]),
    "loadgen runs": (("-o", "--request-timeout", "--context"), NO_CLUSTER),
    "loadgen compare": (
        ("--html", "-o", "--threshold"), ["/nonexistent/a.json", "/nonexistent/b.json"]
    ),
    "extender serve": (
        ("--port", "--address", "--config", "--weight-alignment", "--weight-packing",
         "--weight-locality", "--block-label", "--log-level", "--tls-cert", "--admin-port",
         "--request-timeout"),
        ["--from-files", "/nonexistent/objects.yaml"],
    ),
    "testbed status": (("--name", "--extender-port"), []),
}  # fmt: skip
# Valid input here would start a cluster, a server or a demo: parse only.
PARSE_ONLY: dict[str, tuple[str, ...]] = {
    "testbed up": ("--apiserver-port", "--kwok-shards", "--kubernetes", "--feature-gates",
                   "--scheduler-config"),
    "testbed demo": ("--nodes", "--pods", "--repeat", "--comparisons", "--scale-nodes", "--qps",
                     "--output-dir", "--kubeconfig"),
    "fleet serve": ("--port", "--ready-timeout", "--host", "--qps", "--request-timeout"),
    "testbed perf run": ("--timeout", "--repeat", "--nodes", "--pods", "--gomaxprocs", "-v", "-q"),
    "testbed experiment run": ("-v", "-q", "--output-dir"),
}  # fmt: skip
# What makes a parse-only command's other arguments valid (its positionals).
PARSE_BASE: dict[str, list[str]] = {
    "testbed perf run": ["dra/steady"],
    "testbed experiment run": ["experiment.yaml"],
}

MAINS: dict[str, Callable[[list[str]], object]] = {
    "fleet": fleet_cli.main,
    "loadgen": loadgen_cli.main,
    "extender": extender_cli.main,
    "testbed": testbed_cli.main,
}


@contextlib.contextmanager
def _sandbox() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """A fresh working directory and state home, stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    home = os.environ.get("DRA_TESTBED_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        os.environ["DRA_TESTBED_HOME"] = str(Path(tmp) / "state")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield out, err
        finally:
            os.chdir(cwd)
            if home is None:
                os.environ.pop("DRA_TESTBED_HOME", None)
            else:
                os.environ["DRA_TESTBED_HOME"] = home


def _argv(data: st.DataObject, command: str, flags: tuple[str, ...], base: list[str]) -> list[str]:
    picked = data.draw(st.lists(st.sampled_from(flags), min_size=1, max_size=3))
    args = [a for flag in picked for a in (flag, data.draw(VALUES))]
    if command == "testbed status":  # the cluster's flags go before the subcommand
        return [*args, "status", *base]
    return [*command.split()[1:], *base, *args]


def _exit_code(main: Callable[[list[str]], object], argv: list[str]) -> tuple[int, str]:
    """The exit code, and what was said on stderr (or, if nothing, on stdout)."""
    with _sandbox() as (out, err):
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return code, err.getvalue() or out.getvalue()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_flags_end_in_an_exit_code_and_one_line(command: str, data: st.DataObject) -> None:
    flags, base = COMMANDS[command]
    argv = _argv(data, command, flags, base)
    code, err = _exit_code(MAINS[command.split()[0]], argv)
    assert "Traceback" not in err, (argv, err)
    # 3: `loadgen compare` of runs under different loads (none here: no file exists)
    assert code in (0, 1, 2), (argv, code, err)
    if code:  # said, in one line (`testbed status` of no cluster says so on stdout)
        errors = [line for line in err.splitlines() if "error" in line]
        assert err.strip() and len(errors) <= 1, (argv, err)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
@pytest.mark.parametrize("command", sorted(PARSE_ONLY))
def test_flags_of_commands_that_start_things_parse_or_fail_in_one_line(
    command: str, data: st.DataObject
) -> None:
    program = command.split()[0]
    argv = _argv(data, command, PARSE_ONLY[command], PARSE_BASE.get(command, []))
    if program == "testbed":
        parse: Callable[[list[str]], object] = lambda a: testbed_cli.parser()[0].parse_args(a)  # noqa: E731
    else:
        parse = fleet_cli.parser().parse_args
    code, err = _exit_code(parse, argv)
    assert "Traceback" not in err and code in (0, 2), (argv, err)
    if code:
        assert len(err.strip().splitlines()) == 1, (argv, err)


# A kubeconfig that is not one: each command that reads it answers bad input in one line.
KUBECONFIG_COMMANDS = {
    "fleet status": ["status"],
    "fleet apply": ["apply", "--profile", "cpu-only", "--nodes", "1"],
    "loadgen": ["--pods", "1"],
    "extender serve": ["serve", "--port", "0"],
}
MALFORMED_KUBECONFIGS = [
    b"a: [unclosed\n",
    b"\xff\xfe\x00not utf-8",
    b"- a list\n- not a mapping\n",
    b"just a string",
    b"",
    b"apiVersion: v1\nclusters: 7\n",
    b"\x00\x01\x02",
    b"{{{{",
]


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(content=st.one_of(st.sampled_from(MALFORMED_KUBECONFIGS), st.binary(max_size=64)))
@pytest.mark.parametrize("command", sorted(KUBECONFIG_COMMANDS))
def test_a_malformed_kubeconfig_is_bad_input_in_one_line(command: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kubeconfig"
        path.write_bytes(content)
        argv = [*KUBECONFIG_COMMANDS[command], "--kubeconfig", str(path)]
        code, err = _exit_code(MAINS[command.split()[0]], argv)
    assert "Traceback" not in err, (content, err)
    assert code == 2, (content, code, err)
    assert len(err.strip().splitlines()) == 1, (content, err)
