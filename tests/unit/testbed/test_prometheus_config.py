"""The local cluster's Prometheus configuration, from its components' command lines: every
component a job under the name the dashboard and alerts use, loopback only, the API server
with the admin certificate, and the rules file loaded (promtool checks the written file in
tests/tools/test_monitoring.py: it needs Debian's prometheus package)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from testbed.cluster import prometheus
from tests.support import scrape_config


def jobs() -> dict[str, dict[str, object]]:
    return {str(j["job_name"]): j for j in scrape_config.config()["scrape_configs"]}  # type: ignore[attr-defined]


def targets(job: dict[str, object]) -> list[str]:
    return [t for sc in job.get("static_configs", []) for t in sc["targets"]]  # type: ignore[attr-defined]


def test_every_component_and_service_is_a_job_on_loopback() -> None:
    found = {name: targets(job) for name, job in jobs().items()}
    assert found == {
        "etcd": ["127.0.0.1:32766"],
        "extender": ["127.0.0.1:18902"],
        "fleet": ["127.0.0.1:18903"],
        "kube-apiserver": ["127.0.0.1:32764"],
        "kube-controller-manager": ["127.0.0.1:32763"],
        "kube-scheduler": ["127.0.0.1:32762"],
        "kwok": ["127.0.0.1:32761", "127.0.0.1:40001"],
        "second-scheduler": [],  # while one runs: `scraped`
    }


def test_the_api_server_is_scraped_with_the_admin_certificate() -> None:
    api = jobs()["kube-apiserver"]
    assert api["scheme"] == "https"
    assert api["tls_config"] == {
        "insecure_skip_verify": True,
        "cert_file": "/c/pki/admin.crt",
        "key_file": "/c/pki/admin.key",
    }
    assert "cert_file" not in jobs()["kube-scheduler"]["tls_config"]  # type: ignore[operator]


def test_prometheus_listens_on_loopback_with_its_own_files(tmp_path: Path) -> None:
    layout = prometheus.Layout(tmp_path)
    argv = prometheus.argv(Path("/usr/bin/prometheus"), layout, 18990)
    assert "--web.listen-address=127.0.0.1:18990" in argv
    files = [a for a in argv[1:] if "listen-address" not in a]
    assert all(str(tmp_path) in a for a in files), argv  # nothing from /etc/prometheus
    assert layout.port() is None and not layout.configured()


def test_written_configuration_loads_the_rules_file(tmp_path: Path) -> None:
    layout = prometheus.Layout(tmp_path / "prometheus")
    prometheus.write(layout, scrape_config.config(), 18990)
    assert layout.configured() and layout.port() == 18990
    assert yaml.safe_load(layout.config.read_text())["rule_files"] == ["alerts.rules.yaml"]
    assert layout.rules.is_file()  # a copy of the manifests' rules, beside the config


def test_a_process_beside_the_cluster_is_scraped_while_it_runs(tmp_path: Path) -> None:
    cluster_dir = tmp_path / "cluster"
    with prometheus.scraped(cluster_dir, prometheus.SECOND_SCHEDULER_JOB, 40100):
        assert not cluster_dir.exists()  # no Prometheus: nothing written
    layout = prometheus.Layout(cluster_dir / "prometheus")
    prometheus.write(layout, scrape_config.config(), 18990)
    job = jobs()[prometheus.SECOND_SCHEDULER_JOB]
    (sd,) = job["file_sd_configs"]  # type: ignore[misc]
    assert sd["files"] == ["/c/targets/second-scheduler-*.json"]
    assert layout.targets.is_dir()  # before Prometheus starts: it watches the directory
    with prometheus.scraped(cluster_dir, prometheus.SECOND_SCHEDULER_JOB, 40100):
        (written,) = layout.targets.iterdir()
        assert written.name == "second-scheduler-40100.json"
        assert json.loads(written.read_text()) == [{"targets": ["127.0.0.1:40100"]}]
    assert list(layout.targets.iterdir()) == []


def test_the_services_ports_are_read_back_from_the_written_configuration(tmp_path: Path) -> None:
    layout = prometheus.Layout(tmp_path / "prometheus")
    assert prometheus.service_port(layout, prometheus.FLEET_JOB) is None  # no Prometheus
    layout.directory.mkdir()
    layout.config.write_text(yaml.safe_dump(scrape_config.config()))
    assert prometheus.service_port(layout, prometheus.FLEET_JOB) == 18903
    assert prometheus.service_port(layout, prometheus.EXTENDER_JOB) == 18902
    assert prometheus.service_port(layout, "no-such-job") is None
    layout.config.write_text("scrape_configs: [")  # broken: no port rather than a traceback
    assert prometheus.service_port(layout, prometheus.FLEET_JOB) is None
