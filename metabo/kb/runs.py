"""Bulk, idempotent, transactional ingestion of runs.

A batch is a DataFrame (or an iterable of mappings) with the columns of the ``runs``
table. Required: ``dataset_id``, ``metric``, ``source``, and either ``config_id`` or
both ``algorithm`` and ``params`` (a mapping or JSON text). Optional, with defaults:
``value`` (NaN allowed only when status is not ``ok``), ``fold`` = 0, ``repeat`` = 0,
``split_seed``, ``fidelity``, ``fit_seconds``, ``predict_seconds``, ``status`` = ``ok``,
``message``, ``created_at`` = now (UTC).

The batch is validated as a whole (vectorized) before anything is written; then, in
one transaction, configurations are stored and the runs inserted through DuckDB's
Arrow scan with an anti-join on ``run_id`` (:data:`metabo.kb.schema.RUN_ID_SQL`), so
the same run ingested twice is one row and a batch is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from metabo.exceptions import InputDataError, UnknownDatasetError
from metabo.kb._time import utcnow
from metabo.kb.schema import RUN_ID_SQL, RUN_STATUSES

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "dataset_id", "config_id", "metric", "value", "fold", "repeat", "split_seed",
    "fit_seconds", "predict_seconds", "status", "message", "source", "created_at", "fidelity",
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


def normalize_runs(kb: KnowledgeBase, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Validate a batch and return it with the ``runs`` columns (``run_id`` still empty).

    Raises :class:`InputDataError` (or :class:`UnknownDatasetError` /
    :class:`~metabo.exceptions.UnknownAlgorithmError`) naming the bad rows; stores
    the batch's new configurations, so call it inside the batch's transaction.
    """
    frame = runs.copy() if isinstance(runs, pd.DataFrame) else pd.DataFrame(list(runs))
    frame = frame.reset_index(drop=True)
    if frame.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    unknown = set(frame.columns) - set(RUN_COLUMNS) - {"algorithm", "params"}
    if unknown:
        raise InputDataError(f"unknown run column(s) {sorted(unknown)}; expected {list(RUN_COLUMNS)}")
    for col in ("dataset_id", "metric", "source"):
        if col not in frame.columns or frame[col].isna().any():
            raise InputDataError(f"every run needs a {col!r}")
        if pd.api.types.infer_dtype(frame[col], skipna=False) != "string":
            frame[col] = frame[col].astype(str)
    for col, default in _DEFAULTS.items():
        if col not in frame.columns:
            frame[col] = default
        elif col in ("fold", "repeat", "status"):  # rows given as mappings may omit keys
            frame[col] = frame[col].where(frame[col].notna(), default)

    # status and value
    bad = ~frame["status"].isin(RUN_STATUSES)
    if bad.any():
        raise InputDataError(
            f"status must be one of {RUN_STATUSES}; {_bad_rows(bad)} have "
            f"{sorted(set(frame.loc[bad, 'status'].astype(str)))[:3]}"
        )
    try:
        value = pd.to_numeric(frame["value"], errors="raise").astype(np.float64)
    except (TypeError, ValueError) as e:
        raise InputDataError(f"run values must be numbers: {e}") from e
    ok = (frame["status"] == "ok").to_numpy()
    bad = ok & ~np.isfinite(value.to_numpy())
    if bad.any():
        raise InputDataError(
            f"runs with status 'ok' need a finite value; {_bad_rows(bad)} are NaN or infinite "
            "(record failures with status crash/timeout/memout instead)"
        )
    frame["value"] = value.where(np.isfinite(value), np.nan)
    for col in ("fit_seconds", "predict_seconds", "fidelity"):
        vals = frame[col]
        if vals.dtype != np.float64:
            vals = pd.to_numeric(vals, errors="coerce").astype(np.float64)
        if (vals < 0).any():
            raise InputDataError(f"{col} must be >= 0; {_bad_rows(vals < 0)} are negative")
        frame[col] = vals
    for col in ("fold", "repeat"):
        vals = frame[col] if pd.api.types.is_integer_dtype(frame[col]) else pd.to_numeric(frame[col], errors="coerce")
        if vals.isna().any() or (vals < 0).any() or (vals % 1 != 0).any():
            raise InputDataError(f"{col} must be a non-negative integer")
        frame[col] = vals.astype(np.int32)
    if not pd.api.types.is_integer_dtype(frame["split_seed"]):
        try:
            seeds = pd.to_numeric(frame["split_seed"].astype(object).where(frame["split_seed"].notna(), None))
        except (TypeError, ValueError) as e:
            raise InputDataError(f"split_seed must be an integer: {e}") from e
        frame["split_seed"] = seeds
    frame["split_seed"] = frame["split_seed"].astype("Int64")
    if "created_at" not in frame.columns:
        frame["created_at"] = pd.Timestamp(utcnow())
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True).dt.tz_localize(None)
    frame["message"] = frame["message"].astype(object).where(frame["message"].notna(), None)

    # configurations
    if "config_id" not in frame.columns or frame["config_id"].isna().any():
        if "algorithm" not in frame.columns or "params" not in frame.columns:
            raise InputDataError("every run needs a 'config_id' or both 'algorithm' and 'params'")
        frame["config_id"] = kb.add_configurations(frame["algorithm"].astype(str), frame["params"])
    else:
        _check_known(kb, frame["config_id"], "configurations", "config_id", InputDataError, "configuration")
    _check_known(kb, frame["dataset_id"], "datasets", "dataset_id", UnknownDatasetError, "dataset")
    frame["run_id"] = None
    return frame[list(RUN_COLUMNS)]


def _check_known(kb: KnowledgeBase, values: pd.Series, table: str, column: str, exc: type, what: str) -> None:
    uniq = pd.DataFrame({"v": pd.unique(values.astype(str))})
    con = kb.connection
    con.register("_known_check", uniq)
    try:
        missing = [r[0] for r in con.execute(
            f"SELECT v FROM _known_check WHERE v NOT IN (SELECT {column} FROM {table}) LIMIT 5"  # noqa: S608
        ).fetchall()]
    finally:
        con.unregister("_known_check")
    if missing:
        hint = "; register it first (add_dataset / register_dataset)" if what == "dataset" else ""
        raise exc(f"unknown {what}(s) {missing}{hint}")


def run_ids(kb: KnowledgeBase, frame: pd.DataFrame) -> list[str]:
    """The ``run_id`` of each row of a normalized batch (same SQL as the insert)."""
    con = kb.connection
    con.register("_run_ids", frame.drop(columns="run_id"))
    try:
        return [r[0] for r in con.execute(f"SELECT {RUN_ID_SQL} FROM _run_ids").fetchall()]
    finally:
        con.unregister("_run_ids")


def insert_normalized(kb: KnowledgeBase, frame: pd.DataFrame) -> int:
    """Insert a normalized batch; return how many rows were new.

    ``run_id`` is computed inside DuckDB from the identity columns; rows whose id is
    already stored are skipped by an anti-join. Since the dataset is part of the
    identity, only the stored runs of the batch's datasets are joined against (half the
    cost on a 28M-run store, where the rest is pruned). Rows repeated within the batch (rare)
    are screened for with 64-bit hashes of the identity columns first, and only when
    two hashes agree is the slower exact window de-duplication used (the first row wins).
    """
    if frame.empty:
        return 0
    con = kb.connection
    cols = [c for c in RUN_COLUMNS if c != "run_id"]
    con.register("_run_batch", pa.Table.from_pandas(frame[cols], preserve_index=False))
    try:
        # 64-bit hashes only screen: distinct hashes prove distinct identities.
        identity = ", ".join(IDENTITY_COLUMNS)
        repeated = con.execute(
            f"SELECT count(*) - count(DISTINCT hash({identity})) FROM _run_batch"  # noqa: S608
        ).fetchone()[0]
        dedup = "QUALIFY row_number() OVER (PARTITION BY b.run_id ORDER BY b.created_at) = 1" if repeated else ""
        inserted = con.execute(
            f"""INSERT INTO runs ({", ".join(RUN_COLUMNS)}, algorithm)
                SELECT b.*, c.algorithm FROM (SELECT {RUN_ID_SQL} AS run_id, {", ".join(cols)} FROM _run_batch) b
                JOIN configurations c ON c.config_id = b.config_id
                ANTI JOIN (SELECT run_id FROM runs
                           WHERE dataset_id IN (SELECT DISTINCT dataset_id FROM _run_batch)) r
                ON r.run_id = b.run_id {dedup}"""  # noqa: S608
        ).fetchone()[0]
    finally:
        con.unregister("_run_batch")
    return int(inserted)


def add_runs(kb: KnowledgeBase, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> int:
    """Validate and insert a batch in one transaction; return rows newly written."""
    with kb.transaction():
        frame = normalize_runs(kb, runs)
        return insert_normalized(kb, frame)
