"""Compact storage of a run's predictions.

An n x k array of class probabilities (or n labels, k = 1) is stored as float32,
row-major, zlib-compressed (level 6) in one BLOB with its shape. float32 keeps seven
significant digits, ample for ensemble selection and diversity, at half the size.
"""

from __future__ import annotations

import zlib
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
    n, k, blob = encode(array)
    with kb.transaction() as tx:
        if tx.execute("SELECT 1 FROM runs WHERE run_id = ? LIMIT 1", [run_id]).fetchone() is None:
            raise InputDataError(f"unknown run id {run_id!r}; store the run before its predictions")
        tx.execute("DELETE FROM predictions WHERE run_id = ? AND split = ?", [run_id, split])
        tx.execute("INSERT INTO predictions VALUES (?, ?, ?, ?, ?)", [run_id, split, n, k, blob])


def get_predictions(kb: KnowledgeBase, run_id: str, *, split: str = "valid") -> np.ndarray:
    """The stored predictions of run ``run_id`` on ``split``; InputDataError if none are stored."""
    row = kb.connection.execute(
        "SELECT n_rows, n_cols, data FROM predictions WHERE run_id = ? AND split = ?", [run_id, split]
    ).fetchone()
    if row is None:
        raise InputDataError(f"no {split!r} predictions stored for run {run_id!r}")
    return decode(row[0], row[1], row[2])
