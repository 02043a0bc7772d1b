"""Compact storage of a run's predictions.

An n x k array of class probabilities (or n labels, k = 1) is stored as float32,
row-major, zlib-compressed (level 6) in one BLOB with its shape. float32 keeps seven
significant digits, ample for ensemble selection and diversity, at half the size.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


def encode(array: np.ndarray) -> tuple[int, int, bytes]:
    """(n_rows, n_cols, compressed bytes) of a 1-D or 2-D numeric array."""
    arr = np.asarray(array)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.size == 0:
        raise InputDataError(f"predictions must be a non-empty 1-D or 2-D array, got shape {arr.shape}")
    try:
        arr32 = np.ascontiguousarray(arr, dtype="<f4")
    except (TypeError, ValueError) as e:
        raise InputDataError("predictions must be numeric") from e
    if not np.isfinite(arr32).all():
        raise InputDataError("predictions contain NaN or infinite values")
    return arr32.shape[0], arr32.shape[1], zlib.compress(arr32.tobytes(), 6)


def decode(n_rows: int, n_cols: int, data: bytes) -> np.ndarray:
    """Inverse of :func:`encode` (a 2-D float32 array)."""
    return np.frombuffer(zlib.decompress(data), dtype="<f4").reshape(n_rows, n_cols).copy()


def add_predictions(kb: KnowledgeBase, run_id: str, array: np.ndarray, *, split: str = "valid") -> None:
    """Store (replace) the predictions of a stored run."""
    add_many_predictions(kb, [(run_id, split, array)])


def add_many_predictions(kb: KnowledgeBase, items: Iterable[tuple[str, str, np.ndarray]], *,
                         dataset_id: str | None = None) -> None:
    """Store (replace) the predictions of stored runs, ``(run_id, split, array)`` each (the
    last of repeated pairs wins), in one transaction: one lookup of the runs, one delete,
    one insert, rather than a scan of the runs table per array. ``dataset_id``, when all
    the runs are of that dataset, narrows the lookup to its rows. An unknown run id raises
    :class:`InputDataError` and stores none of them."""
    rows = {(run_id, split): encode(array) for run_id, split, array in items}
    if not rows:
        return
    ids = sorted({run_id for run_id, _ in rows})
    where, params = ("dataset_id = ? AND ", [dataset_id]) if dataset_id is not None else ("", [])
    with kb.transaction() as tx:
        found = {r[0] for r in tx.execute(
            f"SELECT DISTINCT run_id FROM runs WHERE {where}run_id IN (SELECT unnest(?::VARCHAR[]))",  # noqa: S608
            [*params, ids]).fetchall()}
        missing = [run_id for run_id in ids if run_id not in found]
        if missing:
            of = "" if dataset_id is None else f" of dataset {dataset_id!r}"
            raise InputDataError(f"unknown run id {missing[0]!r}{of}"
                                 + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                                 + "; store the run before its predictions")
        keys = list(rows)
        tx.execute("DELETE FROM predictions USING (SELECT unnest(?::VARCHAR[]) AS r, unnest(?::VARCHAR[]) AS s) k "
                   "WHERE predictions.run_id = k.r AND predictions.split = k.s",
                   [[r for r, _ in keys], [s for _, s in keys]])
        tx.executemany("INSERT INTO predictions VALUES (?, ?, ?, ?, ?)",
                       [[run_id, split, *rows[run_id, split]] for run_id, split in keys])


def get_predictions(kb: KnowledgeBase, run_id: str, *, split: str = "valid") -> np.ndarray:
    """The stored predictions of run ``run_id`` on ``split``; InputDataError if none are stored."""
    row = kb.connection.execute(
        "SELECT n_rows, n_cols, data FROM predictions WHERE run_id = ? AND split = ?", [run_id, split]
    ).fetchone()
    if row is None:
        raise InputDataError(f"no {split!r} predictions stored for run {run_id!r}")
    return decode(row[0], row[1], row[2])
