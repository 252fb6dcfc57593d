"""The extender's settings: scoring weights, label keys, limits. One validated value.

Loaded from an optional YAML/JSON file (`--config`), then overridden by flags. Every field
documents its default; the CLI's `--help` points here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from testbed import validation, vocab


class Weights(BaseModel):
    """Relative weights of the scoring terms. A term that does not apply to a pod (no NIC
    asked for, no job siblings running) is left out of the weighted mean for that pod, so
    its weight never drags the other terms down."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alignment: float = Field(default=2.0, ge=0)
    """GPU-NIC alignment (same PCIe root best, same NUMA next). Highest by default: DRANet
    measured ~60 % more bus bandwidth for aligned pairs."""
    packing: float = Field(default=1.0, ge=0)
    """Best fit on devices, so whole nodes stay free for 8-GPU pods."""
    locality: float = Field(default=1.0, ge=0)
    """Same rack (best) or block (next) as the pod's already-running job siblings."""
    numa_credit: float = Field(default=0.5, ge=0, le=1)
    """Credit a NUMA-local (not PCIe-root-local) pair gets relative to an aligned one."""
    block_credit: float = Field(default=0.5, ge=0, le=1)
    """Credit a same-block (not same-rack) node gets relative to a same-rack one."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: Weights = Field(default_factory=Weights)
    block_label: str = vocab.LABEL_BLOCK
    """Node label naming the topology block (Kueue TAS / KAI convention)."""
    rack_label: str = vocab.LABEL_RACK
    """Node label naming the rack."""
    host_label: str = vocab.LABEL_HOSTNAME
    fractional_capacity: bool | None = None
    """The cluster runs with DRAFractionalCapacityRange (1.37, beta, off by default): its
    allocator steps capacity ranges in milli-units, which the allocation search then does.
    None: read from the API server's gates at start (`extender.gates`); set it when the
    scheduler runs other gates than the API server, or the extender may not read /metrics."""
    gang_label: str = vocab.LABEL_GANG
    """Pod label grouping a gang; takes precedence over the Job name label."""
    gang_hold_seconds: float = Field(default=300.0, gt=0)
    """How long the gang placer holds a placed gang's room in its blocks for pods not bound
    yet (`extender.gangs.placer`); past it the room is offered to other gangs again (a
    gang whose pods name a profile no scheduler serves must not keep it for ever)."""
    gpu_drivers: tuple[str, ...] = (vocab.GPU_DRIVER,)
    """Drivers whose devices count as GPUs."""
    nic_drivers: tuple[str, ...] = (vocab.NIC_DRIVER,)
    """Drivers whose devices count as NICs."""
    max_body_bytes: int = Field(default=3 * 1024 * 1024, gt=0)
    """Largest request body accepted. kube-scheduler's largest call (nodeCacheCapable) is one
    pod (at most etcd's 1.5 MiB object limit) plus `max_node_names` names of at most 253
    bytes each; a scheduler that is not nodeCacheCapable sends whole Node objects and needs
    more."""
    max_node_names: int = Field(default=5000, gt=0)
    """Most candidate nodes one call may name: Kubernetes' supported cluster size (5,000
    nodes), the largest list kube-scheduler sends. A longer list is refused (400)."""
    max_inflight: int = Field(default=64, gt=0)
    """Scheduler calls admitted at once (being read, waiting for their turn or judged); one
    more is answered 503 at once and counted (`extender_requests_total{result="overloaded"}`).
    The scheduler treats the ignorable extender's 503 as no opinion."""
    call_deadline_seconds: float = Field(default=2.5, gt=0)
    """A call still waiting for its turn this long after it arrived (in the kernel: a call
    left unread while the event loop was busy has been waiting too, `extender.arrival`) is
    answered "not judged" at once (every node passes, every score 0; counted as
    `outcome="deadline"`, logged once per burst) rather than late: half of kube-scheduler's 5 s
    `httpTimeout` of the shipped configuration, the extender's only view of it. A call whose
    body has not arrived by then is answered 408 and its connection closed."""
    cel_budget_seconds: float = Field(default=0.5, gt=0)
    """CEL time one scheduler call (or one pod shape of the start-up's warm-up) may spend,
    evaluations inline and in the sandbox together: past it the call is answered "not judged"
    (every node passes, every score 0; counted as `outcome="cel_budget"`) and the expressions
    that spent it are logged. Well within `call_deadline_seconds`. A call that waits on the
    sandbox spends it off the event loop (`extender.judging`); inline evaluations hold the loop
    for at most this long per call. Results are cached, so the next call goes on where this
    one stopped."""
    listen_backlog: int = Field(default=1024, gt=0)
    """Connections the kernel may hold completed before the extender accepts them (capped by
    net.core.somaxconn). Past it the kernel drops connection attempts and the client retries
    only after 1, 3, 7, 15 s: a queue the extender never sees, which made calls wait 15-20 s
    under a burst of new connections with aiohttp's default of 128. Room for a burst lets
    every call reach the gate, which refuses the excess with a 503 at once."""
    idle_timeout_seconds: float = Field(default=30.0, gt=0)
    """A connection that has not sent a whole request head this long after it connected, or
    sits idle this long between requests, is closed: unfinished or abandoned connections give
    their descriptors back (kube-scheduler reconnects when it next calls)."""
    max_connections: int | None = Field(default=None, gt=0)
    """Connections served at once; at the limit each new one closes the oldest connection
    with no request in progress. Default: the process's descriptor limit less a reserve
    (`testbed.runtime.default_max_connections`)."""
    debug: bool = False
    """Serve /debug/* (recent decisions, every tenant's pods; free devices; judge). Off
    unless asked (`--debug`)."""
    explain_pods: int = Field(default=1024, ge=0)
    """How many recent per-pod decisions `GET /debug/decisions` keeps; with `debug` only
    (without it none are made)."""

    @model_validator(mode="after")
    def _some_weight(self) -> Settings:
        w = self.weights
        if w.alignment + w.packing + w.locality <= 0:
            raise ValueError("at least one of weights.alignment/packing/locality must be > 0")
        return self


class ConfigFileError(ValueError):
    """A settings file that cannot be read or does not validate; the message is one line."""


def load(path: str | Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from `path` (YAML or JSON) with `overrides` (dotted keys) on top."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            raw = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ConfigFileError(f"cannot read config {path}: {validation.syntax_error(e)}") from e
        if raw is not None and not isinstance(raw, dict):
            raise ConfigFileError(f"config {path}: expected a mapping at the top level")
        data = raw or {}
    for dotted, value in (overrides or {}).items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    try:
        return Settings.model_validate(data)
    except ValidationError as e:
        where, msg = validation.first_error(e)
        raise ConfigFileError(f"invalid setting {where or '(top level)'}: {msg}") from e
