"""BENCHMARKS.md against the kept result documents in docs/results/: the file is the page they
give and nothing else (no text by hand, every topic page of the narrative linked, a bound on its
lines), and every figure on it is derived again here, independently of the engine
(statistics.median, scipy's trimmed mean and t), from each arm's per-repeat values; the result
data the repository tracks stays within its budget."""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from publish import kept, perf_page, results_page
from tests.support import children

ROOT = Path(__file__).resolve().parents[3]
KEPT = ROOT / "docs" / "results"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _docs() -> list[kept.Kept]:
    return kept.load_all(KEPT)


def _numbers(cell: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(cell)]


def _close(printed: float, exact: float) -> bool:
    """Equal as the page prints three significant digits (whole numbers from 100 up)."""
    return abs(printed - exact) <= max(0.005 * abs(exact), 0.5 if abs(exact) >= 100 else 0.0)


def _trimmed_t(logs: list[float]) -> tuple[float, float, int]:
    """The 10 % trimmed mean (scipy's), the standard error from the winsorised spread and
    its degrees of freedom, n - 3g - 1 with g trimmed at each end (Student's t for g = 0)."""
    n, ordered = len(logs), sorted(logs)
    g = int(0.1 * n)
    winsorised = [min(max(v, ordered[g]), ordered[n - g - 1]) for v in ordered]
    se = statistics.stdev(winsorised) / ((n - 2 * g) / n * math.sqrt(n))
    return float(stats.trim_mean(logs, 0.1)), se, n - 3 * g - 1


def _interval(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The ratio's point (exp of the trimmed mean log-ratio: the geometric mean below 10
    pairs) and its 95 % interval, from scratch."""
    m, se, df = _trimmed_t([math.log(x / y) for x, y in zip(a, b, strict=True)])
    half = float(stats.t.ppf(0.975, df)) * se
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def test_there_are_kept_documents_for_each_question() -> None:
    assert {d.question for d in _docs()} == set(kept.QUESTIONS)


def test_benchmarks_is_the_page_the_kept_documents_give_and_nothing_else() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    assert results_page.by_hand(text) == 0, (
        "BENCHMARKS.md is generated whole: narrative goes to docs/results/narrative/ (its "
        "README.md says where)"
    )
    assert text == results_page.written(KEPT)[0], (
        "BENCHMARKS.md disagrees with docs/results/: run `testbed results`"
    )


def test_benchmarks_is_at_most_250_lines() -> None:
    assert results_page.MAX_LINES <= 250
    assert (ROOT / "BENCHMARKS.md").read_text().count("\n") <= results_page.MAX_LINES


def test_the_page_links_every_topic_page_of_the_narrative_and_the_history() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    pages = sorted((KEPT / results_page.NARRATIVE).glob("*.md"))
    topics = [p for p in pages if p.name != "README.md"]
    assert len(topics) >= 10 and len(pages) == len(topics) + 1
    for p in topics:
        title = p.read_text().partition("\n")[0].removeprefix("# ")
        assert f"- [{title}](docs/results/narrative/{p.name})" in text, p.name
    assert "(docs/results/narrative/README.md)" in text
    assert f"(docs/results/{results_page.HISTORY})" in text


def test_a_topic_page_without_its_title_line_is_refused(tmp_path: Path) -> None:
    (tmp_path / results_page.NARRATIVE).mkdir()
    (tmp_path / results_page.NARRATIVE / "a.md").write_text("# A topic\n\nentry\n")
    assert results_page.topics(tmp_path) == [("a.md", "A topic")]
    (tmp_path / results_page.NARRATIVE / "b.md").write_text("### 2026-11-28, abc1234, 1.37.2\n")
    with pytest.raises(kept.KeptError, match=r"b\.md: the first line is not"):
        results_page.topics(tmp_path)


def test_tracked_result_data_stays_within_5_mb() -> None:
    """Raw arm files are not tracked (each narrative entry's command makes them again): what
    bench/results and docs/results hold is kept documents, summaries and the arm files a test
    reads."""
    files = [p for d in ("bench/results", "docs/results") for p in (ROOT / d).rglob("*")]
    assert sum(p.stat().st_size for p in files if p.is_file()) <= 5_000_000


def test_every_figure_on_the_page_is_derived_again_from_the_values() -> None:
    block = results_page.current((ROOT / "BENCHMARKS.md").read_text())
    assert block is not None
    _derive_again(block, _docs())


def test_the_runs_against_scheduler_perf_on_the_topic_page_are_derived_again() -> None:
    docs = kept.load_all(KEPT / perf_page.AGAINST)
    assert docs, "no kept run of loadgen against scheduler_perf"
    page = (KEPT / perf_page.PAGE).read_text()
    section = page.split("## loadgen end to end against scheduler_perf", 1)[1].split("\n## ", 1)[0]
    _derive_again(section, docs)


def _derive_again(block: str, docs: list[kept.Kept]) -> None:
    """Every headline row of `docs` is on `block` once, with the medians, ranges, paired
    interval and verdict computed here from the values; and nothing else is."""
    sections = {
        part.split("\n", 1)[0]: [
            ln for ln in part.splitlines() if ln.startswith("| ") and not ln.startswith("| figure")
        ]
        for part in block.split("\n#### ")[1:]
    }
    rows = [ln for lines in sections.values() for ln in lines]
    checked = 0
    for doc in docs:
        for row in (r for r in doc.rows if r.headline):
            mine = sections[doc.title]
            cells = [c for c in mine if c.startswith(f"| {row.name} ({row.unit}) | {row.a.label} ")]
            assert len(cells) == 1, f"{doc.id}: {row.name} [{row.a.label}] not on the page once"
            _, a_cell, b_cell, ratio_cell, _, verdict = cells[0].strip("| ").split(" | ")
            if row.target is not None and not verdict.startswith("inconclusive"):
                # The notes beside a verdict: pairs dropped, outliers (`results_page._verdict`).
                verdict, _, notes = verdict.partition(" (")
                logs = [math.log(x / y) for x, y in zip(row.a.values, row.b.values, strict=True)]
                mid = statistics.median(logs)
                mad = 1.4826 * statistics.median(abs(v - mid) for v in logs)
                # Looked for from 4 pairs: past 3 robust sd (MADs) of the median.
                far = [
                    i
                    for i, v in enumerate(logs)
                    if len(logs) >= 4 and mad and abs(v - mid) > 3 * mad
                ]
                assert all(f"pair {i + 1} ratio " in notes for i in far), cells[0]
                assert ("outliers: " in notes) == bool(far), cells[0]
            for cell, arm in ((a_cell, row.a), (b_cell, row.b)):
                values = arm.values
                assert cell.startswith(f"{arm.label} "), cell
                printed = _numbers(cell.removeprefix(arm.label))  # a label may hold digits
                expected = [statistics.median(values)]
                if doc.repeats > 1:
                    expected += [min(values), max(values)]
                assert len(printed) == len(expected), cell
                assert all(_close(p, e) for p, e in zip(printed, expected, strict=True)), cell
            if doc.repeats == 1:
                assert _close(_numbers(ratio_cell)[0], row.a.values[0] / row.b.values[0])
            else:
                point, low, high = _interval(row.a.values, row.b.values)
                printed = _numbers(ratio_cell.replace("95 %", ""))
                assert all(
                    _close(p, e) for p, e in zip(printed, (point, low, high), strict=True)
                ), ratio_cell
            if row.target is not None and doc.repeats > 1:
                logs = [math.log(x / y) for x, y in zip(row.a.values, row.b.values, strict=True)]
                d = [v - math.log(row.target.threshold) for v in logs]
                if statistics.stdev(d) == 0:
                    low = high = d[0]
                    p = 0.0
                else:
                    m, se, df = _trimmed_t(d)
                    p = float(2 * stats.t.sf(abs(m / se), df))
                    _, lo_r, hi_r = _interval(row.a.values, row.b.values)
                    low, high = (
                        math.log(lo_r / row.target.threshold),
                        math.log(hi_r / row.target.threshold),
                    )
                good = low > 0 if row.target.at_least else high < 0
                bad = high < 0 if row.target.at_least else low > 0
                if p < 0.05 and (good or bad):
                    assert verdict == ("met" if good else "missed"), cells[0]
                else:
                    assert verdict.startswith("inconclusive"), cells[0]
            checked += 1
    assert checked == len(rows)  # and nothing on the page without a kept row behind it


def test_the_answers_in_brief_repeat_the_tables_figures() -> None:
    block = results_page.current((ROOT / "BENCHMARKS.md").read_text())
    assert block is not None
    brief, tables = block.split("\n### ", 1)
    joined = " ".join(ln.strip() for ln in brief.splitlines())
    for doc in _docs():
        for row in results_page.brief_rows(doc):
            section = tables.split(f"#### {doc.title}\n", 1)[1].split("\n#### ", 1)[0]
            (line,) = [
                ln
                for ln in section.splitlines()
                if ln.startswith(f"| {row.name} ({row.unit}) | {row.a.label} ")
            ]
            ratio = line.strip("| ").split(" | ")[3]
            assert f"{row.name} {row.a.label}/{row.b.label} {ratio}" in joined, row.name


def test_a_changed_value_makes_the_page_disagree(tmp_path: Path) -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    copy = tmp_path / "results"
    shutil.copytree(KEPT, copy)
    assert results_page.written(copy)[0] == text
    src = next(copy.glob("extender-dra-*.json"))
    doc: dict[str, Any] = json.loads(src.read_text())
    doc["rows"][0]["a"]["values"][0] *= 1.5
    src.write_text(json.dumps(doc))
    assert results_page.written(copy)[0] != text


def test_kept_documents_stay_small_and_hold_no_pod_lists() -> None:
    files = sorted(KEPT.glob("*.json"))
    assert sum(f.stat().st_size for f in files) <= 100_000
    for f in files:
        assert f.stat().st_size <= kept.MAX_DOCUMENT_BYTES, f.name
        doc = json.loads(f.read_text())
        for row in doc["rows"]:
            assert len(row["a"]["values"]) == len(row["b"]["values"]) == doc["repeats"] <= 20
        assert set(doc) == set(kept.Kept.model_fields), f.name


def test_arms_that_do_not_pair_are_refused(tmp_path: Path) -> None:
    doc = json.loads(next(KEPT.glob("extender-dra-*.json")).read_text())
    doc["rows"][0]["a"]["values"].pop()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(kept.KeptError, match="has 2 values for 3 repeats"):
        kept.load(path)


def _demo(**extra: Any) -> dict[str, Any]:
    row = {
        "comparison": "extender",
        "metric": "scheduling throughput",
        "unit": "pods/s",
        "a": {"variant": "on", "values": [9.0, 8.0]},
        "b": {"variant": "off", "values": [10.0, 10.0]},
    }
    return {"kind": "DemoResult", "repeat": 2, "comparisons": [row], **extra}


META = dict(
    id="x",
    title="t",
    question="cost",
    command="testbed demo",
    release="1.37.2",
    commit="abc1234",
    date="2026-11-27",
    machine="m",
    load="quiet",
    source="results/x",
)


def test_keep_takes_each_repeat_s_values_and_the_named_rows() -> None:
    target = kept.Target(goal="g", threshold=0.9, at_least=True)
    doc = kept.keep(
        _demo(),
        headline={"extender: scheduling throughput"},
        targets={"extender: scheduling throughput [on]": target},
        **META,
    )
    (row,) = doc.rows
    assert row.headline and row.target == target
    assert (row.a.values, row.b.values, doc.repeats) == ([9.0, 8.0], [10.0, 10.0], 2)


def test_a_sequential_run_is_kept_with_its_design_and_judged_at_the_look_it_stopped_at() -> None:
    # Stopped at its 4-pair look of at most 24: 0.855-0.865 per pair is past <= 0.9 at 0.05,
    # not at that look's share (1.6e-06), where 3 degrees of freedom leave the interval wide.
    on, off = [8.6, 8.65, 8.55, 8.62], [10.0, 10.0, 10.0, 10.0]
    result = _demo(repeat=24, repeats_completed=4)
    result["comparisons"][0].update(a={"variant": "on", "values": on},
                                    b={"variant": "off", "values": off})  # fmt: skip
    target = kept.Target(goal="g", threshold=0.9, at_least=False)
    name = "extender: scheduling throughput"
    doc = kept.keep(result, headline={name}, targets={name: target}, **META)
    assert doc.repeats == 4 and doc.sequential == kept.Sequential(max_pairs=24)
    assert doc.plan.sequential and doc.plan.level(4) < 1e-5
    (row,) = doc.rows
    assert kept.derive(row).verdict == "met"  # as a fixed design of 4 would judge it
    assert kept.derive(row, doc.plan).verdict.startswith("inconclusive")
    # The document keeps it: read back, the same design.
    assert kept.Kept.model_validate_json(kept.dump(doc)).plan == doc.plan


def test_keep_takes_an_interrupted_experiment_s_measured_pairs() -> None:
    # Interrupted in its third repeat, after that repeat's first arm (hints-off) ran.
    comparison = {
        "workload": "burst",
        "metric": "scheduling throughput",
        "unit": "pods/s",
        "baseline": "hints-off",
        "variants": {
            "hints-off": {"values": [3.0, 4.0, 5.0], "repeats": [0, 1, 2]},
            "hints-on": {"values": [3.5, 4.5], "repeats": [0, 1]},
        },
    }
    result = {"spec": {}, "releases": [], "repeat": 3, "interrupted": True}
    doc = kept.keep({**result, "comparisons": [comparison]}, headline=set(), targets={}, **META)
    (row,) = doc.rows
    assert (row.a.label, row.a.values, row.b.values) == ("hints-on", [3.5, 4.5], [3.0, 4.0])
    assert doc.repeats == 2


def test_keep_leaves_out_a_metric_one_side_does_not_define() -> None:
    # An in-process scheduler_perf arm has no scheduler CPU of its own: nothing to pair.
    def comparison(metric: str, perf: list[float]) -> dict[str, object]:
        return {
            "workload": "gpus",
            "metric": metric,
            "unit": "ms",
            "baseline": "perf",
            "variants": {
                "perf": {"values": perf, "repeats": list(range(len(perf)))},
                "loadgen": {"values": [38.0, 39.0], "repeats": [0, 1]},
            },
        }

    result = {"spec": {}, "releases": [], "repeat": 2}
    both = [
        comparison("whole-path CPU per pod", [80.0, 81.0]),
        comparison("scheduler CPU per pod", []),
    ]
    doc = kept.keep({**result, "comparisons": both}, headline=set(), targets={}, **META)
    assert [r.metric for r in doc.rows] == ["whole-path CPU per pod"]


def test_keep_refuses_invalid_arms_and_rows_it_does_not_have() -> None:
    with pytest.raises(kept.KeptError, match="invalid arms: extender-on-1"):
        kept.keep(_demo(invalid_arms={"extender-on-1": "x"}), headline=set(), targets={}, **META)
    with pytest.raises(kept.KeptError, match="no such row: extender: p99"):
        kept.keep(_demo(), headline={"extender: p99"}, targets={}, **META)


def test_text_by_hand_is_counted_outside_the_title_and_the_page() -> None:
    block = f"{results_page.BEGIN}\nfigures\n{results_page.END}\n"
    assert results_page.by_hand(results_page.document(block)) == 0
    assert results_page.by_hand(results_page.document(block) + "\n### 2026-11-28\nmore\n") == 2
    assert results_page.by_hand("# Benchmarks\n\nnarrative\n") == 1


def test_the_command_writes_the_page_checks_it_and_says_in_one_line_what_is_wrong(
    tmp_path: Path,
) -> None:
    docs, page = tmp_path / "kept", tmp_path / "B.md"
    docs.mkdir()
    for src in KEPT.glob("*.json"):
        (docs / src.name).write_text(src.read_text())
    flags = ("--kept", str(docs), "--page", str(page))
    stale = children.testbed("results", *flags, "--check", home=tmp_path)
    assert stale.returncode == 1 and "stale" in stale.stderr
    assert children.testbed("results", *flags, home=tmp_path).returncode == 0
    assert page.read_text() == results_page.written(docs)[0]
    assert children.testbed("results", *flags, "--check", home=tmp_path).returncode == 0
    # Narrative written into the page by hand: stale, and not overwritten.
    page.write_text(page.read_text() + "\n### 2026-11-28, abc1234, 1.37.2\n")
    stale = children.testbed("results", *flags, "--check", home=tmp_path)
    assert stale.returncode == 1 and "stale" in stale.stderr
    refused = children.testbed("results", *flags, home=tmp_path)
    assert refused.returncode == 2 and "1 lines written by hand" in refused.stderr
    assert page.read_text().endswith("### 2026-11-28, abc1234, 1.37.2\n")
    page.write_text(results_page.written(docs)[0])
    bad = json.loads(next(docs.glob("sharing-*.json")).read_text())
    bad["repeats"] = 0
    (docs / "bad.json").write_text(json.dumps(bad))
    broken = children.testbed("results", *flags, home=tmp_path)
    assert broken.returncode == 2 and "bad.json: repeats:" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1 and "Traceback" not in broken.stderr


def _optimum_row(comparison: str, arm: str, metric: str, shares: list[Any]) -> dict[str, Any]:
    """A row of a run's optimum section: its shares of the online optimum, the rest as any."""
    return {
        "comparison": comparison,
        "arm": arm,
        "metric": metric,
        "unit": "blocks",
        "repeats": len(shares),
        "measured": 2.0,
        "online": 1.0,
        "batch": 1.0,
        "share_of_online": 0.5,
        "share_of_batch": 0.5,
        "proven_optimal": True,
        "largest_gap": 0.0,
        "beats": {},
        "shares_of_online": shares,
    }


def test_keep_takes_each_arms_shares_of_the_optimum_against_the_optimums_one() -> None:
    rows = [
        _optimum_row("gang-4", "extender", "blocks spanned per gang", [0.5, 0.625, 0.5]),
        # a repeat without a share (a gang not whole) would not pair: left out
        _optimum_row("gang-4", "native", "m", [0.5, None, 1]),
        # ... and so would one missing a repeat (a run interrupted within a repeat)
        _optimum_row("gang-64", "native", "m", [0.5, 1]),
        # ... and one written before its shares were: none to pair
        {k: v for k, v in _optimum_row("gang-64", "b", "m", []).items() if k != "shares_of_online"},
    ]
    result = {"kind": kept.OPTIMUM_KIND, "repeat": 3, "optimum": {"rows": rows}}
    name = "gang-4: blocks spanned per gang, share of the online optimum [extender]"
    target = kept.Target(goal="g", threshold=0.95, at_least=True)
    doc = kept.keep(result, headline={name}, targets={name: target}, **META)
    (row,) = doc.rows
    assert (row.a.label, row.a.values) == ("extender", [0.5, 0.625, 0.5])
    assert (row.b.label, row.b.values) == (kept.OPTIMUM_LABEL, [1.0, 1.0, 1.0])
    figure = kept.derive(row)
    assert figure.ratio is not None and figure.ratio.high < 0.95
    assert figure.verdict == "missed"
    # a section not of the optimum's schema is named in one line
    bad = {**result, "optimum": {"rows": [{"comparison": "gang-4"}]}}
    with pytest.raises(kept.KeptError, match=r"^optimum: rows\.0\.arm: Field required$"):
        kept.keep(bad, headline=set(), targets={}, **META)


def test_impossible_values_in_a_kept_document_drop_their_pairs_named_and_counted(
    tmp_path: Path,
) -> None:
    """A negative CPU figure (a counter read across a reset), an infinite one and a missing
    one: each pair is dropped, counted and named in one line (arm and figure), the rest
    judged; no traceback."""
    src = KEPT / "history" / "extender-1000x5-20261127.json"  # replaced on the page, kept
    doc: dict[str, Any] = json.loads(src.read_text())
    row = doc["rows"][0]
    assert (row["metric"], row["a"]["label"]) == ("scheduler + extender CPU per pod", "on")
    row["a"]["values"][0] = -3.0
    row["b"]["values"][1] = None
    row["a"]["values"][2] = math.inf  # written as JSON's Infinity
    path = tmp_path / src.name
    path.write_text(json.dumps(doc))
    figure = kept.derive(kept.load(path).rows[0])
    assert figure.ratio is not None and figure.ratio.runs == 2
    assert len(figure.dropped) == 3
    assert figure.dropped[0] == (
        "on's extender: scheduler + extender CPU per pod -3 (a cost cannot be 0 or less): "
        "pair dropped"
    )
    assert {d.split(" (")[1].split(")")[0] for d in figure.dropped[1:]} == {"missing", "infinite"}
    assert all(not math.isinf(v) and v > 0 for v in (figure.a_median, *figure.a_range))
    # 2 pairs left of the 5 the design planned: fewer than its first look's, no verdict.
    assert figure.verdict is not None and not figure.verdict.startswith(("met", "missed"))
    (line,) = [
        ln
        for ln in results_page.section(kept.load(path))
        if ln.startswith("| extender: scheduler + extender CPU per pod")
    ]
    assert "3 of 5 pairs dropped: on's extender: scheduler + extender CPU per pod -3" in line


def test_keep_names_each_pair_it_cannot_judge_in_one_line(tmp_path: Path) -> None:
    result = tmp_path / "demo.json"
    demo = _demo()
    demo["comparisons"][0]["a"]["values"] = [-9.0, 8.0]
    result.write_text(json.dumps(demo))
    flags = ("--kept", str(tmp_path / "kept"), "--page", str(tmp_path / "B.md"))
    meta = (
        *("--id", "x", "--title", "t", "--question", "cost", "--release", "1.37.2"),
        *("--commit", "abc1234", "--date", "2026-11-27", "--machine", "m", "--load", "quiet"),
        *("--run-command", "testbed demo"),
    )
    done = children.testbed("results", *flags, "keep", str(result), *meta, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == (
        f"{result}: on's extender: scheduling throughput -9 (a cost cannot be 0 or less): "
        "pair dropped"
    )
