"""Experiment files: a fleet, variants, workloads, repeats, order and the metrics to compare.

An experiment is data: `testbed experiment validate FILE` parses and checks it and creates
nothing; `testbed experiment run FILE` runs it. A file either names a wing's built-in
comparisons (`builtin:`, with their own variants; the wing registered for them checks and
runs them: `experiment.plan.wing`) or brings its own variants, each run on every workload (a
variants x workloads matrix). Variants may differ in the scheduler (extender
on/off and its flags, configuration overrides) and in the cluster (Kubernetes release,
feature gates): the runner brings up one cluster per release in turn.

Every error is one line naming the field (`validation.one_line`); `check` also asks the
services' public parsers (the fleet spec, loadgen's scenarios) and the pinned releases.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from experiment.judge import comparison
from experiment.judge.targets import Target, unknown_variant
from experiment.measure.fault_plan import EXTENDER, Fault
from experiment.sites import clusterloader2, in_process
from experiment.sites.site import FilterMode, SchedulerSetup
from experiment.spec import mixed_fleet
from fleet import profiles as fleet_profiles
from fleet import spec as fleet_spec
from loadgen import preflight, scenarios
from testbed import documents, validation, vocab
from testbed.cluster import binaries as bins
from testbed.cluster import feature_gates as fg

KIND = "Experiment"
MAX_REPEATS = 50
ARM_FLOOR_SECONDS = 4.0
"""The least an arm is taken to need beyond creating its pods at `qps` (loadgen's start, its
scrapes before and after, the clean-up): a floor well below every arm seen (2026-11-27,
1.37.2, 200 pods at 50/s on a loaded 2-core machine: 16-64 s an arm, 10-31 s clean-up), so a
budget below it is impossible, not merely tight (`check_budget`)."""
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?\Z")
Scalar = str | int | float | bool


class SpecError(ValueError):
    """An experiment file that cannot run; the message is one line naming the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _check_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{validation.shown(value)} is not a lowercase name (a-z, 0-9, -; <= 30)")
    return value


class FleetRef(_Model):
    """The fleet every arm runs on: a profile and a node count, or a fleet spec inline."""

    profile: str | None = None
    """`mixed_fleet.PROFILE` (a mix of five profiles) or one of the fleet's hardware
    profiles."""
    nodes: int | None = Field(None, ge=1, le=100_000)
    spec: dict[str, Any] | None = None
    """A fleet spec as `fleet apply -f` reads it (its name is replaced by the experiment's)."""

    @model_validator(mode="after")
    def _one_way(self) -> FleetRef:
        if (self.spec is None) == (self.profile is None):
            raise ValueError("give either profile (with nodes) or spec")
        if self.profile is not None and self.nodes is None:
            raise ValueError("nodes: a profile needs a node count")
        if self.spec is not None and self.nodes is not None:
            raise ValueError("nodes: an inline spec sets its own pool counts")
        return self


class SchedulerOverrides(_Model):
    """The top-level KubeSchedulerConfiguration fields a variant may lay over the shipped
    file, checked here rather than by a kube-scheduler that refuses to start mid-run."""

    percentage_of_nodes_to_score: int | None = Field(
        None, ge=0, le=100, alias="percentageOfNodesToScore"
    )
    """0: the scheduler's adaptive default (50 % at 100 nodes, down to 5 % at 5,000)."""
    parallelism: int | None = Field(None, ge=1, le=1024)
    pod_initial_backoff_seconds: int | None = Field(None, ge=1, alias="podInitialBackoffSeconds")
    pod_max_backoff_seconds: int | None = Field(None, ge=1, alias="podMaxBackoffSeconds")

    @property
    def fields(self) -> dict[str, Any]:
        """As configuration fields (only those set)."""
        return self.model_dump(by_alias=True, exclude_none=True)


class Variant(_Model):
    """One way of running the workloads: the scheduler and the cluster it runs in."""

    name: str
    extender: bool = True
    """The scheduler calls the topology extender."""
    extender_flags: dict[str, Scalar] = Field(default_factory=dict, alias="extenderFlags")
    """`extender serve` flags without the dashes, e.g. {weight-packing: 0}."""
    extender_source: str | None = Field(None, alias="extenderSource")
    """A dra-testbed source tree (a directory with extender/cli.py, relative to the file)
    whose `extender serve` the variant's scheduler calls instead of the installed one: the
    same workload against two versions of the extender. Local clusters only."""
    extender_filter: FilterMode = Field("required", alias="extenderFilter")
    """Which pods the scheduler sends to the extender's filter: `required` (or true, the
    shipped entries), only pods asking for the placement resource; `all`, every pod (two
    calls a pod, as before the routing); `none` (or false), no pod: prioritize only, DRA
    alone decides where a pod fits."""
    scheduler_overrides: SchedulerOverrides = Field(
        default_factory=lambda: SchedulerOverrides(), alias="scheduler"
    )
    """KubeSchedulerConfiguration fields laid over the shipped one."""
    feature_gates: dict[str, bool] = Field(default_factory=dict, alias="featureGates")
    kubernetes: str | None = None
    """The release (`1.35` .. `1.37`, or the preview `1.38-beta`) of the cluster this variant
    runs in; None: the default."""
    device_plugin: bool = Field(False, alias="devicePlugin")
    """Pods ask for GPUs as extended resources (the device plugin's way) instead of claims."""
    workload_params: dict[str, Scalar] = Field(default_factory=dict, alias="workloadParams")
    """Scenario parameters laid over every workload's in this variant's arms, e.g.
    {native: true} (gangs as Workload API PodGroups) or {numa: true} (the in-tree NUMA
    constraint): what the variant changes is then the pods' own request."""
    harness: Literal["loadgen", "scheduler_perf", "clusterloader2"] = "loadgen"
    """loadgen: the workloads' pods through the cluster. scheduler_perf: the same objects
    through upstream's scheduler_perf in-process, on its release
    (`experiment.sites.in_process`). clusterloader2: ClusterLoader2's own DRA test on the
    cluster, `loadgen observe` watching its pods, each phase's percentiles held against its
    PerfData (`experiment.sites.clusterloader2`)."""
    fault: Fault | None = None
    """A component killed once in each of the variant's arms and repaired as `testbed up`
    repairs it (`experiment.measure.fault_plan`); its arms then expect a restart. Local sites
    only."""

    _name = field_validator("name")(_check_name)

    @field_validator("extender_filter", mode="before")
    @classmethod
    def _filter_mode(cls, value: object) -> object:
        if isinstance(value, bool):  # the earlier spelling: true = as shipped, false = none
            return "required" if value else "none"
        return value

    @field_validator("kubernetes", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        if isinstance(value, float):  # `kubernetes: 1.35` in YAML is a float
            return f"{value:.2f}"
        return value

    @field_validator("extender_flags")
    @classmethod
    def _flags(cls, value: dict[str, Scalar]) -> dict[str, Scalar]:
        for key in value:
            if not re.fullmatch(r"[a-z][a-z0-9-]*", key):
                raise ValueError(
                    f"{validation.shown(key)} is not a flag name (e.g. weight-packing)"
                )
            if key in ("port", "kubeconfig", "context"):
                raise ValueError(f"{key}: set by the runner, not by a variant")
        return value

    @field_validator("feature_gates")
    @classmethod
    def _gates(cls, value: dict[str, bool]) -> dict[str, bool]:
        try:
            fg.parse(fg.flag_value(value))
        except fg.GateError as e:
            raise ValueError(str(e)) from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _in_process_defaults(cls, data: object) -> object:
        return in_process.variant_defaults(data)

    @model_validator(mode="after")
    def _consistent(self) -> Variant:
        if self.harness == in_process.HARNESS:
            in_process.check_variant(self.model_dump(by_alias=True, exclude_defaults=True))
        if self.harness == clusterloader2.HARNESS:
            clusterloader2.check_variant(self.model_dump(by_alias=True, exclude_defaults=True))
        if self.extender_flags and not self.extender:
            raise ValueError("extenderFlags: the variant runs without the extender")
        if self.extender_filter != "required" and not self.extender:
            raise ValueError("extenderFilter: the variant runs without the extender")
        if self.extender_source is not None and not self.extender:
            raise ValueError("extenderSource: the variant runs without the extender")
        if self.fault is not None:
            self._check_fault(self.fault)
        release = self.kubernetes or bins.DEFAULT_RELEASE
        try:
            fg.check(release, self.feature_gates, fg.known(bins.check_release(release)))
        except bins.UnknownRelease:
            pass  # named by the release check, with the releases there are
        except fg.GateError as e:
            raise ValueError(f"featureGates: {e}") from None
        return self

    def _check_fault(self, fault: Fault) -> None:
        if self.harness == in_process.HARNESS:
            raise ValueError("fault: a scheduler_perf variant runs in-process, on no cluster")
        # The kill must hit what places the variant's pods: the cluster's own scheduler and
        # the shipped extender (a second scheduler, or an extender of the variant's own, runs
        # beside them and would not notice).
        if fault.kill == "kube-scheduler" and not self.scheduler_setup.shipped:
            raise ValueError(
                "fault.kill: kube-scheduler is the cluster's own scheduler, and this variant "
                "runs on a second one (it sets the extender, its filter, flags, source or "
                "scheduler overrides)"
            )
        if fault.kill == EXTENDER and not self.extender:
            raise ValueError("fault.kill: the variant runs without the extender")
        if fault.kill == EXTENDER and (self.extender_flags or self.extender_source):
            raise ValueError(
                "fault.kill: the shipped extender is killed, and this variant calls one of "
                "its own (extenderFlags or extenderSource)"
            )

    @property
    def scheduler_setup(self) -> SchedulerSetup:
        """What the variant asks of the scheduler that places its pods."""
        return SchedulerSetup(
            extender=self.extender,
            extender_args=self.extender_args,
            config=self.scheduler,
            extender_filter=self.extender_filter,
            extender_source=self.extender_source,
        )

    @property
    def scheduler(self) -> dict[str, Any]:
        return self.scheduler_overrides.fields

    @property
    def cluster_key(self) -> tuple[str, tuple[tuple[str, bool], ...]]:
        """Variants with equal keys share one cluster: (release, feature gates)."""
        return (self.kubernetes or bins.DEFAULT_RELEASE, tuple(sorted(self.feature_gates.items())))

    @property
    def extender_args(self) -> tuple[str, ...]:
        return tuple(
            arg
            for key, v in sorted(self.extender_flags.items())
            for arg in (f"--{key}", str(v).lower() if isinstance(v, bool) else str(v))
        )

    def without_cluster(self) -> tuple[object, ...]:
        """Everything but the name and the release: variants that differ only in release."""
        return (
            self.extender,
            self.extender_filter,
            self.extender_source,
            tuple(sorted(self.extender_flags.items())),
            repr(sorted(self.scheduler.items())),
            self.device_plugin,
            tuple(sorted(self.feature_gates.items())),
            tuple(sorted(self.workload_params.items())),
            self.harness,
            self.fault,
        )


class Workload(_Model):
    """A loadgen scenario with its parameters, run once per variant per repeat."""

    name: str
    scenario: str
    """A loadgen scenario name (`loadgen run --help`) or a .yaml file, relative to the
    experiment file."""
    params: dict[str, Scalar] = Field(default_factory=dict)
    latency: bool = False
    """Follow each arm with an unsaturated one (Poisson arrivals at arms.latency_rate of the
    rate it sustained) for pod startup as service time, not queueing."""

    _name = field_validator("name")(_check_name)

    def loadgen_params(self, variant: Variant) -> dict[str, str]:
        params = {
            k: str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in {**self.params, **variant.workload_params}.items()
        }
        if variant.device_plugin:
            params["device_plugin"] = "true"
        return params


class Experiment(_Model):
    api_version: Literal["testbed.dra.io/v1alpha1"] = Field(
        "testbed.dra.io/v1alpha1", alias="apiVersion"
    )
    kind: Literal["Experiment"] = "Experiment"
    name: str
    description: str = ""
    fleet: FleetRef
    builtin: dict[str, Any] | None = None
    """A wing's built-in comparisons, which bring their own variants and workloads: its
    section, checked by the wing registered for it (`experiment.plan.wing`)."""
    variants: list[Variant] = Field(default_factory=list)
    workloads: list[Workload] = Field(default_factory=list)
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    order: Literal["alternating", "fixed"] = "alternating"
    """alternating: every other repeat runs the variants (and the clusters) in reverse, so
    machine drift cancels out of the ratios."""
    qps: float = Field(100.0, gt=0, le=10_000)
    """loadgen's pod creation rate for every saturating arm."""
    budget_minutes: float | None = Field(None, gt=0, alias="budgetMinutes")
    """The run's time budget on this machine: over it, the run ends with a hint to shrink it
    (a sequential design stops before it)."""
    design: Literal["fixed", "sequential"] = "fixed"
    """fixed: every repeat runs and the verdicts are taken at the end. sequential
    (`experiment.plan.design`): pairs run until every headline target is decided, `repeats` pairs
    are run or `budgetMinutes` ends, with the false-verdict rate held to 5 % over every look.
    Only a wing's built-in comparisons have headline targets."""
    metrics: list[str] = Field(default_factory=list)
    """What to compare (`comparison.METRICS`); empty: every metric with a value."""
    targets: list[Target] = Field(default_factory=list)
    """Ratios of one variant to another judged against a threshold (`experiment.judge.targets`)."""

    _name = field_validator("name")(_check_name)

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: list[str]) -> list[str]:
        known = comparison.metric_names()
        for m in value:
            if m not in known:
                raise ValueError(
                    f"{validation.shown(m)}: unknown metric (known: {', '.join(known)})"
                )
        return value

    @model_validator(mode="after")
    def _shape(self) -> Experiment:
        if self.design == "sequential":
            self._check_sequential()
        if self.builtin is not None:
            if self.variants or self.workloads:
                raise ValueError("builtin: its comparisons bring their own variants and workloads")
            if self.targets:
                raise ValueError(
                    "targets: builtin comparisons are judged against their own targets; a file's "
                    "targets apply to its own variants"
                )
            return self
        if not self.variants or not self.workloads:
            raise ValueError("variants: give variants and workloads (or builtin comparisons)")
        for field_name, names in (
            ("variants", [v.name for v in self.variants]),
            ("workloads", [w.name for w in self.workloads]),
        ):
            if dup := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(f"{field_name}: name {dup[0]!r} is used twice")
        # A ClusterLoader2 arm compares within itself: its two tools over the same pods.
        alone = len(self.variants) == 1 and self.variants[0].harness == clusterloader2.HARNESS
        if len(self.variants) < 2 and not alone:
            raise ValueError(
                "variants: an experiment compares at least two (or one clusterloader2 variant "
                "with loadgen observe)"
            )
        names = [v.name for v in self.variants]
        if why := unknown_variant(self.targets, names) or in_process.pairing_problem(self.variants):
            raise ValueError(why)
        return self

    def _check_sequential(self) -> None:
        if self.builtin is None and not self.targets:
            raise ValueError(
                "design: sequential needs headline targets to decide: give the file `targets:` "
                "(each a headline) or use builtin comparisons"
            )
        if self.budget_minutes is None:
            raise ValueError("design: sequential needs budgetMinutes (when to stop undecided)")

    def check_budget(self, arms: int, pods: int) -> None:
        """A sequential budget must fit one pair: `arms` arms of `pods` pods each (the
        wing's count), each creating its pods at qps plus ARM_FLOOR_SECONDS; SpecError."""
        if self.design != "sequential" or self.budget_minutes is None:
            return
        pair = arms * (pods / self.qps + ARM_FLOOR_SECONDS)
        if self.budget_minutes * 60 < pair:
            raise SpecError(
                f"budgetMinutes: {self.budget_minutes:.3g} min is less than one pair of this "
                f"file's arms takes ({arms} arms, at least {pair / 60:.1f} min)"
            )

    @property
    def fleet_name(self) -> str:
        return self.name

    def clusters(self) -> list[tuple[str, tuple[tuple[str, bool], ...]]]:
        """The clusters the variants need, in file order (one, unless they differ in release
        or feature gates)."""
        keys: list[tuple[str, tuple[tuple[str, bool], ...]]] = []
        for v in self.variants:
            if v.cluster_key not in keys:
                keys.append(v.cluster_key)
        return keys or [(bins.DEFAULT_RELEASE, ())]

    def release_pairs(self) -> list[tuple[str, str, str, str]]:
        """(previous variant, its release, current variant, its release): variants alike in
        all but the release, each next to the one of the release before it."""
        groups: dict[tuple[object, ...], list[Variant]] = {}
        for v in self.variants:
            groups.setdefault(v.without_cluster(), []).append(v)
        pairs = []
        for group in groups.values():
            ordered = sorted(group, key=lambda v: bins.order(v.cluster_key[0]))
            for prev, cur in itertools.pairwise(ordered):
                if prev.cluster_key[0] != cur.cluster_key[0]:
                    pairs.append((prev.name, prev.cluster_key[0], cur.name, cur.cluster_key[0]))
        return pairs


def parse(data: object, *, source: str = "experiment", base: Path | None = None) -> Experiment:
    """An Experiment from decoded YAML (scenario files resolved against `base`); SpecError."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping (an Experiment)")
    try:
        exp = Experiment.model_validate(data)
    except ValidationError as e:
        raise SpecError(f"{source}: {validation.one_line(e)}") from None
    if base is not None:
        variants = [
            v.model_copy(update={"extender_source": str((base / v.extender_source).resolve())})
            if v.extender_source is not None
            else v
            for v in exp.variants
        ]
        workloads = [
            w.model_copy(update={"scenario": str((base / w.scenario).resolve())})
            if w.scenario.endswith((".yaml", ".yml")) and not Path(w.scenario).is_absolute()
            else w
            for w in exp.workloads
        ]
        exp = exp.model_copy(update={"variants": variants, "workloads": workloads})
    return exp


def load(path: Path) -> Experiment:
    """An Experiment from a YAML file; SpecError names the file and the field."""
    try:
        data = documents.load(path)
    except documents.DocumentError as e:
        raise SpecError(str(e)) from None
    return parse(data, source=str(path), base=path.parent)


def overridden(exp: Experiment, *, nodes: int | None, repeats: int | None) -> Experiment:
    """`exp` with the fleet's node count and the repeats the command line gives in place of
    the file's (so one file serves a quick run and a published one), validated as the file
    is; SpecError names the flag."""
    if nodes is None and repeats is None:
        return exp
    data = exp.model_dump(by_alias=True)
    if nodes is not None:
        if exp.fleet.profile is None:
            raise SpecError(
                "--nodes: the file's fleet is an inline spec, which sets its own counts"
            )
        data["fleet"]["nodes"] = nodes
    if repeats is not None:
        data["repeats"] = repeats
    return parse(data, source="--nodes/--repeat")


def fleet_document(exp: Experiment) -> dict[str, Any]:
    """The fleet spec `fleet apply -f` gets, named after the experiment (pure)."""
    ref = exp.fleet
    if ref.profile == mixed_fleet.PROFILE:
        doc = mixed_fleet.spec(ref.nodes or 0)
    elif ref.profile is not None:
        doc = {
            "seed": 0,
            "pools": [{"name": ref.profile, "profile": ref.profile, "count": ref.nodes}],
        }
    else:
        doc = dict(ref.spec or {})
    if any(v.device_plugin for v in exp.variants) and ref.spec is None:
        doc["extendedResources"] = True  # the device-plugin arms ask for nvidia.com/gpu
    return {**doc, "name": exp.fleet_name}


def expected_pods(scenario: str, params: dict[str, str], fleet_gpus: int) -> int:
    """Pods an arm of `scenario` with `params` creates on a fleet of `fleet_gpus` GPUs (a
    fault at K % of them needs the count before the arm runs); SpecError."""
    try:
        built = scenarios.resolve(scenarios.load(scenario, dict(params)), fleet_gpus)
    except scenarios.ScenarioError as e:
        raise SpecError(str(e)) from None
    return sum(p.pods for p in built.phases)


def unknown_extender_flags(exp: Experiment, serve_help: str) -> list[str]:
    """Variants' extender flags that `extender serve --help` (its text) does not offer."""
    offered = set(re.findall(r"--([a-z][a-z0-9-]*)", serve_help))
    return [
        f"variants.{i}.extenderFlags.{flag}"
        for i, v in enumerate(exp.variants)
        for flag in v.extender_flags
        if flag not in offered
    ]


def _serves_workloads(v: Variant) -> bool:
    """The variant's cluster serves a Workload API version and runs the gang plugin: its
    release has one and `featureGates` turns on every gate that release needs for it."""
    gates = vocab.WORKLOAD_GATES.get(v.kubernetes or bins.DEFAULT_RELEASE)
    return gates is not None and all(v.feature_gates.get(g, False) for g in gates)


def _derives(v: Variant) -> bool:
    """The variant's cluster allocates derived attributes: a release with the alpha gate,
    and `featureGates` turning it on."""
    release = v.kubernetes or bins.DEFAULT_RELEASE
    return v.feature_gates.get(vocab.DERIVED_GATE, False) and bins.at_least(
        release, vocab.DERIVED_RELEASE
    )


def check(exp: Experiment) -> list[str]:
    """Everything a run would stumble on, before it creates anything: the fleet spec, the
    releases, the scenarios and their parameters. Returns the clusters' releases; SpecError."""
    try:
        fleet = fleet_spec.from_data(fleet_document(exp), source="fleet")
    except (fleet_spec.SpecError, fleet_spec.ProfileError) as e:
        raise SpecError(str(e)) from None
    known = fleet_profiles.catalogue(inline=fleet.spec.profiles or ())
    for i, pool in enumerate(fleet.spec.pools):
        if pool.profile not in known:
            raise SpecError(
                f"fleet: pools.{i}.profile: {pool.profile!r} is not a known hardware profile "
                f"(known: {', '.join(sorted(known))})"
            )
    if any(v.device_plugin for v in exp.variants) and not fleet.spec.extended_resources:
        raise SpecError("fleet.spec: a devicePlugin variant needs extendedResources: true")
    gpus = sum(pool.count * known[pool.profile].gpu_count for pool in fleet.spec.pools)
    in_proc = any(v.harness == in_process.HARNESS for v in exp.variants)
    gpu_profiles = sorted(n for n, p in fleet_profiles.builtin().items() if p.gpu_count)
    if in_proc and (why := in_process.fleet_problem(exp.fleet.profile, gpu_profiles)):
        raise SpecError(why)
    if any(v.harness == clusterloader2.HARNESS for v in exp.variants) and (
        why := clusterloader2.fleet_problem(exp.fleet.profile, gpu_profiles)
    ):
        raise SpecError(why)
    releases = []
    pods_per_arm: list[int] = []
    for i, v in enumerate(exp.variants):
        source = v.extender_source
        if source is not None and not (Path(source) / "extender" / "cli.py").is_file():
            raise SpecError(
                f"variants.{i}.extenderSource: {source} is not a source tree with extender/cli.py"
            )
        try:
            releases.append(bins.check_release(v.kubernetes or bins.DEFAULT_RELEASE))
        except bins.UnknownRelease as e:
            raise SpecError(f"variants.{i}.kubernetes: {e}") from None
    for i, w in enumerate(exp.workloads):
        for v in exp.variants:
            try:
                built = scenarios.load(w.scenario, dict(w.loadgen_params(v)))
            except scenarios.ScenarioError as e:
                where = f" (variant {v.name})" if v.device_plugin or v.workload_params else ""
                raise SpecError(f"workloads.{i}{where}: {e}") from None
            if any(p.native_gang for p in built.phases) and not _serves_workloads(v):
                release = v.kubernetes or bins.DEFAULT_RELEASE
                gates = vocab.WORKLOAD_GATES.get(release, (vocab.WORKLOAD_GATE,))
                wanted = ", ".join(f"{g}: true" for g in gates)
                raise SpecError(
                    f"workloads.{i} (variant {v.name}): native gangs need Kubernetes "
                    f"{vocab.WORKLOAD_RELEASE} or later with featureGates: {{{wanted}}}"
                )
            if any(p.claim.derived for p in built.phases) and not _derives(v):
                raise SpecError(
                    f"workloads.{i} (variant {v.name}): derived attributes need Kubernetes "
                    f"{vocab.DERIVED_RELEASE} or later with featureGates: "
                    f"{{{vocab.DERIVED_GATE}: true}}"
                )
            if v.harness == in_process.HARNESS and (
                why := in_process.workload_problem(
                    w.scenario,
                    w.params,
                    w.latency,
                    built.phases,
                    scenarios.load(in_process.SCENARIO, {}).phases,
                )
            ):
                raise SpecError(f"workloads.{i} (variant {v.name}): {why}")
            if v.harness == clusterloader2.HARNESS and (
                why := clusterloader2.workload_problem(w.scenario, w.params)
            ):
                raise SpecError(f"workloads.{i} (variant {v.name}): {why}")
            pods_per_arm.append(sum(p.count for p in built.phases))
            # A gang larger than the whole fleet: loadgen would refuse it only after the
            # clusters and fleets of the arms before it were made.
            for phase in built.phases:
                if (too_big := preflight.gang_problem(phase, gpus)) is not None:
                    raise SpecError(f"workloads.{i} (variant {v.name}): {too_big}")
    # A pair runs every variant on every workload; the fewest pods an arm makes keep this a
    # lower bound (a budget refused here cannot hold one pair).
    exp.check_budget(len(pods_per_arm), min(pods_per_arm, default=0))
    return sorted(set(releases)) or [bins.DEFAULT_RELEASE]
