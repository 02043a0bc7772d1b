"""The surrogate bank: one base GP per (past task, algorithm), predicted in batches.

Notation (RLGP, Manolache & Vanschoren 2019, sec. 3 and Algorithm 1 line 1: "To each
prior task, fit base models S_{k,p} on D_p^k"): past task ``p``, algorithm ``k``, its
runs ``D_p^k = {(x_i, y_i)}`` with ``x_i`` in the algorithm's own unit-cube encoding
(d_k,). Targets are standardized per task over *all* its algorithms' runs,
``u_i = (y_i - ybar_p) / s_p``, so a task's GPs share one scale and keep the levels across
algorithms (RLGP compares algorithms; the paper does not say how it scales, RGPE
standardizes each task). At most ``max_points`` runs per (task, algorithm), drawn with a
generator seeded by (seed, task, algorithm) (the RLGP protocol fits "a set of 50 randomly
selected configurations"), so a member does not depend on which other tasks are present.

Each member ``S_{k,p}`` is a :class:`~metabo.surrogates.gp.GaussianProcess` (Matérn 5/2
ARD, MAP hyperparameters) kept as its posterior arrays
(:class:`~metabo.surrogates.gp.PosteriorState`). Predictions of all members of algorithm
``k`` at ``m`` candidates are one batched computation per group of members with the same
``n`` (scaled distances by batched matrix products, ``k* = sigma_a^2 k(X*, X; l)``,
``mu = m + k*^T alpha``, ``v = sigma_a^2 - ||L^-1 k*||^2``, thesis eqs. 5.3-5.4), returned
as (T, m) arrays in the task-standardized units ``u``; variances are of the latent f.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import solve_triangular

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb.past import PastRuns
from metabo.surrogates.gp import GaussianProcess, PosteriorState
from metabo.surrogates.likelihood import cholesky_jitter

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase
    from metabo.space.cash import CASHSpace

logger = logging.getLogger(__name__)

Encoder = Callable[[str, Sequence[Mapping[str, Any]]], np.ndarray]
_SQRT5 = float(np.sqrt(5.0))


def space_encoder(space: CASHSpace) -> Encoder:
    """Rows in the algorithm's own unit-cube encoding: ``space[algorithm].encode_many``.
    Its ``key(algorithm)`` (the space's JSON hashed) identifies cached GPs in the store."""

    def encode(algorithm: str, params: Sequence[Mapping[str, Any]]) -> np.ndarray:
        if algorithm not in space:
            raise UnknownAlgorithmError(f"algorithm {algorithm!r} is not in the space {list(space.algorithms)}")
        return space[algorithm].encode_many(list(params))

    def key(algorithm: str) -> str:
        return hashlib.sha256(space[algorithm].to_json().encode()).hexdigest()[:16]

    encode.key = key  # type: ignore[attr-defined]
    return encode


def _member_seed(seed: int, task: str, algorithm: str) -> int:
    return int(np.random.SeedSequence([seed, zlib.crc32(task.encode()), zlib.crc32(algorithm.encode())])
               .generate_state(1)[0])


@dataclass(frozen=True)
class _Group:
    """Members of one algorithm with the same number of points, stacked."""

    rows: np.ndarray  # positions in members(algorithm)
    X: np.ndarray  # (G, n, d)
    Linv: np.ndarray  # (G, n, n)
    alpha: np.ndarray  # (G, n)
    ls: np.ndarray  # (G, d)
    amp: np.ndarray  # (G,)
    mean: np.ndarray  # (G,)
    shift: np.ndarray  # (G,)
    scale: np.ndarray  # (G,)


def _matern52(d2: np.ndarray) -> np.ndarray:
    s = _SQRT5 * np.sqrt(np.maximum(d2, 0.0))
    return (1.0 + s + s * s / 3.0) * np.exp(-s)


@dataclass
class SurrogateBank:
    """Base GPs by (task, algorithm) (module docstring); build with :meth:`fit`."""

    members_: dict[tuple[str, str], PosteriorState]
    n_fitted_: int = 0
    _groups: dict[str, tuple[tuple[str, ...], list[_Group]]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ building
    @classmethod
    def fit(
        cls, past: PastRuns, encode: Encoder, *, max_points: int | None = 50, kernel: str = "matern52",
        n_restarts: int = 1, seed: int = 0, kb: KnowledgeBase | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> SurrogateBank:
        """One GP per (task, algorithm) of ``past`` whose algorithm ``encode`` knows.

        With ``kb``, members are cached in its ``surrogate_bank`` table, keyed by (task,
        algorithm, metric, settings) with a fingerprint of the task's runs: a member whose
        fingerprint matches is loaded, the others are fitted and stored (one transaction),
        so only tasks whose runs changed are refitted. ``encode`` needs a ``key(algorithm)``
        (as :func:`space_encoder` has) for caching."""
        if kernel != "matern52":
            raise InputDataError(f"the bank's batched predictions implement the Matern 5/2 kernel, not {kernel!r}")
        if max_points is not None and max_points < 1:
            raise InputDataError(f"max_points must be >= 1 or None, got {max_points}")
        if kb is not None and not hasattr(encode, "key"):
            raise InputDataError("caching in the store needs an encoder with a key(algorithm) (see space_encoder)")
        scale: dict[str, tuple[float, float]] = {}
        task_hash: dict[str, str] = {}
        for task in past.tasks:
            runs = past.task_runs(task)
            values = np.concatenate([g.values for g in runs.values()])
            sd = float(values.std())
            scale[task] = (float(values.mean()), sd if sd > 1e-12 else 1.0)
            h = hashlib.sha256()
            for algorithm in sorted(runs):
                h.update(algorithm.encode())
                h.update("".join(runs[algorithm].config_ids).encode())
                h.update(np.ascontiguousarray(runs[algorithm].values, dtype=np.float64).tobytes())
            task_hash[task] = h.hexdigest()[:32]
        keys = sorted(past.groups)
        settings = {a: json.dumps({"kernel": kernel, "max_points": max_points, "n_restarts": n_restarts,
                                   "seed": seed, "encoder": encode.key(a) if hasattr(encode, "key") else None},
                                  sort_keys=True) for a in past.algorithms}
        cached = _load_cached(kb, past.metric, settings, task_hash) if kb is not None else {}
        members: dict[tuple[str, str], PosteriorState] = {}
        new: list[tuple[str, str, PosteriorState]] = []
        for i, (task, algorithm) in enumerate(keys):
            if (task, algorithm) in cached:
                members[(task, algorithm)] = cached[(task, algorithm)]
                continue
            runs = past.groups[(task, algorithm)]
            try:
                X = np.asarray(encode(algorithm, runs.params), dtype=float)
            except (UnknownAlgorithmError, InputDataError) as e:
                logger.debug("bank: %s on %s skipped: %s", algorithm, task, e)
                continue
            mu, sd = scale[task]
            u = (runs.values - mu) / sd
            if max_points is not None and len(u) > max_points:
                pick = np.sort(as_generator(_member_seed(seed, task, algorithm)).choice(len(u), max_points,
                                                                                          replace=False))
                X, u = X[pick], u[pick]
            gp = GaussianProcess(kernel=kernel, n_restarts=n_restarts, seed=_member_seed(seed, task, algorithm))
            members[(task, algorithm)] = gp.fit(X, u).posterior_state()
            new.append((task, algorithm, members[(task, algorithm)]))
            if progress is not None:
                progress(i + 1, len(keys))
        if kb is not None and new:
            _store(kb, past.metric, settings, task_hash, new)
        logger.info("surrogate bank: %d GPs over %d tasks (%d fitted, %d from the store)", len(members),
                    len({t for t, _ in members}), len(new), len(members) - len(new))
        return cls(members, n_fitted_=len(new))

    def without(self, tasks: str | Iterable[str]) -> SurrogateBank:
        """The same bank without ``tasks`` (no refit)."""
        drop = {tasks} if isinstance(tasks, str) else set(tasks)
        return SurrogateBank({k: v for k, v in self.members_.items() if k[0] not in drop})

    # ------------------------------------------------------------------ views
    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(sorted({t for t, _ in self.members_}))

    @property
    def algorithms(self) -> tuple[str, ...]:
        return tuple(sorted({a for _, a in self.members_}))

    def members(self, algorithm: str) -> tuple[str, ...]:
        """The tasks with a GP for ``algorithm``, in a fixed (sorted) order."""
        return self._grouped(algorithm)[0]

    def _grouped(self, algorithm: str) -> tuple[tuple[str, ...], list[_Group]]:
        if algorithm not in self._groups:
            tasks = tuple(sorted(t for t, a in self.members_ if a == algorithm))
            by_n: dict[int, list[int]] = {}
            for i, t in enumerate(tasks):
                by_n.setdefault(len(self.members_[(t, algorithm)].alpha), []).append(i)
            groups = []
            for rows in by_n.values():
                states = [self.members_[(tasks[i], algorithm)] for i in rows]
                n = len(states[0].alpha)
                groups.append(_Group(
                    np.array(rows), np.stack([s.X for s in states]),
                    np.stack([solve_triangular(s.L, np.eye(n), lower=True, check_finite=False) for s in states]),
                    np.stack([s.alpha for s in states]), np.stack([s.lengthscales for s in states]),
                    np.array([s.amplitude for s in states]), np.array([s.mean for s in states]),
                    np.array([s.y_shift for s in states]), np.array([s.y_scale for s in states])))
            self._groups[algorithm] = (tasks, groups)
        return self._groups[algorithm]

    def _check(self, algorithm: str, X: Any) -> np.ndarray:
        if algorithm not in self.algorithms:
            raise UnknownAlgorithmError(f"the bank has no GP for algorithm {algorithm!r}; it has {list(self.algorithms)}")
        Xc = np.asarray(X, dtype=float)
        d = self.members_[(self.members(algorithm)[0], algorithm)].X.shape[1]
        if Xc.ndim != 2 or Xc.shape[1] != d or not np.all(np.isfinite(Xc)):
            raise InputDataError(f"{algorithm}: candidates must be finite with shape (m, {d}), got {Xc.shape}")
        return Xc

    # ------------------------------------------------------------------ predictions
    def predict(self, algorithm: str, X: Any, tasks: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and latent variance at ``X`` (m, d_k) of every member (or of ``tasks``, in
        that order: an ensemble needs only its members with weight): two (T, m) arrays."""
        Xc = self._check(algorithm, X)
        members, groups = self._grouped(algorithm)
        if tasks is None:
            order = np.arange(len(members))
        else:
            position = {t: i for i, t in enumerate(members)}
            unknown = [t for t in tasks if t not in position]
            if unknown:
                raise InputDataError(f"no {algorithm} GP for tasks {unknown[:5]}")
            order = np.array([position[t] for t in tasks], dtype=int)
        where = np.full(len(members), -1)
        where[order] = np.arange(len(order))
        mean = np.empty((len(order), len(Xc)))
        var = np.empty_like(mean)
        for g in groups:
            pick = np.flatnonzero(where[g.rows] >= 0)
            if not len(pick):
                continue
            ls, amp = g.ls[pick], g.amp[pick]
            A = Xc[None, :, :] / ls[:, None, :]  # (G, m, d)
            B = g.X[pick] / ls[:, None, :]  # (G, n, d)
            d2 = (A * A).sum(-1)[:, :, None] + (B * B).sum(-1)[:, None, :] - 2.0 * A @ B.transpose(0, 2, 1)
            Ks = amp[:, None, None] * _matern52(d2)  # (G, m, n)
            mu = g.mean[pick][:, None] + (Ks @ g.alpha[pick][:, :, None])[:, :, 0]
            V = Ks @ g.Linv[pick].transpose(0, 2, 1)  # rows: (L^-1 k*)^T
            v = np.maximum(amp[:, None] - (V * V).sum(-1), 0.0)
            out = where[g.rows[pick]]
            mean[out] = g.shift[pick][:, None] + g.scale[pick][:, None] * mu
            var[out] = g.scale[pick][:, None] ** 2 * v
        return mean, var

    def sample(self, algorithm: str, X: Any, n_samples: int, seed: Seed = 0) -> np.ndarray:
        """Joint posterior samples of every member's latent f at ``X`` (m, d_k): (T, S, m)."""
        Xc = self._check(algorithm, X)
        if n_samples < 1:
            raise InputDataError(f"n_samples must be >= 1, got {n_samples}")
        rng = as_generator(seed)
        tasks = self.members(algorithm)
        out = np.empty((len(tasks), n_samples, len(Xc)))
        for i, t in enumerate(tasks):
            s = self.members_[(t, algorithm)]
            Kss = s.amplitude * _matern52(_sqdist(Xc / s.lengthscales, Xc / s.lengthscales))
            Ks = s.amplitude * _matern52(_sqdist(s.X / s.lengthscales, Xc / s.lengthscales))  # (n, m)
            mu = s.mean + Ks.T @ s.alpha
            V = solve_triangular(s.L, Ks, lower=True, check_finite=False)
            cov = Kss - V.T @ V
            L, _ = cholesky_jitter(0.5 * (cov + cov.T))
            f = mu + (L @ rng.standard_normal((len(Xc), n_samples))).T
            out[i] = s.y_shift + s.y_scale * f
        return out


_STATE_ARRAYS = ("X", "L", "alpha", "lengthscales")
_STATE_SCALARS = ("amplitude", "noise", "mean", "y_shift", "y_scale")


def _pack(state: PosteriorState) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: getattr(state, k) for k in _STATE_ARRAYS},
                        scalars=np.array([getattr(state, k) for k in _STATE_SCALARS], dtype=float))
    return buf.getvalue()


def _unpack(blob: bytes) -> PosteriorState:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in _STATE_ARRAYS}
        scalars = dict(zip(_STATE_SCALARS, z["scalars"].tolist()))
    n = len(arrays["alpha"])
    if arrays["X"].shape[0] != n or arrays["L"].shape != (n, n) or not all(
            np.all(np.isfinite(a)) for a in arrays.values()):
        raise ValueError("inconsistent arrays")
    return PosteriorState(**arrays, **scalars)


def _load_cached(kb: KnowledgeBase, metric: str, settings: Mapping[str, str],
                 task_hash: Mapping[str, str]) -> dict[tuple[str, str], PosteriorState]:
    """Stored members whose settings and task fingerprint match; a corrupt one is refitted."""
    rows = kb.query("SELECT task, algorithm, settings, fingerprint, state FROM surrogate_bank WHERE metric = ?",
                    [metric])
    out = {}
    for task, algorithm, setting, fingerprint, blob in rows.itertuples(index=False):
        if settings.get(algorithm) != setting or task_hash.get(task) != fingerprint:
            continue
        try:
            out[(task, algorithm)] = _unpack(bytes(blob))
        except (ValueError, KeyError, OSError) as e:  # a corrupt blob: refit, never a wrong model
            logger.warning("surrogate bank: the stored GP of %s on %s is unreadable (%s); refitting", algorithm,
                           task, e)
    return out


def _store(kb: KnowledgeBase, metric: str, settings: Mapping[str, str], task_hash: Mapping[str, str],
           new: Sequence[tuple[str, str, PosteriorState]]) -> None:
    import pandas as pd

    from metabo.kb._time import utcnow

    frame = pd.DataFrame({
        "task": [t for t, _, _ in new], "algorithm": [a for _, a, _ in new], "metric": metric,
        "settings": [settings[a] for _, a, _ in new], "fingerprint": [task_hash[t] for t, _, _ in new],
        "n": [len(s.alpha) for _, _, s in new], "state": [_pack(s) for _, _, s in new], "created_at": utcnow(),
    })
    with kb.transaction() as con:
        con.register("bank_new", frame)
        con.execute("DELETE FROM surrogate_bank WHERE (task, algorithm, metric, settings) IN "
                    "(SELECT task, algorithm, metric, settings FROM bank_new)")
        con.execute("INSERT INTO surrogate_bank SELECT task, algorithm, metric, settings, fingerprint, n, state, "
                    "created_at FROM bank_new")
        con.unregister("bank_new")


def _sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist

    return cdist(A, B, "sqeuclidean")


__all__ = ["Encoder", "SurrogateBank", "space_encoder"]
