"""DivBO: diversity-aware Bayesian optimization for ensemble learning (Shen et al. 2022,
sec. 3 and Algorithm 1), as a strategy wrapping a performance strategy.

- Diversity of two trained models: :func:`metabo.ensembles.diversity.diversity` (eq. 3).
- Diversity surrogate ``M_div`` (sec. 3.1, :class:`DiversitySurrogate`): several LightGBM
  regressors (differing by seed, row and feature subsampling) on the pairs of observed
  configurations, both orders ``(x_i, x_j)`` and ``(x_j, x_i)`` (features: the two CASH
  encodings side by side), target ``Div(x_i, x_j)``; its predictive mean and variance are
  the mean and variance of the regressors' outputs.
- Each iteration after ``n_init`` (5) random ones (Algorithm 1):
  1. the temporary pool ``P`` = ensemble selection (:mod:`metabo.ensembles.selection`) of
     size ``E`` over the observed models;
  2. candidates from random sampling of the whole space and local sampling around the
     best observed configurations (sec. 3.2);
  3. ``R_perf``: the candidates' ranks under the performance acquisition (the base
     strategy's, log EI of its GP by default, best = rank 1); ``R_div``: their ranks under
     ``alpha_div(x) = 1/N sum_n min_{theta in P} M_div^n(theta, x)`` (eq. 4, ``N`` draws
     from the surrogate's normal predictive distribution; most diverse = rank 1);
  4. suggest ``argmin R_perf + w R_div`` with ``w = beta (sigmoid(tau t) - 0.5)``
     (eq. 5; ``beta = 0.05``, ``tau = 0.2``, ``t`` the number of trials so far).
- The final ensemble: ensemble selection of size ``E`` over every observed model (line 13).

The performance acquisition is any strategy's ``acquisition(history, space, rng)`` (GP-BO,
RGPE, RLGP, the kNN design followed by GP-BO), so DivBO starts warm where the knowledge
base points. While the base strategy has no acquisition yet (its own initial design), its
suggestion is taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import kendalltau, rankdata

from metabo.ensembles.base import EnsembleSearch
from metabo.ensembles.diversity import diversity_matrix
from metabo.ensembles.selection import select_from
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.strategies.base import Config, Strategy, random_configuration

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.space.cash import CASHSpace


class DiversitySurrogate:
    """``M_div`` (module docstring): ``n_models`` LightGBM regressors on configuration pairs."""

    def __init__(self, n_models: int = 5, n_estimators: int = 100, seed: int = 0) -> None:
        if n_models < 2:
            raise InputDataError("the diversity surrogate needs n_models >= 2 (its variance is their spread)")
        self.n_models, self.n_estimators, self.seed = n_models, n_estimators, int(seed)
        self.models: list[Any] = []

    @staticmethod
    def pairs(X: np.ndarray, D: np.ndarray, rows: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Features ``[x_i, x_j]`` and targets ``D[i, j]`` of every ordered pair ``i != j``
        of ``rows`` (default: all)."""
        idx = np.arange(len(X)) if rows is None else np.asarray(rows)
        i, j = np.meshgrid(idx, idx, indexing="ij")
        keep = i != j
        i, j = i[keep], j[keep]
        return np.hstack([X[i], X[j]]), D[i, j]

    def fit(self, X: np.ndarray, probas: Sequence[np.ndarray] | np.ndarray) -> DiversitySurrogate:
        """Fit on the observed configurations ``X`` (H, d) and their validation probabilities."""
        import lightgbm as lgb

        X = np.asarray(X, dtype=float)
        if len(X) < 2:
            raise InputDataError("the diversity surrogate needs at least two observed models")
        F, t = self.pairs(X, diversity_matrix(np.asarray(probas, dtype=float)))
        self.models = []
        for k in range(self.n_models):
            model = lgb.LGBMRegressor(
                n_estimators=self.n_estimators, learning_rate=0.1, num_leaves=15, min_child_samples=3,
                subsample=0.8, subsample_freq=1, colsample_bytree=0.8, random_state=self.seed + k, n_jobs=1,
                verbose=-1,
            )
            model.fit(F, t)
            self.models.append(model)
        return self

    def outputs(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """(n_models, q) each regressor's prediction for the pairs ``(A[r], B[r])``."""
        if not self.models:
            raise InputDataError("fit the diversity surrogate first")
        F = np.hstack([np.asarray(A, dtype=float), np.asarray(B, dtype=float)])
        return np.stack([m.predict(F) for m in self.models])

    def predict(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of ``Div(A[r], B[r])``."""
        out = self.outputs(A, B)
        return out.mean(axis=0), out.var(axis=0)


def surrogate_kendall_tau(X: np.ndarray, probas: Sequence[np.ndarray] | np.ndarray, *, holdout: float = 0.2,
                          seed: int = 0, **surrogate: Any) -> float:
    """Kendall's tau between the true and predicted diversities of held-out pairs (DivBO
    sec. 4.2): the surrogate is fitted on the pairs of a random ``1 - holdout`` of the
    models and scored on the pairs ``i < j`` that involve a held-out model."""
    X = np.asarray(X, dtype=float)
    P = np.asarray(probas, dtype=float)
    H = len(X)
    n_out = max(1, int(round(holdout * H)))
    if H - n_out < 2:
        raise InputDataError(f"{H} models: too few to hold {n_out} out and fit on the rest")
    rng = np.random.default_rng(seed)
    out = np.sort(rng.choice(H, size=n_out, replace=False))
    kept = np.setdiff1d(np.arange(H), out)
    model = DiversitySurrogate(seed=seed, **surrogate).fit(X[kept], P[kept])
    D = diversity_matrix(P)
    i, j = np.triu_indices(H, k=1)
    held = np.isin(i, out) | np.isin(j, out)
    i, j = i[held], j[held]
    mean, _ = model.predict(X[i], X[j])
    tau = kendalltau(D[i, j], mean).statistic
    return float(tau) if tau == tau else 0.0


def diversity_weight(t: int, beta: float = 0.05, tau: float = 0.2) -> float:
    """``w = beta (sigmoid(tau t) - 0.5)`` (eq. 5), in ``[0, beta / 2)``."""
    return beta * (1.0 / (1.0 + math.exp(-tau * t)) - 0.5)


class DivBO(EnsembleSearch):
    """DivBO (module docstring).

    Args:
        base: the performance strategy (must have ``acquisition``: GP-BO, RGPE, RLGP, kNN).
        y_valid: the validation set's true class codes.
        metric: what ensemble selection minimizes (the temporary pool and the final ensemble).
        ensemble_size: ``E``, ensemble selection's size limit.
        n_init: random configurations first (5 in Algorithm 1; 0 lets a warm base start).
        beta, tau: the diversity weight's scale and speed (eq. 5).
        n_random, n_local, n_per_numeric: candidates: random ones, and the neighbours of the
            ``n_local`` best observed configurations.
        n_draws: ``N`` in eq. 4.
        seed: seeds the surrogate and the draws.
    """

    name = "divbo"
    combine = "average"

    def __init__(self, base: Strategy, y_valid: Sequence[int] | np.ndarray, *, metric: str = "error_rate",
                 ensemble_size: int = 25, n_init: int = 5, beta: float = 0.05, tau: float = 0.2,
                 n_random: int = 500, n_local: int = 10, n_per_numeric: int = 4, n_draws: int = 10,
                 n_models: int = 5, n_classes: int | None = None, seed: int = 0) -> None:
        super().__init__(y_valid, n_classes)
        if not callable(getattr(base, "acquisition", None)):
            raise InputDataError(f"DivBO ranks candidates by the base strategy's acquisition; {base!r} has none "
                                 "(use gp, rgpe, rlgp or knn)")
        if ensemble_size < 1 or n_init < 0 or n_random < 1 or n_draws < 1:
            raise InputDataError("ensemble_size >= 1, n_init >= 0, n_random >= 1 and n_draws >= 1 are required")
        self.base, self.metric, self.ensemble_size, self.n_init = base, metric, int(ensemble_size), int(n_init)
        self.beta, self.tau, self.n_random, self.n_local = beta, tau, int(n_random), int(n_local)
        self.n_per_numeric, self.n_draws, self.n_models, self.seed = n_per_numeric, int(n_draws), n_models, int(seed)
        self.last_: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"DivBO(E={self.ensemble_size}, beta={self.beta}, tau={self.tau}, n_init={self.n_init}, "
                f"base={self.base!r}, seed={self.seed})")

    def pool(self, max_size: int | None = None, rows: np.ndarray | None = None) -> dict[int, float]:
        """Ensemble selection over the observed models, on the validation rows ``rows``
        (None: all): trial number -> weight."""
        return select_from(self.probas, self.y, metric=self.metric,
                           max_size=self.ensemble_size if max_size is None else max_size, rows=rows)

    def ensemble(self) -> dict[int, float]:
        """The final ensemble: ensemble selection of size ``E`` (Algorithm 1, line 13)."""
        return self.pool()

    def final(self, rows: np.ndarray, seed: int = 0) -> dict[int, float]:
        """The final ensemble selection on the validation rows ``rows``."""
        return self.pool(rows=rows)

    def _candidates(self, history: History, space: CASHSpace, rng: np.random.Generator) -> np.ndarray:
        X = space.sample_encoded(rng, self.n_random)
        done = [r for r in history.completed if r.ok]
        if done and self.n_local > 0:
            best = sorted(done, key=lambda r: (r.value, r.number))[: self.n_local]
            near, _ = space.neighbours_encoded_many(space.encode_many([(r.algorithm, r.params) for r in best]), rng,
                                                    self.n_per_numeric)
            X = np.vstack([X, near])
        return X

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """``argmin R_perf + w R_div`` over the candidates not asked yet (module docstring)."""
        if len(history) < self.n_init:
            return random_configuration(space, rng, history.config_ids)
        score = self.base.acquisition(history, space, rng)  # type: ignore[attr-defined]
        if score is None:
            return self.base.suggest(history, space, rng)
        X = self._candidates(history, space, rng)
        configs = [space.decode(x) for x in X]
        asked = history.config_ids
        seen: set[str] = set()
        keep = []
        for k, c in enumerate(configs):
            cid = config_id(*c)
            if cid not in asked and cid not in seen:
                seen.add(cid)
                keep.append(k)
        fresh = np.asarray(keep, dtype=int)
        if not len(fresh):
            return random_configuration(space, rng, asked)
        X = X[fresh]
        r_perf = rankdata(-np.nan_to_num(score(X), nan=-np.inf, posinf=np.inf))
        t = len(history)
        w = diversity_weight(t, self.beta, self.tau)
        numbers = sorted(self.probas)
        r_div = np.zeros(len(X))
        if len(numbers) >= 2 and w > 0:
            observed = space.encode_many([(history[k].algorithm, history[k].params) for k in numbers])
            surrogate = DiversitySurrogate(self.n_models, seed=self.seed + t).fit(
                observed, [self.probas[k] for k in numbers])
            pool = [numbers.index(k) for k in self.pool()]
            draws = np.random.default_rng([self.seed, t])
            lows = []
            for p in pool:  # M_div^n(theta, x) for each pool member theta
                mean, var = surrogate.predict(np.repeat(observed[p][None, :], len(X), axis=0), X)
                lows.append(mean[None, :] + np.sqrt(var)[None, :] * draws.standard_normal((self.n_draws, len(X))))
            alpha = np.min(np.stack(lows), axis=0).mean(axis=0)  # eq. 4
            r_div = rankdata(-alpha)
        total = r_perf + w * r_div
        best = int(np.argmin(total))
        self.last_ = {"t": t, "w": w, "n_candidates": len(X), "r_perf": float(r_perf[best]),
                      "r_div": float(r_div[best])}
        return configs[int(fresh[best])]


__all__ = ["DivBO", "DiversitySurrogate", "diversity_weight", "surrogate_kendall_tau"]
