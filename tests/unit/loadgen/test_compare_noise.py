"""`loadgen compare`: a change counts only past the runs' own noise (each run's sampling
interval, or the repeats' spread), and `--fail-on-regression` turns one into exit 1."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from loadgen import cli, compare, stats
from loadgen.commands import comparison
from loadgen.report import document
from tests.support import synthetic_run as synthetic


def _doc(startup_ms: float, spread: float = 0.0, n: int = 1000) -> document.ResultDoc:
    """A run whose pod startups are spread evenly over startup_ms * (1 -+ spread)."""
    doc = document.build(synthetic.run_result(startup_ms))
    low, high = startup_ms * (1 - spread), startup_ms * (1 + spread)
    points = [(low + (high - low) * (i + 1) / 200, (i + 1) / 200) for i in range(200)]
    summary = doc.latency_ms["pod_startup"].model_copy(
        update={
            "count": n,
            "Perc50": points[99][0],
            "Perc90": points[179][0],
            "Perc99": points[197][0],
        }
    )
    return doc.model_copy(
        update={
            "latency_ms": {**doc.latency_ms, "pod_startup": summary},
            "cdf_ms": {**doc.cdf_ms, "pod_startup": points},
        }
    )


def _sampled(samples_ms: list[float]) -> document.ResultDoc:
    """`_doc` with these pod startups: their CDF, count and nearest-rank percentiles."""
    ordered = sorted(samples_ms)
    doc = document.build(synthetic.run_result(1000.0))
    summary = doc.latency_ms["pod_startup"].model_copy(
        update={
            "count": len(ordered),
            **{
                k: _nearest_rank(ordered, p)
                for k, p in (("Perc50", 0.5), ("Perc90", 0.9), ("Perc99", 0.99))
            },
        }
    )
    return doc.model_copy(
        update={
            "latency_ms": {**doc.latency_ms, "pod_startup": summary},
            "cdf_ms": {**doc.cdf_ms, "pod_startup": stats.cdf(ordered)},
        }
    )


def _nearest_rank(ordered: list[float], p: float) -> float:
    return ordered[max(1, math.ceil(p * len(ordered))) - 1]


def _change(found: list[compare.Change], metric: str) -> compare.Change:
    return next(c for c in found if c.metric == metric)


def test_a_quantiles_noise_is_the_order_statistics_that_bracket_it() -> None:
    uniform = [((i + 1) / 1000, (i + 1) / 1000) for i in range(1000)]
    # p = 0.5 of 100 samples: ranks 50 -+ 1.96 * 5, so 0.402..0.598 of a uniform: +-19.6 %
    assert compare.quantile_noise(uniform, 100, 0.5) == pytest.approx(19.6, abs=0.3)
    # Four times the samples, half the noise.
    assert compare.quantile_noise(uniform, 400, 0.5) == pytest.approx(9.8, abs=0.3)
    # Too few samples beyond the quantile to bound it: no change of it counts.
    assert compare.quantile_noise(uniform, 3, 0.5) == math.inf
    assert compare.quantile_noise(uniform, 150, 0.99) == math.inf
    # The p99 of 200 pods: its upper rank runs past the largest sample, so the whole span
    # from its lower end (rank ~195) to the largest counts: 0.976..1.0 of a uniform, +-2.4 %.
    assert compare.quantile_noise(uniform, 200, 0.99) == pytest.approx(2.4, abs=0.3)


def test_a_means_noise_is_its_standard_error() -> None:
    assert compare.mean_noise([10.0] * 30) == 0.0
    samples = [9.0, 11.0] * 50  # mean 10, sd ~1.005, n 100: t(0.975, 99) 1.984 * 0.1005 / 10
    assert compare.mean_noise(samples) == pytest.approx(1.99, abs=0.01)
    assert compare.mean_noise([10.0]) == math.inf


def test_a_change_inside_the_noise_is_the_same_and_past_it_is_worse() -> None:
    base = _doc(1000.0, spread=0.5, n=50)
    within = compare.changes(base, _doc(1050.0, spread=0.5, n=50))
    row = _change(within, "pod_startup Perc50 (ms)")
    assert row.change_percent == pytest.approx(5.0, abs=0.6)
    assert row.noise_percent > 5 and row.judgement == "same"
    past = compare.changes(base, _doc(1500.0, spread=0.5, n=50))
    assert _change(past, "pod_startup Perc50 (ms)").judgement == "worse"
    assert compare.regressions(past)


def test_no_noise_still_needs_the_floor_and_fewer_pods_running_is_worse() -> None:
    a, b = _doc(1000.0), _doc(1010.0)
    row = _change(compare.changes(a, b), "pod_startup Perc99 (ms)")
    assert row.noise_percent == 0.0 and row.threshold_percent == compare.DEFAULT_FLOOR_PERCENT
    assert row.judgement == "same"  # +1 % is under the 2 % floor
    assert _change(compare.changes(a, b, 0.5), "pod_startup Perc99 (ms)").judgement == "worse"
    fewer = b.model_copy(update={"counts": b.counts.model_copy(update={"pods_running": 5})})
    assert _change(compare.changes(a, fewer), "pods running").judgement == "worse"


def test_repeats_bring_their_own_spread() -> None:
    noisy_a = [_doc(ms) for ms in (800.0, 1000.0, 1200.0)]
    noisy_b = [_doc(ms) for ms in (900.0, 1100.0, 1300.0)]
    row = _change(compare.changes(noisy_a, noisy_b), "pod_startup Perc99 (ms)")
    assert row.change_percent == pytest.approx(10.0) and row.judgement == "same"
    tight_a = [_doc(ms) for ms in (995.0, 1000.0, 1005.0)]
    tight_b = [_doc(ms) for ms in (1095.0, 1100.0, 1105.0)]
    row = _change(compare.changes(tight_a, tight_b), "pod_startup Perc99 (ms)")
    assert row.judgement == "worse" and 0 < row.noise_percent < 10


def _write(tmp: Path, name: str, doc: document.ResultDoc) -> str:
    return str(document.write(doc, tmp / name))


def test_fail_on_regression_exits_1_and_lists_what_got_worse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _write(tmp_path, "a", _doc(1000.0)), _write(tmp_path, "b", _doc(2000.0))
    for argv, code in (
        (["compare", a, b], 0),
        (["compare", a, b, "--fail-on-regression"], 1),
        (["compare", a, a, "--fail-on-regression"], 0),
        (["compare", f"{a},{a}", f"{b},{b}", "--fail-on-regression"], 1),
    ):
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == code, argv
    err = capsys.readouterr().err
    assert "figures got worse past their noise: " in err and "pod_startup Perc99" in err


def test_compare_as_json_carries_the_noise_and_the_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _write(tmp_path, "a", _doc(1000.0)), _write(tmp_path, "b", _doc(2000.0))
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", a, b, "-o", "json"])
    assert done.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(r for r in doc["rows"] if r["metric"] == "pod_startup Perc99 (ms)")
    assert row["change_percent"] == pytest.approx(100.0) and row["judgement"] == "worse"
    assert {"noise_percent", "threshold_percent"} <= row.keys()
    assert "pod_startup Perc99 (ms)" in doc["regressions"]


@pytest.mark.parametrize(
    ("content", "says"),
    [("not json\n", "not JSON"), ('{"a": 1}', "schema_version"), ("[1, 2]", "not a loadgen")],
)
def test_a_file_that_is_not_a_result_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(bad), str(bad)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and says in err and err.count("\n") == 1, err


DISTRIBUTIONS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "lognormal": lambda rng, n: rng.lognormal(7.0, 0.5, n),
    "exponential": lambda rng, n: 1000.0 * rng.exponential(1.0, n),
    "uniform": lambda rng, n: rng.uniform(1000.0, 2000.0, n),
}


def _p99_judged(a: np.ndarray, b: np.ndarray) -> float:
    """How far b's p99 is past the threshold of a -> b, in % (positive: counted)."""
    sa, sb = sorted(a.tolist()), sorted(b.tolist())
    qa, qb = _nearest_rank(sa, 0.99), _nearest_rank(sb, 0.99)
    noise = compare.combined_noise(
        compare.quantile_noise(stats.cdf(sa), len(sa), 0.99),
        compare.quantile_noise(stats.cdf(sb), len(sb), 0.99),
    )
    return abs(qb - qa) / qa * 100 - max(compare.DEFAULT_FLOOR_PERCENT, noise)


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_the_p99_of_200_pods_is_calibrated_by_simulation(name: str) -> None:
    """Two runs of one distribution, 200 pods each: their p99s differ past the threshold in
    at most 5 % of pairs (a 95 % interval's promise); the same runs with every startup
    tripled are flagged in at least 90 %."""
    rng = np.random.default_rng(20261127)
    draw = DISTRIBUTIONS[name]
    pairs = 400
    false_changes = tripled_flagged = 0
    for _ in range(pairs):
        a, b = draw(rng, 200), draw(rng, 200)
        false_changes += _p99_judged(a, b) > 0
        tripled_flagged += _p99_judged(a, b * 3) > 0
    assert false_changes / pairs <= 0.05, false_changes
    assert tripled_flagged / pairs >= 0.90, tripled_flagged


def test_a_tripled_p99_on_200_pods_is_worse_and_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(7)
    before = rng.lognormal(7.0, 0.5, 200)
    after = before.copy()
    after[before >= np.quantile(before, 0.97)] *= 3  # the slowest 3 %: the p99 triples
    a, b = _sampled(before.tolist()), _sampled(after.tolist())
    row = _change(compare.changes(a, b), "pod_startup Perc99 (ms)")
    assert row.change_percent == pytest.approx(200.0, abs=1.0)
    assert math.isfinite(row.noise_percent) and row.judgement == "worse"
    with pytest.raises(SystemExit) as done:
        cli.main(
            ["compare", _write(tmp_path, "a", a), _write(tmp_path, "b", b), "--fail-on-regression"]
        )
    assert done.value.code == 1
    assert "pod_startup Perc99" in capsys.readouterr().err


def test_runs_of_different_loads_are_refused_with_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = document.build(synthetic.run_result(1000.0, pods=10))
    large = document.build(synthetic.run_result(1000.0, pods=40))
    a, b = _write(tmp_path, "a", small), _write(tmp_path, "b", large)
    for argv in (["compare", a, b], ["compare", a, b, "--fail-on-regression", "-o", "json"]):
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == comparison.EXIT_INCOMPARABLE == 3
        captured = capsys.readouterr()
        assert not captured.out
        assert captured.err.count("\n") == 1 and "not under the same load" in captured.err
        assert "pods: 10 (" in captured.err and "vs 40 (" in captured.err
    assert compare.load_differences(small, [small, small]) == []
    assert compare.load_differences([small, large], small)  # repeats of one side, too


def test_an_empty_path_between_commas_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write(tmp_path, "a", _doc(1000.0))
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", f"{a},,{a}", a])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "empty path between commas" in err, err
