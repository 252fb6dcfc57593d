"""The local cluster used as an existing cluster (experiment.sites.existing_site).

Bad kubeconfigs and contexts fail in one line and change nothing. An opened site creates only
what is missing (namespace, DeviceClasses, RBAC, kwok's controller and Stages), every object it
applies passes strict server-side validation, each variant gets its own second scheduler
(ConfigMap with its overrides, Deployment with its extender flags) and pods go through it,
and leaving removes exactly what the site created.

kwok fakes the scheduler Deployment's pod (Running, doing nothing), so `LocalPods` runs that
pod's containers as local processes from the objects as applied; the Deployment's pod (and
kwok's own controller pod) land on one untainted fake node the test adds for them.

The tests are synchronous, as the runner that opens a site is.
"""

from __future__ import annotations

import secrets
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from experiment.sites import cluster_objects as co
from experiment.sites import existing_site as es
from experiment.sites.site import SchedulerSetup
from loadgen.report import document
from testbed import vocab
from testbed.kube import kubeconfig as kc
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import private_fleet as pf
from tests.support.kubeconfigs import with_dead_context
from tests.support.pod_stand_in import LocalPods
from tests.support.site_checks import MANIFESTS, call, key, snapshot

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

T = TypeVar("T")
LOADGEN = str(Path(sys.executable).parent / "loadgen")
KNOB = SchedulerSetup(extender=False, config={"percentageOfNodesToScore": 50})
WEIGHTS = SchedulerSetup(extender_args=("--weight-packing", "0"))


def test_bad_kubeconfig_or_context_fails_in_one_line_and_changes_nothing(
    kubeconfig: str, tmp_path: Path
) -> None:
    before = call(kubeconfig, snapshot)
    path = with_dead_context(kubeconfig, tmp_path / "two-contexts")
    with pytest.raises(es.SiteError) as dead, es.opened(kubeconfig_path=path, context="dead"):
        pytest.fail("opened a cluster that does not answer")
    assert "cannot reach the cluster at https://127.0.0.1:1" in str(dead.value)
    with (
        pytest.raises(es.SiteUsageError) as unknown,
        es.opened(kubeconfig_path=path, context="nope"),
    ):
        pytest.fail("opened an unknown context")
    assert "no context 'nope'" in str(unknown.value) and "dead" in str(unknown.value)
    absent = tmp_path / "absent"
    with (
        pytest.raises(es.SiteUsageError, match="cannot read kubeconfig"),
        es.opened(kubeconfig_path=absent),
    ):
        pytest.fail("opened a missing kubeconfig")
    with pytest.raises(es.SiteError) as release, es.opened(kubeconfig_path=path, release="1.20"):
        pytest.fail("opened a cluster of another release than asked")
    assert "asks for Kubernetes 1.20; the cluster runs v1." in str(release.value)
    assert es.preflight(path).startswith("v1.")
    for err in (dead.value, unknown.value, release.value):
        assert "\n" not in str(err)
    assert call(kubeconfig, snapshot) == before


def strict_dry_run(site: es.ExistingSite, objs: list[dict[str, Any]]) -> list[str]:
    """Server-side apply of each object with dryRun=All and strict field validation; the
    failures, as `Kind name: error`."""

    async def go(kube: Kube) -> list[str]:
        failed = []
        for obj in objs:
            res = await site.api.resource(kube, obj)
            meta = obj["metadata"]
            path = res.path(meta.get("namespace") if res.namespaced else None, meta["name"])
            query = [
                ("fieldManager", co.FIELD_MANAGER),
                ("dryRun", "All"),
                ("fieldValidation", "Strict"),
                ("force", "true"),
            ]
            try:
                await kube.request(
                    "PATCH", path, query=query, body=obj,
                    content_type="application/apply-patch+yaml",
                )  # fmt: skip
            except Exception as e:  # collected and asserted on
                failed.append(f"{obj['kind']} {meta['name']}: {e}")
        return failed

    return call(site.kubeconfig, go)


def scraped(url: str) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
        return str(resp.read().decode())


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


def config_map_of(name: str) -> Callable[[Kube], Awaitable[dict[str, Any]]]:
    return lambda kube: kube.get(r.CONFIG_MAPS, name, co.NAMESPACE)


def run_loadgen(site: es.ExistingSite, sched: Any, fleet: str, out: Path, pods: int) -> Any:
    cmd = [
        LOADGEN, "run", "pods", f"pods={pods}",
        f"gpu_class={vocab.CLASS_GPU}", f"nic_class={vocab.CLASS_RDMA_NIC}",
        "--kubeconfig", str(site.kubeconfig),
        "--node-selector", f"{vocab.LABEL_FLEET}={fleet}",
        "--scheduler-name", sched.name, "--scrape", f"scheduler={sched.metrics_url}",
        "--output-dir", str(out), "--run-id", f"site-{secrets.token_hex(3)}", "-q",
    ]  # fmt: skip
    if sched.extender_metrics_url:
        cmd += ["--scrape", f"extender={sched.extender_metrics_url}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return document.load(out / "result.json")


def test_variants_run_through_their_own_schedulers_and_leaving_removes_what_was_made(
    kubeconfig: str, host_node: str, tmp_path: Path
) -> None:
    before = call(kubeconfig, snapshot)
    context = kc.current_context(Path(kubeconfig))
    pods = LocalPods()
    with es.opened(
        kubeconfig_path=kubeconfig, context=context, stand_in=pods, ready_timeout=180
    ) as site:
        # Children get the chosen context alone, flattened, readable by its owner only.
        assert kc.current_context(site.kubeconfig) == context
        assert site.kubeconfig.stat().st_mode & 0o077 == 0
        assert context in site.description and "Kubernetes v1." in site.description
        # It created exactly what was missing.
        during = call(kubeconfig, snapshot)
        made = {(c.res.kind, key(c.res, c.name, c.namespace)) for c in site.created}
        assert {m for m in made if m[0] != "Stage"} == during - before
        assert any(k == "Stage" for k, _ in made) == (
            ("CustomResourceDefinition", "stages.kwok.x-k8s.io") in made
        )
        # A second site on the same cluster finds everything there: creates and deletes
        # nothing (kwok included: its controller and every Stage exist).
        with es.opened(kubeconfig_path=site.kubeconfig, stand_in=pods) as again:
            assert again.created == []
        assert call(kubeconfig, snapshot) == during
        # Every object the site applies, and the variants', passes strict validation.
        m = co.Manifests.load(MANIFESTS)
        variants = [o for s in (KNOB, WEIGHTS) for o in co.variant(
            m, s, image="dra-testbed:dev", scheduler_image="registry.k8s.io/kube-scheduler:v1"
        )]  # fmt: skip
        assert strict_dry_run(site, [*co.shared(m), *co.kwok(m), *variants]) == []

        fleet = pf.Fleet(suffix="", nodes=[])

        async def make(kube: Kube) -> None:
            nonlocal fleet
            fleet = await pf.make_fleet(kube, str(site.kubeconfig), nodes=2)

        call(site.kubeconfig, make)
        try:
            for setup in (KNOB, WEIGHTS):
                name = co.variant_name(setup, run=site.run)
                with site.scheduler(setup, tmp_path / name) as sched:
                    assert sched.name == name
                    with site.scheduler(setup, tmp_path / "again") as same:
                        assert same == sched  # shared, not made twice
                    cm = call(site.kubeconfig, config_map_of(name))
                    cfg = yaml.safe_load(cm["data"][co.CONFIG_KEY])
                    assert cfg.get("percentageOfNodesToScore") == setup.config.get(
                        "percentageOfNodesToScore"
                    )
                    doc = run_loadgen(site, sched, fleet.suffix, tmp_path / f"{name}-run", 4)
                    assert doc.counts.pods_running == 4 and doc.cleaned_up
                    text = scraped(sched.metrics_url)
                    scheduled = metric(
                        text, "scheduler_schedule_attempts_total", profile=name, result="scheduled"
                    )
                    assert scheduled >= 4
                    if setup.extender:
                        ext = scraped(str(sched.extender_metrics_url))
                        # Scored (where more than one node fits), never filtered: these pods
                        # require no placement (the shipped entries route only those).
                        assert metric(ext, "extender_requests_total", verb="prioritize") >= 1
                        assert metric(ext, "extender_requests_total", verb="filter") == 0
                        assert "extender" in doc.metrics
                    else:
                        assert sched.extender_metrics_url is None
            assert pods.started == [co.variant_name(s, run=site.run) for s in (KNOB, WEIGHTS)]
            # A variant's objects are gone once its block ends.
            left = call(
                site.kubeconfig,
                lambda k: k.list(es.DEPLOYMENTS, label_selector=co.LABEL_VARIANT),
            )
            assert left.items == []
        finally:
            call(site.kubeconfig, lambda k: pf.remove_fleet(k, str(site.kubeconfig), fleet))
    assert call(kubeconfig, snapshot) == before


def test_a_variant_that_never_comes_up_fails_in_one_line_and_leaves_nothing(
    kubeconfig: str, host_node: str, tmp_path: Path
) -> None:
    """With the only untainted node cordoned the variant's pod stays unschedulable: the site
    says so (the scheduler's reason) and deletes the variant's objects."""
    before = call(kubeconfig, snapshot)

    def cordon(on: bool) -> None:
        call(kubeconfig, lambda k: k.patch(r.NODES, host_node, {"spec": {"unschedulable": on}}))

    with es.opened(kubeconfig_path=kubeconfig, stand_in=LocalPods(), ready_timeout=20) as site:
        cordon(True)
        try:
            with pytest.raises(es.SiteError) as failed, site.scheduler(KNOB, tmp_path):
                pytest.fail("a scheduler came up with no node to run on")
        finally:
            cordon(False)
        message = str(failed.value)
        assert "\n" not in message
        assert co.variant_name(KNOB, run=site.run) in message and "not scheduled" in message
        for res in (es.DEPLOYMENTS, r.CONFIG_MAPS):
            left = call(site.kubeconfig, lambda k, res=res: k.list(  # type: ignore[misc]
                res, namespace=co.NAMESPACE, label_selector=co.LABEL_VARIANT
            ))  # fmt: skip
            assert left.items == []
    assert call(kubeconfig, snapshot) == before
