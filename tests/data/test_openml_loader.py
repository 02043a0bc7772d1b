"""load_openml: the real ``openml`` client against the fake server (see tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openml
import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.data.openml_loader import load_openml
from metabo.exceptions import FetchError, InputDataError, OpenMLResponseError
from metabo.ingest.openml_client import RetryPolicy
from metabo.testing.openml_server import FakeDataset, FakeOpenMLServer, example_frames

FAST = RetryPolicy(attempts=2, backoff=0.0)


@pytest.fixture
def server(openml_server: FakeOpenMLServer) -> FakeOpenMLServer:
    frames = example_frames()
    openml_server.add_dataset(FakeDataset.from_frame(61, "toy", frames["toy"], target="class"))
    openml_server.add_dataset(FakeDataset.from_frame(62, "blobs", frames["blobs"], target="target"))
    return openml_server


def _load(server: FakeOpenMLServer, cache: Path, did: int = 61) -> Dataset:
    return load_openml(did, server=server.url, cache_dir=cache, retry=FAST)


def test_load_returns_dataset_with_nominal_categories(server, openml_cache):
    ds = _load(server, openml_cache)
    frame = example_frames()["toy"]
    assert isinstance(ds, Dataset)
    assert (ds.name, ds.source, ds.openml_id, ds.task) == ("toy", "openml", 61, "classification")
    assert ds.X.shape == (40, 4) and len(ds.y) == 40
    assert list(ds.X.columns) == ["width", "colour", "count", "shape"]
    assert ds.feature_kinds == ("numeric", "nominal", "numeric", "nominal")
    # declared categories survive, also the unobserved "blue"
    assert list(ds.X["colour"].cat.categories) == ["red", "green", "blue"]
    assert ds.X["colour"].isna().sum() == 1
    assert ds.X["width"].dtype == np.float64 and ds.X["width"].isna().sum() == 2
    np.testing.assert_allclose(ds.X["width"], frame["width"])
    assert list(ds.X["count"]) == list(frame["count"].astype(float))
    assert isinstance(ds.y.dtype, pd.CategoricalDtype)
    assert list(ds.y.astype(str)) == list(frame["class"].astype(str))
    assert ds.n_classes == 2


def test_load_numeric_dataset(server, openml_cache):
    ds = _load(server, openml_cache, 62)
    assert ds.X.shape == (30, 3) and ds.feature_kinds == ("numeric",) * 3
    assert ds.n_classes == 3


def test_second_load_reads_the_cache(server, openml_cache):
    first = _load(server, openml_cache)
    assert len(server.requested()) >= 1 and any(r.path.startswith("/data/download/") for r in server.requests)
    server.clear_log()
    second = _load(server, openml_cache)
    assert not any(r.path.startswith("/data/download/") for r in server.requests)
    assert first.fingerprint == second.fingerprint


def test_openml_config_is_restored(server, openml_cache):
    before = (openml.config.server, openml.config.get_cache_directory())
    _load(server, openml_cache)
    assert (openml.config.server, openml.config.get_cache_directory()) == before


def test_transient_failure_is_retried(server, openml_cache):
    server.fail_next(1, status=500, endpoint="/data/download/")
    assert _load(server, openml_cache).n_instances == 40


def test_unknown_dataset_is_a_fetch_error(server, openml_cache):
    with pytest.raises(FetchError, match="data/99"):
        _load(server, openml_cache, 99)


def test_malformed_description_raises(server, openml_cache):
    server.malform("data/61")
    with pytest.raises(OpenMLResponseError, match="data/61"):
        _load(server, openml_cache)
    server.clear_faults()
    assert _load(server, openml_cache).n_instances == 40


def test_dataset_without_target_is_refused(server, openml_cache):
    server.datasets[61].target = None
    with pytest.raises(InputDataError, match="no default target"):
        _load(server, openml_cache)


def test_numeric_target_is_regression(openml_server, openml_cache):
    frame = pd.DataFrame({"x": np.linspace(0, 1, 25), "kind": ["a", "b", "c", "d", "e"] * 5,
                          "y": np.linspace(3, 9, 25) ** 2})
    openml_server.add_dataset(FakeDataset.from_frame(63, "reg", frame, target="y"))
    ds = _load(openml_server, openml_cache, 63)
    assert ds.task == "regression" and ds.y.dtype == np.float64
    assert ds.feature_kinds == ("numeric", "nominal")
    np.testing.assert_allclose(ds.y, frame["y"])


TEXT_ARFF = """@RELATION texts
@ATTRIBUTE animal STRING
@ATTRIBUTE legs NUMERIC
@ATTRIBUTE hair {false,true}
@ATTRIBUTE type {mammal,bird}
@DATA
aardvark,4,true,mammal
antelope,4,true,mammal
crow,2,false,bird
'duck, wild',2,false,bird
"""


def test_string_attributes_are_string_columns(openml_server, openml_cache):
    openml_server.add_dataset(FakeDataset(did=64, name="texts", arff_text=TEXT_ARFF, target="type"))
    ds = _load(openml_server, openml_cache, 64)
    assert ds.string_columns == ("animal",)
    assert ds.feature_kinds == ("nominal", "numeric", "nominal")
    assert ds.X["animal"].astype(str).tolist()[-1] == "duck, wild"


def test_ignore_attribute_of_the_description_is_left_out(openml_server, openml_cache, monkeypatch):
    """zoo (62) names its identifier ``animal`` in ``ignore_attribute``."""
    openml_server.add_dataset(FakeDataset(did=65, name="zooish", arff_text=TEXT_ARFF, target="type"))
    described = openml.datasets.get_dataset

    def with_ignore_attribute(*args, **kwargs):
        ds = described(*args, **kwargs)
        ds.ignore_attribute = ["animal"]
        return ds

    monkeypatch.setattr(openml.datasets, "get_dataset", with_ignore_attribute)
    ds = _load(openml_server, openml_cache, 65)
    assert list(ds.X.columns) == ["legs", "hair"] and ds.string_columns == ()
    assert "ignore_attribute ['animal']" in ds.description


def test_a_wrong_server_path_fails_at_once_naming_it(server, openml_cache):
    from metabo.ingest.openml_client import OpenMLResponseError

    url = server.base_url + "/api/v2/xml"
    with pytest.raises(OpenMLResponseError, match="does not look like an OpenML API server"):
        load_openml(61, server=url, cache_dir=openml_cache, retry=FAST)
    assert [r.status for r in server.requests] == [404]  # one probe, no retries, no download
