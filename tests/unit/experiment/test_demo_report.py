"""The demo's report leads with the answer: the targets a run measured come first, verdicts
before inconclusive before observations, and the ones it did not measure last, folded under
one line (on the page and on the console)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from rich.console import Console

from experiment.demo import project_targets, report
from experiment.demo.project_targets import Target
from experiment.demo.summary import Row
from experiment.measure import intervals
from experiment.measure.figures import Figure

_VERDICT_CELL = re.compile(r'<td class="(?:met|missed|open|plain) text">(.*?)</td>')


def _pair(comparison: str, metric: str, a: list[float], b: list[float]) -> Row:
    return Row(comparison, metric, "x", "on", Figure(a), "off", Figure(b))


def _small_run() -> list[Target]:
    """A run of a few comparisons, as `testbed demo --nodes 20 --pods 40 --repeat 2` gives:
    most of the project's goals not measured, the measured ones listed late in goal order."""
    rows = [
        # extender: an inconclusive overhead (it flips between repeats), and no data for the
        # other headline figure
        _pair("extender", "scheduler + extender CPU per pod", [11.0, 10.4], [10.0, 10.0]),
        # placement: an observation (one repeat has the figure)
        _pair("placement", "blocks spanned per gang", [1.1], [3.7]),
        # taints: a verdict (met: fewer placed on the tainted pool), the last goal of all
        _pair("taints", "pods placed (one per GPU)", [0.9, 0.9, 0.9], [1.0, 1.0, 1.0]),
    ]
    return project_targets.targets(rows)


def _page_verdicts(page: str) -> list[str]:
    """The verdict cells of the page's Targets section, in document order."""
    section = page[page.index(">Targets<") : page.index(">Side by side<")]
    return [html.unescape(v) for v in _VERDICT_CELL.findall(section)]


def test_the_small_run_this_checks_has_each_kind_of_target() -> None:
    # Guards the tests below: in goal order, a not-measured target precedes a measured one.
    kinds = [t.rank for t in _small_run()]
    assert kinds != sorted(kinds)
    verdicts = [t.verdict for t in _small_run()]
    assert "met" in verdicts and intervals.OBSERVATION in verdicts
    assert any(v.startswith("inconclusive") for v in verdicts)
    assert sum(v.startswith("not measured") for v in verdicts) >= 5


def test_the_page_lists_no_not_measured_target_before_a_measured_one(tmp_path: Path) -> None:
    targets = _small_run()
    report.write(tmp_path, [], {"nodes": 20, "pods": 40, "repeat": 2}, [], targets, [])
    page = (tmp_path / "index.html").read_text()
    verdicts = _page_verdicts(page)
    assert sorted(verdicts) == sorted(t.verdict for t in targets)  # every target, once
    measured = [i for i, v in enumerate(verdicts) if not v.startswith("not measured")]
    unmeasured = [i for i, v in enumerate(verdicts) if v.startswith("not measured")]
    assert max(measured) < min(unmeasured), verdicts
    # Answers first: the verdict, then inconclusive, then the observation.
    assert verdicts[0] == "met"
    assert verdicts[1].startswith("inconclusive") and verdicts[2] == intervals.OBSERVATION
    # The unmeasured ones are folded under one line that says how to measure them.
    fold = page[page.index("<details>") : page.index("</details>")]
    assert all(v in html.unescape(fold) for v in verdicts[len(measured) :])
    summary_line = html.unescape(re.findall(r"<summary>(.*?)</summary>", fold)[0])
    assert summary_line.startswith(f"{len(unmeasured)} targets not measured in this run; ")
    assert "add alignment,fragmentation,sharing,extended-resource to --comparisons" in (
        summary_line
    )
    assert "`loadgen run cl2-dra` runs it" in summary_line


def test_the_console_leads_with_the_answer_and_folds_the_rest_into_one_line() -> None:
    console = Console(record=True, width=200)
    report.console_targets(_small_run(), console)
    lines = console.export_text().splitlines()
    assert "not measured" not in "\n".join(lines[:-1])
    assert lines[-1].startswith("11 targets not measured in this run; add alignment,")
    table = "\n".join(lines[:-1])
    assert table.index("│ met") < table.index("inconclusive") < table.index("observation")


def test_a_run_that_measured_nothing_shows_only_the_line(tmp_path: Path) -> None:
    report.write(tmp_path, [], {"nodes": 20}, [], project_targets.targets([]), [])
    section = (tmp_path / "index.html").read_text()
    section = section[section.index(">Targets<") : section.index(">Side by side<")]
    assert section.count("<table>") == 1 and "<details>" in section
