"""A run explained on the real local cluster: `loadgen` finds the cluster's kube-scheduler by
itself, samples its queues through the run, and profiles it with the admin certificate; a
client without credentials is refused (403) and the run says so and goes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from loadgen import cpu, explaining, pprof
from loadgen.report import document
from testbed.cluster import discovery
from testbed.kube import errors
from testbed.kube.client import Kube
from tests.support import children
from tests.support.private_fleet import FLEET_LABEL, Fleet

pytestmark = pytest.mark.cluster


def _scheduler_profile_url(kube: Kube) -> str:
    found = discovery.endpoints(kube.host)
    if "scheduler" not in found:
        pytest.skip("not a local testbed cluster: its kube-scheduler is not ours to profile")
    url = explaining.profile_url(found["scheduler"])
    assert url is not None
    return url


async def test_the_admin_client_profiles_kube_scheduler(kube: Kube) -> None:
    data = await explaining.fetch_profile(kube, _scheduler_profile_url(kube), 1)
    profile = pprof.decode(data)
    assert profile.sample_type == "cpu" and profile.duration_seconds >= 1.0
    # An idle scheduler still has a few samples; all of them land in some category.
    assert set(cpu.breakdown([profile]).by_category) == set(cpu.CATEGORIES)


def _anonymous(kubeconfig: str, dest: Path) -> Path:
    """The cluster's kubeconfig with a user that has no credentials."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    doc["users"] = [{"name": "nobody", "user": {}}]
    doc["contexts"][0]["context"]["user"] = "nobody"
    dest.write_text(yaml.safe_dump(doc))
    return dest


async def test_a_client_without_credentials_is_refused_in_one_line(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    url = _scheduler_profile_url(kube)
    path = _anonymous(kubeconfig, tmp_path / "anonymous.yaml")
    async with await Kube.connect(kubeconfig=path) as anonymous:
        with pytest.raises(errors.Forbidden) as e:
            await explaining.fetch_profile(anonymous, url, 1)
    assert explaining.why(e.value).startswith("HTTP 403: ")


async def test_a_local_run_carries_the_scheduler_view(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    _scheduler_profile_url(kube)
    run_id = f"explain-{fleet.suffix}"
    fleet.run_ids.append(run_id)
    log = tmp_path / "loadgen.log"
    code = await children.run_tool(
        dict(os.environ), "loadgen", "--pods", "4", "--kubeconfig", kubeconfig,
        "--node-selector", f"{FLEET_LABEL}={fleet.suffix}", "--run-id", run_id,
        "--output-dir", str(tmp_path), "-q", log=log, within=300,
    )  # fmt: skip
    out = log.read_text()
    assert code == 0, out
    e = document.load(tmp_path / "result.json").explanation
    assert e is not None and e.scheduler is not None
    assert e.scheduler.release.startswith("v1.")
    assert len(e.scheduler.seconds) >= 2  # the first scrape and the last, at least
    assert "pending:active" in e.scheduler.values
    assert e.scheduler.totals.scheduled >= 4
    # Profiled however short the run: its first slice is waited for. (Its coverage, over a
    # dozen samples, is tested on recorded short profiles: tests/unit/loadgen.)
    p = e.cpu["scheduler"]
    assert p.profiled, p.reason
    assert p.seconds_profiled >= explaining.slice_seconds(0) and p.categories
    assert "kube-scheduler v1." in out
