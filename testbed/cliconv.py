"""The command-line conventions all four commands (`testbed`, `fleet`, `extender`, `loadgen`)
share, defined once: `--version`, `-v/-q`, Go-style durations, the cluster flags
(`--kubeconfig`, `--context`, `--request-timeout`), `-o table|json|yaml`, one-line usage
errors, exit codes, a broken pipe, and console tables that do not wrap in logs.

Exit codes (docs/exit-codes.md): 0 ok, 1 the cluster or the run failed, 2 bad input (nothing
changed), 128 + N stopped by signal N (141 when the reader of stdout went away).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import TYPE_CHECKING, Any, NoReturn

from testbed import units, validation

if TYPE_CHECKING:  # the client and rich load only where a command needs them
    from rich.console import Console

    from testbed.kube.client import ClientSettings, Kube

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
SIGNAL_EXIT = 128
"""A command stopped by signal N exits 128 + N, as shells report it."""
EXIT_BROKEN_PIPE = SIGNAL_EXIT + signal.SIGPIPE
DEFAULT_REQUEST_TIMEOUT = 10.0
"""Seconds the API server has to answer a command's first request (`GET /version`): long
enough for a loaded server, short enough that one that accepts connections and never answers
is reported, in one line, before anyone wonders."""
LONG_RUN_REQUEST_TIMEOUT = 60.0
"""Once the API server has answered the check, a command's requests (thousands of creates
on a busy server) may take up to this long each (or `--request-timeout` if longer), and are
retried; the check itself is what turns a silent server into one line."""
MAX_DURATION = 365 * 86400.0
OUTPUTS = ("table", "json", "yaml")
WIDE = 4096
"""Console width when stdout is not a terminal: tables are as wide as their content."""


class UsageError(ValueError):
    """Bad input to a command: exit 2 with the message, nothing changed."""


class Failure(RuntimeError):
    """The cluster or the run failed: exit 1 with the message."""


def version() -> str:
    try:
        return metadata.version("dra-testbed")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "unknown"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def one_line(text: str) -> str:
    """`text` with control characters (a user's stray \\r or \\n, echoed back) escaped:
    an error stays one line."""
    return validation.escaped(text)


def parser(**kw: Any) -> argparse.ArgumentParser:
    """An argparse parser whose usage errors are one line (`prog: error: ... (see prog
    --help)`), exit 2; its subcommands' parsers are of its class too."""
    return _Parser(**kw)


def add_version(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--version",
        action="version",
        version=f"{p.prog} (dra-testbed) {version()}",
        help="print the version and exit",
    )


def add_verbosity(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`-v/--verbose` (debug logging) and `-q/--quiet` (errors only, no progress display).
    Add them to the root parser and to each subcommand: either place works, and a
    subcommand's absent flag never resets the root's (SUPPRESS)."""
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="debug logging to stderr",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="only errors: no progress display, no notices",
    )


def add_verbosity_everywhere(p: argparse.ArgumentParser) -> None:
    """`add_verbosity` on `p` and on each subcommand under it that does not have it yet,
    however deep: `-v`/`-q` work before or after any subcommand."""
    if "-v" not in p._option_string_actions:
        add_verbosity(p)
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases: once each
                add_verbosity_everywhere(child)


def verbose(ns: argparse.Namespace) -> bool:
    return bool(getattr(ns, "verbose", 0))


def quiet(ns: argparse.Namespace) -> bool:
    return bool(getattr(ns, "quiet", False))


def log_level(ns: argparse.Namespace, default: int = logging.WARNING) -> int:
    if verbose(ns):
        return logging.DEBUG
    if quiet(ns):
        return max(default, logging.WARNING) if default < logging.WARNING else logging.ERROR
    return default


def configure_logging(ns: argparse.Namespace, default: int = logging.WARNING) -> None:
    logging.basicConfig(
        level=log_level(ns, default),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )


def duration(text: str) -> float:
    """argparse type: a Go duration (`90s`, `5m`, `1m30s`) or plain seconds, at most a year."""
    try:
        seconds = units.parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if seconds > MAX_DURATION:
        raise argparse.ArgumentTypeError(f"{text!r} is longer than a year")
    return seconds


def positive_duration(text: str) -> float:
    seconds = duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be longer than 0")
    return seconds


def add_wait_timeout(
    p: argparse.ArgumentParser, flag: str, *, default: float, waits_for: str
) -> None:
    """A DURATION option `flag`: how long the command waits `waits_for` (`default` seconds
    unless given, shown in the help as minutes when whole)."""
    shown = f"{default / 60:g}m" if default % 60 == 0 else f"{default:g}s"
    p.add_argument(
        flag,
        type=positive_duration,
        default=default,
        metavar="DURATION",
        help=f"how long to wait {waits_for}, e.g. 90s, 10m (default {shown})",
    )


def port(text: str) -> int:
    """argparse type: a TCP port, 1..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (1..65535)")
    return value


def listen_port(text: str) -> int:
    """argparse type: a port to listen on, 0..65535 (0: any free port)."""
    if text.strip() == "0":
        return 0
    return port(text)


def add_cluster_flags(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    suppress: bool = False,
    timeout: bool = True,
    serving: bool = False,
) -> None:
    """`--kubeconfig`, `--context` and (unless not `timeout`) `--request-timeout`; with
    `suppress`, absent flags leave no attribute (for parsers whose options merge into a dict).
    `serving`: the command is a server, which reports a silent API server and keeps trying
    rather than failing (its help says so)."""
    none: Any = argparse.SUPPRESS if suppress else None
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        default=none,
        help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    p.add_argument(
        "--context", metavar="NAME", default=none, help="kubeconfig context (default: current)"
    )
    if not timeout:
        return
    first = (
        "each attempt to reach the API server at start must be answered within this; the "
        "server listens meanwhile (/readyz not ready, saying why), logs every attempt that "
        "failed and keeps trying"
        if serving
        else "the API server must answer the command's first request within this, or the "
        "command fails in one line"
    )
    p.add_argument(
        "--request-timeout",
        type=positive_duration,
        metavar="DURATION",
        default=argparse.SUPPRESS if suppress else DEFAULT_REQUEST_TIMEOUT,
        help=f"{first} (default {DEFAULT_REQUEST_TIMEOUT:g}s); later requests may take up to "
        f"{LONG_RUN_REQUEST_TIMEOUT:g}s or this, whichever is longer",
    )


def request_timeout(ns: argparse.Namespace | dict[str, Any]) -> float:
    value = ns.get("request_timeout") if isinstance(ns, dict) else ns.request_timeout
    return float(value) if value is not None else DEFAULT_REQUEST_TIMEOUT


def long_run_timeout(ns: argparse.Namespace | dict[str, Any]) -> float:
    """The per-request timeout of a long run's client: see LONG_RUN_REQUEST_TIMEOUT."""
    return max(request_timeout(ns), LONG_RUN_REQUEST_TIMEOUT)


async def connect(ns: argparse.Namespace | dict[str, Any], settings: ClientSettings) -> Kube:
    """The API client of the cluster flags, checked with one `GET /version` within
    `--request-timeout` (no retries): an unreachable or silent API server is a `KubeError`
    whose message says which and where, before anything is written. Later requests use
    `settings.request_timeout`."""
    from testbed.kube import errors
    from testbed.kube.client import Kube

    get = ns.get if isinstance(ns, dict) else lambda k: getattr(ns, k, None)
    timeout = request_timeout(ns)
    kube = await Kube.connect(
        kubeconfig=get("kubeconfig"), context=get("context"), settings=settings
    )
    try:
        await kube.request("GET", "/version", retry=False, attempt_timeout=timeout)
    except errors.Unreachable as e:
        await kube.close()
        if isinstance(e.__cause__, TimeoutError):
            raise errors.Unreachable(
                f"the API server at {kube.host} did not answer within {timeout:g}s "
                "(--request-timeout)"
            ) from None
        raise errors.Unreachable(
            f"cannot reach the API server at {kube.host}: {e.__cause__ or e}"
        ) from None
    except errors.KubeError as e:
        await kube.close()
        raise type(e)(f"the API server at {kube.host}: {e}", status=e.status) from None
    except BaseException:
        await kube.close()
        raise
    return kube


def add_output(p: argparse.ArgumentParser, *, default: str = "table") -> None:
    p.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default=default,
        help=f"output format (default {default})",
    )


def emit(doc: Any, fmt: str, table: Callable[[], None]) -> None:
    """Print `doc` as JSON or YAML on stdout, or call `table` for the human form."""
    if fmt == "json":
        print(json.dumps(doc, indent=2, default=str))
    elif fmt == "yaml":
        import yaml

        print(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), end="")
    else:
        table()


def stdout_console(**kw: Any) -> Console:
    """A rich console on stdout that wraps at the terminal's width, and not at all when
    stdout is a file or a pipe (CI logs, `tee`): a table there is as wide as its content."""
    from rich.console import Console

    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else WIDE
    return Console(width=width, **kw)


RULE_WIDTH = 100
"""A section rule's width at most: a wide console (stdout not a terminal) would otherwise
draw it thousands of characters long."""


def rule(console: Console, title: str) -> None:
    """A section heading across the console, at most RULE_WIDTH wide."""
    from rich.rule import Rule

    console.print(Rule(title), width=min(console.width, RULE_WIDTH))


def _stdout_gone() -> NoReturn:
    # Point stdout at /dev/null so the interpreter's last flush does not fail again.
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(EXIT_BROKEN_PIPE)


@contextlib.contextmanager
def exits() -> Iterator[None]:
    """Around a command's main: a reader that went away (`fleet render | head -1`) ends it
    with 141 and no traceback, as SIGPIPE ends other commands."""
    try:
        yield
        sys.stdout.flush()
    except SystemExit:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_gone()
        raise
    except BrokenPipeError:
        _stdout_gone()


def fail(prog: str, message: str, code: int) -> NoReturn:
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(code)
