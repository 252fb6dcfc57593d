"""Where the extender's CPU goes: its own CPU clock per stage, exposed and read back."""

from __future__ import annotations

import random
import time
from pathlib import Path

import aiohttp
import yaml
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import cpu_stages
from extender.config import Settings
from loadgen import series
from loadgen.report import explanation
from tests.support.served_extender import args, post, served
from tests.unit.extender.helpers import cluster_objects, pair_pod


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_lap_adds_the_threads_cpu_since_the_reading_to_its_stage() -> None:
    stages = cpu_stages.CpuStages(period=1)
    t = stages.start()
    _spin(0.02)
    t = stages.lap("judge", t)
    time.sleep(0.05)  # wall time, no CPU: not counted
    stages.lap("encode", t)
    assert 0.02 <= stages.seconds["judge"] < 0.2
    assert stages.seconds["encode"] < 0.01
    assert set(stages.seconds) == set(cpu_stages.STAGES)


def test_a_sampled_stretch_counts_for_the_period_and_others_cost_no_clock_reading() -> None:
    stages = cpu_stages.CpuStages(period=4, rng=random.Random(7))
    sampled = 0
    for _ in range(400):
        t = stages.start()
        if t is not None:
            sampled += 1
            _spin(0.001)
        assert (stages.lap("judge", t) is None) == (t is None)
    assert 60 <= sampled <= 140  # about one in four
    # Each sampled millisecond counts four times: about the 400 stretches' worth.
    assert sampled * 4 * 0.001 <= stages.seconds["judge"] < sampled * 4 * 0.0025


async def test_each_call_counts_its_stages_on_metrics(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects()))
    app = app_mod.build(Settings(), registry=CollectorRegistry())
    app[app_mod.handlers.CORE].stages.period = 1  # every call timed
    async with served(app, path) as srv:
        before = app[app_mod.handlers.CORE].stages.seconds.copy()
        for _ in range(20):
            status, _ = await post(srv, "prioritize", args(pair_pod(), ["un", "al"]))
            assert status == 200
        async with aiohttp.ClientSession() as s, s.get(srv.make_url("/metrics")) as r:
            text = await r.text()
    after = series.parse(text, ("extender_cpu_seconds_total",))
    for stage in ("decode", "demand", "judge", "encode"):
        assert after[f'extender_cpu_seconds_total{{stage="{stage}"}}'] > before[stage], stage


def test_the_stage_profile_names_what_the_stages_cover_and_the_rest() -> None:
    deltas = {
        'extender_cpu_seconds_total{stage="decode"}': 0.5,
        'extender_cpu_seconds_total{stage="judge"}': 1.5,
        'extender_cpu_seconds_total{stage="events"}': 1.0,
        "process_cpu_seconds_total": 4.0,
    }
    p = explanation.stage_profile(deltas, run_seconds=60)
    assert p is not None and p.source == "stages"
    shares = p.shares()
    assert shares == {
        "decode": 0.125,
        "judge": 0.375,
        "events": 0.25,
        explanation.EXTENDER_REST: 0.25,
    }
    assert p.coverage == 0.75 and p.cpu_seconds == 4.0


def test_no_stage_profile_without_stages_or_cpu() -> None:
    assert explanation.stage_profile({"process_cpu_seconds_total": 3.0}, 10) is None
    staged = {'extender_cpu_seconds_total{stage="judge"}': 0.0}
    assert explanation.stage_profile(staged, 10) is None
