"""The surrogate bank's cache in the knowledge base (table ``surrogate_bank``, schema v5).

Notation (:mod:`metabo.surrogates.bank`): member ``S_{k,p}`` of task ``p`` and algorithm
``k``, fitted on ``n`` rows ``X`` (n, d_k) with task-normalized targets ``u`` (n,); its
GP state: lengthscales ``l`` (d_k,), signal variance ``sigma_a^2``, noise ``nu``, constant
mean ``m``, the GP's own standardization ``z = (u - c) / s`` (``c``, ``s``), the jitter
``j`` its factorization needed, ``K = sigma_a^2 k(X, X; l) + (nu + j) I = L L^T`` (n, n)
and ``alpha = K^-1 (z - m)`` (n,).

One row per (task, algorithm, metric, settings): ``settings`` is JSON of everything a
member depends on besides its runs (kernel, ``max_points``, restarts, seed, the encoder's
key, the normalization of the task's values, :data:`FORMAT`); ``fingerprint`` is
:func:`task_fingerprint` of the task's runs (all
algorithms: the normalization of ``u`` uses them all, so any new run of the task
invalidates its members); ``state`` is :data:`MAGIC`, the SHA-256 of the rest, then one
``np.savez_compressed`` archive of float64 arrays (``X``, ``u``, ``L``, ``alpha``, ``l``,
the scalars) and the row's identity.

A stored member is used only if (1) its row's settings and fingerprint match, (2) the
blob's checksum matches and the archive reads, (3) the identity inside it equals the
row's, and (4) it is numerically the factorization of its own data: for a seeded probe ``r``,
``L (L^T r) = K r`` and ``L (L^T alpha) = z - m`` to a backward-error tolerance
(O(n^2 d) per member). Anything else is logged and refitted: never a wrong model.

The table is a cache: :mod:`metabo.kb.parquet_io` does not export it (it is not in
:data:`metabo.kb.schema.TABLES`); an imported store refits its bank on first use.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np
from scipy.spatial.distance import cdist

from metabo.exceptions import KnowledgeBaseError, MetaboError
from metabo.kb.surrogate_bank import bank_rows, count_bank_rows, delete_bank_rows, replace_bank_rows
from metabo.surrogates.gp import PosteriorState

if TYPE_CHECKING:
    from metabo.kb.past import TaskAlgorithmRuns
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

#: Version of the stored layout and of the fitting procedure; bump to invalidate old rows.
FORMAT = 2
#: First bytes of a stored member (format 2), followed by the SHA-256 of the archive.
MAGIC = b"metabo-bank-2\n"
_SQRT5 = float(np.sqrt(5.0))
_SCALARS = ("amplitude", "noise", "mean", "y_shift", "y_scale", "jitter")


@dataclass(frozen=True)
class CachedMember:
    """One fitted member as stored: the GP's posterior arrays, its targets ``u`` (n,) and
    the jitter ``j`` of its factorization (module notation)."""

    state: PosteriorState
    y: np.ndarray
    jitter: float


def task_fingerprint(runs: Mapping[str, TaskAlgorithmRuns]) -> str:
    """SHA-256 (32 hex digits) of a task's runs: per algorithm in sorted order, its name, its
    sorted configuration ids and their values (float64, little-endian)."""
    h = hashlib.sha256()
    for algorithm in sorted(runs):
        group = runs[algorithm]
        order = np.argsort(np.asarray(group.config_ids, dtype=object), kind="stable")
        h.update(b"\x00alg\x00" + algorithm.encode())
        h.update("\n".join(group.config_ids[i] for i in order).encode())
        h.update(np.ascontiguousarray(np.asarray(group.values, dtype="<f8")[order]).tobytes())
    return h.hexdigest()[:32]


def settings_key(*, kernel: str, max_points: int | None, n_restarts: int, seed: int, encoder: str,
                 normalization: str = "copula") -> str:
    """The JSON ``settings`` column of one algorithm's members (``normalization``: how the
    task's values were put on the shared scale, :mod:`metabo.surrogates.normalization`;
    part of the key since it was introduced, so members cached before are refitted)."""
    return json.dumps({"format": FORMAT, "kernel": kernel, "max_points": max_points, "n_restarts": n_restarts,
                       "seed": seed, "encoder": encoder, "normalization": normalization}, sort_keys=True)


def pack(member: CachedMember, identity: Sequence[str]) -> bytes:
    """The ``state`` blob: compressed float64 arrays and ``identity`` (task, algorithm,
    metric, settings, fingerprint)."""
    s = member.state
    buf = io.BytesIO()
    np.savez_compressed(
        buf, X=s.X.astype("<f8"), y=np.asarray(member.y, dtype="<f8"), L=s.L.astype("<f8"),
        alpha=s.alpha.astype("<f8"), lengthscales=np.asarray(s.lengthscales, dtype="<f8"),
        scalars=np.array([s.amplitude, s.noise, s.mean, s.y_shift, s.y_scale, member.jitter], dtype="<f8"),
        identity=np.array(json.dumps(list(identity))),
    )
    archive = buf.getvalue()
    return MAGIC + hashlib.sha256(archive).digest() + archive


class CorruptEntryError(MetaboError, ValueError):
    """A stored member that cannot be trusted (unreadable, foreign or inconsistent)."""


def unpack(blob: bytes, identity: Sequence[str]) -> CachedMember:
    """The member in ``blob``, checked (module docstring, conditions 2-4); raises
    :class:`CorruptEntryError` otherwise."""
    head = len(MAGIC) + 32
    if blob[:len(MAGIC)] != MAGIC:
        raise CorruptEntryError("not a stored bank GP of this format")
    archive = blob[head:]
    if hashlib.sha256(archive).digest() != blob[len(MAGIC):head]:
        raise CorruptEntryError("checksum mismatch")
    try:
        with np.load(io.BytesIO(archive), allow_pickle=False) as z:
            arrays = {k: np.array(z[k], dtype=float) for k in ("X", "y", "L", "alpha", "lengthscales", "scalars")}
            stored_identity = json.loads(str(z["identity"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise CorruptEntryError(f"unreadable archive ({type(e).__name__}: {e})") from e
    if stored_identity != list(identity):
        raise CorruptEntryError(f"the archive belongs to {stored_identity}, not to {list(identity)}")
    X, y, L, alpha, ls, scalars = (arrays[k] for k in ("X", "y", "L", "alpha", "lengthscales", "scalars"))
    if X.ndim != 2 or scalars.shape != (len(_SCALARS),):
        raise CorruptEntryError("arrays of the wrong rank")
    n, d = X.shape
    if y.shape != (n,) or L.shape != (n, n) or alpha.shape != (n,) or ls.shape != (d,) or n == 0:
        raise CorruptEntryError(f"inconsistent shapes X {X.shape}, y {y.shape}, L {L.shape}, alpha {alpha.shape}")
    if not all(np.all(np.isfinite(a)) for a in arrays.values()):
        raise CorruptEntryError("non-finite values")
    amp, noise, mean, shift, scale, jitter = scalars.tolist()
    if min(amp, scale) <= 0 or min(noise, jitter) < 0 or np.any(ls <= 0):
        raise CorruptEntryError("non-positive hyperparameters")
    state = PosteriorState(X, L, alpha, ls, amp, noise, mean, shift, scale)
    _check_factorization(state, y, jitter)
    return CachedMember(state, y, jitter)


def _check_factorization(s: PosteriorState, y: np.ndarray, jitter: float) -> None:
    """Condition (4): ``L`` factors ``K`` of the stored data and ``alpha`` solves it."""
    n = len(y)
    if np.any(np.triu(s.L, 1) != 0) or np.any(np.diag(s.L) <= 0):
        raise CorruptEntryError("L is not a lower Cholesky factor")
    A = s.X * (_SQRT5 / s.lengthscales)
    r2 = cdist(A, A, "sqeuclidean")
    root = np.sqrt(r2)
    K = s.amplitude * (1.0 + root + r2 / 3.0) * np.exp(-root)
    K[np.diag_indices(n)] += s.noise + jitter
    absL = np.abs(s.L)
    probe = np.random.default_rng(n).standard_normal(n)
    z = (y - s.y_shift) / s.y_scale - s.mean
    eps = 64.0 * n * np.finfo(float).eps
    for v, target, what in ((probe, K @ probe, "L L^T does not reproduce K"),
                            (s.alpha, z, "L L^T alpha does not reproduce the targets z - m")):
        residual = np.abs(s.L @ (s.L.T @ v) - target)
        bound = eps * (absL @ (absL.T @ np.abs(v)) + np.abs(K) @ np.abs(v) + np.abs(target)) + 1e-300
        if np.any(residual > bound):
            raise CorruptEntryError(f"{what} (residual up to {float(np.max(residual / bound)):.3g} x its bound)")


def load(kb: KnowledgeBase, metric: str, wanted: Mapping[tuple[str, str], tuple[str, str]]
         ) -> dict[tuple[str, str], CachedMember]:
    """Stored members of ``wanted`` ((task, algorithm) -> (settings, fingerprint)) whose
    settings and fingerprint match and which pass the checks; corrupt ones are logged and
    left out (the caller refits them)."""
    if not wanted:
        return {}
    settings = sorted({s for s, _ in wanted.values()})
    rows = bank_rows(kb, metric, settings)  # KnowledgeBaseError on failure
    out: dict[tuple[str, str], CachedMember] = {}
    for task, algorithm, setting, fingerprint, blob in rows.itertuples(index=False):
        key = (task, algorithm)
        if wanted.get(key) != (setting, fingerprint):
            continue
        try:
            out[key] = unpack(bytes(blob), (task, algorithm, metric, setting, fingerprint))
        except CorruptEntryError as e:
            logger.warning("surrogate bank: the stored GP of %s on %s cannot be trusted (%s); refitting it",
                           algorithm, task, e)
    return out


def store(kb: KnowledgeBase, metric: str, entries: Iterable[tuple[str, str, str, str, CachedMember]]) -> int:
    """Write ``(task, algorithm, settings, fingerprint, member)`` rows in one transaction,
    replacing rows of the same (task, algorithm, metric, settings); returns the count."""
    import pandas as pd

    from metabo.kb.timestamps import utcnow

    rows = [(t, a, metric, s, f, len(m.y), pack(m, (t, a, metric, s, f))) for t, a, s, f, m in entries]
    if not rows:
        return 0
    frame = pd.DataFrame(rows, columns=["task", "algorithm", "metric", "settings", "fingerprint", "n", "state"])
    frame["created_at"] = utcnow()
    try:
        replace_bank_rows(kb, frame)
    except duckdb.Error as e:
        raise KnowledgeBaseError(f"storing {len(rows)} bank GPs failed, none was stored: {e}") from e
    return len(rows)


def clear(kb: KnowledgeBase, metric: str | None = None) -> int:
    """Delete the cached members (of ``metric``, or all); returns how many were deleted."""
    n = count_bank_rows(kb, metric)
    try:
        delete_bank_rows(kb, metric)
    except duckdb.Error as e:
        raise KnowledgeBaseError(f"clearing the surrogate bank cache failed: {e}") from e
    return n


__all__ = ["FORMAT", "CachedMember", "CorruptEntryError", "clear", "load", "pack", "settings_key", "store",
           "task_fingerprint", "unpack"]
