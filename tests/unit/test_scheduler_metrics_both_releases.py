"""Every kube-scheduler series the project reads or charts works on both releases it runs:
1.37.2 and the 1.38 preview, whose scheduler renames the label `type` to `entity` on
`scheduler_queued_entities` and `scheduler_queue_incoming_entities_total`
(kubernetes/kubernetes#143180). Checked on real /metrics text of each (loadgen/recorded/README.md):
the dashboard's and the alert rules' queries (each label a query filters or groups a
scheduler series by is one that series carries in both) and loadgen's scheduler view (the
same keys from both)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loadgen import scheduler_view, series
from tests.support import deploy as s

RECORDED = Path(__file__).parent / "loadgen" / "recorded"
RELEASES = ("v1.37.2", "v1.38.0-beta.0")
# Labels Prometheus or the dashboard adds to every target, and histogram buckets'.
NOT_THE_SCHEDULERS = {"job", "instance", "le", "__name__"}
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{([^}]*)\})? ", re.M)
_LABEL = re.compile(r'(\w+)="')
_MATCHERS = re.compile(r"([A-Za-z_:][\w:]*)\s*\{([^}]*)\}")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def scrape(release: str) -> str:
    return (RECORDED / f"scheduler-metrics-{release}.txt").read_text()


def labels_of(text: str) -> dict[str, set[str]]:
    """Each series name in a /metrics text -> the label names its samples carry (pure)."""
    out: dict[str, set[str]] = {}
    for name, labels in _SAMPLE.findall(text):
        out.setdefault(name, set()).update(_LABEL.findall(labels))
    return out


def labels_used(expr: str, metric: str) -> set[str]:
    """The labels a PromQL expression matches `metric` on or groups by (grouping counted for
    every metric of the expression: it must hold for one of them)."""
    used = {label for m in _GROUPING.finditer(expr) for label in _names(m.group(1))}
    for name, matchers in _MATCHERS.findall(expr):
        if name == metric:
            used |= set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers))
    return used - NOT_THE_SCHEDULERS


def _names(listing: str) -> set[str]:
    return {x.strip() for x in listing.split(",") if x.strip()}


def test_the_recordings_are_the_two_releases_and_carry_the_rename() -> None:
    for release in RELEASES:
        assert f'git_version="{release}"' in scrape(release), release
    old, new = labels_of(scrape(RELEASES[0])), labels_of(scrape(RELEASES[1]))
    for name in ("scheduler_queued_entities", "scheduler_queue_incoming_entities_total"):
        assert "type" in old[name] and "entity" not in old[name], name
        assert "entity" in new[name] and "type" not in new[name], name


QUERIES = [*s.dashboard_queries(), *s.alert_queries()]


@pytest.mark.parametrize("release", RELEASES)
def test_every_scheduler_query_filters_and_groups_by_labels_the_release_exports(
    release: str,
) -> None:
    exported = labels_of(scrape(release))
    problems = []
    for q in QUERIES:
        expr = s.grafana_to_promql(q.expr)
        metrics = sorted(n for n in s.metric_names(expr) if n.startswith("scheduler_"))
        for name in metrics:
            if name not in exported:
                problems.append(f"{q.where}: {name} is not exported by {release}")
                continue
            missing = {
                label
                for label in labels_used(expr, name)
                if not any(label in exported.get(m, set()) for m in metrics)
            }
            if missing:
                problems.append(f"{q.where}: {name} has no label {sorted(missing)} in {release}")
    assert not problems, "\n".join(problems)


def test_a_query_on_the_old_label_fails_on_the_new_release() -> None:
    exported = labels_of(scrape(RELEASES[1]))
    expr = "sum by (type) (scheduler_queued_entities{queue='gated'})"
    assert labels_used(expr, "scheduler_queued_entities") == {"type", "queue"}
    assert "type" not in exported["scheduler_queued_entities"]


def test_loadgens_scheduler_view_reads_the_same_keys_from_both_releases() -> None:
    keys = []
    for release in RELEASES:
        samples = series.parse(scrape(release), prefixes=scheduler_view.PREFIXES)
        reduced = scheduler_view.reduce(samples)
        assert {f"{scheduler_view.PENDING}{q}" for q in scheduler_view.QUEUES} <= set(reduced)
        assert scheduler_view.build_info(samples)[0] == release
        keys.append({k.split(":")[0] for k in reduced})
    assert keys[0] == keys[1]
