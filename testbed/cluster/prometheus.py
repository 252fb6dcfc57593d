"""`testbed up --prometheus-port P`: a real Prometheus beside the local cluster, like
`kwokctl create cluster --prometheus-port`, scraping every component on loopback with the
alert rules of manifests/monitoring loaded.

Its scrape configuration is static, written once from the cluster's own command lines (the
component ports are reserved for the cluster's life, see `ports`), with the job names the
shipped dashboard and alerts use. Processes that come and go beside the cluster (a second
kube-scheduler, an extender with other flags) add themselves while they run (`scraped`: a
file_sd target file). The binary is the `prometheus` on PATH (Debian's package).

Pure: `scrape_config` and `argv`. Thin I/O: finding the binary, writing the files.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed.cluster import health, kwok_shards, paths

COMPONENT = "prometheus"
SCRAPE_INTERVAL = "5s"
"""Short enough that a minute's rate has a dozen samples on a short local run."""
RULES_FILE = "alerts.rules.yaml"
CONFIG_FILE = "prometheus.yml"
LISTEN_FILE = "listen-address"
INSTALL_HINT = (
    "install Debian's `prometheus` package (apt-get install prometheus) or put a "
    "Prometheus binary on PATH"
)
SECOND_SCHEDULER_JOB = "second-scheduler"
EXTENDER_JOB = "extender"
FLEET_JOB = "fleet"
_JOBS = {
    "etcd": "etcd",
    "kube-apiserver": "kube-apiserver",
    "kube-controller-manager": "kube-controller-manager",
    "kube-scheduler": "kube-scheduler",
}


class PrometheusError(RuntimeError):
    """No binary, or the files could not be written: one line."""


@dataclass(frozen=True)
class Layout:
    """Where a cluster's Prometheus keeps its configuration, rules and data."""

    directory: Path

    @property
    def config(self) -> Path:
        return self.directory / CONFIG_FILE

    @property
    def rules(self) -> Path:
        return self.directory / RULES_FILE

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def listen(self) -> Path:
        return self.directory / LISTEN_FILE

    @property
    def targets(self) -> Path:
        """file_sd target files of processes that run for a while (`scraped`)."""
        return self.directory / "targets"

    def configured(self) -> bool:
        return self.config.is_file() and self.listen.is_file()

    def port(self) -> int | None:
        """The port it was configured with (None: the cluster has no Prometheus)."""
        try:
            return int(self.listen.read_text().strip().rsplit(":", 1)[1])
        except (OSError, ValueError, IndexError):
            return None


def service_port(layout: Layout, job: str) -> int | None:
    """The loopback port the cluster's Prometheus scrapes `job` (EXTENDER_JOB, FLEET_JOB) on;
    None when it has no Prometheus."""
    try:
        config = yaml.safe_load(layout.config.read_text())
        for scrape in config["scrape_configs"]:
            if scrape["job_name"] == job:
                return int(scrape["static_configs"][0]["targets"][0].rsplit(":", 1)[1])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError):
        return None
    return None


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def binary() -> Path:
    found = shutil.which("prometheus")
    if found is None:
        raise PrometheusError(f"no `prometheus` on PATH: {INSTALL_HINT}")
    return Path(found)


def _job(job: str, targets: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {"job_name": job, **extra, "static_configs": [{"targets": list(targets)}]}


def scrape_config(
    argvs: Mapping[str, Sequence[str]],
    *,
    pki: Path,
    extender_port: int,
    fleet_port: int,
    targets: Path,
    rules: str = RULES_FILE,
) -> dict[str, Any]:
    """The Prometheus configuration for a cluster whose components run with `argvs` (by
    component name, kwok shard controllers included; pure). kube-apiserver's /metrics needs
    the admin client certificate in `pki`; the other components serve it without one.
    Second schedulers and extra extenders are found in `targets` (see `scraped`)."""
    jobs: list[dict[str, Any]] = []
    kwok: list[str] = []
    for name, args in argvs.items():
        where = health.endpoint(name, args)
        if where is None:
            continue
        target = f"127.0.0.1:{where.port}"
        if name.startswith(kwok_shards.CONTROLLER):
            kwok.append(target)
        elif name == "etcd":
            jobs.append(_job("etcd", [target]))
        elif name in _JOBS:
            # Self-signed serving certificates on loopback.
            tls: dict[str, Any] = {"insecure_skip_verify": True}
            if name == "kube-apiserver":
                tls |= {"cert_file": str(pki / "admin.crt"), "key_file": str(pki / "admin.key")}
            jobs.append(_job(_JOBS[name], [target], scheme="https", tls_config=tls))
    if kwok:
        jobs.append(_job("kwok", sorted(kwok)))
    # The services run beside the cluster when someone starts them; until then their
    # targets are down (and DRATestbedExtenderAbsent says so).
    extender = _job(EXTENDER_JOB, [f"127.0.0.1:{extender_port}"])
    extender["file_sd_configs"] = _file_sd(targets, EXTENDER_JOB)
    jobs.append(extender)
    jobs.append(_job(FLEET_JOB, [f"127.0.0.1:{fleet_port}"]))
    second = {
        "job_name": SECOND_SCHEDULER_JOB,
        "scheme": "https",
        "tls_config": {"insecure_skip_verify": True},
        "file_sd_configs": _file_sd(targets, SECOND_SCHEDULER_JOB),
    }
    jobs.append(second)
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "rule_files": [rules],
        "scrape_configs": sorted(jobs, key=lambda j: str(j["job_name"])),
    }


def _file_sd(targets: Path, job: str) -> list[dict[str, Any]]:
    # Prometheus watches the directory (it must exist when it starts: `write`); the refresh
    # is the fallback.
    return [{"files": [str(targets / f"{job}-*.json")], "refresh_interval": SCRAPE_INTERVAL}]


def argv(prometheus: Path, layout: Layout, port: int) -> list[str]:
    """How to run it: loopback only, its data beside its configuration (pure)."""
    return [
        str(prometheus),
        f"--config.file={layout.config}",
        f"--storage.tsdb.path={layout.data}",
        f"--web.listen-address=127.0.0.1:{port}",
        # Debian's defaults point at /etc/prometheus, which may hold someone else's.
        f"--web.console.templates={layout.directory / 'consoles'}",
        f"--web.console.libraries={layout.directory / 'console_libraries'}",
    ]


@contextlib.contextmanager
def scraped(cluster_dir: Path, job: str, port: int) -> Iterator[None]:
    """While the block runs, the cluster's Prometheus (if it has one) scrapes 127.0.0.1:`port`
    under `job` (SECOND_SCHEDULER_JOB or EXTENDER_JOB): a file_sd target file, read within
    its refresh interval, removed afterwards."""
    layout = Layout(cluster_dir / "prometheus")
    if not layout.configured():
        yield
        return
    layout.targets.mkdir(parents=True, exist_ok=True)
    path = layout.targets / f"{job}-{port}.json"
    tmp = path.with_suffix(".tmp")  # file_sd reads only *.json: never half a file
    tmp.write_text(json.dumps([{"targets": [f"127.0.0.1:{port}"]}]))
    tmp.replace(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def write(layout: Layout, config: Mapping[str, Any], port: int) -> None:
    """The configuration, a copy of the alert rules and the port, in `layout`."""
    layout.targets.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(paths.manifests_dir() / "monitoring" / RULES_FILE, layout.rules)
    layout.config.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    layout.listen.write_text(f"127.0.0.1:{port}\n")
