"""Experiment files: parsing and checking (`experiment.spec.spec`), run order
(`experiment.plan.matrix`), the local site's cluster per release, and the CLI's one-line errors
(exit 2, nothing made)."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from experiment import cli as experiment_cli
from experiment.demo import command as demo
from experiment.demo import plan, wing
from experiment.plan import design, matrix
from experiment.sites import local_site
from experiment.spec import spec as specs
from testbed import cli
from testbed.cluster import binaries, local, second_scheduler
from tests.support import children

REPO = Path(__file__).resolve().parents[3]


def _doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "tiny",
        "fleet": {"profile": "dgx-h100", "nodes": 10},
        "variants": [{"name": "on"}, {"name": "off", "extender": False}],
        "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 20, "gpus": 1}}],
    }
    doc.update(overrides)
    return doc


def _checked(**overrides: Any) -> specs.Experiment:
    exp = specs.parse(_doc(**overrides))
    specs.check(exp)
    return exp


def test_a_minimal_file_parses_with_the_documented_defaults() -> None:
    exp = _checked()
    assert (exp.repeats, exp.order, exp.qps) == (1, "alternating", 100.0)
    assert [v.name for v in exp.variants] == ["on", "off"]
    assert exp.clusters() == [(binaries.DEFAULT_RELEASE, ())]
    assert specs.fleet_document(exp) == {
        "seed": 0,
        "pools": [{"name": "dgx-h100", "profile": "dgx-h100", "count": 10}],
        "name": "tiny",
    }


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"variants": [{"name": "a", "colour": "red"}, {"name": "b"}]}, "variants.0.colour"),
        ({"repeats": 0}, "repeats: Input should be greater than or equal to 1"),
        ({"repeats": 1000}, "repeats: Input should be less than or equal to 50"),
        ({"variants": [{"name": "a"}, {"name": "a"}]}, "name 'a' is used twice"),
        ({"variants": [{"name": "a"}]}, "at least two"),
        ({"variants": [{"name": "Big"}, {"name": "b"}]}, "not a lowercase name"),
        (
            {"variants": [{"name": "a", "scheduler": {"profiles": []}}, {"name": "b"}]},
            "variants.0.scheduler.profiles: Extra inputs are not permitted",
        ),
        (
            {
                "variants": [
                    {"name": "a", "scheduler": {"percentageOfNodesToScore": 130}},
                    {"name": "b"},
                ]
            },
            "percentageOfNodesToScore: Input should be less than or equal to 100",
        ),
        (
            {
                "variants": [
                    {"name": "a", "extender": False, "extenderFlags": {"x": 1}},
                    {"name": "b"},
                ]
            },
            "runs without the extender",
        ),
        (
            {
                "variants": [
                    {"name": "a", "extender": False, "extenderFilter": False},
                    {"name": "b"},
                ]
            },
            "extenderFilter: the variant runs without the extender",
        ),
        (
            {"variants": [{"name": "a", "extenderFlags": {"port": 1}}, {"name": "b"}]},
            "set by the runner",
        ),
        (
            {"variants": [{"name": "a", "featureGates": {"lower": True}}, {"name": "b"}]},
            "is not Name=true",
        ),
        (
            {
                "variants": [
                    {"name": "a", "kubernetes": "1.37", "featureGates": {"GangScheduling": True}},
                    {"name": "b"},
                ]
            },
            "variants.0.featureGates: Kubernetes 1.37 has no feature gate GangScheduling",
        ),
        ({"fleet": {"profile": "dgx-h100"}}, "a profile needs a node count"),
        ({"fleet": {}}, "give either profile"),
        ({"metrics": ["speed"]}, "'speed': unknown metric"),
        ({"order": "random"}, "order: Input should be 'alternating' or 'fixed'"),
        ({"builtin": {"comparisons": ["extender"]}}, "bring their own variants"),
        (
            {
                "builtin": {"comparisons": ["extender"]},
                "variants": [],
                "workloads": [],
                "targets": [
                    {
                        "metric": "scheduler CPU per pod",
                        "variant": "on",
                        "baseline": "off",
                        "atMost": 1.1,
                    }
                ],
            },
            "targets: builtin comparisons are judged against their own targets",
        ),
    ],
)
def test_bad_files_are_one_line_naming_the_field(overrides: dict[str, Any], says: str) -> None:
    with pytest.raises(specs.SpecError, match=says) as e:
        specs.parse(_doc(**overrides), source="f.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("f.yaml: ")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            {"variants": [{"name": "a", "kubernetes": "1.20"}, {"name": "b"}]},
            "variants.0.kubernetes: no pinned module for Kubernetes '1.20'",
        ),
        (
            {"workloads": [{"name": "w", "scenario": "nosuch"}]},
            "workloads.0: unknown scenario 'nosuch'",
        ),
        (
            {"workloads": [{"name": "w", "scenario": "pods", "params": {"pods": 0}}]},
            "workloads.0: scenario pods: pods",
        ),
        ({"fleet": {"profile": "no-such-gpu", "nodes": 3}}, "no-such-gpu"),
        (
            {
                "fleet": {"spec": {"pools": [{"name": "p", "profile": "dgx-h100", "count": 2}]}},
                "variants": [{"name": "a", "devicePlugin": True}, {"name": "b"}],
            },
            "needs extendedResources",
        ),
    ],
)
def test_check_finds_what_a_run_would_stumble_on(overrides: dict[str, Any], says: str) -> None:
    with pytest.raises(specs.SpecError, match=says):
        _checked(**overrides)


def test_a_release_given_as_a_yaml_number_means_that_release() -> None:
    exp = specs.parse(
        yaml.safe_load(
            "name: r\nfleet: {profile: dgx-h100, nodes: 10}\n"
            "variants: [{name: old, kubernetes: 1.35}, {name: new, kubernetes: 1.36}]\n"
            "workloads: [{name: w, scenario: pods}]\n"
        )
    )
    assert specs.check(exp) == ["1.35", "1.36"]
    assert exp.release_pairs() == [("old", "1.35", "new", "1.36")]


def test_release_pairs_pair_only_variants_alike_in_everything_else() -> None:
    exp = _checked(
        variants=[
            {"name": "new-plain", "kubernetes": "1.36", "extender": False},
            {"name": "old-plain", "kubernetes": "1.35", "extender": False},
            {"name": "old-ext", "kubernetes": "1.35"},
        ]
    )
    assert exp.release_pairs() == [("old-plain", "1.35", "new-plain", "1.36")]


def test_device_plugin_variants_ask_loadgen_for_extended_resources() -> None:
    exp = _checked(variants=[{"name": "dra"}, {"name": "dp", "devicePlugin": True}])
    assert specs.fleet_document(exp)["extendedResources"] is True
    arms = matrix.stages(exp)[0].arms
    assert [a.params.get("device_plugin") for a in arms] == [None, "true"]


def test_workload_params_of_a_variant_lay_over_every_workloads_own() -> None:
    gw = {"GenericWorkload": True}
    exp = _checked(
        variants=[
            {"name": "native", "featureGates": gw, "workloadParams": {"native": True}},
            {"name": "label", "featureGates": gw},
        ],
        workloads=[{"name": "g", "scenario": "gang", "params": {"gangs": 1, "size": 2}}],
    )
    arms = matrix.stages(exp)[0].arms
    assert [a.params.get("native") for a in arms] == ["true", None]
    assert {a.params["size"] for a in arms} == {"2"}


def test_native_gangs_on_a_variant_without_the_workload_api_are_refused() -> None:
    gang = [{"name": "g", "scenario": "gang", "params": {"native": True}}]
    with pytest.raises(specs.SpecError, match=r"featureGates: \{GenericWorkload: true\}"):
        _checked(workloads=gang)
    # 1.36 serves v1alpha2, but its gang plugin has a gate of its own.
    old = {"name": "old", "kubernetes": "1.36", "featureGates": {"GenericWorkload": True}}
    with pytest.raises(
        specs.SpecError,
        match=r"variant old\): .*featureGates: \{GenericWorkload: true, GangScheduling: true\}",
    ):
        _checked(workloads=gang, variants=[old, {"name": "b"}])
    gw36 = {"GenericWorkload": True, "GangScheduling": True}
    both = [{"name": n, "kubernetes": "1.36", "featureGates": gw36} for n in ("a", "b")]
    assert _checked(workloads=gang, variants=both)


def test_derived_attributes_on_a_variant_without_the_gate_are_refused() -> None:
    derived = [
        {
            "name": "a",
            "scenario": "alignment",
            "params": {"gpus": 2, "nics": 2, "numa": True, "derived": True},
        }
    ]
    with pytest.raises(
        specs.SpecError,
        match=r"^workloads\.0 \(variant on\): derived attributes need Kubernetes 1\.37 or "
        r"later with featureGates: \{DRADerivedAttributes: true\}$",
    ):
        _checked(workloads=derived)
    gate = {"DRADerivedAttributes": True}
    on = [{"name": n, "featureGates": gate} for n in ("a", "b")]
    assert _checked(workloads=derived, variants=on)


def test_a_gang_larger_than_the_whole_fleet_is_refused_with_the_numbers() -> None:
    # 10 dgx-h100 nodes hold 80 GPUs: a gang of 11 whole nodes never runs, in any arm.
    gang = {"name": "g", "scenario": "gang", "params": {"gangs": 1, "size": 11}}
    with pytest.raises(
        specs.SpecError,
        match=r"^workloads\.0 \(variant on\): phase gang: one gang needs 11 pods x 8 GPUs "
        r"= 88 GPUs at once; the fleet has 80 free$",
    ):
        _checked(workloads=[gang])
    gang["params"]["size"] = 10  # exactly the fleet
    assert _checked(workloads=[gang])


def test_a_prioritize_only_variant_runs_on_a_second_scheduler_of_its_own() -> None:
    exp = _checked(
        variants=[
            {"name": "prio", "extenderFilter": False},
            {"name": "on"},
            {"name": "all", "extenderFilter": "all"},
            {"name": "routed", "extenderFilter": True},
        ]
    )
    prio, on, every, routed = (matrix.setup(v) for v in exp.variants)
    assert (prio.extender, prio.extender_filter, prio.shipped) == (True, "none", False)
    assert (on.extender_filter, on.shipped) == ("required", True)
    assert (every.extender_filter, every.shipped) == ("all", False)
    assert routed == on


def test_an_unknown_filter_mode_is_one_line_naming_the_field() -> None:
    with pytest.raises(specs.SpecError, match="extenderFilter"):
        _checked(variants=[{"name": "x", "extenderFilter": "some"}])


def test_an_extender_source_is_a_tree_relative_to_the_file(tmp_path: Path) -> None:
    tree = tmp_path / "trees" / "old"
    (tree / "extender").mkdir(parents=True)
    (tree / "extender" / "cli.py").write_text("")
    path = tmp_path / "exp" / "cpu.yaml"
    path.parent.mkdir()
    variants = [{"name": "old", "extenderSource": "../trees/old"}, {"name": "on"}]
    path.write_text(yaml.safe_dump(_doc(variants=variants)))
    exp = specs.load(path)
    specs.check(exp)
    old = matrix.setup(exp.variants[0])
    assert old.extender_source == str(tree.resolve()) and not old.shipped
    (tree / "extender" / "cli.py").unlink()
    with pytest.raises(specs.SpecError, match=r"variants\.0\.extenderSource: .* not a source tree"):
        specs.check(specs.load(path))
    with pytest.raises(specs.SpecError, match="extenderSource: the variant runs without"):
        specs.parse(
            _doc(variants=[{"name": "a", "extender": False, "extenderSource": "."}, {"name": "b"}])
        )


def test_extender_flags_become_serve_arguments_and_unknown_ones_are_found() -> None:
    exp = _checked(variants=[{"name": "a", "extenderFlags": {"weight-packing": 4}}, {"name": "b"}])
    assert exp.variants[0].extender_args == ("--weight-packing", "4")
    assert matrix.setup(exp.variants[0]).extender_args == ("--weight-packing", "4")
    assert specs.unknown_extender_flags(exp, "  --weight-packing W  [1.0]") == []
    assert specs.unknown_extender_flags(exp, "  --weight-alignment W") == [
        "variants.0.extenderFlags.weight-packing"
    ]


def test_scenario_files_are_found_beside_the_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "name: s\nphases: [{name: p, kind: pods, count: 3, claim: {gpus: 1}}]\n"
    )
    doc = _doc(workloads=[{"name": "w", "scenario": "s.yaml"}])
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    exp = specs.load(tmp_path / "e.yaml")
    specs.check(exp)
    assert exp.workloads[0].scenario == str(tmp_path / "s.yaml")


def test_variants_alternate_within_a_cluster_and_every_arm_has_its_own_name() -> None:
    exp = _checked(repeats=2, workloads=[
        {"name": "a", "scenario": "pods", "latency": True},
        {"name": "b", "scenario": "gang"},
    ])  # fmt: skip
    (stage,) = matrix.stages(exp)
    assert [a.name for a in stage.arms] == [
        "a-on-0", "a-on-0-latency", "a-off-0", "a-off-0-latency", "b-on-0", "b-off-0",
        "a-off-1", "a-off-1-latency", "a-on-1", "a-on-1-latency", "b-off-1", "b-on-1",
    ]  # fmt: skip
    assert {a.scheduler for a in stage.arms} == {"on", "off"}
    fixed = _checked(repeats=2, order="fixed")
    assert [a.variant for a in matrix.stages(fixed)[0].arms] == ["on", "off", "on", "off"]


def test_releases_run_one_cluster_at_a_time_in_alternating_order() -> None:
    exp = _checked(
        repeats=3,
        variants=[
            {"name": "old", "kubernetes": "1.35"},
            {"name": "new", "kubernetes": "1.36"},
        ],
    )
    stages = matrix.stages(exp)
    # 1.35 1.36 | 1.36 1.35 | 1.35 1.36: consecutive stages on one release share its cluster.
    assert [s.cluster[0] for s in stages] == ["1.35", "1.36", "1.35", "1.36"]
    assert [[a.name for a in s.arms] for s in stages] == [
        ["gpus-old-0"],
        ["gpus-new-0", "gpus-new-1"],
        ["gpus-old-1", "gpus-old-2"],
        ["gpus-new-2"],
    ]


def test_the_builtin_demo_file_runs_the_demos_schedulers_on_the_mixed_fleet() -> None:
    exp = demo.builtin("demo")
    specs.check(exp)
    wing.check(exp)
    assert set(wing.setups()) == {plan.EXTENDER, plan.PLAIN}
    assert wing.setups()[plan.EXTENDER].shipped
    assert specs.fleet_document(exp) == plan.fleet_spec(exp.fleet.nodes or 0)


def test_the_demo_flags_are_laid_over_the_builtin_file() -> None:
    exp = demo.experiment(
        nodes=60,
        pods=100,
        repeats=2,
        comparisons=("extender", "placement"),
        scale_nodes=None,
        latency_arms=True,
        qps=20,
        budget_minutes=None,
    )
    assert (exp.fleet.nodes, exp.repeats, exp.qps) == (60, 2, 20)
    assert exp.budget_minutes == demo.builtin("demo").budget_minutes
    assert wing.workload_of(exp) == plan.Workload(
        pods=100,
        repeat=2,
        comparisons=("extender", "placement"),
        scale_nodes=300,
        latency_arms=True,
    )


def test_a_builtin_section_takes_what_it_leaves_out_from_the_builtin_file() -> None:
    file = demo.builtin("demo")
    exp = specs.parse(_builtin_file(builtin={"pods": 7}), source="f.yaml")
    assert wing.workload_of(exp) == dataclasses.replace(wing.workload_of(file), pods=7)


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"fleet": {"profile": "dgx-h100", "nodes": 50}}, "fleet: the built-in comparisons run on"),
        ({"fleet": {"profile": "demo", "nodes": 9}}, "with at least 10 nodes"),
        ({"builtin": {"comparisons": ["speed"]}}, "builtin.comparisons.speed: not a built-in"),
        ({"builtin": {"pods": 0}}, "builtin.pods: Input should be greater than or equal to 1"),
        ({"builtin": {"gpus": 1}}, "builtin.gpus: Extra inputs are not permitted"),
    ],
)
def test_the_demo_checks_its_builtin_files_in_one_line_naming_the_field(
    overrides: dict[str, Any], says: str
) -> None:
    exp = specs.parse(_builtin_file(**overrides), source="f.yaml")
    with pytest.raises(specs.SpecError, match=says) as e:
        wing.check(exp)
    assert "\n" not in str(e.value)


def test_one_cluster_is_the_users_own_and_several_get_their_own_names_and_ports() -> None:
    base = local.ClusterConfig(name="mine", extender_port=18901, apiserver_port=16901)
    one = local_site.cluster_config(base, ("1.36", ()), [("1.36", ())], explicit_release=False)
    assert (one.name, one.kubernetes, one.apiserver_port) == ("mine", None, 16901)
    keys = [("1.35", ()), ("1.36", (("DRADeviceTaintRules", True),))]
    a, b = (local_site.cluster_config(base, k, keys, explicit_release=True) for k in keys)
    assert (a.name, a.kubernetes, a.extender_port, a.apiserver_port) == (
        "mine-k135",
        "1.35",
        18902,
        0,
    )
    assert b.name.startswith("mine-k136-") and b.extender_port == 18903
    assert b.feature_gates == {"DRADeviceTaintRules": True}


def test_a_variants_scheduler_overrides_reach_the_second_schedulers_configuration(
    tmp_path: Path,
) -> None:
    text = second_scheduler.config_text(
        tmp_path / "kc",
        "pct-30",
        local_site.extender_entries(19999),
        {"percentageOfNodesToScore": 30},
    )
    doc = yaml.safe_load(text)
    assert doc["percentageOfNodesToScore"] == 30
    assert doc["profiles"][0]["schedulerName"] == "pct-30"
    assert "127.0.0.1:19999" in doc["extenders"][0]["urlPrefix"]


def _testbed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return children.testbed(*args, home=cwd / "state", cwd=cwd)


def test_every_shipped_example_and_the_builtin_demo_pass_the_clis_checks() -> None:
    examples = sorted((REPO / "examples" / "experiments").glob("*.yaml"))
    assert len(examples) >= 3
    for path in [*map(str, examples), "builtin:demo"]:
        exp, releases = experiment_cli.load_checked(path)
        assert releases and exp.name


def test_validate_says_ok_and_creates_nothing(tmp_path: Path) -> None:
    example = REPO / "examples" / "experiments" / "scheduler-knob-sweep.yaml"
    proc = _testbed("experiment", "validate", str(example), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ": ok: experiment 'knob-sweep', 4 variants x 1 workloads, 16 arms" in proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_bad_file_is_one_line_exit_2_and_run_creates_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(_doc(variants=[{"name": "a", "kubernetes": "1.20"}, {"name": "b"}]))
    )
    for verb in ("validate", "run"):
        proc = _testbed("experiment", verb, str(bad), cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "no pinned module" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_the_docs_example_experiment_file_is_valid() -> None:
    readme = (REPO / "docs" / "experiments.md").read_text()
    section = readme[readme.index("## Experiments") :]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    exp = specs.parse(yaml.safe_load(block))
    assert specs.check(exp) == ["1.35", binaries.DEFAULT_RELEASE]


def test_nodes_and_repeat_from_the_command_line_replace_the_files(tmp_path: Path) -> None:
    path = tmp_path / "gang.yaml"
    path.write_text((REPO / "examples" / "experiments" / "gang.yaml").read_text())
    exp, _ = experiment_cli.load_checked(str(path), nodes=1000, repeats=5)
    assert (exp.fleet.nodes, exp.repeats) == (1000, 5)
    assert exp.variants == specs.load(path).variants
    untouched, _ = experiment_cli.load_checked(str(path))
    assert (untouched.fleet.nodes, untouched.repeats) == (100, 2)


def test_nodes_over_an_inline_fleet_or_past_the_limits_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "inline.yaml"
    doc = yaml.safe_load((REPO / "examples" / "experiments" / "gang.yaml").read_text())
    doc["fleet"] = {"spec": {"pools": [{"name": "a", "profile": "dgx-h100", "count": 2}]}}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(cli.UsageError, match="--nodes: the file's fleet is an inline"):
        experiment_cli.load_checked(str(path), nodes=10)
    with pytest.raises(cli.UsageError, match="repeats"):
        experiment_cli.load_checked(
            str(REPO / "examples" / "experiments" / "gang.yaml"), repeats=specs.MAX_REPEATS + 1
        )


def _sequential_demo(**over: Any) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "experiment" / "demo" / "demo.yaml").read_text())
    return {**doc, **over}


def _builtin_file(**over: Any) -> dict[str, Any]:
    """The built-in demo file, non-sequential, with `over` laid over it."""
    return _sequential_demo(design="fixed", **over)


def test_a_sequential_budget_shorter_than_one_pair_is_refused_in_one_line_exit_2(
    tmp_path: Path,
) -> None:
    # The demo's pair: 4 arms of 200 pods at 50/s, each at least 4 s + ARM_FLOOR_SECONDS.
    bad = tmp_path / "quick.yaml"
    bad.write_text(yaml.safe_dump(_sequential_demo(budgetMinutes=0.4)))
    proc = _testbed("experiment", "validate", str(bad), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "budgetMinutes: 0.4 min is less than one pair of this file's arms takes" in (proc.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quick.yaml"]
    # One pair's worth is accepted (a tight budget, not an impossible one).
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump(_sequential_demo(budgetMinutes=1)))
    proc = _testbed("experiment", "validate", str(ok), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"at most {_sequential_demo()['repeats']} pairs within 1 min (sequential)" in proc.stdout


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"budgetMinutes": None}, "design: sequential needs budgetMinutes"),
        ({"budgetMinutes": 0.5, "qps": 1}, "budgetMinutes: 0.5 min is less than one pair"),
    ],
)
def test_a_sequential_design_without_a_possible_budget_is_refused(
    overrides: dict[str, Any], says: str
) -> None:
    with pytest.raises(specs.SpecError, match=says):
        wing.check(specs.parse(_sequential_demo(**overrides), source="f.yaml"))


def test_a_sequential_design_needs_headline_targets() -> None:
    with pytest.raises(specs.SpecError, match="give the file `targets:`"):
        specs.parse(_doc(design="sequential", budgetMinutes=10), source="f.yaml")
    # A file's own targets are its headlines.
    target = {"metric": "scheduling throughput", "variant": "on", "baseline": "off", "atLeast": 0.9}
    exp = specs.parse(
        _doc(design="sequential", budgetMinutes=10, repeats=24, targets=[target]), source="f.yaml"
    )
    assert design.of(exp).sequential and design.of(exp).looks[0] == 4


def test_a_sequential_files_budget_must_hold_one_pair_of_its_arms() -> None:
    target = {"metric": "scheduling throughput", "variant": "on", "baseline": "off", "atLeast": 0.9}

    def parsed(minutes: float) -> specs.Experiment:
        doc = _doc(design="sequential", budgetMinutes=minutes, repeats=24, targets=[target])
        return specs.parse(doc, source="f.yaml")

    # Two arms of 20 pods at 100/s, each at least 4.2 s: 6 s cannot hold a pair.
    with pytest.raises(specs.SpecError, match=r"less than one pair .*\(2 arms"):
        specs.check(parsed(0.1))
    specs.check(parsed(1))


def test_the_demos_design_is_sequential_with_looks_before_its_most_pairs() -> None:
    exp = demo.builtin("demo")
    plan_ = design.of(exp)
    assert plan_.sequential and plan_.max_pairs == exp.repeats
    assert plan_.looks[0] == design.FIRST_LOOK and plan_.looks[-1] == exp.repeats


def test_the_requeue_storm_file_pairs_the_gate_off_and_on_and_nothing_else() -> None:
    # kubernetes/kubernetes#138095's known answer: its ratio is the gate's effect only if the
    # two variants differ in nothing but SchedulerPreQueueingHints, each on its own cluster.
    exp = specs.load(REPO / "examples" / "experiments" / "requeue-storm.yaml")
    specs.check(exp)
    off, on = exp.variants
    assert (off.feature_gates, on.feature_gates) == (
        {"SchedulerPreQueueingHints": False},
        {"SchedulerPreQueueingHints": True},
    )
    assert off.kubernetes == on.kubernetes == "1.37"
    assert off.model_copy(update={"name": "", "feature_gates": {}}) == on.model_copy(
        update={"name": "", "feature_gates": {}}
    )
    stages = matrix.stages(exp)
    arms = [a for s in stages for a in s.arms]
    # Every repeat runs both gates once; odd repeats start with the gate on.
    for rep in range(exp.repeats):
        ran = [a.variant for a in arms if a.repeat == rep]
        assert ran == (["hints-on", "hints-off"] if rep % 2 else ["hints-off", "hints-on"])
    assert len({s.cluster for s in stages}) == 2


def test_an_extender_source_on_an_existing_cluster_is_one_line_exit_2(tmp_path: Path) -> None:
    """Its schedulers' extender sidecars run the image's extender: no tree could be used."""
    path = tmp_path / "cpu.yaml"
    variants = [{"name": "old", "extenderSource": str(REPO)}, {"name": "on"}]
    path.write_text(yaml.safe_dump(_doc(variants=variants)))
    proc = _testbed("experiment", "run", str(path), "--context", "nowhere", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "local cluster only" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.yaml"]
