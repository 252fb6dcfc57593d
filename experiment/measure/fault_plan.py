"""A variant's fault: which component of the local site to kill mid-arm, when, and what became
of it (pure: the spec's field, the moment it is due, the record an arm keeps).

    fault: {kill: kube-scheduler, at: "30%"}   # once 30 % of the arm's pods are bound
    fault: {kill: etcd, at: 20s}               # 20 s after the arm's first pod was created

The runner SIGKILLs the component once, then repairs the site as `testbed up` repairs a
cluster with a dead component (`experiment.sites.fault_run`). A variant with a fault expects its
arms' restarts (`validity.of_arm`); beside a variant without it, on the same cluster, the
pair is what the fault costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, field_validator

from testbed import units, validation

KEY = "injected_fault"
"""The run's facts' name for an arm's `Outcome` (`ArmRecord.fault`)."""
EXTENDER = "extender"
COMPONENTS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "etcd",
    "kwok-controller",
    EXTENDER,
)
"""What the local site can kill and repair: the cluster's processes (named as `testbed
status` names them; `testbed up` starts them again) and the shipped extender."""
_SHARE = re.compile(r"^\s*(?P<n>-?[0-9]+(\.[0-9]+)?)\s*%\s*$")


class Fault(BaseModel):
    """Kill `kill` once during each of the variant's arms, at `at`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kill: str
    """A component of `COMPONENTS`."""
    at: str
    """`K%`: once K % of the arm's pods are bound (0 < K < 100); a duration (`20s`, `1m30s`,
    or a number of seconds): that long after the arm's first pod was created."""

    @field_validator("kill")
    @classmethod
    def _component(cls, value: str) -> str:
        if value not in COMPONENTS:
            # The whole list fits a one-line error's 120 characters only without the value.
            raise ValueError(f"not one of {'|'.join(COMPONENTS)}")
        return value

    @field_validator("at", mode="before")
    @classmethod
    def _when(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = f"{value:g}s"  # a bare number is seconds
        if not isinstance(value, str):
            raise ValueError(f"{validation.shown(value)}: give K% of the pods or a duration")
        if m := _SHARE.match(value):
            if not 0 < float(m.group("n")) < 100:
                raise ValueError(
                    f"{value.strip()} is not a share of the arm's pods above 0 and below 100 %"
                )
            return value.strip()
        if value.strip().startswith("-"):
            raise ValueError(f"{validation.shown(value)}: a time cannot be negative")
        try:
            units.parse_duration(value)
        except ValueError:
            raise ValueError(
                f"{validation.shown(value)} is neither K% of the pods nor a duration like 20s"
            ) from None
        return value.strip()

    @property
    def share(self) -> float | None:
        """The share of the arm's pods bound at which it is due (None: it is timed)."""
        m = _SHARE.match(self.at)
        return float(m.group("n")) / 100 if m else None

    @property
    def seconds(self) -> float | None:
        """Seconds after the arm's first pod at which it is due (None: it is a share)."""
        return None if self.share is not None else units.parse_duration(self.at)

    def pods_due(self, expected: int) -> int:
        """Pods bound at which a share is due: at least one, fewer than all."""
        share = self.share or 0.0
        return min(max(1, round(share * expected)), max(1, expected - 1))

    def planned(self, expected: int) -> str:
        """When, in words (`at 30 % of 200 pods bound (60)`)."""
        if self.share is None:
            return f"{self.seconds:g} s after the arm's first pod was created"
        return f"at {self.at} of {expected} pods bound ({self.pods_due(expected)})"

    def due(self, *, since_first_pod: float | None, bound: int, expected: int) -> bool:
        """Whether it is due, given the seconds since the arm's first pod (None: none yet)
        and the pods bound so far."""
        if since_first_pod is None:
            return False
        if self.seconds is not None:
            return since_first_pod >= self.seconds
        return bound >= self.pods_due(expected)


class Outcome(BaseModel):
    """What became of one arm's fault, as the arm's record keeps it (`ArmRecord.fault`, and
    `fault.json` beside its result)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kill: str
    at: str
    planned: str
    """When it was due, in words (`Fault.planned`)."""
    done: bool
    """Killed and repaired while the run went on."""
    killed_seconds: float | None = None
    """On loadgen's run clock (None: never killed, or no run clock)."""
    since_first_pod_seconds: float | None = None
    pods_bound: int | None = None
    """The arm's pods bound at the kill."""
    repaired_seconds: float | None = None
    error: str | None = None
    """Why it did not land, was not repaired or came too late; None when done."""


@dataclass
class Landed:
    """What became of one arm's fault (its record keeps it as `ArmRecord.fault`)."""

    fault: Fault
    planned: str
    killed_wall: float | None = None
    """Epoch seconds of the SIGKILL (None: it never came due, or could not be made)."""
    since_first_pod: float | None = None
    bound: int | None = None
    """The arm's pods bound at the kill."""
    repaired_seconds: float | None = None
    """From the kill until the site was whole again (None: not repaired)."""
    cpu_at_kill: dict[str, float] = field(default_factory=dict)
    """Every site process's CPU seconds at the kill (the killed one's just before it, the
    others' just after), so the arm's CPU figure of one that restarted is the sum over its
    two processes."""
    error: str | None = None
    """Why it did not land or was not repaired; None when both happened."""

    @property
    def done(self) -> bool:
        return self.killed_wall is not None and self.repaired_seconds is not None

    def outcome(self, run_started_wall: float | None, run_ended_wall: float | None) -> Outcome:
        """As kept in the arm's record; `run_started_wall`, `run_ended_wall`: loadgen's run
        (epoch s), so the kill sits on the clock of the restarts loadgen saw. A kill after
        the run ended hit nothing it measured: not done."""
        killed = (
            round(self.killed_wall - run_started_wall, 3)
            if self.killed_wall is not None and run_started_wall is not None
            else None
        )
        done, error = self.done, self.error
        late = (
            self.killed_wall is not None
            and run_ended_wall is not None
            and self.killed_wall >= run_ended_wall
        )
        if done and late:
            done, error = False, "it came after the run had ended"
        return Outcome(
            kill=self.fault.kill,
            at=self.fault.at,
            planned=self.planned,
            done=done,
            killed_seconds=killed,
            since_first_pod_seconds=_rounded(self.since_first_pod),
            pods_bound=self.bound,
            repaired_seconds=_rounded(self.repaired_seconds),
            error=error,
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def describe(o: Outcome) -> str:
    """A kept outcome in words, for the console and the reason of an arm's validity."""
    what = f"{o.kill} killed"
    if not o.done:
        return f"{what} {o.planned}: not done ({o.error})"
    when = (
        f"{o.killed_seconds:.1f} s into the run"
        if o.killed_seconds is not None
        else f"{o.since_first_pod_seconds or 0.0:.1f} s after the first pod"
    )
    return (
        f"{what} {when} ({o.pods_bound} pods bound), repaired in {o.repaired_seconds or 0.0:.1f} s"
    )
