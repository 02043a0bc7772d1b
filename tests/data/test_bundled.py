"""scikit-learn's bundled datasets."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import datasets

from metabo.data.bundled import list_sklearn, load_sklearn
from metabo.exceptions import UnknownDatasetError


def test_list() -> None:
    assert list_sklearn() == ["breast_cancer", "digits", "iris", "wine"]


@pytest.mark.parametrize(
    ("name", "shape", "n_classes", "openml_id"),
    [
        ("iris", (150, 4), 3, 61),
        ("wine", (178, 13), 3, 187),
        ("breast_cancer", (569, 30), 2, 1510),
        ("digits", (1797, 64), 10, None),  # OpenML 28 (optdigits) is another version
    ],
)
def test_load(name: str, shape: tuple[int, int], n_classes: int, openml_id: int | None) -> None:
    ds = load_sklearn(name)
    assert (ds.n_instances, ds.n_features) == shape
    assert ds.n_classes == n_classes
    assert ds.openml_id == openml_id
    assert ds.source == "sklearn" and ds.name == name and ds.task == "classification"
    assert set(ds.feature_kinds) == {"numeric"}
    assert not ds.flags
    ds.require_clean()


def test_values_and_class_names_match_sklearn() -> None:
    ds = load_sklearn("iris")
    bunch = datasets.load_iris()
    np.testing.assert_array_equal(ds.X.to_numpy(), bunch.data)
    assert ds.y.tolist() == [str(bunch.target_names[t]) for t in bunch.target]
    assert list(ds.X.columns) == list(bunch.feature_names)


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownDatasetError, match="breast_cancer, digits, iris, wine"):
        load_sklearn("boston")
