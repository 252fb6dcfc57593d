"""The fast YAML writer round-trips through a real YAML reader."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from fleet import render, yamlout

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.text(max_size=20),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=10), inner, max_size=4),
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(min_size=1, max_size=10), _values, min_size=1, max_size=5))
def test_yamlout_round_trips_through_yaml_safe_load(obj: dict[str, Any]) -> None:
    assert yaml.safe_load(yamlout.dump(obj)) == obj


def test_yamlout_round_trips_every_rendered_object() -> None:
    for profile in ("dgx-h100", "a4-highgpu-8g", "l4-4gpu"):
        objs = render.render_profile(profile, 2).objects()
        assert [d for d in yaml.safe_load_all(yamlout.dump_all(objs))] == objs


def test_reserved_words_and_numbers_stay_strings() -> None:
    obj = {"a": "true", "b": "no", "c": "110", "d": "0000:16:00.0", "e": "~", "f": ""}
    assert yaml.safe_load(yamlout.dump(obj)) == obj
