"""`testbed demo` reaches `testbed` through the entry point, and costs `testbed up` nothing."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from experiment import cli as experiment_cli
from experiment.demo import plan
from testbed import cli
from testbed.cluster import local


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


def test_the_default_flags_make_the_default_workload() -> None:
    w = experiment_cli.workload(_args())
    assert (w.pods, w.repeat, w.scale_nodes) == (200, 24, 250)
    assert w.comparisons == ("extender", "dra") and not w.latency_arms
    assert w == plan.Workload(scale_nodes=5 * plan.DEFAULT_NODES)


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
        experiment_cli.workload(_args(**overrides))


def test_a_budget_shorter_than_one_pair_is_a_usage_error() -> None:
    args = _args(budget=10.0, request_timeout=10.0)
    with pytest.raises(cli.UsageError, match=r"^demo flags: budgetMinutes: 0.167 min is less"):
        experiment_cli.demo_config(args, local.ClusterConfig())
    config = experiment_cli.demo_config(
        _args(budget=600.0, request_timeout=10.0), local.ClusterConfig()
    )
    assert config.budget_minutes == 10
