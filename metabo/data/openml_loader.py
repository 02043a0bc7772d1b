"""Load an OpenML dataset as a :class:`~metabo.data.dataset.Dataset` through the ``openml`` client.

The data is split on the dataset's default target; the attributes the description
names in ``ignore_attribute`` (identifiers such as zoo's ``animal``) and its
``row_id_attribute`` are left out, as OpenML's own tasks leave them out. Nominal ARFF
attributes become ``Categorical`` columns that keep every declared category (also
unobserved ones), in the declared order; numeric ones float64; STRING ones nominal,
listed in :attr:`~metabo.data.dataset.Dataset.string_columns`.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Literal

import arff
import openml
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.data.openml_client import DEFAULT_RETRY, RetryPolicy, call_openml, check_server, openml_config
from metabo.exceptions import InputDataError, OpenMLResponseError

logger = logging.getLogger(__name__)


def _download(dataset_id: int) -> tuple[openml.OpenMLDataset, pd.DataFrame, pd.Series, list[bool]]:
    ds = openml.datasets.get_dataset(
        dataset_id, download_data=True, download_qualities=False,
        download_features_meta_data=False,
    )
    target = ds.default_target_attribute
    if not target:
        raise InputDataError(
            f"OpenML dataset {dataset_id} ({ds.name}) has no default target attribute; "
            "load it with openml directly and choose the target column"
        )
    if "," in target:
        raise InputDataError(
            f"OpenML dataset {dataset_id} ({ds.name}) has several targets ({target}); "
            "metabo datasets have one"
        )
    try:
        X, y, categorical, _ = ds.get_data(
            target=target, dataset_format="dataframe", include_row_id=False,
            include_ignore_attribute=False,
        )
    except arff.ArffException as e:
        shutil.rmtree(Path(openml.config.get_cache_directory()) / "datasets" / str(dataset_id),
                      ignore_errors=True)
        raise OpenMLResponseError(f"the ARFF file of OpenML dataset {dataset_id} ({ds.url}) is malformed: {e}") from e
    return ds, X, y, categorical


def load_openml(
    dataset_id: int,
    *,
    server: str | None = None,
    cache_dir: str | Path | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> Dataset:
    """Download (or read from the client's cache) OpenML dataset ``dataset_id``.

    Args:
        dataset_id: the OpenML dataset id.
        server: the OpenML API root (default: the client's setting), only for this call;
            one probe request checks that it is an OpenML API before anything is fetched.
        cache_dir: the client's cache directory, only for this call.
        retry: tries and backoff for transient server failures.

    Raises:
        InputDataError: the dataset has no (or several) default targets.
        FetchError / OpenMLResponseError: the server refused, failed or answered garbage.
    """
    with openml_config(server, cache_dir):
        if server is not None:  # a mistyped server path fails at once, not after the retries
            check_server(retry)
        ds, X, y, categorical = call_openml(
            _download, int(dataset_id), endpoint=f"data/{int(dataset_id)} and its ARFF download",
            retry=retry,
        )
    target = str(y.name) if isinstance(y, pd.Series) and y.name is not None else str(ds.default_target_attribute)
    frame = X.copy()
    frame[target] = y
    nominal = [str(c) for c, is_cat in zip(X.columns, categorical, strict=True) if is_cat]
    # the client reads ARFF STRING attributes as text (object or string) columns that are
    # not categorical
    string = [str(c) for c, is_cat in zip(X.columns, categorical, strict=True)
              if not is_cat and not pd.api.types.is_numeric_dtype(X[c])
              and not pd.api.types.is_bool_dtype(X[c])]
    numeric = pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype)
    task: Literal["regression", "classification"] = (
        "regression" if numeric and not isinstance(y.dtype, pd.CategoricalDtype) else "classification")
    ignored = [a for a in (ds.ignore_attribute or []) if a != target]
    if ignored:
        logger.info("OpenML dataset %d: ignore_attribute %s left out", int(dataset_id), ignored)
    dataset = Dataset.from_frame(
        frame, target, name=str(ds.name), source="openml", nominal=nominal + string, task=task,
        openml_id=int(dataset_id), string_columns=tuple(string),
        description=f"OpenML dataset {int(dataset_id)} version {ds.version} ({ds.url})"
        + (f" without its ignore_attribute {ignored}" if ignored else ""),
    )
    return _with_declared_categories(dataset, X)


def _with_declared_categories(dataset: Dataset, raw: pd.DataFrame) -> Dataset:
    """Give nominal columns the categories the ARFF header declares, in its order."""
    X = dataset.X.copy()
    for col in X.columns:
        source = raw[col] if col in raw.columns else None
        if source is None or not isinstance(source.dtype, pd.CategoricalDtype):
            continue
        declared = [str(c) for c in source.cat.categories]
        if set(X[col].cat.categories) <= set(declared) and len(set(declared)) == len(declared):
            X[col] = X[col].cat.set_categories(declared)
    return replace(dataset, X=X)
