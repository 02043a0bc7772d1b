"""Per-algorithm weighted ensembles of past tasks' GPs and the target's own GPs, the part
RGPE (:mod:`metabo.strategies.rgpe`) and RLGP (:mod:`metabo.strategies.rlgp`) share.

Notation (RLGP, Manolache & Vanschoren 2019, sec. 3 and Algorithm 1): algorithms
``k = 1..K``; past tasks ``p``; base GPs ``S_{k,p}`` (:class:`~metabo.surrogates.bank.SurrogateBank`);
the target's observations ``D_k = {(x_i, y_i)}`` of algorithm ``k`` and its target GP
``S_{k,t}`` (``n_k >= 2``).

One scale (Salinas, Shen & Perrone 2020, "A quantile-based approach for hyperparameter
transfer learning", sec. 3; :mod:`metabo.surrogates.normalization`): with
``normalization="copula"`` (the bank's default) each past task's values, over all its
algorithms, and the target's values, over all its completed trials, are mapped by the
Gaussian copula ``z = Phi^{-1}(F~(y))`` of their own winsorized empirical CDF
(:meth:`WeightedGPEnsembles.target_values`), so base and target predictions are on one
scale whatever each task's error range; the incumbent is ``min z``.
``normalization="standardize"``: ``z`` the target's Yeo-Johnson warped values,
standardized, and the bank's values standardized per task.

Target GPs as GP-BO's (:class:`~metabo.strategies.gp.GPBO`, whose defaults of ``warping``,
``n_restarts``, ``refit_every``, ``n_random``, ``n_local``, ``n_starts`` these take): the
hyperparameters of ``S_{k,t}`` are GP-BO's fit (:class:`~metabo.strategies.gp.ModelCache`)
of algorithm ``k``'s Yeo-Johnson warped values; ``S_{k,t}`` is that GP conditioned on
``z_k`` (the hyperparameters carried over in standardized units; a deviation: the
copula's ``z`` change with every new observation, and refitting every algorithm's GP from
scratch each time is what the cache avoids). Under the copula the warping leaves ``z``
unchanged (ranks); it shapes the hyperparameter fit only.

Each suggestion:

1. Weights ``w`` (:mod:`metabo.strategies.weights`) from ``S`` joint posterior samples at
   the target's observations: relative-landmark counts ``c`` of each base task (RLGP eqs.
   2, 5, 7) and the target's leave-one-out counts (RLGP eq. 6; RGPE, Feurer et al. 2018,
   sec. 3.2). ``scope="task"`` (RLGP): one weight per task from the pairs of *all*
   algorithms, ``c_p = sum_k c_{k,p}`` (a task without a GP for algorithm ``k`` gains
   nothing from ``k``'s pairs), shared by every algorithm's ensemble.
   ``scope="algorithm"`` (RGPE): each algorithm's ensemble weighted from its own pairs.
   Then (a deviation from both papers, :func:`~metabo.strategies.weights.target_floor`)
   the target's weight is raised to at least ``n / (n + n0)`` (``n``: the target's
   completed observations, of algorithm ``k`` for RGPE; ``n0 = target_floor``, 10), the
   base weights rescaled to the rest: with tied, quantized errors the arg max otherwise
   gives the target almost nothing however much it has seen.
2. Ensemble of algorithm ``k`` (RLGP eq. after 8; RGPE sec. 3, eq. 5):
   ``mu_k = sum_m w_m mu_m``, ``var_k = sum_m w_m^2 var_m`` over the models available for
   ``k`` (the base GPs of the tasks that have one, the target GP if ``n_k >= 2``), the
   weights renormalized over them; if they all have weight 0, the target GP alone (or the
   base GPs with equal weights when there is no target GP yet). A deviation where the
   papers' variance is overconfident: when ``k`` has no target GP (``n_k < 2``: untried)
   or its weights rest on no pair (after the first trial: equal weights), the ensemble is
   the mixture of its models, ``var_k = sum_m w_m (var_m + mu_m^2) - mu_k^2`` (law of total
   variance), so an untried algorithm keeps its prior amplitude (``sum w_m^2 var_m`` would
   be ``mean(var)/T`` with ``T`` equal weights, and it would never be explored). An
   algorithm without any base GP (no past runs) and fewer than 2 target observations
   gets the prior ``N(mean z, 1)`` (the target's mean on the shared scale, unit
   variance), so EI can pick it.
3. log EI of each ensemble against the incumbent ``min z`` (over all algorithms),
   maximized over the algorithm's own space (:func:`metabo.acquisition.search.maximize`).
   Default: the algorithm whose ensemble offers the largest EI is evaluated (one
   configuration per iteration). ``one_per_algorithm=True``: the paper's evaluation of
   every algorithm's suggestion, made sequential: iteration ``n`` takes algorithm
   ``n mod K`` (the paper evaluates all K suggestions of one history at once), or the next
   one that still has a configuration to ask (lda, gaussian_nb have one configuration).
   ``search="joint"``: the same acquisition (each row scored by its algorithm's ensemble)
   maximized once over the whole CASH space, as GP-BO searches it (``n_random`` draws
   across the algorithms, ``n_local`` local searches from the best of them and of every
   algorithm's ``n_starts`` best trials) instead of once per algorithm (``n_random`` draws
   and ``n_local`` searches each): K times less search per suggestion, a cost that does
   not grow with the number of algorithms.

The first ``n_init`` trials are random (RLGP's protocol: 3; default 0). With ``n_init=0`` the first
suggestion, before any observation of the target, is the minimizer of the base GPs' equal-
weight mean (no pair to weight by, no incumbent for EI), over all algorithms; a warm start
from the first evaluation.

Work kept between suggestions (only the evaluated algorithm has new data; the picks are
the same as without it): the target GPs' fits are warm-refitted (:class:`~metabo.strategies.gp.ModelCache`);
the left-out target GPs ``f_{-i}`` are kept until their algorithm's data change; the bank
keeps its members' posterior factors and stacked arrays. BLAS is limited once per suggestion
(``blas_threads``); target GPs predict by the bank's batched path
(:func:`~metabo.surrogates.bank_predict.state_predictor`; seconds: ``reports/warm/all``).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Constant
from metabo.strategies.base import Config, random_configuration
from metabo.strategies.gp import GPBO, ModelCache, top_configurations
from metabo.strategies.weights import (
    TARGET_FLOOR_N0,
    Weighting,
    ensemble_weights,
    landmark_counts,
    loo_counts,
    loo_samples,
    n_pairs,
    target_floor,
)
from metabo.surrogates.gp import GaussianProcess
from metabo.surrogates.normalization import NORMALIZATIONS, Normalization, normalize
from metabo.surrogates.warping import WARPINGS, Warping, warp

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.surrogates.bank import SurrogateBank

logger = logging.getLogger(__name__)

Scope = Literal["task", "algorithm"]
Search = Literal["algorithm", "joint"]

#: GP-BO's default arguments (:class:`~metabo.strategies.gp.GPBO`): the target GPs' fits and
#: the acquisition search take the same defaults, read from its signature, not copied.
_GPBO: dict[str, Any] = {k: p.default for k, p in inspect.signature(GPBO.__init__).parameters.items()
                         if p.default is not inspect.Parameter.empty}


@dataclass(frozen=True)
class _Context:
    """One suggestion's shared state: whether nothing of the target is known yet
    (``prior``), the incumbent ``best = min z`` of the target's normalized values,
    ``center = mean z`` (the prior mean of an algorithm without any model), the target
    GPs and the weights by algorithm, and by algorithm the number of pairs its weights
    were computed from."""

    prior: bool
    best: float
    center: float
    targets: dict[str, tuple[Any, np.ndarray, np.ndarray]]
    weights: dict[str, dict[str, float]]
    pairs: dict[str, int]


class WeightedGPEnsembles:
    """Per-algorithm ensembles of base and target GPs (module docstring).

    Args:
        bank: the past tasks' GPs, one per (task, algorithm).
        scope: ``"task"`` (RLGP weights) or ``"algorithm"`` (RGPE weights).
        n_init: random trials before the first ensemble (0, the default: the first pick
            comes from the base GPs; the RLGP paper's protocol uses 3).
        n_samples: posterior samples ``S`` for the weights.
        weighting, dilution: see :mod:`metabo.strategies.weights`.
        target_floor: ``n0`` of the target's weight floor ``n / (n + n0)``
            (:func:`~metabo.strategies.weights.target_floor`, a deviation from both papers);
            None: no floor (the papers' weights).
        one_per_algorithm: round-robin over algorithms instead of the largest EI.
        search: ``"algorithm"`` (one acquisition search per algorithm) or ``"joint"``
            (one over the CASH space; module docstring, step 3).
        n_random, n_local, n_starts: the acquisition search (per algorithm, or of the
            joint search; ``n_starts`` per algorithm either way).
        refit_every, n_restarts, warping: the target GPs' hyperparameter fits (as GP-BO's:
            the defaults are :class:`~metabo.strategies.gp.GPBO`'s, read from its signature).
        normalization: the target values' shared scale, ``"copula"`` or ``"standardize"``
            (:mod:`metabo.surrogates.normalization`); None: the bank's (``bank.normalization_``).
        blas_threads: BLAS threads during a suggestion (None: leave BLAS as it is).
        seed: seeds the target GPs, the samples and the tie breaks.
    """

    name = "weighted-gp-ensembles"

    def __init__(
        self, bank: SurrogateBank, *, scope: Scope = "task", n_init: int = 0, n_samples: int = 100,
        weighting: Weighting = "argmax", dilution: bool = False, target_floor: float | None = TARGET_FLOOR_N0,
        one_per_algorithm: bool = False, search: Search = "algorithm",
        n_random: int = _GPBO["n_random"], n_local: int = _GPBO["n_local"], n_starts: int = _GPBO["n_starts"],
        refit_every: int = _GPBO["refit_every"], n_restarts: int = _GPBO["n_restarts"],
        warping: Warping = _GPBO["warping"], normalization: Normalization | None = None,
        blas_threads: int | None = 1, seed: int = 0,
    ) -> None:
        if scope not in ("task", "algorithm"):
            raise InputDataError(f"scope must be 'task' or 'algorithm', got {scope!r}")
        if warping not in WARPINGS:
            raise InputDataError(f"unknown warping {warping!r}; use one of {list(WARPINGS)}")
        normalization = getattr(bank, "normalization_", "standardize") if normalization is None else normalization
        if normalization not in NORMALIZATIONS:
            raise InputDataError(f"unknown normalization {normalization!r}; use one of {list(NORMALIZATIONS)}")
        self.warping, self.normalization = warping, normalization
        if n_init < 0 or n_samples < 1:
            raise InputDataError("n_init >= 0 and n_samples >= 1 are required")
        if target_floor is not None and not target_floor > 0:
            raise InputDataError(f"target_floor must be > 0 or None, got {target_floor}")
        self.target_floor = target_floor
        if search not in ("algorithm", "joint"):
            raise InputDataError(f"search must be 'algorithm' or 'joint', got {search!r}")
        if search == "joint" and one_per_algorithm:
            raise InputDataError("one_per_algorithm picks each algorithm in turn: its search is per algorithm")
        self.search = search
        self.bank, self.scope, self.n_init, self.n_samples = bank, scope, n_init, n_samples
        self.weighting, self.dilution, self.one_per_algorithm = weighting, dilution, one_per_algorithm
        self.n_random, self.n_local, self.n_starts = n_random, n_local, n_starts
        self.refit_every, self.n_restarts, self.seed = refit_every, n_restarts, seed
        self.blas_threads = blas_threads
        self._caches: dict[str, ModelCache] = {}
        # per algorithm: the key of (X_k, y_k, hyperparameters) and the fitted f_{-i} by i
        self._loo_models: dict[str, tuple[tuple[Any, ...], dict[int, GaussianProcess]]] = {}
        self._controller: Any = None
        self.last_weights_: dict[str, dict[str, float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_controller"] = None  # found again on first use
        return state

    def _blas_context(self) -> contextlib.AbstractContextManager[Any]:
        """BLAS limited to ``blas_threads`` for a whole suggestion (one limit, not one per
        GP call: entering threadpoolctl's limit costs about as much as a small predict)."""
        if self.blas_threads is None:
            return contextlib.nullcontext()
        if self._controller is None:
            from threadpoolctl import ThreadpoolController

            self._controller = ThreadpoolController()
        return self._controller.limit(limits=self.blas_threads, user_api="blas")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(tasks={len(self.bank.tasks)}, scope={self.scope!r}, n_init={self.n_init}, "
                f"n_samples={self.n_samples}, weighting={self.weighting!r}, dilution={self.dilution}, "
                f"one_per_algorithm={self.one_per_algorithm}, search={self.search!r}, seed={self.seed})")

    # ------------------------------------------------------------------ models
    def target_values(self, history: History) -> np.ndarray:
        """The target's completed values on the shared scale (module docstring): ``z``,
        lower is better; the incumbent is ``min z``."""
        y = history.y
        if self.normalization == "copula":  # rank-based: a monotone warping would change nothing
            return normalize(y, "copula")
        return normalize(warp(y, None, self.warping), "standardize")

    def _target_models(self, history: History, space: CASHSpace, X: np.ndarray | None = None,
                       z: np.ndarray | None = None) -> dict[str, tuple[Any, np.ndarray, np.ndarray]]:
        """Per algorithm with >= 2 completed trials: (target GP, X_k, z_k) in its own block
        (``X``: ``history.X(space)``, ``z``: :meth:`target_values`, if already computed).
        The GP's hyperparameters are GP-BO's fit of the algorithm's own warped values
        (:class:`~metabo.strategies.gp.ModelCache`, ``warping``, ``refit_every``,
        ``n_restarts``); the GP is that one conditioned on ``z_k``, its hyperparameters in
        the GP's standardized units carried over."""
        done, y = history.completed, history.y
        X = history.X(space) if X is None else X
        z = self.target_values(history) if z is None else z
        out = {}
        for j, a in enumerate(space.algorithms):
            rows = [i for i, r in enumerate(done) if r.algorithm == a]
            if len(rows) < 2:
                continue
            if a not in self._caches:
                seed = int(np.random.SeedSequence([self.seed, j]).generate_state(1)[0])
                self._caches[a] = ModelCache(self._make_gp, seed, self.refit_every, warping=self.warping)
            Xa, za = X[rows][:, space.slices[a]], z[rows]
            fitted = self._caches[a].model(Xa, y[rows], None)[0]
            out[a] = (_conditioned(fitted, Xa, za), Xa, za)
        return out

    def _make_gp(self, seed: int) -> GaussianProcess:
        """A target GP (BLAS is limited around the whole suggestion, not per GP call)."""
        return GaussianProcess(kernel="matern52", noise=None, n_restarts=self.n_restarts, seed=seed, blas_threads=None)

    def _loo(self, model: Any, Xa: np.ndarray, ya: np.ndarray, seed: int, algorithm: str | None = None) -> np.ndarray:
        """Leave-one-out joint samples of the target GP of one algorithm, (S, n, n).

        With ``algorithm``, the left-out GPs ``f_{-i}`` are kept until that algorithm's
        ``(X_k, y_k)`` or target hyperparameters change (between two suggestions only the
        algorithm just evaluated changes): the samples are the same as from GPs fitted
        anew (same data, same hyperparameters, same seeds), without the n fits."""
        h = model.hyperparameters_
        fitted: dict[int, GaussianProcess] = {}
        if algorithm is not None:
            key = (Xa.shape, Xa.tobytes(), ya.tobytes(), np.asarray(h.lengthscales, dtype=float).tobytes(),
                   float(h.amplitude), float(h.noise), float(h.mean))
            entry = self._loo_models.get(algorithm)
            if entry is None or entry[0] != key:
                entry = self._loo_models[algorithm] = (key, {})
            fitted = entry[1]

        def fit_sample(keep: np.ndarray, rows: np.ndarray, s: int) -> np.ndarray:
            left_out = len(rows) - len(keep)  # loo_samples keeps every row but one: find it
            i = int(np.flatnonzero(np.isin(rows, keep, invert=True))[0]) if left_out == 1 else -1
            gp = fitted.get(i) if i >= 0 else None
            if gp is None:
                gp = GaussianProcess(kernel="matern52", blas_threads=None).fit(Xa[keep], ya[keep], hyperparameters=h)
                if i >= 0 and algorithm is not None:
                    fitted[i] = gp
            return gp.sample(Xa[rows], self.n_samples, s)

        return loo_samples(fit_sample, len(ya), self.n_samples, seed)

    # ------------------------------------------------------------------ weights
    def weights(self, history: History, space: CASHSpace, targets: dict[str, tuple[Any, np.ndarray, np.ndarray]],
                rng: np.random.Generator, X: np.ndarray | None = None) -> dict[str, dict[str, float]]:
        """Per algorithm: model -> weight (past task ids, and ``"target"``); ``X``:
        ``history.X(space)`` if already computed."""
        done = history.completed
        X = history.X(space) if X is None else X
        y = history.y
        tasks = list(self.bank.tasks)
        index = {t: i for i, t in enumerate(tasks)}
        per_alg: dict[str, tuple[np.ndarray, np.ndarray | None, int]] = {}
        for a in space.algorithms:
            rows = [i for i, r in enumerate(done) if r.algorithm == a]
            if len(rows) < 2:
                continue
            ya = y[rows]
            base = np.zeros((len(tasks), self.n_samples))
            if a in self.bank.algorithms:
                members = self.bank.members(a)
                if members:
                    seed = int(rng.integers(2**31 - 1))
                    samples = self.bank.sample(a, X[rows][:, space.slices[a]], self.n_samples, seed)
                    base[[index[t] for t in members]] = landmark_counts(samples, ya)
            target = None
            if a in targets:
                model, Xa, ya_t = targets[a]
                target = loo_counts(self._loo(model, Xa, ya_t, int(rng.integers(2**31 - 1)), a), ya_t)
            per_alg[a] = (base, target, n_pairs(ya))
        out: dict[str, dict[str, float]] = {}
        weight_seed = int(rng.integers(2**31 - 1))
        if self.scope == "task":
            if per_alg:
                base = cast(np.ndarray, sum(b for b, _, _ in per_alg.values()))  # per_alg is not empty
                targets_ = [t for _, t, _ in per_alg.values() if t is not None]
                target = cast(np.ndarray, sum(targets_)) if targets_ else np.zeros(self.n_samples)
                w = ensemble_weights(base, target, sum(p for _, _, p in per_alg.values()), weighting=self.weighting,
                                     dilution=self.dilution, seed=weight_seed)
                if self.target_floor is not None:  # the target task's evidence: all its observations
                    w = target_floor(w, len(done), self.target_floor)
                shared = {**dict(zip(tasks, w[:-1])), "target": float(w[-1])}
            else:
                shared = {}
            out = {a: shared for a in space.algorithms}
        else:
            for a in space.algorithms:
                if a not in per_alg:
                    out[a] = {}
                    continue
                base, target, pairs = per_alg[a]
                target = target if target is not None else np.zeros(self.n_samples)
                w = ensemble_weights(base, target, pairs, weighting=self.weighting, dilution=self.dilution,
                                     seed=weight_seed)
                if self.target_floor is not None:  # the evidence of a's target GP: a's observations
                    w = target_floor(w, sum(r.algorithm == a for r in done), self.target_floor)
                out[a] = {**dict(zip(tasks, w[:-1])), "target": float(w[-1])}
        return out

    # ------------------------------------------------------------------ prediction
    def _ensemble(self, a: str, weights: dict[str, float], target: tuple[Any, np.ndarray, np.ndarray] | None,
                  *, mixture: bool, center: float = 0.0
                  ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """``X -> (mean, var)`` of algorithm ``a``'s ensemble in the target's normalized
        units (module docstring, step 2): ``mixture`` for the law of total variance
        (no target GP of ``a``, or no pair behind the weights); ``center``: the prior
        mean of an algorithm without any model (variance 1)."""
        members = list(self.bank.members(a)) if a in self.bank.algorithms else []
        w_base = np.array([weights.get(t, 0.0) for t in members])
        w_target = weights.get("target", 0.0) if target is not None else 0.0
        total = w_base.sum() + w_target
        if total <= 0:
            if target is not None:
                w_base, w_target = np.zeros(len(members)), 1.0
            elif members:  # no weight yet: the base GPs' equal-weight mixture
                w_base, mixture = np.full(len(members), 1.0 / len(members)), True
            else:  # no model at all: the prior N(center, 1)

                def prior(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                    return np.full(len(X), center), np.ones(len(X))

                return prior
        else:
            w_base, w_target = w_base / total, w_target / total
        use = np.flatnonzero(w_base > 0)
        target_predict = _fast_predict(target[0]) if target is not None and w_target > 0 else None

        def predict(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            mean = np.zeros(len(X))
            var = np.zeros(len(X))  # sum_m w_m^2 var_m, or sum_m w_m (var_m + mu_m^2) with mixture
            if len(use):
                mu, v = self.bank.predict(a, X, [members[i] for i in use])
                mean += w_base[use] @ mu
                var += w_base[use] @ (v + mu**2) if mixture else (w_base[use] ** 2) @ v
            if w_target > 0 and target_predict is not None:
                mu_t, v_t = target_predict(X)  # the target GP models z: no conversion
                mean += w_target * mu_t
                var += w_target * (v_t + mu_t**2) if mixture else w_target**2 * v_t
            if mixture:
                var -= mean**2
                np.maximum(var, 0.0, out=var)
            return mean, var

        return predict

    # ------------------------------------------------------------------ suggest
    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next configuration by the weighted ensemble's acquisition, with BLAS threads as configured."""
        with self._blas_context():
            return self._suggest(history, space, rng)

    def _context(self, history: History, space: CASHSpace, rng: np.random.Generator) -> _Context | None:
        """What every algorithm's ensemble of one suggestion shares (:class:`_Context`);
        None while the initial design is random."""
        done = history.completed
        prior = not any(r.ok for r in done)  # nothing of the target yet
        if len(history) < self.n_init or (prior and (self.n_init > 0 or done)):
            return None
        y = history.y if not prior else np.zeros(0)
        z = self.target_values(history) if not prior else np.zeros(0)
        best = float(z.min()) if not prior else 0.0
        X = history.X(space) if not prior else None
        targets = self._target_models(history, space, X, z) if not prior else {}
        weights = self.weights(history, space, targets, rng, X) if not prior else {}
        self.last_weights_ = weights
        own = {a: n_pairs(y[[i for i, r in enumerate(done) if r.algorithm == a]]) for a in space.algorithms} \
            if not prior else {}
        pairs = own if self.scope == "algorithm" else dict.fromkeys(own, sum(own.values()))
        center = float(z.mean()) if not prior else 0.0
        return _Context(prior, best, center, targets, weights, pairs)

    def _predictor(self, a: str, ctx: _Context) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """Algorithm ``a``'s ensemble: the mixture variance when it has no target GP
        (fewer than 2 observations) or its weights rest on no pair."""
        target = ctx.targets.get(a)
        mixture = target is None or ctx.pairs.get(a, 0) == 0
        return self._ensemble(a, ctx.weights.get(a, {}), target, mixture=mixture, center=ctx.center)

    def posterior(self, history: History, space: CASHSpace, algorithm: str, X: np.ndarray,
                  rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """Mean and variance (m,) of ``algorithm``'s ensemble at rows ``X`` (m, d_k) of its
        own block, in the target's normalized units (the units of EI's incumbent), as the
        next suggestion would see them (``rng``: the weights' samples; seed 0 by default);
        None while the initial design is random."""
        rng = np.random.default_rng(0) if rng is None else rng
        with self._blas_context():
            ctx = self._context(history, space, rng)
            if ctx is None:
                return None
            return self._predictor(algorithm, ctx)(np.asarray(X, dtype=float))

    def _scores(self, history: History, space: CASHSpace, rng: np.random.Generator
                ) -> tuple[dict[str, Callable[[np.ndarray], np.ndarray]], bool] | None:
        """Per algorithm, the acquisition of rows of its own block (log EI of its ensemble,
        or minus the base models' mean before any target observation), and whether it is
        that prior; None while the initial design is random."""
        ctx = self._context(history, space, rng)
        if ctx is None:
            return None
        prior, best = ctx.prior, ctx.best
        algorithms: Sequence[str] = space.algorithms
        if self.one_per_algorithm:
            algorithms = _rotation(space, history)
        from metabo.acquisition.ei import log_expected_improvement

        scores: dict[str, Callable[[np.ndarray], np.ndarray]] = {}
        for a in algorithms:
            predict = self._predictor(a, ctx)

            def score(Xb: np.ndarray, predict: Any = predict) -> np.ndarray:
                if prior:  # the base models' mean alone: its minimizer (no incumbent for EI yet)
                    return -predict(Xb)[0]
                mean, var = predict(Xb)
                return log_expected_improvement(mean, var, best)

            scores[a] = score
        return scores, prior

    def acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator
                    ) -> Callable[[np.ndarray], np.ndarray] | None:
        """The acquisition of encoded rows of the whole CASH ``space`` (higher is better;
        ``-inf`` for an algorithm other than the rotation's with ``one_per_algorithm``);
        None while the design is random. The
        ensemble searches (:mod:`metabo.ensembles`) rank their candidates with it."""
        with self._blas_context():
            found = self._scores(history, space, rng)
        if found is None:
            return None
        scores = found[0]
        if self.one_per_algorithm:  # the rotation's algorithm alone
            scores = dict(list(scores.items())[:1])
        joint = _joint(scores, space)

        def score(X: np.ndarray) -> np.ndarray:
            with self._blas_context():
                return joint(X)

        return score

    def _suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        found = self._scores(history, space, rng)
        if found is None:
            return random_configuration(space, rng, history.config_ids)
        scores, prior = found
        done = history.completed
        y = history.y if not prior else np.zeros(0)
        from metabo.acquisition.search import maximize

        if self.search == "joint":
            starts = [] if prior else [
                c for a in space.algorithms
                for c in top_configurations([r for r in done if r.algorithm == a],
                                            y[[i for i, r in enumerate(done) if r.algorithm == a]], self.n_starts)]
            try:
                config, _ = maximize(space, _joint(scores, space), starts=starts, evaluated=history.config_ids,
                                     n_random=self.n_random, n_local=self.n_local, seed=rng)
            except InputDataError:  # every configuration met was asked already
                return random_configuration(space, rng, history.config_ids)
            return config

        winner: tuple[float, Config] | None = None
        for a, f in scores.items():
            if _exhausted(space, a, history):
                continue

            def score(Xc: np.ndarray, f: Any = f) -> np.ndarray:
                return f(Xc[:, 1:])  # the one-algorithm space: [one-hot (1), a's block]

            rows = [i for i, r in enumerate(done) if r.algorithm == a]
            starts = top_configurations([done[i] for i in rows], y[rows], self.n_starts) if not prior else []
            try:
                config, value = maximize(space.subset([a]), score, starts=starts, evaluated=history.config_ids,
                                         n_random=self.n_random, n_local=self.n_local, seed=rng)
            except InputDataError:  # every configuration of a small discrete space was asked
                continue
            if self.one_per_algorithm:  # the first algorithm of the rotation with a configuration left
                return config
            if winner is None or value > winner[0]:
                winner = (value, config)
        if winner is None:
            if self.one_per_algorithm:
                for algorithm in _rotation(space, history):
                    with contextlib.suppress(InputDataError):  # nothing of it left: the next one
                        return random_configuration(space, rng, history.config_ids, algorithm=algorithm)
            return random_configuration(space, rng, history.config_ids)
        return winner[1]


def _joint(scores: dict[str, Callable[[np.ndarray], np.ndarray]], space: CASHSpace
           ) -> Callable[[np.ndarray], np.ndarray]:
    """The acquisition of encoded rows of the whole CASH ``space``: each row scored by its
    algorithm's ``scores`` on its own block, ``-inf`` for an algorithm without one."""
    index = {a: k for k, a in enumerate(space.algorithms)}

    def score(X: np.ndarray) -> np.ndarray:
        out = np.full(len(X), -np.inf)
        owner = np.argmax(X[:, : len(space)], axis=1)
        for a, f in scores.items():
            rows = np.flatnonzero(owner == index[a])
            if len(rows):
                out[rows] = f(X[rows][:, space.slices[a]])
        return out

    return score


def _conditioned(model: GaussianProcess, X: np.ndarray, z: np.ndarray) -> GaussianProcess:
    """A GP on ``(X, z)`` with ``model``'s hyperparameters in standardized units (the GP
    standardizes its targets: :attr:`~metabo.surrogates.gp.GaussianProcess.theta_`); no
    optimization."""
    return GaussianProcess(kernel="matern52", blas_threads=None).fit(X, z, theta=model.theta_)


def _fast_predict(model: Any) -> Any:
    """The target GP's ``predict`` by the bank's batched path
    (:func:`~metabo.surrogates.bank.state_predictor`, the same posterior to rounding), or
    its own ``predict`` when it is not a MAP one-block GP."""
    from metabo.exceptions import SurrogateError
    from metabo.surrogates.bank_predict import state_predictor

    try:
        return state_predictor(model.posterior_state())
    except (AttributeError, SurrogateError):
        return model.predict


def _rotation(space: CASHSpace, history: History) -> list[str]:
    """``one_per_algorithm``'s order: the algorithms from ``n mod K`` on (``n`` completed
    trials), cyclically, without those :func:`_exhausted` (the suggestion takes the first
    one that still has a configuration to ask)."""
    K = len(space.algorithms)
    start = len(history.completed) % K
    order = [space.algorithms[(start + i) % K] for i in range(K)]
    return [a for a in order if not _exhausted(space, a, history)]


def _exhausted(space: CASHSpace, algorithm: str, history: History) -> bool:
    """Whether ``algorithm`` has a single configuration (no tunable hyperparameter, e.g.
    LDA's default) and it was asked already: nothing of it is left to suggest."""
    if any(not isinstance(h, Constant) for h in space[algorithm].hyperparameters):
        return False
    from metabo.kb.canonical import config_id

    return config_id(*space.default_configuration(algorithm)) in history.config_ids


__all__ = ["Scope", "WeightedGPEnsembles"]
