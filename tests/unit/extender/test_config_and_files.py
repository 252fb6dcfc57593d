"""Settings files and offline object files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from extender import config
from extender.cache import files
from extender.cache.index import Index
from extender.cache.store import Store
from extender.config import Settings
from fleet import render
from fleet import spec as fleet_spec
from testbed import vocab
from tests.support import extender_objects as objects


def test_file_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("weights: {alignment: 5, numa_credit: 0.25}\nrack_label: my/rack\n")
    s = config.load(path, {"weights.alignment": 7.0, "gang_label": "my/gang"})
    assert s.weights.alignment == 7.0 and s.weights.numa_credit == 0.25
    assert s.rack_label == "my/rack" and s.gang_label == "my/gang"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("weights: {alignment: 0, packing: 0, locality: 0}\n", "at least one"),
        ("nonsense: 1\n", "nonsense"),
        ("- a list\n", "mapping"),
        ("weights: {numa_credit: 2}\n", "weights.numa_credit"),
    ],
)
def test_bad_settings_are_one_line_errors(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(config.ConfigFileError, match=says) as e:
        config.load(path)
    assert "\n" not in str(e.value)


def test_loads_lists_directories_and_assumes_standard_classes(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.json").write_text(
        json.dumps({"kind": "List", "items": objects.dgx("n1")})
    )
    (tmp_path / "b.yaml").write_text("kind: ConfigMap\nmetadata: {name: ignored}\n")
    store = Store(Index(config.Settings()))
    counts = files.load(store, [tmp_path])
    assert counts["Node"] == 1 and counts["ResourceSlice"] == 2
    assert store.ready.is_set()
    assert set(store.index.classes) == {
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "dra.net",
        "rdma.dra.net",
    }
    assert store.index.summary(store.index.nodes["n1"]).pairs("gpu.nvidia.com", "rdma.dra.net") == (
        8,
        8,
    )


def test_default_classes_are_the_ones_fleet_renders() -> None:
    """Offline mode assumes the classes a rendered fleet would install: same names, same CEL
    (the extender may not import fleet, so the two are held equal here)."""

    def selectors(objs: list[dict[str, Any]]) -> dict[str, list[Any]]:
        return {o["metadata"]["name"]: o["spec"]["selectors"] for o in objs}

    assert selectors(files.DEFAULT_CLASSES) == selectors(render.device_classes())


def test_default_gpu_class_leaves_mig_partitions_to_the_mig_class(tmp_path: Path) -> None:
    spec = {"name": "m", "pools": [{"name": "p", "profile": "dgx-h100-mig", "count": 1}]}
    out = render.render(fleet_spec.from_data(spec))
    (tmp_path / "fleet.json").write_text(
        json.dumps({"kind": "List", "items": [*out.nodes, *out.slices]})
    )
    store = Store(Index(Settings()))
    files.load(store, [tmp_path])
    index = store.index
    (view,) = index.nodes.values()
    classes = index.summary(view).classes
    assert classes[vocab.CLASS_GPU].total == 8
    assert classes[vocab.CLASS_MIG].total == 8 * 14
