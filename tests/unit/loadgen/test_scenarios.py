"""scenarios: named scenarios, parameters, YAML files, fleet sizing."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen import scenarios
from loadgen.scenarios.model import Claim, Phase, Scenario, parse_duration

EXAMPLES = Path(scenarios.__file__).parent


def test_cl2_dra_fills_ninety_percent_then_churns_the_rest() -> None:
    s = scenarios.resolve(scenarios.load("cl2-dra"), fleet_gpus=800)
    fill, churn = s.phases
    assert (fill.count, fill.qps, fill.kind, fill.run_time) == (720, 10.0, "jobs", 3600.0)
    assert (churn.count, churn.completions, churn.qps) == (80, 10, 5.0)
    assert churn.pods == 800
    assert churn.wait == "complete"


def test_a_fleet_too_small_for_a_phase_is_an_error() -> None:
    with pytest.raises(ValueError, match="no room"):
        scenarios.resolve(scenarios.load("cl2-dra"), fleet_gpus=0)


def test_waves_default_to_the_seeds_ten_waves_of_eighty() -> None:
    (phase,) = scenarios.load("waves").phases
    assert (phase.count, phase.wave_size) == (800, 80)


def test_parameters_are_validated_and_strings_coerced() -> None:
    s = scenarios.load("churn", {"jobs": "3", "completions": "2", "run_time": "2s"})
    (p,) = s.phases
    assert (p.count, p.completions, p.run_time) == (3, 2, 2.0)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("pods", {"pods": "0"}, "pods"),
        ("pods", {"pods": "-5"}, "pods"),
        ("pods", {"bogus": "1"}, "bogus"),
        ("nope", {}, "unknown scenario"),
        ("gang", {"gpus": "8", "nics": "4"}, "nics equal to gpus"),
        ("pods", {"compute": "0"}, "compute '0' is not a positive fraction"),
        ("pods", {"compute": "0.2505"}, "milli-units like 250m"),
        ("pods", {"compute": "lots"}, "compute 'lots'"),
        ("pods", {"compute": "250m", "all_gpus": "true"}, "no first_available, memory or compute"),
    ],
)
def test_bad_input_is_one_line_naming_the_problem(
    name: str, params: dict[str, str], message: str
) -> None:
    with pytest.raises(scenarios.ScenarioError, match=message) as err:
        scenarios.load(name, params)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_scenario_files_load(path: Path) -> None:
    s = scenarios.load(str(path))
    assert s.phases


def test_a_scenario_file_with_an_unknown_field_names_it(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("name: x\nphases:\n- {name: a, kind: pods, count: 1, colour: red}\n")
    with pytest.raises(scenarios.ScenarioError, match=r"phases\.0\.colour"):
        scenarios.load(str(f))


def test_phase_rules() -> None:
    with pytest.raises(ValueError, match="never complete"):
        Phase(name="p", kind="pods", count=1, wait="complete")
    with pytest.raises(ValueError, match="jobs only"):
        Phase(name="p", kind="pods", count=1, completions=3)
    with pytest.raises(ValueError, match="unique"):
        Scenario(
            name="s",
            phases=[Phase(name="a", kind="pods", count=1), Phase(name="a", kind="pods", count=1)],
        )


def test_durations() -> None:
    assert parse_duration("30s") == 30.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("1h") == 3600.0
    assert parse_duration(2) == 2.0
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_claim_keys_name_distinct_templates() -> None:
    keys = {
        Claim().key,
        Claim(gpus=8, nics=8).key,
        Claim(gpus=8, nics=8, align=False).key,
        Claim(min_memory="40Gi").key,
        Claim(device_plugin=True).key,
        Claim(gpu_class="gpu.example.com").key,
    }
    assert len(keys) == 6


def test_the_inference_mix_asks_each_footprint_in_the_chosen_shape() -> None:
    def claims(shape: str) -> list[tuple[str, str | None, str | None]]:
        sc = scenarios.load("inference", {"shape": shape, "footprints": "5,20,80"})
        assert [p.wait for p in sc.phases] == ["created", "created", "complete"]
        return [(p.name, p.claim.mig_profile, p.claim.memory) for p in sc.phases]

    assert claims("mig") == [
        ("mem5gb", "1g.10gb", None),
        ("mem20gb", "2g.20gb", None),
        ("mem80gb", "7g.80gb", None),
    ]
    assert claims("capacity") == [
        ("mem5gb", None, "5G"),
        ("mem20gb", None, "20G"),
        ("mem80gb", None, "80G"),  # 80 GB fits an H100's 81559Mi; 80Gi would not
    ]
    assert {c[1:] for c in claims("whole")} == {(None, None)}
    # Every shape says each pod's footprint, for memory requested vs what allocations take.
    whole = scenarios.load("inference", {"shape": "whole", "footprints": "5,80"})
    assert [p.claim.footprint_bytes for p in whole.phases] == [5 * 10**9, 80 * 10**9]
