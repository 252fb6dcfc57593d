"""Alerts, scrape config and the Grafana dashboard, checked offline: promtool, one source for
the rules, and every metric a query names is one the extender or fleet code registers
(kube-scheduler's names are checked against the real scheduler in tests/integration/deploy)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed.cluster import prometheus
from tests.support import deploy as s
from tests.support import scrape_config

pytestmark = pytest.mark.timeout(120)

MONITORING = s.MANIFESTS / "monitoring"
# Prefixes whose names only the running control plane can confirm (integration tests; a
# kubelet's only on kind or a real cluster: kwok nodes have none).
CONTROL_PLANE_PREFIXES = ("scheduler_", "apiserver_", "kubelet_")
# Series Prometheus itself writes for every target.
PROMETHEUS_SERIES = {"up"}


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool missing: run hack/install-test-deps.sh (Debian package prometheus)"
    return found


def test_alert_rules_pass_promtool() -> None:
    out = subprocess.run(
        [promtool(), "check", "rules", str(s.ALERT_RULES)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rules.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(rate(x[5m]) > 1\n")
    out = subprocess.run([promtool(), "check", "rules", str(bad)], capture_output=True, text=True)
    assert out.returncode != 0


def test_the_local_clusters_written_configuration_passes_promtool(tmp_path: Path) -> None:
    layout = prometheus.Layout(tmp_path / "prometheus")
    (tmp_path / "pki").mkdir()
    for name in ("admin.crt", "admin.key"):  # promtool checks that they exist
        (tmp_path / "pki" / name).touch()
    prometheus.write(layout, scrape_config.config(tmp_path / "pki"), 18990)
    out = subprocess.run(
        [promtool(), "check", "config", str(layout.config)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_prometheus_rule_carries_exactly_the_rules_file() -> None:
    (rule,) = [o for o in s.render("monitoring") if o["kind"] == "PrometheusRule"]
    assert rule["spec"] == yaml.safe_load(s.ALERT_RULES.read_text()), (
        "manifests/monitoring/prometheusrule.yaml drifted from alerts.rules.yaml"
    )


def test_alerts_cover_the_issue_list() -> None:
    exprs = {q.where.rsplit(" ", 1)[1]: q.expr for q in s.alert_queries()}
    assert "extender_request_duration_seconds_bucket" in exprs["DRATestbedExtenderLatencyHigh"]
    assert "extender_requests_total" in exprs["DRATestbedExtenderErrors"]
    assert 'plugin="DynamicResources"' in exprs["DRATestbedDRASchedulingLatencyHigh"]
    assert 'plugin="DynamicResources"' in exprs["DRATestbedClaimAllocationFailures"]
    # An extender that is down, absent or timing out (the scheduler-side view: pods placed
    # while the extender answers no call).
    assert "up == 0" in exprs["DRATestbedExtenderDown"]
    assert "absent_over_time(extender_cache_ready" in exprs["DRATestbedExtenderAbsent"]
    bypassed = exprs["DRATestbedExtenderBypassed"]
    assert "scheduler_schedule_attempts_total" in bypassed and "unless" in bypassed
    assert 'verb=~"filter|prioritize"' in bypassed, "filter calls alone are rare as shipped"
    assert 'le="1.0"' in exprs["DRATestbedExtenderNearTimeout"]


def test_scrape_config_passes_promtool(tmp_path: Path) -> None:
    """Debian's Prometheus is built without Kubernetes service discovery, so the check runs on
    a copy whose kubernetes_sd_configs become static targets; everything else (relabelling,
    TLS, rule files) is checked as written."""
    cfg = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    for job in cfg["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs"), job["job_name"]
        job["static_configs"] = [{"targets": ["127.0.0.1:1"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(cfg))
    for rules in cfg.get("rule_files") or []:
        shutil.copy(MONITORING / rules, tmp_path / rules)
    out = subprocess.run(
        [promtool(), "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_scrape_config_and_service_monitor_keep_the_same_ports() -> None:
    objs = s.render("monitoring")
    (sm,) = [o for o in objs if o["kind"] == "ServiceMonitor"]
    ports = {e["port"] for e in sm["spec"]["endpoints"]}
    cfg = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    kept = {
        r["regex"]
        for job in cfg["scrape_configs"]
        for r in job["relabel_configs"]
        if r.get("source_labels") == ["__meta_kubernetes_endpoint_port_name"]
    }
    assert ports == kept
    # Every metrics Service of the base and kind overlay exposes one of those ports.
    for o in [*s.render("base"), *s.render("kind")]:
        if o["kind"] == "Service":
            assert {p["name"] for p in o["spec"]["ports"]} & ports, s.origin(o)


@pytest.mark.parametrize("path", s.DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_a_grafana_dashboard_with_queries(path: Path) -> None:
    board = json.loads(path.read_text())
    assert board["uid"] and board["title"]
    assert any(v["type"] == "datasource" for v in board["templating"]["list"])
    panels = [p for p in s._panels(board["panels"]) if p["type"] != "row"]
    assert panels
    ids = [p["id"] for p in s._panels(board["panels"])]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for p in panels:
        assert p.get("targets"), f"{path.name}: panel {p['title']!r} has no query"
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]


@pytest.mark.parametrize("path", s.DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_tells_jobs_and_schedulers_apart(path: Path) -> None:
    """Every selector filters by the job variable, and every scheduler panel whose metric
    carries the scheduler profile filters by it and keeps profiles apart (not summed)."""
    board = json.loads(path.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    for name in s.DASHBOARD_VARIABLES:
        assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*"
    by_profile = ("scheduler_schedule_attempts_total", "scheduling_attempt_duration_seconds")
    for q in s.dashboard_queries():
        selectors = re.findall(r"[a-z_:]+\{([^}]*)\}", q.expr)
        assert selectors and all('job=~"$job"' in sel for sel in selectors), q.where
        if any(m in q.expr for m in by_profile):
            grouped = re.search(r"sum by \(([^)]*)\)", q.expr)
            assert 'profile=~"$scheduler"' in q.expr, q.where
            assert grouped and "profile" in grouped.group(1), f"{q.where}: profiles summed"
    titles = [p["title"] for p in s._panels(board["panels"])]
    assert "Pod startup SLI" in titles


def test_dashboard_configmap_is_labelled_for_the_grafana_sidecar() -> None:
    cms = [o for o in s.render("monitoring") if o["kind"] == "ConfigMap"]
    (cm,) = [c for c in cms if c["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    assert cm["data"] == {p.name: p.read_text() for p in s.DASHBOARDS}


def unknown_metrics(queries: list[s.Query], known: set[str]) -> list[str]:
    """One line per query that names a metric nobody exports: '<file>: <object>: names ...'."""
    problems = []
    for q in queries:
        names = s.metric_names(s.grafana_to_promql(q.expr))
        if not names:
            problems.append(f"{q.where}: selects no metric: {q.expr}")
        missing = sorted(
            n
            for n in names
            if not n.startswith(CONTROL_PLANE_PREFIXES)
            and n not in PROMETHEUS_SERIES
            and s.family(n, known) is None
        )
        if missing:
            problems.append(f"{q.where}: names metrics no component exports: {missing}")
    return problems


def all_exported() -> set[str]:
    return set().union(*s.exported_families().values())


def test_every_dashboard_and_alert_metric_is_exported() -> None:
    problems = unknown_metrics([*s.dashboard_queries(), *s.alert_queries()], all_exported())
    assert not problems, "\n".join(problems)


def test_a_typo_in_a_panel_is_reported_with_file_and_panel() -> None:
    q = s.Query('dash.json: panel "Rate" target A', "sum(rate(extender_request_total[5m]))")
    (problem,) = unknown_metrics([q], all_exported())
    assert problem.startswith('dash.json: panel "Rate" target A')
    assert "extender_request_total" in problem


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            "sum by (verb) (rate(extender_requests_total{outcome!='ok'}[5m]))",
            {"extender_requests_total"},
        ),
        (
            'histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="by (y)"}[1m]))) > 0.1',
            {"a_bucket"},
        ),
        ("sum(a) / sum(b offset 5m) and on(instance) c", {"a", "b", "c"}),
        ("max by (instance) (extender_cache_ready) == 0", {"extender_cache_ready"}),
        ("sum(rate(x[$__rate_interval]))", {"x"}),
    ],
)
def test_metric_names_of_promql(expr: str, names: set[str]) -> None:
    assert s.metric_names(s.grafana_to_promql(expr)) == names


# promtool's rule unit tests for the alerts that say whether the extender is in the loop at
# all: each fires on the series that mean it and stays quiet on the ones that do not.
# Series are per minute; `stale` is a scrape that failed.
EXTENDER = {"job": "extender", "instance": "10.0.0.7:8888"}
FLEET = {"job": "fleet", "instance": "10.0.0.9:8080"}


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


PLACING = series(
    "scheduler_schedule_attempts_total",
    {"result": "scheduled", "profile": "default-scheduler"},
    "0+60x40",
)
"""kube-scheduler placing a pod a second for 40 minutes."""


def annotations(alert: str, **labels: str) -> dict[str, str]:
    """The alert's annotations as written, its `$labels` filled in (the rules under test)."""
    rules = yaml.safe_load(s.ALERT_RULES.read_text())
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == alert]
    out = {}
    for key, text in rule["annotations"].items():
        for label, value in labels.items():
            text = text.replace(f"{{{{ $labels.{label} }}}}", value)
        out[key] = text
    return out


PRESENCE_TESTS = [
    {  # The extender's target stops answering; a fleet target that never was one is down too.
        "interval": "1m",
        "input_series": [
            series("up", EXTENDER, "1x5 0x10"),
            series("extender_cache_ready", EXTENDER, "1x5 stale"),
            series("up", FLEET, "0x15"),
        ],
        "alert_rule_test": [
            {"eval_time": "5m", "alertname": "DRATestbedExtenderDown", "exp_alerts": []},
            {
                "eval_time": "10m",
                "alertname": "DRATestbedExtenderDown",
                "exp_alerts": [
                    {
                        "exp_labels": {**EXTENDER, "severity": "critical"},
                        "exp_annotations": annotations(
                            "DRATestbedExtenderDown", instance=EXTENDER["instance"]
                        ),
                    }
                ],
            },
            # Down, not absent: it was here within the last 15 minutes.
            {"eval_time": "10m", "alertname": "DRATestbedExtenderAbsent", "exp_alerts": []},
        ],
    },
    {  # No extender ever scraped.
        "interval": "1m",
        "input_series": [series("up", FLEET, "1x30")],
        "alert_rule_test": [
            {
                "eval_time": "25m",
                "alertname": "DRATestbedExtenderAbsent",
                "exp_alerts": [
                    {
                        "exp_labels": {"severity": "warning"},
                        "exp_annotations": annotations("DRATestbedExtenderAbsent"),
                    }
                ],
            },
            {"eval_time": "25m", "alertname": "DRATestbedExtenderDown", "exp_alerts": []},
        ],
    },
    {  # The scheduler keeps placing pods (1/s); the extender's filter calls stop at 10m.
        "interval": "1m",
        "input_series": [
            PLACING,
            series(
                "extender_requests_total", {"verb": "filter", "outcome": "ok"}, "0+60x10 600x30"
            ),
        ],
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "DRATestbedExtenderBypassed", "exp_alerts": []},
            {
                "eval_time": "25m",
                "alertname": "DRATestbedExtenderBypassed",
                "exp_alerts": [
                    {
                        "exp_labels": {"severity": "critical"},
                        "exp_annotations": annotations("DRATestbedExtenderBypassed"),
                    }
                ],
            },
        ],
    },
    {  # As shipped, a pod that requires nothing is only scored: prioritize calls alone.
        "interval": "1m",
        "input_series": [
            PLACING,
            series("extender_requests_total", {"verb": "prioritize", "outcome": "ok"}, "0+60x40"),
        ],
        "alert_rule_test": [
            {"eval_time": "25m", "alertname": "DRATestbedExtenderBypassed", "exp_alerts": []},
        ],
    },
    {  # 10 % of filter calls over 1 s (the scheduler waits 5 s); prioritize all fast.
        "interval": "1m",
        "input_series": [
            series("extender_request_duration_seconds_count", {"verb": "filter"}, "0+100x20"),
            series(
                "extender_request_duration_seconds_bucket",
                {"verb": "filter", "le": "1.0"},
                "0+90x20",
            ),
            series("extender_request_duration_seconds_count", {"verb": "prioritize"}, "0+100x20"),
            series(
                "extender_request_duration_seconds_bucket",
                {"verb": "prioritize", "le": "1.0"},
                "0+100x20",
            ),
        ],
        "alert_rule_test": [
            {
                "eval_time": "15m",
                "alertname": "DRATestbedExtenderNearTimeout",
                "exp_alerts": [
                    {
                        "exp_labels": {"verb": "filter", "severity": "warning"},
                        "exp_annotations": {
                            **annotations("DRATestbedExtenderNearTimeout", verb="filter"),
                            "summary": "10% of extender filter calls take over 1 s",
                        },
                    }
                ],
            },
        ],
    },
]


def promtool_test(
    tmp_path: Path, tests: list[dict[str, object]]
) -> subprocess.CompletedProcess[str]:
    spec = {"rule_files": [str(s.ALERT_RULES)], "evaluation_interval": "1m", "tests": tests}
    path = tmp_path / "alerts.test.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True)


def test_extender_presence_alerts_fire_on_what_they_mean_and_only_on_it(tmp_path: Path) -> None:
    out = promtool_test(tmp_path, PRESENCE_TESTS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_rule_tests_can_fail(tmp_path: Path) -> None:
    # The extender answering every scrape: expecting Down must fail.
    healthy = {
        "interval": "1m",
        "input_series": [
            series("up", EXTENDER, "1x15"),
            series("extender_cache_ready", EXTENDER, "1x15"),
        ],
        "alert_rule_test": [
            {
                "eval_time": "10m",
                "alertname": "DRATestbedExtenderDown",
                "exp_alerts": [{"exp_labels": {**EXTENDER, "severity": "critical"}}],
            }
        ],
    }
    assert promtool_test(tmp_path, [healthy]).returncode != 0
