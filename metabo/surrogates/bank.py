"""The surrogate bank: one base GP per (past task, algorithm), predicted in batches.

Notation (RLGP, Manolache & Vanschoren 2019, sec. 3 "Base and target surrogate models"
and Algorithm 1 line 1, "To each prior task, fit base models S_{k,p} on D_p^k"):

- past task ``p``, algorithm ``k``; runs ``D_p^k = {(x_i, y_i)}``, ``x_i`` in the
  algorithm's own unit-cube encoding (d_k,) (:func:`space_encoder`), ``y_i`` the mean value
  of configuration ``i`` on task ``p`` (lower is better);
- targets ``u_i`` on a shared scale, normalized per task over *all* its algorithms' runs
  (:mod:`metabo.surrogates.normalization`): ``normalization="copula"`` (default) the
  Gaussian copula ``u = Phi^{-1}(F~_p(y))`` with ``F~_p`` the winsorized empirical CDF of
  task ``p``'s values (Salinas, Shen & Perrone 2020, sec. 3), so that every task, and the
  target normalized the same way (:mod:`metabo.strategies.transfer_ensemble`), has
  standard normal marginals whatever its error scale; ``"standardize"``
  ``u_i = (y_i - ybar_p) / s_p`` with the task's mean and population std
  (``s_p = 1`` if constant). The RLGP paper does not say how it scales the base GPs'
  targets; RGPE (Feurer et al. 2018) standardizes each model's own data. One scale per task
  keeps the levels across a task's algorithms (an algorithm that is worse on ``p`` stays
  higher), which RLGP needs: its weights count pairs across all algorithms, and its
  ensembles compare algorithms.
- at most ``max_points`` runs per (task, algorithm), drawn without replacement by a
  generator seeded from (seed, task, algorithm), so a member does not depend on which
  other tasks are present (sec. 4: "Base GPs are fitted to a set of 50 randomly selected
  configurations");
- member ``S_{k,p}``: a :class:`~metabo.surrogates.gp.GaussianProcess` (Matérn 5/2 ARD,
  constant mean, MAP hyperparameters by L-BFGS-B; sec. 4 uses a Matérn 5/2 kernel) on
  (X (n, d_k), u (n,)), kept as its posterior arrays
  (:class:`~metabo.surrogates.gp.PosteriorState`): lengthscales ``l`` (d_k,), signal
  variance ``sigma_a^2``, constant mean ``m``, the GP's own standardization
  ``z = (u - c) / s``, ``K = sigma_a^2 k(X, X; l) + nu I = L L^T``, ``alpha = K^-1 (z - m)``.

Predictions at candidates ``X*`` (M, d_k) for the ``T`` members of algorithm ``k``
(:meth:`SurrogateBank.predict`, thesis eqs. 5.3-5.4 per member), all in ``u`` units:

- ``k0 = k(X*, X; l)`` (M, n) unit-amplitude Matérn 5/2 with ``r^2 = |(x* - x) sqrt5 / l|^2``
  and ``k = (1 + r + r^2/3) exp(-r)``;
- ``mu = c + s (m + k0 (sigma_a^2 alpha))`` and latent (noise-free)
  ``v = s^2 (sigma_a^2 - ||k0 W||^2)`` per row, ``W = sigma_a^2 L^-T`` (n, n), so
  ``k0 W = (L^-1 k*)^T`` with ``k* = sigma_a^2 k0^T``.

Members are precomputed once (``W``, scaled inputs) and stacked per algorithm in bins of
similar ``n``, zero-padded (a padded point has zero ``alpha`` and zero rows in ``W``, so it
contributes nothing). A call evaluates chunks of members at once (distances by cdist per
member, no |a|^2 + |b|^2 - 2ab cancellation; batched BLAS products; the kernel's
elementwise passes in place), each chunk sized so that its (chunk, M, n) arrays stay in
cache: one batch over all members builds temporaries that leave the cache, and a loop
over members pays Python's overhead per member (timings in ``reports/bank/bench_bank.txt``).

Samples (:meth:`SurrogateBank.sample`, RLGP eqs. 3 and 8, "S samples are drawn from the
GP posterior"): per member, the joint posterior of f at X* in the GP's units,
``Sigma = sigma_a^2 k0(X*, X*) - (k0 W)(k0 W)^T`` (M, M; lower triangle by BLAS syrk), its
lower Cholesky factor ``C`` (adaptive jitter, LAPACK potrf) and
``f = c + s (m + k0 (sigma_a^2 alpha) + C xi)``, ``xi ~ N(0, I)`` (M, S) drawn member after
member from one generator: the transform of
:meth:`~metabo.surrogates.gp.GaussianProcess.sample`. Its cost is the O(M^3) factorization
per member: cheap at the M = n_target observations RLGP samples at, seconds at M = 1000.

Members fitted with a knowledge base are cached in it (:mod:`metabo.surrogates.bank_cache`).
In memory, a bank keeps (bounded, most recent first) the stacked arrays of the member
selections it predicted with and the sampling factors ``(m + k0 (sigma_a^2 alpha), C)`` at
the points it sampled at: RLGP predicts with the same weighted members at every step of a
search and samples at each algorithm's observations, unchanged between suggestions but for
one algorithm. A repeated call then does no factorization (sample) or copy (predict), with
bit-identical results.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.distance import cdist

from metabo._typing import Seed, as_generator
from metabo.exceptions import (
    InputDataError,
    InvalidConfigurationError,
    KnowledgeBaseError,
    SurrogateError,
    UnknownAlgorithmError,
)
from metabo.kb.past import PastRuns
from metabo.surrogates import bank_cache
from metabo.surrogates.bank_predict import (
    BIN_FILL,
    BIN_MAX_ELEMENTS,
    CHUNK_ELEMENTS,
    SYRK,
    TRMM,
    Bin,
    Factor,
    Prepared,
    bin_posterior,
    cross_kernel,
    matern52_r2,
    stack_bin,
    state_predictor,
)
from metabo.surrogates.gp import GaussianProcess, PosteriorState
from metabo.surrogates.likelihood import cholesky_jitter
from metabo.surrogates.normalization import NORMALIZATIONS, Normalization, normalize

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase
    from metabo.space.cash import CASHSpace

logger = logging.getLogger(__name__)

#: ``(algorithm, params list) -> (n, d_a)`` encoded rows.
Encoder = Callable[[str, Sequence[Mapping[str, Any]]], np.ndarray]

#: Member selections (:meth:`SurrogateBank.predict`) and sampling factors
#: (:meth:`SurrogateBank.sample`) kept for reuse, the most recent first.
_SELECTIONS_KEPT = 64
_FACTORS_KEPT = 64


class UnknownBankAlgorithmError(UnknownAlgorithmError, InputDataError):
    """An algorithm the bank has no GP for (a KeyError and a ValueError)."""


def space_encoder(space: CASHSpace) -> Encoder:
    """Rows in the algorithm's own unit-cube encoding: ``space[algorithm].encode_many(params)``.

    The encoder has ``key(algorithm)``, a hash of that algorithm's space as JSON, which
    identifies cached GPs in the store (another space is another cache entry)."""

    def encode(algorithm: str, params: Sequence[Mapping[str, Any]]) -> np.ndarray:
        if algorithm not in space:
            raise UnknownAlgorithmError(f"algorithm {algorithm!r} is not in the space {list(space.algorithms)}")
        return space[algorithm].encode_many(list(params))

    def key(algorithm: str) -> str:
        return hashlib.sha256(space[algorithm].to_json().encode()).hexdigest()[:16]

    encode.key = key  # type: ignore[attr-defined]
    return encode


def member_seed(seed: int, task: str, algorithm: str) -> int:
    """The seed of member (task, algorithm): its subsample and its GP's restarts."""
    words = [int(seed) & 0xFFFFFFFF, zlib.crc32(task.encode()), zlib.crc32(algorithm.encode())]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


class SurrogateBank:
    """Base GPs by (task, algorithm) (module docstring); build with :meth:`fit`.

    ``members_``: (task, algorithm) -> :class:`PosteriorState`; ``targets_``: the ``u``
    each was fitted on (n,); ``n_fitted_`` / ``n_loaded_``: members fitted by the last
    :meth:`fit` / loaded from the store's cache; ``fit_seconds_``: its wall time;
    ``normalization_``: the shared scale of ``u`` (:mod:`metabo.surrogates.normalization`)."""

    def __init__(self, members: Mapping[tuple[str, str], PosteriorState],
                 targets: Mapping[tuple[str, str], np.ndarray] | None = None, *, n_fitted: int = 0,
                 n_loaded: int = 0, fit_seconds: float = 0.0,
                 _prepared: dict[tuple[str, str], Prepared] | None = None,
                 normalization: Normalization = "copula") -> None:
        self.members_ = dict(members)
        self.normalization_ = normalization
        self.targets_ = dict(targets or {})
        self.n_fitted_ = n_fitted
        self.n_loaded_ = n_loaded
        self.fit_seconds_ = fit_seconds
        self._prepared = _prepared if _prepared is not None else {}  # shared with views
        self._derive()

    def _derive(self) -> None:
        """Task and algorithm tuples, and empty caches of derived arrays."""
        self._bins: dict[str, tuple[tuple[str, ...], list[Bin]]] = {}
        self._tasks = tuple(sorted({t for t, _ in self.members_}))
        self._algorithms = tuple(sorted({a for _, a in self.members_}))
        self._positions: dict[str, dict[str, int]] = {}
        # recent selections of members (predict) and sampling factors (sample), by key
        self._selections: OrderedDict[tuple[str, tuple[int, ...]], list[tuple[Bin, np.ndarray]]] = OrderedDict()
        self._factors: OrderedDict[tuple[Any, ...], list[Factor]] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        """Members and their prepared arrays; the caches are derived again on loading."""
        keep = ("members_", "targets_", "n_fitted_", "n_loaded_", "fit_seconds_", "_prepared", "normalization_")
        return {k: self.__dict__[k] for k in keep if k in self.__dict__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_prepared", {})
        self.__dict__.setdefault("normalization_", "standardize")  # pickled before normalizations existed
        self._derive()

    def __repr__(self) -> str:
        return f"SurrogateBank({len(self.members_)} GPs, {len(self.tasks)} tasks, {len(self.algorithms)} algorithms)"

    # ------------------------------------------------------------------ building
    @classmethod
    def fit(
        cls, past: PastRuns, encode: Encoder, *, max_points: int | None = 50, kernel: str = "matern52",
        n_restarts: int = 1, seed: int = 0, kb: KnowledgeBase | None = None,
        progress: Callable[[int, int], None] | None = None, normalization: Normalization = "copula",
    ) -> SurrogateBank:
        """One GP per (task, algorithm) of ``past`` whose algorithm ``encode`` knows.

        With ``kb``, members are cached in its ``surrogate_bank`` table
        (:mod:`metabo.surrogates.bank_cache`): one whose settings and task fingerprint
        match is loaded, the others are fitted and stored in one transaction, so only the
        tasks whose runs changed are refitted. A store that cannot be read or written
        (read-only) is logged as a warning and the bank built without it. Caching needs
        ``encode.key(algorithm)`` (as :func:`space_encoder` has). ``progress(done, total)``
        is called per member; ``n_fitted_`` counts the GPs fitted by this call.
        ``normalization``: each task's values on the shared scale (module docstring); part
        of the cache key."""
        start = time.perf_counter()
        if kernel != "matern52":
            raise InputDataError(f"the bank's batched predictions implement the Matern 5/2 kernel, not {kernel!r}")
        if max_points is not None and max_points < 1:
            raise InputDataError(f"max_points must be >= 1 or None, got {max_points}")
        if n_restarts < 0:
            raise InputDataError(f"n_restarts must be >= 0, got {n_restarts}")
        key = getattr(encode, "key", None)
        if kb is not None and key is None:
            raise InputDataError("caching in the store needs an encoder with a key(algorithm) (see space_encoder)")
        if normalization not in NORMALIZATIONS:
            raise InputDataError(f"unknown normalization {normalization!r}; use one of {list(NORMALIZATIONS)}")
        normalized: dict[tuple[str, str], np.ndarray] = {}  # u of each (task, algorithm)'s runs
        fingerprint: dict[str, str] = {}
        for task in past.tasks:
            runs = past.task_runs(task)
            u = normalize(np.concatenate([np.asarray(g.values, dtype=float) for g in runs.values()]), normalization)
            bounds = np.cumsum([0] + [len(g.values) for g in runs.values()])
            for k, algorithm in enumerate(runs):
                normalized[(task, algorithm)] = u[bounds[k]:bounds[k + 1]]
            fingerprint[task] = bank_cache.task_fingerprint(runs)
        keys = sorted(past.groups)
        settings: dict[str, str] = {}
        for algorithm in past.algorithms:
            try:
                encoder_key = key(algorithm) if key is not None else ""
            except (KeyError, UnknownAlgorithmError):
                continue  # not in the encoder's space: skipped below
            settings[algorithm] = bank_cache.settings_key(kernel=kernel, max_points=max_points,
                                                          n_restarts=n_restarts, seed=seed, encoder=encoder_key,
                                                          normalization=normalization)
        wanted = {(t, a): (settings[a], fingerprint[t]) for t, a in keys if a in settings}
        cached: dict[tuple[str, str], bank_cache.CachedMember] = {}
        if kb is not None:
            try:
                cached = bank_cache.load(kb, past.metric, wanted)
            except KnowledgeBaseError as e:  # e.g. a read-only store older than schema v5
                logger.warning("surrogate bank: the store's cache cannot be read (%s); fitting every GP", e)
        members: dict[tuple[str, str], PosteriorState] = {}
        targets: dict[tuple[str, str], np.ndarray] = {}
        new: list[tuple[str, str, str, str, bank_cache.CachedMember]] = []
        skipped = 0
        for i, (task, algorithm) in enumerate(keys):
            if (task, algorithm) in cached:
                hit = cached[(task, algorithm)]
                members[(task, algorithm)], targets[(task, algorithm)] = hit.state, hit.y
            elif (fitted := _fit_member(past, encode, task, algorithm, normalized[(task, algorithm)], max_points,
                                        kernel, n_restarts, seed)) is not None:
                members[(task, algorithm)], targets[(task, algorithm)] = fitted.state, fitted.y
                if algorithm in settings:
                    new.append((task, algorithm, settings[algorithm], fingerprint[task], fitted))
            else:
                skipped += 1
            if progress is not None:
                progress(i + 1, len(keys))
        n_fitted = len(members) - len(cached)
        if kb is not None and new:
            try:
                bank_cache.store(kb, past.metric, new)
            except KnowledgeBaseError as e:  # e.g. a read-only store: the bank is still usable
                logger.warning("surrogate bank: %d fitted GPs could not be cached (%s)", len(new), e)
        logger.info("surrogate bank: %d GPs over %d tasks (%d fitted, %d from the store, %d skipped)", len(members),
                    len({t for t, _ in members}), n_fitted, len(cached), skipped)
        return cls(members, targets, n_fitted=n_fitted, n_loaded=len(cached),
                   fit_seconds=time.perf_counter() - start, normalization=normalization)

    def without(self, tasks: str | Iterable[str]) -> SurrogateBank:
        """The same bank without ``tasks`` (a leave-one-task-out view: no refit, the
        members' precomputed arrays are shared)."""
        drop = {tasks} if isinstance(tasks, str) else set(tasks)
        keep = {k: v for k, v in self.members_.items() if k[0] not in drop}
        return SurrogateBank(keep, {k: v for k, v in self.targets_.items() if k in keep}, _prepared=self._prepared,
                             normalization=self.normalization_)

    # ------------------------------------------------------------------ views
    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks the members were fitted on, sorted, each once."""
        return self._tasks

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms of the members, sorted, each once."""
        return self._algorithms

    def members(self, algorithm: str) -> tuple[str, ...]:
        """The tasks with a GP for ``algorithm``, in a fixed (sorted) order: the rows of
        :meth:`predict` and :meth:`sample`."""
        return self._binned(algorithm)[0]

    def dims(self, algorithm: str) -> int:
        """``d_k``: the width of ``algorithm``'s encoded rows."""
        tasks = self.members(algorithm)
        return int(self.members_[(tasks[0], algorithm)].X.shape[1])

    def training_data(self, task: str, algorithm: str) -> tuple[np.ndarray, np.ndarray]:
        """``(X, u)`` member (task, algorithm) was fitted on (u task-normalized)."""
        if (task, algorithm) not in self.members_:
            raise InputDataError(f"the bank has no GP for {algorithm!r} on {task!r}")
        return self.members_[(task, algorithm)].X, self.targets_[(task, algorithm)]

    def _prepare(self, key: tuple[str, str]) -> Prepared:
        if key not in self._prepared:
            self._prepared[key] = Prepared.of(self.members_[key])
        return self._prepared[key]

    def _binned(self, algorithm: str) -> tuple[tuple[str, ...], list[Bin]]:
        if algorithm not in self._bins:
            tasks = tuple(sorted(t for t, a in self.members_ if a == algorithm))
            if not tasks:
                raise UnknownBankAlgorithmError(
                    f"the bank has no GP for algorithm {algorithm!r}; it has {list(self.algorithms)}")
            sizes = np.array([len(self.members_[(t, algorithm)].alpha) for t in tasks])
            order = np.argsort(-sizes, kind="stable")
            bins, current = [], [int(order[0])]
            for i in order[1:]:
                top = sizes[current[0]]
                if sizes[i] >= BIN_FILL * top and (len(current) + 1) * top * top <= BIN_MAX_ELEMENTS:
                    current.append(int(i))
                else:
                    bins.append(current)
                    current = [int(i)]
            bins.append(current)
            self._bins[algorithm] = (tasks, [
                stack_bin(rows, [self.members_[(tasks[i], algorithm)] for i in rows],
                       [self._prepare((tasks[i], algorithm)) for i in rows]) for rows in bins])
        return self._bins[algorithm]

    def _check(self, algorithm: str, X: Any, tasks: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
        """Validated candidates and the member positions asked (output order)."""
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise UnknownBankAlgorithmError(
                f"the bank has no GP for algorithm {algorithm!r}; it has {list(self.algorithms)}")
        try:
            Xc = np.asarray(X, dtype=float)
        except (TypeError, ValueError) as e:
            raise InputDataError(f"{algorithm}: candidates must be a numeric array (m, d): {e}") from e
        d = self.dims(algorithm)
        if Xc.ndim != 2 or Xc.shape[1] != d:
            raise InputDataError(f"{algorithm}: candidates must have shape (m, {d}) (the algorithm's encoding), "
                                 f"got {Xc.shape}")
        if not np.all(np.isfinite(Xc)):
            raise InputDataError(f"{algorithm}: candidates hold {int((~np.isfinite(Xc)).sum())} NaN or infinite "
                                 "values; encode configurations with the space's encode_many")
        members = self.members(algorithm)
        if tasks is None:
            return Xc, np.arange(len(members))
        if isinstance(tasks, str):
            raise InputDataError("tasks must be a sequence of task ids, not one string")
        position = self._positions.get(algorithm)
        if position is None:
            position = self._positions[algorithm] = {t: i for i, t in enumerate(members)}
        unknown = [t for t in tasks if t not in position]
        if unknown:
            raise InputDataError(f"no {algorithm} GP for tasks {unknown[:5]}; see members({algorithm!r})")
        return Xc, np.array([position[t] for t in tasks], dtype=int)

    # ------------------------------------------------------------------ predictions
    def predict(self, algorithm: str, X: Any, tasks: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent (noise-free) variance, in task-normalized units, at
        ``X`` (m, d_k) of every member (or of ``tasks``, in that order: an ensemble needs
        only its members with weight): two (T, m) arrays. The stacked arrays of a
        selection of members are kept for the next calls with the same ``tasks`` (the
        :data:`_SELECTIONS_KEPT` most recent selections)."""
        Xc, order = self._check(algorithm, X, tasks)
        m = len(Xc)
        mean, var = np.empty((len(order), m)), np.empty((len(order), m))
        if m == 0 or not len(order):
            return mean, var
        for b, out in self._selection(algorithm, order):
            chunk = max(1, CHUNK_ELEMENTS // (m * b.B.shape[1]))
            for lo in range(0, len(out), chunk):
                part = b.take(slice(lo, lo + chunk)) if chunk < len(out) else b
                rows = out[lo:lo + chunk]
                mu, v = np.empty((len(rows), m)), np.empty((len(rows), m))
                bin_posterior(part, Xc, mu, v)
                mean[rows], var[rows] = mu, v
        return mean, var

    def _selection(self, algorithm: str, order: np.ndarray) -> list[tuple[Bin, np.ndarray]]:
        """The bins of ``algorithm`` restricted to the members at positions ``order``, each
        with the output rows of its members (a recently used selection is reused)."""
        key = (algorithm, tuple(order.tolist()))
        hit = self._selections.get(key)
        if hit is not None:
            with contextlib.suppress(KeyError):  # another thread may have dropped it
                self._selections.move_to_end(key)
            return hit
        where = np.full(len(self.members(algorithm)), -1)
        where[order] = np.arange(len(order))
        picked = []
        for b in self._binned(algorithm)[1]:
            out = where[b.rows]
            if np.any(out < 0):
                pick = np.flatnonzero(out >= 0)
                if not len(pick):
                    continue
                b, out = b.take(pick), out[pick]
            picked.append((b, out))
        self._selections[key] = picked
        while len(self._selections) > _SELECTIONS_KEPT:
            with contextlib.suppress(KeyError):
                self._selections.popitem(last=False)
        return picked

    def sample(self, algorithm: str, X: Any, n_samples: int, seed: Seed = 0,
               tasks: Sequence[str] | None = None) -> np.ndarray:
        """``n_samples`` joint posterior samples of the latent f at ``X`` (m, d_k) of every
        member (or of ``tasks``), task-normalized units: (T, S, m). One generator from
        ``seed`` draws each member's ``xi`` (m, S) in turn (module docstring). The
        members' posterior means and covariance factors at ``X`` are kept for the next
        calls with the same ``X`` and ``tasks`` (the :data:`_FACTORS_KEPT` most recent):
        RLGP samples at the target's observations of each algorithm at every suggestion,
        and those of all algorithms but one are unchanged; a call then only draws ``xi``."""
        Xc, order = self._check(algorithm, X, tasks)
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
            raise InputDataError(f"n_samples must be a positive integer, got {n_samples!r}")
        rng = as_generator(seed)
        S, m = int(n_samples), len(Xc)
        out = np.empty((len(order), S, m))
        for i, (shift, scale, mu, C) in enumerate(self._factors_at(algorithm, Xc, order)):
            f = TRMM(1.0, C, rng.standard_normal((m, S)), lower=1, overwrite_b=1)  # C xi (m, S)
            f += mu[:, None]
            out[i] = shift + scale * f.T
        return out

    def _factors_at(self, algorithm: str, Xc: np.ndarray, order: np.ndarray) -> list[Factor]:
        """Per member at ``order``: ``(c, s, m + k0 (sigma_a^2 alpha), C)`` at ``Xc`` (sample)."""
        key = (algorithm, Xc.shape, Xc.tobytes(), tuple(order.tolist()))
        hit = self._factors.get(key)
        if hit is not None:
            with contextlib.suppress(KeyError):
                self._factors.move_to_end(key)
            return hit
        members, m = self.members(algorithm), len(Xc)
        factors: list[Factor] = []
        keys = [(members[i], algorithm) for i in order]
        n_max = max((len(self.members_[k].alpha) for k in keys), default=1)
        chunk = max(1, CHUNK_ELEMENTS // (max(m, 1) * max(n_max, m)))
        for lo in range(0, len(keys), chunk):
            part = keys[lo:lo + chunk]
            b = stack_bin(range(len(part)), [self.members_[k] for k in part], [self._prepare(k) for k in part])
            k0 = cross_kernel(b, Xc)  # (g, m, n)
            mu = (k0 @ b.alpha[:, :, None])[:, :, 0] + b.mean[:, None]
            V = k0 @ b.W  # (L^-1 k*)^T
            A = Xc[None, :, :] * b.ls[:, None, :]
            prior = np.empty((len(part), m, m))
            for g in range(len(part)):
                cdist(A[g], A[g], "sqeuclidean", out=prior[g])
            cov = matern52_r2(prior)
            cov *= b.amp[:, None, None]
            for g, (task, _) in enumerate(part):
                # lower triangle of Sigma = sigma_a^2 k0(X*, X*) - (k0 W)(k0 W)^T (BLAS syrk);
                # potrf reads only the lower triangle
                sigma = SYRK(-1.0, V[g], beta=1.0, c=cov[g], lower=1, overwrite_c=1)
                try:
                    C, _ = cholesky_jitter(sigma)
                except SurrogateError as e:
                    raise SurrogateError(f"sampling the {algorithm} GP of {task}: {e}") from e
                factors.append((float(b.shift[g]), float(b.scale[g]), mu[g].copy(), C))
        self._factors[key] = factors
        while len(self._factors) > _FACTORS_KEPT:
            with contextlib.suppress(KeyError):
                self._factors.popitem(last=False)
        return factors


def _fit_member(past: PastRuns, encode: Encoder, task: str, algorithm: str, u: np.ndarray,
                max_points: int | None, kernel: str, n_restarts: int, seed: int) -> bank_cache.CachedMember | None:
    """Fit member (task, algorithm) on its runs' normalized values ``u`` (module docstring),
    or None if ``encode`` does not know the algorithm or the GP cannot be fitted (logged)."""
    runs = past.groups[(task, algorithm)]
    u = np.asarray(u, dtype=float)
    try:
        X = np.asarray(encode(algorithm, runs.params), dtype=float)
    except (UnknownAlgorithmError, KeyError) as e:
        logger.debug("bank: %s on %s skipped: %s", algorithm, task, e)
        return None
    except (InvalidConfigurationError, InputDataError):  # some stored configurations are outside the space
        keep, rows = [], []
        for i, params in enumerate(runs.params):
            try:
                rows.append(np.asarray(encode(algorithm, [params]), dtype=float)[0])
                keep.append(i)
            except (InvalidConfigurationError, InputDataError):
                pass
        logger.warning("bank: %d of %d %s configurations on %s are not in the encoder's space; left out",
                       len(runs) - len(keep), len(runs), algorithm, task)
        if not keep:
            return None
        X, u = np.array(rows), u[keep]
    if X.ndim != 2 or X.shape[0] != len(u) or not np.all(np.isfinite(X)):
        raise InputDataError(f"the encoder gave {X.shape} rows for {len(u)} {algorithm} runs on {task}, "
                             "or non-finite values")
    s = member_seed(seed, task, algorithm)
    if max_points is not None and len(u) > max_points:
        pick = np.sort(np.random.default_rng(s).choice(len(u), max_points, replace=False))
        X, u = X[pick], u[pick]
    gp = GaussianProcess(kernel=kernel, n_restarts=n_restarts, seed=s)
    try:
        gp.fit(X, u)
        state = gp.posterior_state()
    except SurrogateError as e:
        logger.warning("bank: the %s GP of %s could not be fitted (%s); left out", algorithm, task, e)
        return None
    return bank_cache.CachedMember(state, gp.y_.copy(), float(gp.jitter_))


__all__ = ["Encoder", "SurrogateBank", "UnknownBankAlgorithmError", "member_seed", "space_encoder", "state_predictor"]
