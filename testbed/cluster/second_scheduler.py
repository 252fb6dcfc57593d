"""A second kube-scheduler beside the cluster's own, for side-by-side comparisons.

Extenders in a KubeSchedulerConfiguration apply to every profile, so "with vs without the
extender" needs two scheduler processes. The second one runs the same binary and the same
configuration minus its extenders, under its own `schedulerName`; a workload picks one with
`spec.schedulerName`. Both run for the whole comparison, so each carries the same idle
watch load in both arms and the ratio is fair.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed import scheduler_profiles
from testbed.cluster import binaries as bins
from testbed.cluster import feature_gates, local, paths, ports, processes

PLAIN_SCHEDULER_NAME = "plain-scheduler"


def config_text(
    kubeconfig: Path,
    scheduler_name: str,
    extenders: Sequence[Mapping[str, Any]] = (),
    overrides: Mapping[str, Any] | None = None,
) -> str:
    """The shipped configuration under `scheduler_name` (pure), without the shipped
    extenders; `extenders` entries replace them (e.g. an HTTPS extender for a TLS test), and
    `overrides` replace top-level fields (e.g. {"percentageOfNodesToScore": 30})."""
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    doc = yaml.safe_load(local.scheduler_config_text(source, extender=False))
    doc["clientConnection"]["kubeconfig"] = str(kubeconfig)
    doc["profiles"] = scheduler_profiles.renamed(doc["profiles"], scheduler_name)
    if extenders:
        doc["extenders"] = [dict(e) for e in extenders]
    doc.update(overrides or {})
    return yaml.safe_dump(doc, sort_keys=False)


@dataclass(frozen=True)
class SecondScheduler:
    name: str
    """The `schedulerName` pods use to pick it."""
    port: int

    @property
    def metrics_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/metrics"


@contextlib.contextmanager
def running(
    kubeconfig: Path,
    workdir: Path,
    *,
    scheduler_name: str = PLAIN_SCHEDULER_NAME,
    extenders: Sequence[Mapping[str, Any]] = (),
    ready_timeout: float = 60.0,
    extra_gates: Mapping[str, bool] | None = None,
    release: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Iterator[SecondScheduler]:
    """Run the plain scheduler (or one calling `extenders`) until the block ends.

    `release` is the cluster's Kubernetes release (`LocalCluster.release()`): the second
    scheduler runs that release's binary, so both arms are judged by the same code; None is
    the default release. `overrides` as in `config_text`."""
    b_release = release or bins.DEFAULT_RELEASE
    b = bins.ensure(build=False, release=b_release)
    gates = feature_gates.for_release(b_release, extra_gates)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / f"{scheduler_name}.yaml"
    config.write_text(config_text(kubeconfig, scheduler_name, extenders, overrides))
    port = ports.free_port()
    argv = [
        str(b["kube-scheduler"]),
        f"--config={config}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        # The same DRA gates as the cluster's own scheduler, so both arms judge alike.
        f"--feature-gates={feature_gates.flag_value(gates)}",
    ]
    with processes.running(
        f"the second kube-scheduler ({scheduler_name})",
        argv,
        log=workdir / f"{scheduler_name}.log",
        # Ready once its informers have synced (`sched-handler-sync`): pods created right
        # after are scheduled, not left for a scheduler still listing the cluster.
        health_url=f"https://127.0.0.1:{port}/readyz",
        timeout=ready_timeout,
    ):
        yield SecondScheduler(scheduler_name, port)
