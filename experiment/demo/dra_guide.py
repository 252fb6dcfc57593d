"""The DRA performance guide's matrix (its targets against the device plugin, FACTS §6)
judged on the demo's `dra` comparison rows (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from experiment.demo.project_targets import FIXED, Judging
from experiment.demo.summary import Row, find_row
from experiment.measure import intervals
from experiment.measure.figures import UNSATURATED


@dataclass(frozen=True)
class GuideRow:
    """One line of the DRA performance guide's matrix against what we measured."""

    aspect: str
    target: str
    guide: str
    """The guide's example figure."""
    measured: str
    verdict: str


# The DRA guide's targets against the device plugin, and its example matrix (FACTS §6):
# (aspect, our row, target as a ratio or MiB, the guide's wording, the guide's example).
_MEBIBYTES_IN_100_MB = 100e6 / 2**20
GUIDE: list[tuple[str, str, float, str, str]] = [
    (
        "scheduling latency overhead",
        f"pod startup p99{UNSATURATED}",
        1.10,
        "< 10 %",
        "+8 % (p99 2.5 s device plugin vs 2.7 s DRA)",
    ),
    # Per pod: per second would reward the slower arm (fewer requests a second for more per pod).
    ("API request overhead", "API server requests per pod", 1.05, "< 5 %", "+4 % QPS"),
    ("scheduler CPU overhead", "scheduler CPU per pod", 1.15, "< 15 %", "+10 % CPU"),
    (
        "control-plane memory per 1,000 pods",
        "API server + scheduler memory growth per 1,000 pods",
        _MEBIBYTES_IN_100_MB,
        "< 100 MB",
        "+10 % memory",
    ),
]


def guide_matrix(rows: list[Row], judging: Judging = FIXED) -> list[GuideRow]:
    """The guide's matrix vs measured, from the `dra` comparison (claims vs device plugin, both
    on the plain scheduler; latency from the unsaturated arms), at the level `judging` gives."""
    out = []
    for aspect, metric, threshold, target, guide in GUIDE:
        row = find_row(rows, "dra", metric)
        if row is None:
            run = "--comparisons dra" + (" --latency-arms" if metric.endswith(UNSATURATED) else "")
            out.append(GuideRow(aspect, target, guide, "-", f"not measured: run {run}"))
            continue
        if row.noise:
            negative = sum(v < 0 for v in row.a.values + row.b.values)
            out.append(
                GuideRow(
                    aspect,
                    target,
                    guide,
                    f"noise: resident memory shrank over {negative} arm(s) (GC timing)",
                    "not measured: growth of resident memory is noise here",
                )
            )
            continue
        if target.endswith("MB"):  # an absolute figure of the DRA arm
            interval = intervals.mean_interval(row.a.values)
            level = judging.level("dra", interval.runs) if interval else intervals.ALPHA
            measured = (
                f"{row.a.median:.1f} MiB, {intervals.confidence(level)} interval "
                f"{intervals.describe(interval, level=level)}"
            )
        else:
            interval = row.interval
            level = judging.level("dra", interval.runs) if interval else intervals.ALPHA
            overhead = f"{row.ratio - 1:+.1%} " if row.ratio is not None else ""
            spread = intervals.describe(interval, "{:.3f}".format, level)
            measured = f"{overhead}(ratio {intervals.confidence(level)} interval {spread})"
        out.append(
            GuideRow(
                aspect,
                target,
                guide,
                measured,
                intervals.verdict(
                    interval,
                    threshold,
                    at_least=False,
                    level=level,
                    pairs_left=judging.pairs_left,
                    detect_at=judging.detect_at("dra", interval.runs) if interval else None,
                ),
            )
        )
    return out
