"""What every meta-feature group starts from: a canonical copy of the dataset.

Notation: n rows, d feature columns (d_num numeric, d_nom nominal, d_str free text),
D columns after encoding (see :func:`encode`).

Kinds. A column listed in :attr:`Dataset.string_columns` (an ARFF STRING attribute) is
free text, neither numeric nor nominal here, as OpenML's characterizers see it; it only
counts as a feature and for its missing values.

Canonical order. Columns are sorted by name; rows are sorted by a 64-bit content hash
of the row (its features in that column order, then its target), computed with
``pandas.util.hash_pandas_object`` (nominal values are hashed by label, so the order of
the declared categories does not matter). Every meta-feature, the landmarkers included,
is computed on this canonical table, so shuffling the rows or permuting the columns of
a dataset gives bit-identical values. Rows with equal hashes are identical (up to a hash
collision, probability about n^2 / 2^64), so their relative order cannot matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError

#: At most this many one-hot columns per nominal feature: the most frequent levels
#: keep their own column, the rest share one "infrequent" column (scikit-learn's
#: ``OneHotEncoder(max_categories=...)``).
MAX_ONE_HOT_LEVELS = 16


@dataclass(frozen=True)
class Prepared:
    """A dataset in canonical row and column order, split by feature kind."""

    X: pd.DataFrame
    y: pd.Series
    task: str
    numeric: tuple[str, ...]
    nominal: tuple[str, ...]
    strings: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        """The number of rows."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """The number of feature columns."""
        return int(self.X.shape[1])

    @property
    def is_classification(self) -> bool:
        """Whether the task is classification."""
        return self.task == "classification"

    def class_codes(self) -> np.ndarray:
        """Target as integer codes 0..K-1 over the observed classes (classification)."""
        codes = self.y.cat.remove_unused_categories().cat.codes.to_numpy(np.int64)
        return codes


def prepare(dataset: Dataset) -> Prepared:
    """The canonical copy of ``dataset`` (see the module docstring)."""
    X = dataset.X
    columns = sorted(X.columns, key=lambda c: (str(c), type(c).__name__))
    X = X[columns]
    y = dataset.y
    if dataset.task == "classification" and not isinstance(y.dtype, pd.CategoricalDtype):
        y = y.astype(str).astype("category")
    y_hash = pd.util.hash_pandas_object(y, index=False).to_numpy(np.uint64)
    if X.shape[1]:
        x_hash = pd.util.hash_pandas_object(X, index=False).to_numpy(np.uint64)
    else:
        x_hash = np.zeros(len(X), dtype=np.uint64)
    order = np.lexsort((y_hash, x_hash))  # primary key x_hash, then y_hash
    X = X.iloc[order].reset_index(drop=True)
    y = y.iloc[order].reset_index(drop=True)
    strings = tuple(c for c in columns if c in set(dataset.string_columns))
    nominal = tuple(c for c in columns
                    if isinstance(X[c].dtype, pd.CategoricalDtype) and c not in set(strings))
    numeric = tuple(c for c in columns if c not in set(nominal) | set(strings))
    return Prepared(X=X, y=y, task=dataset.task, numeric=numeric, nominal=nominal, strings=strings)


def encode(prep: Prepared) -> np.ndarray:
    """The n x D float matrix the PCA and the landmarkers see.

    Numeric columns: missing values replaced by the column median (an all-missing
    column becomes 0). Nominal columns: one-hot, a missing value being a level of its
    own, at most :data:`MAX_ONE_HOT_LEVELS` columns per feature. Free-text columns are
    left out. Statistics come from all n rows (unsupervised, no label is used), not
    from each training fold.
    """
    blocks = []
    if prep.numeric:
        num = prep.X[list(prep.numeric)].to_numpy(np.float64)
        num = np.where(np.isfinite(num), num, np.nan)
        imputer = SimpleImputer(strategy="median", keep_empty_features=True)
        blocks.append(imputer.fit_transform(num))
    if prep.nominal:
        codes = np.column_stack(
            [prep.X[c].cat.codes.to_numpy(np.int64) for c in prep.nominal]
        )  # -1 = missing, a level of its own
        encoder = OneHotEncoder(
            max_categories=MAX_ONE_HOT_LEVELS,
            sparse_output=False,
            dtype=np.float64,
            handle_unknown="infrequent_if_exist",
        )
        blocks.append(encoder.fit_transform(codes))
    if not blocks:
        return np.empty((prep.n, 0), dtype=np.float64)
    return np.hstack(blocks)


def standardize(Z: np.ndarray) -> np.ndarray:
    """Each column to zero mean and unit variance (a constant column becomes 0)."""
    if Z.shape[1] == 0:
        return Z
    return StandardScaler().fit_transform(Z)


def mixed_matrix(M: np.ndarray, n_levels: Sequence[int], owner: str) -> np.ndarray:
    """``M`` as the float matrix the Weka-like landmarkers take (one column per
    ``n_levels`` entry: nominal codes or numbers, infinities as missing), or
    :class:`InputDataError` naming ``owner`` when its width is wrong."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[1] != len(n_levels):
        raise InputDataError(f"{owner}: expected a matrix with {len(n_levels)} columns (one per n_levels entry), "
                             f"got shape {M.shape}")
    return np.where(np.isinf(M), np.nan, M)
