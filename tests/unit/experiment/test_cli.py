"""`testbed demo` reaches `testbed` through the entry point, and costs `testbed up` nothing."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from experiment import cli as experiment_cli
from experiment.demo import command, wing
from testbed import cli


def test_testbed_finds_demo_yet_loads_no_orchestration_for_other_commands() -> None:
    probe = (
        "import sys\n"
        "from testbed import cli\n"
        "try:\n"
        "    cli.main(['status', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('experiment.cli' in sys.modules, 'experiment.demo.command' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "True False"


def _args(**overrides: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    experiment_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["demo"])
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def test_the_flags_defaults_are_the_builtin_files() -> None:
    exp = experiment_cli.demo_experiment(_args())
    assert exp == command.builtin("demo")
    assert wing.workload_of(exp).scale_nodes == 5 * (exp.fleet.nodes or 0)


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"nodes": 5}, "at least 10 nodes"),
        ({"comparisons": "speed"}, "--comparisons takes a subset"),
        ({"repeat": 0}, "must be positive"),
        ({"nodes": 100, "scale_nodes": 50}, "must be larger than --nodes"),
    ],
)
def test_bad_flags_are_usage_errors_naming_the_flag(
    overrides: dict[str, object], says: str
) -> None:
    with pytest.raises(cli.UsageError, match=says):
        experiment_cli.demo_experiment(_args(**overrides))


def test_a_budget_shorter_than_one_pair_is_a_usage_error() -> None:
    with pytest.raises(cli.UsageError, match=r"^demo flags: budgetMinutes: 0.167 min is less"):
        experiment_cli.demo_experiment(_args(budget=10.0))
    assert experiment_cli.demo_experiment(_args(budget=600.0)).budget_minutes == 10
