"""What the CLIs do with a spec or scenario file before touching a cluster, as functions: None
for a valid file, else the one-line message; any other exception propagates (the bug the fuzz
tests and campaigns hunt)."""

from __future__ import annotations

from pathlib import Path

from fleet import layout, render, spec
from fleet.profiles import ProfileError
from loadgen import plan, scenarios
from loadgen.scenarios import model

VALIDATE_UP_TO = 2000  # nodes: laying out a 100,000-node pool per example would be slow, not wrong


def parse_fleet_spec(path: Path) -> str | None:
    """What `fleet render -f` does before rendering: None if the file is valid, else the
    one-line message; any other exception propagates (the bug this hunts)."""
    try:
        fleet = spec.load(path)
        known = layout.resolve_profiles(fleet)
        if fleet.spec.total_nodes <= VALIDATE_UP_TO:
            render.validate(fleet, known)
    except (spec.SpecError, ProfileError) as e:
        return str(e)
    return None


def parse_scenario(path: Path) -> str | None:
    """None if the file is a scenario loadgen can run, else the one-line message; any other
    exception propagates (the bug this hunts)."""
    try:
        scenario = scenarios.load(str(path))
    except scenarios.ScenarioError as e:
        return str(e)
    for phase in scenario.phases:  # what the driver derives from a valid phase
        for seconds in (phase.run_time, phase.timeout):
            if seconds is not None:
                model.go_duration(seconds)
        if phase.wave_size is not None:
            plan.waves(phase.pods, phase.wave_size)
        plan.offsets(min(phase.count, 1000), phase.qps or 0.0, phase.arrival or "fixed")
    return None
