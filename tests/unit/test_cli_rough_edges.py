"""What a new user hits in the first hour, each row of it pinned: `-v`/`-q` after any
`testbed` subcommand, Go durations for `testbed perf --timeout`, zero refused where it means
nothing (a PATCH loop every 0 s), a missing `--context` named in one line with the contexts
that exist. Nothing here reaches a cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from testbed import cli as testbed_cli
from testbed.kube import errors
from testbed.kube.client import Kube
from tests.unit import test_cli_flags_fuzz as fuzz


def _subcommands(
    p: argparse.ArgumentParser, prefix: list[str]
) -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every subcommand under `p`, however deep, with its parser."""
    found = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found.append(([*prefix, name], child))
                found += _subcommands(child, [*prefix, name])
    return found


def test_every_testbed_subcommand_takes_verbose_and_quiet_after_its_name() -> None:
    parser, _ = testbed_cli.parser()
    found = _subcommands(parser, [])
    assert {"up", "down", "status", "demo", "perf", "experiment"} <= {p[0] for p, _ in found}
    for path, child in found:
        missing = {"-v", "-q", "--verbose", "--quiet"} - child._option_string_actions.keys()
        assert not missing, f"testbed {' '.join(path)} lacks {missing}"
    for argv in (["up", "-v"], ["status", "-q"], ["perf", "run", "w", "-v"], ["down", "-vq"]):
        parser.parse_args(argv)
    args = parser.parse_args(["-q", "up", "-v"])
    assert args.verbose and args.quiet  # the subcommand's -v does not reset the root's -q


def test_testbed_perf_timeout_is_a_duration() -> None:
    parser, _ = testbed_cli.parser()
    assert parser.parse_args(["perf", "run", "w", "--timeout", "5m"]).timeout == 300.0
    assert parser.parse_args(["perf", "run", "w", "--timeout", "90"]).timeout == 90.0
    code, err = fuzz._exit_code(parser.parse_args, ["perf", "run", "w", "--timeout", "0s"])
    assert code == 2 and "longer than 0" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "0s"],
        ["--heartbeat-interval", "0s"],
        ["--heartbeat-interval", "0"],
        ["--stall-timeout", "0s"],
        ["observe", "-A", "--timeout", "0s"],
    ],
)
def test_zero_is_refused_where_it_means_nothing(argv: list[str]) -> None:
    code, err = fuzz._exit_code(fuzz.MAINS["loadgen"], [*argv, *fuzz.NO_CLUSTER])
    assert code == 2 and "must be longer than 0" in err, err
    assert len(err.strip().splitlines()) == 1 and "loadgen: run" not in err, err


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    cluster = {"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": n, "context": {"cluster": "c", "user": "u"}} for n in ("one", "two")
                ],
                "current-context": "one",
            }
        )
    )
    return path


async def test_a_missing_context_names_the_contexts_that_exist(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path)
    with pytest.raises(errors.ConfigError) as e:
        await Kube.connect(kubeconfig=path, context="nope")
    assert str(e.value) == f"no context 'nope' in kubeconfig {path} (it has: one, two)"
    kube = await Kube.connect(kubeconfig=path, context="two")  # one it has: no error
    await kube.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["fleet", "status"],
        ["fleet", "apply", "--profile", "cpu-only", "--nodes", "1"],
        ["loadgen", "--pods", "1"],
        ["loadgen", "runs"],
        ["extender", "serve", "--port", "0"],
    ],
)
def test_a_missing_context_is_one_line_exit_2_in_every_command(
    argv: list[str], tmp_path: Path
) -> None:
    path = _kubeconfig(tmp_path)
    code, err = fuzz._exit_code(
        fuzz.MAINS[argv[0]], [*argv[1:], "--kubeconfig", str(path), "--context", "nope"]
    )
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"{argv[0]}: error: no context 'nope' in kubeconfig {path} (it has: one, two)"
    ]


def test_a_control_character_echoed_in_a_usage_error_stays_on_one_line() -> None:
    parser, _ = testbed_cli.parser()
    code, err = fuzz._exit_code(parser.parse_args, ["status", "\r\nx"])
    assert code == 2 and err.count("\n") == 1 and "\\r\\nx" in err, repr(err)
