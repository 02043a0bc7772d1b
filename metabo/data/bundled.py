"""scikit-learn's bundled classification datasets (no download) as Dataset objects.

The OpenML id is recorded where OpenML holds the same data: iris (61), wine (187) and
breast_cancer (wdbc, 1510). digits has none: OpenML 28 (optdigits) is the 5,620-row
UCI version, not scikit-learn's 1,797 rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import pandas as pd
import sklearn
from sklearn import datasets

from metabo.data.dataset import Dataset
from metabo.exceptions import UnknownDatasetError

_TARGET = "target"

_LOADERS: Mapping[str, tuple[Callable[..., object], int | None]] = MappingProxyType({
    "breast_cancer": (datasets.load_breast_cancer, 1510),
    "digits": (datasets.load_digits, None),
    "iris": (datasets.load_iris, 61),
    "wine": (datasets.load_wine, 187),
})


def list_sklearn() -> list[str]:
    """Names accepted by :func:`load_sklearn`, sorted."""
    return sorted(_LOADERS)


def load_sklearn(name: str) -> Dataset:
    """Load a scikit-learn bundled dataset; the target holds the class names.

    Raises :class:`UnknownDatasetError` for a name not in :func:`list_sklearn`.
    """
    if name not in _LOADERS:
        raise UnknownDatasetError(
            f"unknown scikit-learn dataset {name!r}; choose one of {', '.join(list_sklearn())}"
        )
    loader, openml_id = _LOADERS[name]
    bunch = loader(as_frame=True)
    frame = bunch.frame.drop(columns=[_TARGET])  # type: ignore[attr-defined]
    class_names = [str(c) for c in bunch.target_names]  # type: ignore[attr-defined]
    frame[_TARGET] = pd.Categorical.from_codes(
        bunch.target.to_numpy(), categories=class_names  # type: ignore[attr-defined]
    )
    return Dataset.from_frame(
        frame,
        _TARGET,
        name=name,
        source="sklearn",
        task="classification",
        openml_id=openml_id,
        description=(
            f"scikit-learn {sklearn.__version__} sklearn.datasets.{loader.__name__}"
            " (bundled, no download)."
        ),
    )
