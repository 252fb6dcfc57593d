"""A scrape as data (loadgen.series): every series keyed as the exposition writes it, label
values with any character included (a `}` in one dropped the series before)."""

from __future__ import annotations

from loadgen import segments, series

PAGE = r"""# HELP scheduler_plugin_evaluation_total Number of evaluations.
# TYPE scheduler_plugin_evaluation_total counter
scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources",x="p"} 900
# TYPE weird gauge
weird{path="/a}b",msg="say \"hi\"\nthere",back="c:\\d"} 2.5
process_cpu_seconds_total 12.5
process_resident_memory_bytes 1e+08
"""


def test_every_series_is_keyed_as_exposed_even_with_braces_and_quotes_in_labels() -> None:
    got = series.parse(PAGE)
    assert (
        got[
            'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources",'
            'x="p"}'
        ]
        == 900.0
    )
    assert got[r'weird{path="/a}b",msg="say \"hi\"\nthere",back="c:\\d"}'] == 2.5
    assert got["process_cpu_seconds_total"] == 12.5
    assert got["process_resident_memory_bytes"] == 1e8
    # The DRA filter calls are found by their key's prefix, as the reports do.
    assert series.summary(segments.between({}, got))["dra_filter_calls"] == 900.0


def test_a_line_that_is_not_a_sample_is_skipped_and_the_rest_kept() -> None:
    got = series.parse('a_total 1\nb_total two\nc_total{x="1" 2\nd_total 3\n')
    assert got == {"a_total": 1.0, "d_total": 3.0}
