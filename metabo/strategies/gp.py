"""GP-based Bayesian optimization over a CASH space (thesis chapters 3 and 5).

- :class:`GPBO`: one GP over the joint CASH space (thesis 5.3), fitted on all completed
  trials, log expected improvement maximized by random sampling + local search
  (:func:`metabo.acquisition.search.maximize`). ``kernel="conditional"``: the conditional
  kernel of thesis 5.4.1 (:class:`~metabo.surrogates.conditional.ConditionalGP`, groups =
  algorithm index, zero covariance across algorithms); ``kernel="dense"``: a
  :class:`~metabo.surrogates.gp.GaussianProcess` on the full imputed encoding (5.3.1).
- :class:`~metabo.strategies.gp_per_algorithm.PerAlgorithmGPBO` (its own module) shares
  the settings and the model cache defined here.

The GP strategies model the values warped by a monotone Yeo-Johnson transform
(``warping``, default ``"yeo-johnson"``; :mod:`metabo.surrogates.warping`), fitted on the
same prefix ``m`` as the hyperparameters below; the incumbent and EI's improvement are
taken in that scale.

Surrogate fits (:class:`ModelCache`): with ``refit_every = r``, the model after ``n``
completed trials is the GP fitted from scratch (hyperparameters by marginal likelihood with
restarts, seed ``(seed, m)``) on the first ``m = n - n mod r`` trials, then extended trial by
trial with ``add`` (Cholesky extended), each followed by a warm-started ``refit`` (one
L-BFGS-B run from the current hyperparameters; ``warm_refit=False`` keeps them instead);
while ``m < 2`` every fit is from scratch. This is a function of the history, so a cached
model and one rebuilt after a resume (at most ``r - 1`` warm refits) agree. When the
imputed value of failed trials changes (a new worst value), the chain is rebuilt from ``m``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration, thread_limits
from metabo.surrogates.warping import WARPINGS, Warping, WarpingCache

if TYPE_CHECKING:
    from metabo.optimizer.history import History, TrialRecord
    from metabo.surrogates.priors import GPPriors

logger = logging.getLogger(__name__)


class ModelCache:
    """The GP of a history prefix, extended by ``add`` (module docstring)."""

    def __init__(self, make: Callable[[int], Any], seed: int, refit_every: int, warm: bool = True,
                 warping: Warping = "none") -> None:
        self.make, self.seed, self.refit_every, self.warm = make, seed, refit_every, warm
        self.warping = warping
        self._warp = WarpingCache(warping)
        self._entry: tuple[np.ndarray, np.ndarray, np.ndarray | None, int, Any] | None = None

    def model(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None, *,
              refit: bool = False) -> tuple[Any, np.ndarray]:
        """``(model, z)``: the model of ``(X, z, groups)``, fitted from scratch on the first
        ``m`` rows, then extended row by row (``refit=True``: from scratch on all rows);
        ``z`` is ``y`` warped with the transform fitted on ``y[:m]``."""
        n = len(y)
        m = n if refit else n - n % self.refit_every
        if m < 2:
            m = n
        z = self._warp(y, m)
        if self._entry is not None:
            eX, ez, eg, em, model = self._entry
            k = len(ez)
            if em == m and m <= k <= n and np.array_equal(eX, X[:k]) and np.array_equal(ez, z[:k]) and (
                groups is None or (eg is not None and np.array_equal(eg, groups[:k]))
            ):
                return self._extend(model, X, z, groups, k, m), z
        seed = int(np.random.SeedSequence([self.seed, m]).generate_state(1)[0])
        model = self.make(seed)
        if groups is None:
            model.fit(X[:m], z[:m])
        else:
            model.fit(X[:m], z[:m], groups=groups[:m])
        return self._extend(model, X, z, groups, m, m), z

    def _extend(self, model: Any, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None, k: int, m: int) -> Any:
        """Add rows ``k..n-1`` one by one, each followed by a warm-started refit if ``warm``."""
        for i in range(k, len(y)):
            if groups is None:
                model.add(X[i], float(y[i]))
            else:
                model.add(X[i], float(y[i]), group=int(groups[i]))
            if self.warm:
                model.refit(warm_start=True)
        self._entry = (X.copy(), y.copy(), None if groups is None else groups.copy(), m, model)
        return model


def make_gp(conditional: bool, kernel: str, noise: float | None, n_restarts: int,
            priors: GPPriors | None = None) -> Callable[[int], Any]:
    """A factory ``seed -> GP``: a conditional GP (per-algorithm,
    :class:`~metabo.surrogates.conditional.ConditionalGP`) or a plain one, with the given
    kernel, noise, restarts and priors."""
    def make(seed: int) -> Any:
        if conditional:
            from metabo.surrogates.conditional import ConditionalGP

            return ConditionalGP(kernel=kernel, noise=noise, n_restarts=n_restarts, priors=priors, seed=seed)
        from metabo.surrogates.gp import GaussianProcess

        return GaussianProcess(kernel=kernel, noise=noise, n_restarts=n_restarts, priors=priors, seed=seed)

    return make


def top_configurations(records: Sequence[TrialRecord], y: np.ndarray, k: int) -> list[Config]:
    """The ``k`` configurations with the lowest (imputed) values."""
    order = np.argsort(y, kind="stable")[:k]
    return [(records[i].algorithm, dict(records[i].params)) for i in order]


class GPSettings:
    """Shared settings of the GP strategies."""

    def __init__(
        self, *, n_init: int, gp_kernel: str, noise: float | None, n_restarts: int, refit_every: int,
        warm_refit: bool, xi: float, n_random: int, n_local: int, n_starts: int, seed: int, threads: int | None,
        warping: Warping,
    ) -> None:
        if n_init < 0 or refit_every < 1 or n_starts < 0:
            raise InputDataError("n_init >= 0, refit_every >= 1 and n_starts >= 0 are required")
        if warping not in WARPINGS:
            raise InputDataError(f"unknown warping {warping!r}; use one of {list(WARPINGS)}")
        self.warping = warping
        self.n_init, self.gp_kernel, self.noise, self.n_restarts = n_init, gp_kernel, noise, n_restarts
        self.refit_every, self.xi, self.n_random, self.n_local = refit_every, xi, n_random, n_local
        self.n_starts, self.seed, self.warm_refit, self.threads = n_starts, seed, warm_refit, threads

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator, *,
                extra_starts: Sequence[Config] = ()) -> Config:
        """The next configuration (BLAS limited to ``threads``: small GPs run faster on one);
        ``extra_starts``: configurations the acquisition search also starts from (a warm
        start's transferred candidates), besides the best observed ones."""
        with thread_limits(self.threads):
            self._extra_starts = list(extra_starts)
            try:
                return self._suggest(history, space, rng)
            finally:
                self._extra_starts = []

    def posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """The surrogate's posterior mean at ``configs``, refitted on the whole history."""
        with thread_limits(self.threads):
            return self._posterior_mean(history, space, configs)

    def _suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        raise NotImplementedError

    def _posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        raise NotImplementedError

    def _log_ei(self, mean: np.ndarray, var: np.ndarray, best: float) -> np.ndarray:
        from metabo.acquisition.ei import log_expected_improvement

        return log_expected_improvement(mean, var, best, self.xi)

    def _maximize(self, space: CASHSpace, score: Callable[[np.ndarray], np.ndarray], starts: list[Config],
                  history: History, rng: np.random.Generator) -> tuple[Config, float]:
        from metabo.acquisition.search import maximize

        return maximize(space, score, starts=starts, evaluated=history.config_ids, n_random=self.n_random,
                        n_local=self.n_local, seed=rng)


class GPBO(GPSettings):
    """GP-based Bayesian optimization over the joint CASH space (module docstring).

    Args:
        kernel: ``"conditional"`` (thesis 5.4.1) or ``"dense"`` (imputation only, 5.3.1).
        n_init: random configurations before the first GP (and until 2 trials are told).
        gp_kernel: the GP's covariance, ``"matern52"`` or ``"laplace"`` (thesis 5.4.2).
        noise: fixed noise variance, or None to learn it.
        refit_every, warm_refit: hyperparameters fitted from scratch every ``refit_every``
            trials, warm-started refits in between (module docstring).
        xi: EI's exploration margin; n_random, n_local: the acquisition search;
        n_starts: best observed configurations the local search also starts from.
        seed: seeds the GP fits (the optimizer's seed drives the rest).
        threads: BLAS threads while suggesting (None: the libraries' default).
        warping: ``"yeo-johnson"`` (default) or ``"none"``: the monotone transform of the
            observed values the GP models (:mod:`metabo.surrogates.warping`, a deviation
            from the thesis, which models raw errors).
        priors: the GP's hyperparameter priors (None: :class:`~metabo.surrogates.priors.GPPriors`'
            defaults; a warm start passes ones pre-trained on the past,
            :func:`metabo.surrogates.pretrained.pretrained_priors`).
    """

    def __init__(
        self, *, kernel: Literal["conditional", "dense"] = "conditional", n_init: int = 5,
        gp_kernel: str = "matern52", noise: float | None = None, n_restarts: int = 2, refit_every: int = 10,
        warm_refit: bool = True, xi: float = 0.0, n_random: int = 1000, n_local: int = 10, n_starts: int = 10,
        seed: int = 0, threads: int | None = 1, warping: Warping = "yeo-johnson", priors: GPPriors | None = None,
    ) -> None:
        if kernel not in ("conditional", "dense"):
            raise InputDataError(f"kernel must be 'conditional' or 'dense', got {kernel!r}")
        super().__init__(n_init=n_init, gp_kernel=gp_kernel, noise=noise, n_restarts=n_restarts,
                         refit_every=refit_every, warm_refit=warm_refit, xi=xi, n_random=n_random,
                         n_local=n_local, n_starts=n_starts, seed=seed, threads=threads, warping=warping)
        self.kernel = kernel
        self.name = "gp" if kernel == "conditional" else "gp-dense"
        self.priors = priors
        self._cache = ModelCache(make_gp(kernel == "conditional", gp_kernel, noise, n_restarts, priors), seed,
                                  refit_every, warm_refit, warping)

    def __repr__(self) -> str:
        return (f"GPBO(kernel={self.kernel!r}, n_init={self.n_init}, gp_kernel={self.gp_kernel!r}, "
                f"noise={self.noise}, n_restarts={self.n_restarts}, refit_every={self.refit_every}, "
                f"warm_refit={self.warm_refit}, xi={self.xi}, n_random={self.n_random}, n_local={self.n_local}, "
                f"n_starts={self.n_starts}, seed={self.seed}, warping={self.warping!r}"
                + (", priors=<per-dimension>)" if self.priors is not None else ")"))

    def _groups(self, space: CASHSpace, X: np.ndarray) -> np.ndarray | None:
        """Algorithm index of encoded rows (the one-hot block), for the conditional kernel."""
        return np.argmax(X[:, : len(space)], axis=1) if self.kernel == "conditional" else None

    def _fit(self, history: History, space: CASHSpace, *, refit: bool = False) -> tuple[Any, np.ndarray]:
        """The GP and the (warped) values it models."""
        X = history.X(space)
        return self._cache.model(X, history.y, self._groups(space, X), refit=refit)

    def _predict(self, model: Any, space: CASHSpace, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        groups = self._groups(space, X)
        return model.predict(X) if groups is None else model.predict(X, groups=groups)

    def acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator | None = None
                    ) -> Callable[[np.ndarray], np.ndarray] | None:
        """log EI of encoded rows (higher is better) under the GP of ``history``; None during
        the initial design (fewer than ``n_init`` trials, or fewer than 2 completed, none ok).
        The ensemble searches (:mod:`metabo.ensembles`) rank their candidates with it."""
        with thread_limits(self.threads):
            score = self._acquisition(history, space)
        if score is None:
            return None

        def limited(X: np.ndarray) -> np.ndarray:
            with thread_limits(self.threads):
                return score(X)

        return limited

    def _acquisition(self, history: History, space: CASHSpace) -> Callable[[np.ndarray], np.ndarray] | None:
        done = history.completed
        if len(history) < self.n_init or len(done) < 2 or not any(r.ok for r in done):
            return None
        model, z = self._fit(history, space)
        best = float(z.min())  # warping is increasing: the incumbent is the same

        def score(X: np.ndarray) -> np.ndarray:
            return self._log_ei(*self._predict(model, space, X), best)

        return score

    def _suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        score = self._acquisition(history, space)
        if score is None:
            return random_configuration(space, rng, history.config_ids)
        starts = top_configurations(history.completed, history.y, self.n_starts)
        starts += [c for c in getattr(self, "_extra_starts", []) if config_id(*c) not in history.config_ids]
        config, _ = self._maximize(space, score, starts, history, rng)
        return config

    def _posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """The posterior mean at ``configs`` of the GP refitted on the whole history (in the
        warped scale: for ranking configurations)."""
        model, _ = self._fit(history, space, refit=True)
        return self._predict(model, space, space.encode_many(list(configs)))[0]


__all__ = ["GPBO", "GPSettings", "ModelCache", "make_gp", "top_configurations"]
