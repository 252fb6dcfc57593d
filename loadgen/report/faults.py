"""What happened to the cluster's components during a run, as part of its result document:
restarts with their times, scrapes that failed, and the figures that could not be made whole
(DESIGN: faults are facts of a run). Built from the run's `segments.Component`s; the console
and the HTML report say each fact once.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from loadgen import outcome, segments

NAMES = {
    "scheduler": "kube-scheduler",
    "apiserver": "kube-apiserver",
    "controller-manager": "kube-controller-manager",
}


def who(component: str) -> str:
    return NAMES.get(component, component)


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Restart(_Doc):
    component: str
    seen_seconds: float
    """Since the start of the run: the first scrape that met the new process."""
    started_seconds: float | None
    """Since the start of the run: the new process's start (`process_start_time_seconds`);
    None: its /metrics has no start time, and a counter's drop showed the restart."""
    unseen_seconds: float
    """From the old process's last scrape to the next one: what it counted then is in no
    figure."""
    bound_unseen: int | None = None
    """kube-scheduler only: the run's pods first seen bound in that stretch (by their own
    watch events), scheduled attempts of the old process no counter scrape holds (its
    `schedule_attempts` figure counts them: `ComponentMetrics.attempts_bound_unseen`)."""

    def describe(self) -> str:
        when = self.seen_seconds if self.started_seconds is None else self.started_seconds
        how = "" if self.started_seconds is not None else " (seen as its counters' drop)"
        bound = (
            ""
            if self.bound_unseen is None
            else f"; {self.bound_unseen} of the run's pods were seen bound then, attempts no "
            "scrape holds, counted in its attempts"
        )
        return (
            f"{who(self.component)} restarted {when:.1f}s into the run{how}; its counter "
            f"figures are summed over its processes (up to {self.unseen_seconds:.1f}s of the "
            f"old one's counts unseen{bound})"
        )


class Scrapes(_Doc):
    """One component's scrapes through the run."""

    component: str
    attempts: int
    failed: int
    first_failure_seconds: float | None = None
    first_error: str | None = None
    start_time_series: bool | None = None
    """Its /metrics has `process_start_time_seconds` (None: it never answered)."""
    processes: int = 1
    partial: list[str] = []
    """Why its counter figures could not be made whole (none given then)."""

    def describe(self) -> list[str]:
        """The facts worth a line, each once (nothing for a component that always answered
        with a start time and made every figure whole)."""
        name = who(self.component)
        if self.processes == 0:
            return [
                f"{name}: no scrape answered in {self.attempts} tries ({self.first_error}): "
                "its figures are missing"
            ]
        lines = []
        if self.failed:
            lines.append(
                f"{name}: {self.failed} of {self.attempts} scrapes failed, the first "
                f"{self.first_failure_seconds:.1f}s into the run ({self.first_error})"
            )
        if self.start_time_series is False:
            lines.append(
                f"{name}: its /metrics has no process_start_time_seconds, so a restart shows "
                "only as a counter's drop"
            )
        lines.extend(f"{name}: counter figures partial: {why}" for why in self.partial)
        return lines


class Faults(_Doc):
    restarts: list[Restart] = []
    scrapes: list[Scrapes] = []

    @property
    def partial(self) -> list[str]:
        """Components whose counter figures could not be made whole."""
        return [s.component for s in self.scrapes if s.partial or not s.processes]

    def lines(self) -> list[str]:
        return [r.describe() for r in self.restarts] + [
            line for s in self.scrapes for line in s.describe()
        ]


def _scrapes(c: segments.Component) -> Scrapes:
    return Scrapes(
        component=c.name,
        attempts=c.attempts,
        failed=c.failures,
        first_failure_seconds=None if c.first_failure is None else round(c.first_failure, 3),
        first_error=c.first_error,
        start_time_series=c.start_time_series,
        processes=c.processes,
        partial=list(c.partial),
    )


def _bound_between(result: outcome.RunResult, start: float, end: float) -> int:
    """The run's pods first seen bound in (start, end], run seconds."""
    return sum(
        1
        for pod in result.records.pods.values()
        if pod.scheduled is not None and start < pod.scheduled - result.started_mono <= end
    )


def build(result: outcome.RunResult) -> Faults:
    components = result.components.values()
    return Faults(
        restarts=sorted(
            (
                Restart(
                    component=r.component,
                    seen_seconds=r.seen,
                    started_seconds=r.started,
                    unseen_seconds=r.unseen_seconds,
                    bound_unseen=_bound_between(
                        result, r.last_answer, r.last_answer + r.unseen_seconds
                    )
                    if r.component == "scheduler"
                    else None,
                )
                for c in components
                for r in c.restarts
            ),
            key=lambda r: r.seen_seconds,
        ),
        scrapes=[_scrapes(c) for c in components],
    )
