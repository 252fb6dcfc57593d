"""Where an experiment's arms run: the seam between the runner and the cluster under it.

The runner (`testbed experiment run`, and the commands over built-in files) never asks which cluster
it is on. It opens a `Site` (the embedded local cluster, or a cluster the user already has, reached
by kubeconfig and context), asks it for the scheduler each variant needs, and hands the site's
kubeconfig to the child processes (fleet, loadgen). The local site runs schedulers and the extender
as processes; an existing cluster's site realizes them as objects in the cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from experiment.measure import validity

FilterMode = Literal["required", "all", "none"]


@dataclass(frozen=True, kw_only=True)
class SchedulerSetup:
    """What a variant asks of the scheduler that places its pods."""

    extender: bool = True
    """Whether the scheduler calls the topology extender."""
    extender_args: tuple[str, ...] = ()
    """Extra `extender serve` flags, e.g. ("--weight-packing", "0"); () is the shipped policy."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """KubeSchedulerConfiguration fields laid over the shipped configuration, e.g.
    {"percentageOfNodesToScore": 30}; {} is the shipped configuration."""
    extender_source: str | None = None
    """A source tree whose extender the scheduler calls instead of the installed one."""
    extender_filter: FilterMode = "required"
    """Which pods the scheduler sends to the extender's filter: `required`, those asking for
    the placement resource (the shipped entries); `all`, every pod (the filter entry without
    its `managedResources`: two calls a pod); `none`, no pod (prioritize only, DRA alone
    decides where a pod fits)."""

    @property
    def shipped(self) -> bool:
        """The cluster's own scheduler as shipped: extender on (both verbs), no overrides."""
        return (
            self.extender
            and self.extender_filter == "required"
            and not self.extender_args
            and self.extender_source is None
            and not self.config
        )

    def extender_entries(self, shipped: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The shipped configuration's extender entries as this set-up calls them: none
        without the extender; for `all`, the filter's entry without the `managedResources`
        that route only some pods to it; for `none`, each entry without its filter verb, and
        an entry left with no verb dropped (pure)."""
        if not self.extender:
            return []
        if self.extender_filter == "required":
            return [dict(e) for e in shipped]
        if self.extender_filter == "all":
            return [
                {k: v for k, v in e.items() if k != "managedResources"}
                if "filterVerb" in e
                else dict(e)
                for e in shipped
            ]
        kept = [{k: v for k, v in e.items() if k != "filterVerb"} for e in shipped]
        return [e for e in kept if any(k.endswith("Verb") for k in e)]


@dataclass(frozen=True, kw_only=True)
class Scheduler:
    """A running scheduler, as loadgen needs to address and scrape it."""

    name: str
    """The `schedulerName` pods set to pick it."""
    metrics_url: str
    """Its /metrics, as loadgen's `--scrape scheduler=` takes it (`kube:/...` goes through
    the API server)."""
    extender_metrics_url: str | None = None
    """The extender it calls, as loadgen's `--scrape extender=` takes it; None: no extender."""
    idle_extender_metrics_url: str | None = None
    """An extender that watches through the arm without being called (the installed one, beside
    a variant's own), as loadgen's `--scrape extender-idle=` takes it: the watching cost the
    called one pays too, read in the same arm. None: there is none."""
    log: Path | None = None
    """kube-scheduler's log file where this machine can read it (the validity check reads
    skipped extender calls there)."""
    read_log: Callable[[], str | None] | None = None
    """Where there is no file (a scheduler pod on an existing cluster): kube-scheduler's log
    read through the API, None when the cluster does not serve it. Neither: not read."""

    def skips_logged(self) -> int | None:
        """Times kube-scheduler's log says so far that it skipped the extender; None when
        the log cannot be read (the validity check says so, rather than assume 0)."""
        text: str | None = None
        if self.log is not None:
            try:
                text = self.log.read_bytes().decode(errors="replace")
            except OSError:
                return None
        elif self.read_log is not None:
            text = self.read_log()
        return None if text is None else validity.skipped_in_log(text)


class Site(Protocol):
    """An opened cluster the runner can put variants on."""

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig file whose current context is the site's cluster (children get it as
        KUBECONFIG, so fleet and loadgen need no --context)."""
        ...

    @property
    def description(self) -> str:
        """One line for reports: which cluster, where, which Kubernetes release."""
        ...

    @property
    def fleet_flags(self) -> tuple[str, ...]:
        """Extra `fleet apply` flags: `--through-service` where the site runs `fleet serve`
        for a Prometheus to scrape (the dashboard's fleet row then shows the fleet's work)."""
        ...

    @property
    def schedulers_per_arm(self) -> bool:
        """A second scheduler (and its extender) may start for each of its arms and stop
        after it, rather than run for the whole stage: they are local processes, started in
        seconds (a local site), not Deployments in someone's cluster."""
        ...

    def processes_cpu(self) -> dict[str, float]:
        """CPU seconds so far of each of the site's processes this machine can read, by
        name; {} where it can read none (an existing cluster's)."""
        ...

    def scheduler(
        self, setup: SchedulerSetup, workdir: Path
    ) -> contextlib.AbstractContextManager[Scheduler]:
        """The scheduler `setup` asks for, running until the block ends. The local site uses
        the cluster's own scheduler where `setup.shipped` and a second scheduler otherwise; an
        existing cluster's own scheduler does not call our extender, so there every setup gets
        a second scheduler of its own."""
        ...

    def kill(self, component: str) -> float | None:
        """SIGKILL one of the site's components (`fault_plan.COMPONENTS`) and wait until it
        has exited; the CPU seconds it had used (None: not among `processes_cpu`). Only a
        local site the testbed brought up can; another raises."""
        ...

    def repair(self, component: str) -> None:
        """Start the killed `component` again as `testbed up` does, and return once the site
        is whole (raises if it is not)."""
        ...
