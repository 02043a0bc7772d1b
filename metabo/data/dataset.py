"""The one dataset type every loader returns.

Notation: n rows, d feature columns. ``X`` is an n x d DataFrame whose numeric columns
are float64 (NaN marks a missing value) and whose nominal columns are pandas
``Categorical`` (missing = NaN, never a made-up category); ``y`` is the length-n
target (a ``Categorical`` for classification, float64 for regression).
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd

from metabo.exceptions import DataQualityError, InputDataError

logger = logging.getLogger(__name__)

T = TypeVar("T")
FeatureKind = Literal["numeric", "nominal"]
#: How many derived values :meth:`Dataset.memo` keeps per dataset, and their largest total
#: size in bytes (a value's ``nbytes``): the least recently used are dropped first
MEMO_ITEMS = 64
MEMO_BYTES = 256 * 2**20
TaskType = Literal["classification", "regression"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A supervised learning dataset with its provenance.

    Attributes:
        name: short name, unique within its ``source``.
        X: features (see module notation).
        y: target.
        source: where it came from: ``sklearn``, ``keel``, ``file``, ``openml``, ...
        openml_id: the OpenML dataset id when the same data is on OpenML.
        task: ``classification`` or ``regression``.
        flags: quality flags, e.g. ``{"lost_decimals": ("A2", "A3")}``; a flagged
            dataset refuses :meth:`require_clean` (nothing trains on it silently).
        description: free text (origin, license, repairs made).
        string_columns: the nominal columns of ``X`` that hold free text (ARFF STRING
            attributes such as Titanic's ``name``): models see them as nominal, while
            the meta-features count them, as OpenML does, as features that are neither
            numeric nor symbolic.
        label_values: class label (the target's category, text) -> the label as the
            caller gave it, where that was not text (integers, booleans): what a fitted
            model predicts (:class:`~metabo.ensembles.model.EnsembleModel`), so labels
            come back as given while the search compares them as text (a CSV and a
            DataFrame give the same session).
    """

    name: str
    X: pd.DataFrame
    y: pd.Series
    source: str
    openml_id: int | None = None
    task: TaskType = "classification"
    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    string_columns: tuple[str, ...] = ()
    label_values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.X, pd.DataFrame):
            raise InputDataError(f"dataset {self.name!r}: X must be a DataFrame")
        if len(self.X) != len(self.y):
            raise InputDataError(
                f"dataset {self.name!r}: X has {len(self.X)} rows but y has {len(self.y)}"
            )
        if len(self.X) == 0:
            raise InputDataError(f"dataset {self.name!r} has no rows")
        if self.X.columns.duplicated().any():
            dup = list(self.X.columns[self.X.columns.duplicated()])
            raise InputDataError(f"dataset {self.name!r} has duplicated columns {dup}")
        for col, dtype in zip(self.X.columns, self.X.dtypes):  # dtypes at once: 10,000 lookups took seconds
            if not (isinstance(dtype, pd.CategoricalDtype) or dtype == np.float64):
                raise InputDataError(
                    f"dataset {self.name!r}: column {col!r} has dtype {dtype}; use "
                    "Dataset.from_frame to convert to float64 / Categorical"
                )
        not_nominal = [c for c in self.string_columns
                       if c not in self.X.columns or not isinstance(self.X[c].dtype, pd.CategoricalDtype)]
        if not_nominal:
            raise InputDataError(
                f"dataset {self.name!r}: string_columns {not_nominal} are not nominal columns of X"
            )
        if self.y.isna().any():
            raise InputDataError(
                f"dataset {self.name!r}: the target has {int(self.y.isna().sum())} missing "
                "values; drop those rows or impute the target before loading"
            )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        target: str,
        *,
        name: str,
        source: str,
        nominal: list[str] | None = None,
        task: TaskType | None = None,
        **kwargs: object,
    ) -> Dataset:
        """Build a dataset from a table with a named target column.

        Columns of object, string, boolean or category dtype (and those listed in
        ``nominal``) become ``Categorical``; every other column is cast to float64.
        Rows without a target value are dropped, logged and noted in ``description``.
        ``task`` defaults to classification unless the target is a float column with
        more than 20 distinct values.
        """
        if target not in frame.columns:
            raise InputDataError(
                f"dataset {name!r}: no target column {target!r}; columns are "
                f"{list(frame.columns)[:20]}"
            )
        nominal_set = set(nominal or ())
        unknown = nominal_set - set(frame.columns)
        if unknown:
            raise InputDataError(f"dataset {name!r}: nominal columns {sorted(unknown)} not found")
        y_raw = frame[target]
        keep = y_raw.notna()
        if len(frame) and not keep.any():  # one line, not a warning before the error
            raise InputDataError(f"dataset {name!r}: the target column {target!r} holds no value (every row is "
                                 "empty there)")
        if not keep.all():
            dropped = int((~keep).sum())
            note = f"{dropped} row(s) without a target value dropped."
            logger.warning("dataset %r: %s", name, note)
            kwargs["description"] = " ".join(filter(None, [str(kwargs.get("description", "")), note]))
        frame = frame.loc[keep].reset_index(drop=True)
        y_raw = y_raw.loc[keep].reset_index(drop=True)
        X = _features(frame, target, nominal_set, name)
        if task is None:
            is_float = pd.api.types.is_float_dtype(y_raw)
            task = "regression" if is_float and y_raw.nunique() > 20 else "classification"
        if task == "classification":
            y = y_raw.astype(str).astype("category") if not isinstance(
                y_raw.dtype, pd.CategoricalDtype
            ) else y_raw.cat.remove_unused_categories()
            kwargs.setdefault("label_values", label_values(y_raw))
        else:
            y = pd.to_numeric(y_raw, errors="raise").astype(np.float64)
        y.name = str(target)
        return cls(name=name, X=X, y=y, source=source, task=task, **kwargs)  # type: ignore[arg-type]

    def label(self, category: str) -> Any:
        """The label ``category`` (text) as the caller gave it (:attr:`label_values`)."""
        return self.label_values.get(category, category)

    # ------------------------------------------------------------------ properties
    @property
    def n_instances(self) -> int:
        """The number of rows."""
        return int(len(self.X))

    @property
    def n_features(self) -> int:
        """The number of feature columns."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        """The number of distinct labels of a classification task; 0 for regression."""
        return int(self.y.nunique()) if self.task == "classification" else 0

    @property
    def feature_kinds(self) -> tuple[FeatureKind, ...]:
        """``numeric`` or ``nominal`` for each column of ``X``, in order."""
        return tuple("nominal" if isinstance(dtype, pd.CategoricalDtype) else "numeric" for dtype in self.X.dtypes)

    def __getstate__(self) -> dict[str, Any]:
        """The instance without its :meth:`memo` (derived, possibly large: recomputed where
        the copy is used)."""
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, kept on this instance under ``key``: values derived from the data
        that many evaluations reuse (the preprocessed rows of a protocol's splits, which do
        not depend on the configuration). At most :data:`MEMO_ITEMS` values of at most
        :data:`MEMO_BYTES` in all (a value's ``nbytes``, 0 when it has none) are kept, the
        least recently used dropped first (a value larger than that alone is returned, not
        kept); the data itself never changes, so nothing goes stale."""
        store: OrderedDict[Hashable, Any] = self.__dict__.setdefault("_memo", OrderedDict())
        if key in store:
            store.move_to_end(key)
            return store[key]  # type: ignore[no-any-return]
        value = compute()
        if int(getattr(value, "nbytes", 0)) > MEMO_BYTES:
            return value
        store[key] = value
        while len(store) > MEMO_ITEMS or sum(int(getattr(v, "nbytes", 0)) for v in store.values()) > MEMO_BYTES:
            store.popitem(last=False)
        return value

    @property
    def key(self) -> str:
        """The knowledge-base id this dataset gets: ``openml-<id>`` or ``<source>-<name>``."""
        return f"openml-{self.openml_id}" if self.openml_id is not None else f"{self.source}-{self.name}"

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the content, invariant to row order and to column names.

        Each row (features in column order, then the target) is hashed with
        ``pandas.util.hash_pandas_object`` on its values as strings; the row hashes are
        sorted and hashed again, so a shuffled copy of the data has the same fingerprint.
        A table of more than :data:`_TEXT_CELLS` cells hashes its numeric values' float64
        bits instead of their text (:func:`_bit_row_hashes`, row block by row block), with
        the same invariances: the text of millions of cells takes minutes and gigabytes.
        """
        n_cells = self.X.shape[0] * (self.X.shape[1] + 1)
        if n_cells > _TEXT_CELLS:
            digest = hashlib.sha256()
            digest.update(f"bits|{self.X.shape[0]}x{self.X.shape[1] + 1}|".encode())
            digest.update(np.sort(_bit_row_hashes(self.X, self.y)).tobytes())
            return digest.hexdigest()
        columns = ([_canonical_strings(self.X[c]).to_numpy(dtype=object) for c in self.X.columns]
                   if self.X.shape[1] < _FEW_COLUMNS else _canonical_matrix(self.X))
        columns.append(_canonical_strings(pd.Series(self.y.to_numpy())).to_numpy(dtype=object))
        rows = _row_hashes(columns)
        digest = hashlib.sha256()
        digest.update(f"{self.X.shape[0]}x{len(columns)}|".encode())
        digest.update(np.sort(rows).tobytes())
        return digest.hexdigest()

    def require_clean(self) -> None:
        """Raise :class:`DataQualityError` if the dataset carries a quality flag."""
        bad = {k: v for k, v in self.flags.items() if v}
        if bad:
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in bad.items())
            raise DataQualityError(
                f"dataset {self.name!r} ({self.source}) is flagged ({detail}); drop those "
                "columns (for KEEL: lost_decimals='drop', or 'repair' where a clean sibling "
                "file exists) before training on it"
            )

    def __repr__(self) -> str:
        flags = f", flags={dict(self.flags)}" if self.flags else ""
        return (
            f"Dataset({self.name!r}, source={self.source!r}, n={self.n_instances}, "
            f"d={self.n_features}, classes={self.n_classes}, openml_id={self.openml_id}{flags})"
        )


def feature_frame(X: Any) -> pd.DataFrame:
    """``X`` (a DataFrame or a 2-d array) as a :class:`Dataset` feature frame: string
    column names, float64 or Categorical columns (others converted as
    :meth:`Dataset.from_frame` converts them); what fitted models are given to predict."""
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X))
    if frame.ndim != 2:
        raise InputDataError(f"X must be 2-dimensional, got shape {frame.shape}")
    labels, dtypes = frame.columns.tolist(), frame.dtypes.tolist()
    if all(isinstance(c, str) for c in labels) and len(set(labels)) == len(labels) and all(
            isinstance(t, pd.CategoricalDtype) or t == np.float64 for t in dtypes):
        return frame.copy(deep=False)  # already one (read per column, 10,000 columns took a second)
    out = {}
    for c in frame.columns:
        col = frame[c]
        ok = isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == np.float64
        out[str(c)] = col if ok else _as_feature(col, force_nominal=False, name="X")
    return pd.DataFrame(out, index=frame.index)


def _features(frame: pd.DataFrame, target: str, nominal: set[Any], name: str) -> pd.DataFrame:
    """Every column but ``target`` as :func:`_as_feature` makes it, in the frame's order.

    The plain numeric columns are cast together and the frame is built in one go: cast
    and inserted one at a time, 10,000 columns took minutes (an insert is linear in the
    columns already there)."""
    labels = frame.columns.tolist()  # plain values once: indexing pandas' string index per column is slow
    positions = [i for i, c in enumerate(labels) if c != target]
    columns = [labels[i] for i in positions]
    names = [str(c) for c in columns]
    if len(set(names)) < len(names):  # names equal as text: one at a time, the last one kept, as before
        features = {str(c): _as_feature(frame[c], force_nominal=c in nominal, name=name) for c in columns}
        return pd.DataFrame({n: features[n] for n in names}, index=frame.index)
    dtypes = frame.dtypes.tolist()
    plain = [i for i in positions if labels[i] not in nominal and _is_plain_numeric(dtypes[i])]
    block = frame.iloc[:, plain].astype(np.float64)
    block.columns = [str(labels[i]) for i in plain]
    if len(plain) == len(positions):
        return block
    done = set(plain)
    others = {str(labels[i]): _as_feature(frame.iloc[:, i], force_nominal=labels[i] in nominal, name=name)
              for i in positions if i not in done}
    return pd.concat([block, pd.DataFrame(others, index=frame.index)], axis=1)[names]


def _is_plain_numeric(dtype: Any, booleans: bool = False) -> bool:
    """A numeric dtype that :func:`_as_feature` casts to float64 (not categorical; not
    boolean unless ``booleans``)."""
    return not isinstance(dtype, pd.CategoricalDtype) and pd.api.types.is_numeric_dtype(dtype) \
        and (booleans or not pd.api.types.is_bool_dtype(dtype))


def _as_feature(col: pd.Series, *, force_nominal: bool, name: str) -> pd.Series:
    """Convert one raw column to float64 or Categorical (strings stripped, '?' = missing)."""
    if force_nominal or isinstance(col.dtype, pd.CategoricalDtype) or not (
        pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
    ):
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            values = col.map(lambda v: v if pd.isna(v) else num_label(v))
        else:
            values = col.map(lambda v: v if pd.isna(v) else str(v).strip())
            values = values.where(~values.isin(["?", ""]), np.nan)
        return values.astype("category")
    try:
        return col.astype(np.float64)
    except (TypeError, ValueError) as e:  # pragma: no cover - numeric dtype always casts
        raise InputDataError(f"dataset {name!r}: column {col.name!r} is not numeric") from e


def num_label(v: float) -> str:
    """A category label for a number: ``3`` rather than ``3.0`` for integral values."""
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


#: up to this many columns the fingerprint converts column by column; wider tables at once
_FEW_COLUMNS = 64


def _canonical_matrix(frame: pd.DataFrame) -> list[np.ndarray]:
    """:func:`_canonical_strings` of every column of ``frame``, the numeric ones converted
    together (column by column, pandas' overhead made a 10,000-column fingerprint take
    half a minute)."""
    numeric = [i for i, dtype in enumerate(frame.dtypes.tolist()) if _is_plain_numeric(dtype, booleans=True)]
    out: list[np.ndarray | None] = [None] * frame.shape[1]
    if numeric:
        values = frame.iloc[:, numeric].to_numpy(dtype=np.float64, na_value=np.nan)
        n = len(values)
        text = np.array(["NaN" if v != v else repr(v) for v in values.T.ravel().tolist()], dtype=object)
        for k, i in enumerate(numeric):
            out[i] = text[k * n:(k + 1) * n]
    return [_canonical_strings(frame.iloc[:, i]).to_numpy(dtype=object) if o is None else o
            for i, o in enumerate(out)]


#: above this many cells (rows x (features + 1)) the fingerprint hashes values' bits, not
#: their text (:meth:`Dataset.fingerprint`); every dataset of the shipped store is below it
_TEXT_CELLS = 2_000_000
#: rows hashed at once by :func:`_bit_row_hashes` (its memory: about 8 bytes a cell of a block)
_BIT_BLOCK_ROWS = 100_000


def _bit_row_hashes(X: pd.DataFrame, y: pd.Series) -> np.ndarray:
    """One hash per row of ``X`` and ``y`` (columns combined as :func:`_combine` does):
    a numeric cell's hash is ``pandas.util.hash_array`` of its float64 bits (-0.0 as 0.0,
    every NaN as one), a nominal cell's that of its category's text (:func:`_canonical_strings`,
    hashed once per category, a missing one as ``"NaN"``), the target's that of its text
    (once per distinct value)."""
    missing = pd.util.hash_array(np.array(["NaN"], dtype=object))[0]

    def by_category(values: pd.Series) -> np.ndarray:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        table = pd.util.hash_array(_canonical_strings(pd.Series(np.asarray(uniques, dtype=object))
                                                      ).to_numpy(dtype=object))
        return np.where(codes < 0, missing, table[np.maximum(codes, 0)] if len(table) else missing)

    kinds = [isinstance(dtype, pd.CategoricalDtype) for dtype in X.dtypes]
    nominal = {i: by_category(X.iloc[:, i].astype(object)) for i, k in enumerate(kinds) if k}
    target = by_category(pd.Series(y.to_numpy()).astype(object))
    numeric = [i for i, k in enumerate(kinds) if not k]
    row_of = {i: k for k, i in enumerate(numeric)}
    out = np.empty(len(X), dtype=np.uint64)
    for start in range(0, len(X), _BIT_BLOCK_ROWS):
        stop = min(start + _BIT_BLOCK_ROWS, len(X))
        values = X.iloc[start:stop, numeric].to_numpy(dtype=np.float64, na_value=np.nan) + 0.0  # -0.0 -> 0.0
        values[np.isnan(values)] = np.nan  # one NaN
        bits = pd.util.hash_array(np.ascontiguousarray(values.T).view(np.uint64).ravel()).reshape(len(numeric),
                                                                                                   stop - start)
        cells = [bits[row_of[i]] if i in row_of else nominal[i][start:stop] for i in range(len(kinds))]
        out[start:stop] = _combine([*cells, target[start:stop]])
    return out


def _row_hashes(columns: list[np.ndarray]) -> np.ndarray:
    """``pd.util.hash_pandas_object(frame, index=False)`` of the frame with these object
    columns, without making the frame: every cell hashed at once
    (``pd.util.hash_array``), the columns combined as pandas combines them
    (``combine_hash_arrays``)."""
    n = len(columns[0])
    return _combine(list(pd.util.hash_array(np.concatenate(columns)).reshape(len(columns), n)))


def _combine(cells: list[np.ndarray]) -> np.ndarray:
    """Per row, the cell hashes of ``cells`` (one array per column) combined as pandas'
    ``combine_hash_arrays`` combines a frame's columns."""
    n = len(cells[0])
    out = np.zeros(n, dtype=np.uint64) + np.uint64(0x345678)
    mult = np.uint64(1000003)
    for i, h in enumerate(cells):
        inverse = len(cells) - i
        out ^= h
        out *= mult
        mult += np.uint64(82520 + inverse + inverse)
    return out + np.uint64(97531)


def _canonical_strings(col: pd.Series) -> pd.Series:
    """Values as strings that do not depend on dtype details (1 and 1.0 agree)."""
    if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype):
        return col.map(lambda v: "NaN" if pd.isna(v) else repr(float(v)))
    return col.astype(object).map(lambda v: "NaN" if pd.isna(v) else str(v))


def label_values(y: pd.Series) -> dict[str, Any]:
    """Text label -> the given label, for the labels that were not text (module notes on
    :attr:`Dataset.label_values`); one given value per text (the first)."""
    values = y.cat.categories if isinstance(y.dtype, pd.CategoricalDtype) else pd.unique(y)
    out: dict[str, Any] = {}
    for v in values:
        if isinstance(v, str):
            continue
        key = str(v)
        out.setdefault(key, v.item() if isinstance(v, np.generic) else v)
    return out
