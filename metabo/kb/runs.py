"""Bulk, idempotent, transactional ingestion of runs.

A batch is a DataFrame (or an iterable of mappings) with the columns of the ``runs``
table. Required: ``dataset_id``, ``metric``, ``source``, and either ``config_id`` or
both ``algorithm`` and ``params`` (a mapping or JSON text). Optional, with defaults:
``value`` (NaN allowed only when status is not ``ok``), ``fold`` = 0, ``repeat`` = 0,
``split_seed``, ``fidelity``, ``fit_seconds``, ``predict_seconds``, ``status`` = ``ok``,
``message``, ``created_at`` = now (UTC), ``protocol`` = how the run was measured (see
:mod:`metabo.kb.schema`; missing: the protocol its session's settings name, else the
source's name, so every stored run says how it was measured).

The batch is validated as a whole, column by column on NumPy / pandas arrays (a
DataFrame's per-operation overhead would dominate the one-row batches a service
writes), before anything is written; then, in
one transaction, configurations are stored and the runs inserted through DuckDB's
Arrow scan with an anti-join on ``run_id`` (:data:`metabo.kb.schema.RUN_ID_SQL`), so
the same run ingested twice is one row and a batch is all-or-nothing.

:func:`record` stores evaluations (:class:`~metabo.evaluation.evaluate.Evaluation`) with
their predictions: the rows of :func:`metabo.evaluation.evaluate.run_rows`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from metabo.exceptions import InputDataError, UnknownDatasetError
from metabo.kb._sql import SMALL_BATCH, in_list
from metabo.kb.predictions import add_many_predictions
from metabo.kb.schema import RUN_ID_SQL, RUN_STATUSES, protocol_sql
from metabo.kb.timestamps import utcnow

if TYPE_CHECKING:
    from metabo.evaluation.evaluate import Evaluation
    from metabo.kb.store import KnowledgeBase

RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "dataset_id", "config_id", "metric", "value", "fold", "repeat", "split_seed",
    "fit_seconds", "predict_seconds", "status", "message", "source", "created_at", "fidelity", "protocol",
)
# The columns that identify a run (hashed into run_id by RUN_ID_SQL).
IDENTITY_COLUMNS: tuple[str, ...] = (
    "dataset_id", "config_id", "metric", "fold", "repeat", "split_seed", "source", "fidelity",
)
_DEFAULTS: dict[str, Any] = {
    "fold": 0, "repeat": 0, "split_seed": None, "fidelity": np.nan, "fit_seconds": np.nan,
    "predict_seconds": np.nan, "status": "ok", "message": None, "value": np.nan,
}


def _bad_rows(mask: np.ndarray | pd.Series) -> str:
    idx = np.flatnonzero(np.asarray(mask))
    head = ", ".join(str(i) for i in idx[:5])
    return f"{len(idx)} row(s) (first: {head})"


def _values(column: pd.Series) -> Any:
    """A column's values without a copy: its extension array, else its NumPy array."""
    return column.array if isinstance(column.dtype, pd.api.extensions.ExtensionDtype) else column.to_numpy()


def _columns(runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], int]:
    """The batch as ``{column: array}`` (NumPy or pandas extension arrays) and its length.

    Rows given as mappings become object arrays, a key a row omits is NaN (as
    ``pd.DataFrame(rows)`` has it); a frame's columns are used without a copy (and
    never written to). Working on arrays rather than a frame keeps the per-operation
    overhead of pandas off small batches.
    """
    if isinstance(runs, pd.DataFrame):
        return {c: _values(s) for c, s in runs.items()}, len(runs)
    rows = list(runs)
    n = len(rows)
    cols = {}
    for key in dict.fromkeys(k for row in rows for k in row):
        arr = np.empty(n, dtype=object)
        for i, row in enumerate(rows):
            arr[i] = row.get(key, np.nan)
        cols[key] = arr
    return cols, n


def _as_strings(values: Any) -> Any:
    """``values`` as text: unchanged when already text, else ``astype(str)``."""
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return pd.Series(values).astype(str).array


# The dtype of a column a batch leaves out (split_seed and text as Arrow-backed arrays:
# cheap to fill, check and hand to Arrow for a million rows).
_DEFAULT_DTYPES: dict[str, str] = {"split_seed": "Int64", "status": "str", "message": "str", "protocol": "str"}


def _constant(value: Any, n: int, column: str) -> Any:
    """A column of ``n`` times ``value``."""
    dtype = _DEFAULT_DTYPES.get(column)
    if dtype is None:
        return np.full(n, value)
    return pd.array([value], dtype=dtype).take(np.zeros(n, dtype=np.intp))


def _fill_missing(values: Any, default: Any) -> Any:
    mask = pd.isna(values)
    if not mask.any():
        return values
    return pd.Series(values).where(~mask, default).array


def normalize_runs(kb: KnowledgeBase, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Validate a batch and return it with the ``runs`` columns (``run_id`` still empty).

    Raises :class:`InputDataError` (or :class:`UnknownDatasetError` /
    :class:`~metabo.exceptions.UnknownAlgorithmError`) naming the bad rows; stores
    the batch's new configurations, so call it inside the batch's transaction.
    """
    cols = _normalize(kb, runs)
    if cols is None:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    run_id = np.full(len(cols["dataset_id"]), None, dtype=object)
    return pd.DataFrame({"run_id": run_id, **cols}, columns=list(RUN_COLUMNS), copy=False)


def _normalize(kb: KnowledgeBase, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The validation of :func:`normalize_runs`: the batch's stored columns (without
    ``run_id``) as arrays, or ``None`` for an empty batch."""
    cols, n = _columns(runs)
    if n == 0 or not cols:
        return None
    unknown = set(cols) - set(RUN_COLUMNS) - {"algorithm", "params"}
    if unknown:
        raise InputDataError(f"unknown run column(s) {sorted(unknown)}; expected {list(RUN_COLUMNS)}")
    for col in ("dataset_id", "metric", "source"):
        if col not in cols or pd.isna(cols[col]).any():
            raise InputDataError(f"every run needs a {col!r}")
        cols[col] = _as_strings(cols[col])
    for col, default in _DEFAULTS.items():
        if col not in cols:
            cols[col] = _constant(default, n, col)
        elif col in ("fold", "repeat", "status"):  # rows given as mappings may omit keys
            cols[col] = _fill_missing(cols[col], default)

    # status and value
    status = cols["status"]
    if not set(pd.unique(status)) <= set(RUN_STATUSES):
        bad = ~pd.Series(status).isin(RUN_STATUSES).to_numpy()
        raise InputDataError(
            f"status must be one of {RUN_STATUSES}; {_bad_rows(bad)} have "
            f"{sorted(set(pd.Series(status)[bad].astype(str)))[:3]}"
        )
    try:
        value = np.asarray(pd.to_numeric(cols["value"], errors="raise").astype(np.float64))
    except (TypeError, ValueError) as e:
        raise InputDataError(f"run values must be numbers: {e}") from e
    finite = np.isfinite(value)
    bad = np.asarray(status == "ok", dtype=bool) & ~finite
    if bad.any():
        raise InputDataError(
            f"runs with status 'ok' need a finite value; {_bad_rows(bad)} are NaN or infinite "
            "(record failures with status crash/timeout/memout instead)"
        )
    cols["value"] = value if finite.all() else np.where(finite, value, np.nan)
    for col in ("fit_seconds", "predict_seconds", "fidelity"):
        vals = cols[col]
        if vals.dtype != np.float64:
            vals = np.asarray(pd.to_numeric(vals, errors="coerce").astype(np.float64))
        if (vals < 0).any():
            raise InputDataError(f"{col} must be >= 0; {_bad_rows(vals < 0)} are negative")
        cols[col] = vals
    for col in ("fold", "repeat"):
        vals = cols[col] if pd.api.types.is_integer_dtype(cols[col]) else pd.to_numeric(cols[col], errors="coerce")
        if pd.isna(vals).any() or (vals < 0).any() or (vals % 1 != 0).any():
            raise InputDataError(f"{col} must be a non-negative integer")
        cols[col] = np.asarray(vals.astype(np.int32))
    seeds = cols["split_seed"]
    if not pd.api.types.is_integer_dtype(seeds):
        try:
            # (numpy's stubs reject None as a branch of np.where; on an object array it is the null)
            seeds = pd.to_numeric(np.where(pd.isna(seeds), None, np.asarray(seeds, dtype=object)))  # type: ignore[call-overload]
        except (TypeError, ValueError) as e:
            raise InputDataError(f"split_seed must be an integer: {e}") from e
    cols["split_seed"] = pd.array(seeds, dtype="Int64")
    created = cols.get("created_at")
    if created is None:
        created = np.full(n, np.datetime64(utcnow(), "us"))
    cols["created_at"] = np.asarray(pd.to_datetime(created, utc=True).tz_localize(None))
    message = cols["message"]
    if isinstance(message, np.ndarray):  # NaN as None (extension arrays have nulls)
        cols["message"] = np.where(pd.isna(message), None, message.astype(object))  # type: ignore[call-overload]
    given = cols.get("protocol")  # missing ones are filled in the insert (schema.protocol_sql)
    if given is None:
        cols["protocol"] = np.full(n, None, dtype=object)
    else:
        missing = np.asarray(pd.isna(given), dtype=bool)
        cols["protocol"] = np.asarray(_as_strings(given), dtype=object)
        cols["protocol"][missing] = None

    # configurations
    if "config_id" not in cols or pd.isna(cols["config_id"]).any():
        if "algorithm" not in cols or "params" not in cols:
            raise InputDataError("every run needs a 'config_id' or both 'algorithm' and 'params'")
        cols["config_id"] = np.asarray(kb.add_configurations(_as_strings(cols["algorithm"]), cols["params"]),
                                       dtype=object)
    else:
        _check_known(kb, cols["config_id"], "configurations", "config_id", InputDataError, "configuration")
    _check_known(kb, cols["dataset_id"], "datasets", "dataset_id", UnknownDatasetError, "dataset")
    return {c: cols[c] for c in _ARROW_TYPES}


def _check_known(kb: KnowledgeBase, values: Any, table: str, column: str, exc: type, what: str) -> None:
    distinct = list(dict.fromkeys(map(str, np.asarray(pd.unique(values), dtype=object).tolist())))
    sql, params = in_list(distinct)
    found = {r[0] for r in kb.connection.execute(
        f"SELECT {column} FROM {table} WHERE {column} IN {sql}", params  # noqa: S608
    ).fetchall()}
    missing = [v for v in distinct if v not in found][:5]
    if missing:
        hint = "; register it first (add_dataset / register_dataset)" if what == "dataset" else ""
        raise exc(f"unknown {what}(s) {missing}{hint}")


# The Arrow type of each stored column of a normalized batch; NaN in a float column is NULL.
_ARROW_TYPES: dict[str, pa.DataType] = {
    "dataset_id": pa.large_string(), "config_id": pa.large_string(), "metric": pa.large_string(), "value": pa.float64(),
    "fold": pa.int32(), "repeat": pa.int32(), "split_seed": pa.int64(), "fit_seconds": pa.float64(),
    "predict_seconds": pa.float64(), "status": pa.large_string(), "message": pa.large_string(),
    "source": pa.large_string(),
    "created_at": pa.timestamp("us"), "fidelity": pa.float64(), "protocol": pa.large_string(),
}


def _arrow_batch(batch: pd.DataFrame | Mapping[str, Any]) -> pa.Table:
    """A normalized batch (a frame, or the columns :func:`_normalize` returns) as an
    Arrow table with the stored types, without ``run_id``."""
    columns = {c: _values(batch[c]) for c in _ARROW_TYPES} if isinstance(batch, pd.DataFrame) else batch
    return pa.table({c: pa.array(columns[c], type=t, from_pandas=True) for c, t in _ARROW_TYPES.items()})


def run_ids(kb: KnowledgeBase, frame: pd.DataFrame) -> list[str]:
    """The ``run_id`` of each row of a normalized batch (same SQL as the insert)."""
    con = kb.connection
    con.register("_run_ids", _arrow_batch(frame))
    try:
        return [r[0] for r in con.execute(f"SELECT {RUN_ID_SQL} FROM _run_ids").fetchall()]
    finally:
        con.unregister("_run_ids")


def _may_repeat(kb: KnowledgeBase, batch: pa.Table) -> bool:
    """Whether two rows of the registered batch may have the same identity.

    A screen: ``False`` proves the identities distinct. A few rows are compared as
    Python tuples (no query); more by 64-bit hashes in DuckDB (distinct hashes prove
    distinct identities).
    """
    if batch.num_rows <= SMALL_BATCH:
        keys = zip(*(batch.column(c).to_pylist() for c in IDENTITY_COLUMNS), strict=True)
        return len(set(keys)) < batch.num_rows
    identity = ", ".join(IDENTITY_COLUMNS)
    return kb.connection.execute(
        f"SELECT count(*) - count(DISTINCT hash({identity})) FROM _run_batch"  # noqa: S608
    ).fetchall()[0][0] > 0


def insert_normalized(kb: KnowledgeBase, frame: pd.DataFrame) -> int:
    """Insert a normalized batch; return how many rows were new.

    ``run_id`` is computed inside DuckDB from the identity columns; rows whose id is
    already stored are skipped by an anti-join. Since the dataset is part of the
    identity, only the stored runs of the batch's datasets are joined against (half the
    cost on a 28M-run store, where the rest is pruned). Rows repeated within the batch (rare)
    are screened for first (:func:`_may_repeat`), and only when the screen cannot prove
    the identities distinct is the slower exact window de-duplication used (the first
    row wins).
    """
    return 0 if frame.empty else _insert(kb, _arrow_batch(frame))


def _insert(kb: KnowledgeBase, batch: pa.Table) -> int:
    """:func:`insert_normalized` of a batch as :func:`_arrow_batch` gives it."""
    con = kb.connection
    cols = [protocol_sql("_run_batch") + " AS protocol" if c == "protocol" else c
            for c in RUN_COLUMNS if c != "run_id"]
    con.register("_run_batch", batch)
    try:
        repeated = _may_repeat(kb, batch)
        dedup = "QUALIFY row_number() OVER (PARTITION BY b.run_id ORDER BY b.created_at) = 1" if repeated else ""
        # the batch's datasets as constants (a few) or one list: no subquery to plan
        datasets, params = in_list(pc.unique(batch.column("dataset_id")).to_pylist())
        inserted = con.execute(
            f"""INSERT INTO runs ({", ".join(RUN_COLUMNS)}, algorithm)
                SELECT b.*, c.algorithm FROM (SELECT {RUN_ID_SQL} AS run_id, {", ".join(cols)} FROM _run_batch) b
                JOIN configurations c ON c.config_id = b.config_id
                ANTI JOIN (SELECT run_id FROM runs
                           WHERE dataset_id IN {datasets}) r
                ON r.run_id = b.run_id {dedup}""",  # noqa: S608
            params,
        ).fetchall()[0][0]
    finally:
        con.unregister("_run_batch")
    return int(inserted)


def add_runs(kb: KnowledgeBase, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> int:
    """Validate and insert a batch in one transaction; return rows newly written."""
    with kb.transaction():
        cols = _normalize(kb, runs)
        return 0 if cols is None else _insert(kb, _arrow_batch(cols))


def record(kb: KnowledgeBase, evaluations: Iterable[Evaluation], *, dataset_id: str, source: str,
           protocol: str | None = None, created_at: Sequence[datetime] | None = None) -> int:
    """Store the runs and predictions of ``evaluations`` in one transaction.

    ``protocol``: how they were measured
    (:func:`~metabo.evaluation.protocols.protocol_label`); None: the protocol of the
    session ``source`` names, else the source's name (module docstring).

    Algorithms not yet registered in ``kb`` are registered. Returns how many run rows
    were new (recording the same evaluations twice adds none; their predictions are
    replaced). Predictions go to the primary metric's run
    (:mod:`metabo.evaluation.evaluate`). ``created_at``: each evaluation's time (naive
    UTC; default: now).
    """
    from metabo.evaluation.evaluate import run_rows

    evaluations = list(evaluations)
    frame, primary = run_rows(evaluations, dataset_id, source, protocol, created_at)
    if frame.empty:
        return 0
    with kb.transaction():
        kb.add_algorithms(frame["algorithm"].unique().tolist())
        normalized = normalize_runs(kb, frame)
        inserted = insert_normalized(kb, normalized)
        ids = run_ids(kb, normalized)
        arrays = [(ids[row], split, proba) for i, row in primary
                  for split, proba in (("valid", evaluations[i].valid_proba), ("test", evaluations[i].test_proba))
                  if proba is not None]
        add_many_predictions(kb, arrays, dataset_id=dataset_id)
    return inserted
