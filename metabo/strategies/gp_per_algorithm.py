"""One GP per algorithm: log EI per algorithm, the largest wins.

Each algorithm's GP models its own block (:class:`~metabo.strategies.gp.ModelCache`), the
values warped by one transform for all algorithms, so that log EI (against the global
incumbent) compares across them. An algorithm asked fewer than ``n_init_per_algorithm``
times first gets random configurations (the least-tried first; one whose space is
exhausted, e.g. LDA's single configuration, is passed over).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration
from metabo.strategies.gp import GPSettings, ModelCache, make_gp, top_configurations
from metabo.surrogates.warping import Warping, WarpingCache

if TYPE_CHECKING:
    from metabo.optimizer.history import History

logger = logging.getLogger(__name__)


class PerAlgorithmGPBO(GPSettings):
    """One GP per algorithm, the largest log EI across algorithms wins (module docstring)."""

    name = "gp-per-algorithm"

    def __init__(
        self, *, n_init_per_algorithm: int = 2, gp_kernel: str = "matern52", noise: float | None = None,
        n_restarts: int = 2, refit_every: int = 10, warm_refit: bool = True, xi: float = 0.0,
        n_random: int = 300, n_local: int = 5, n_starts: int = 5, seed: int = 0, threads: int | None = 1,
        warping: Warping = "yeo-johnson",
    ) -> None:
        super().__init__(n_init=n_init_per_algorithm, gp_kernel=gp_kernel, noise=noise, n_restarts=n_restarts,
                         refit_every=refit_every, warm_refit=warm_refit, xi=xi, n_random=n_random,
                         n_local=n_local, n_starts=n_starts, seed=seed, threads=threads, warping=warping)
        self._caches: dict[str, ModelCache] = {}
        self._warp = WarpingCache(warping)

    def __repr__(self) -> str:
        return (f"PerAlgorithmGPBO(n_init_per_algorithm={self.n_init}, gp_kernel={self.gp_kernel!r}, "
                f"noise={self.noise}, n_restarts={self.n_restarts}, refit_every={self.refit_every}, "
                f"warm_refit={self.warm_refit}, xi={self.xi}, n_random={self.n_random}, n_local={self.n_local}, "
                f"n_starts={self.n_starts}, seed={self.seed}, warping={self.warping!r})")

    def _warped(self, y: np.ndarray, refit: bool) -> np.ndarray:
        """All values warped by one transform (fitted on the prefix of the last refit from
        scratch), so that log EI is comparable across the algorithms' GPs."""
        m = len(y) if refit else len(y) - len(y) % self.refit_every
        return self._warp(y, m)

    def _models(self, history: History, space: CASHSpace, *, refit: bool = False) -> dict[str, tuple[Any, list[int]]]:
        """Per algorithm with >= 2 completed trials: (GP on its block, rows of those trials)."""
        done = history.completed
        X, y = history.X(space), self._warped(history.y, refit)
        out = {}
        for j, a in enumerate(space.algorithms):
            rows = [i for i, r in enumerate(done) if r.algorithm == a]
            if len(rows) < 2:
                continue
            if a not in self._caches:
                make = make_gp(False, self.gp_kernel, self.noise, self.n_restarts)
                seed = int(np.random.SeedSequence([self.seed, j]).generate_state(1)[0])
                self._caches[a] = ModelCache(make, seed, self.refit_every, self.warm_refit)
            out[a] = (self._caches[a].model(X[rows][:, space.slices[a]], y[rows], None, refit=refit)[0], rows)
        return out

    def _suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        asked = {a: 0 for a in space.algorithms}
        for r in history:
            asked[r.algorithm] = asked.get(r.algorithm, 0) + 1
        ties = rng.random(len(space))
        for _, _, a in sorted((asked[a], ties[j], a) for j, a in enumerate(space.algorithms)):
            if asked[a] >= self.n_init:
                break
            try:  # the least-tried algorithm first; one whose space is exhausted is passed over
                return random_configuration(space, rng, history.config_ids, algorithm=a, max_tries=100)
            except InputDataError:
                continue
        if not any(r.ok for r in history.completed):
            return random_configuration(space, rng, history.config_ids)
        models = self._models(history, space)
        if not models:  # every algorithm's trials are still pending
            return random_configuration(space, rng, history.config_ids)
        done, y = history.completed, history.y
        best = float(self._warped(y, False).min())
        winner: tuple[float, Config] | None = None
        for a, (model, rows) in models.items():
            block = slice(1, None)  # the one-algorithm space: [one-hot (1), a's block]

            def score(X: np.ndarray, model: Any = model, block: slice = block) -> np.ndarray:
                mean, var = model.predict(X[:, block])
                return self._log_ei(mean, var, best)

            starts = top_configurations([done[i] for i in rows], y[rows], self.n_starts)
            try:
                config, value = self._maximize(space.subset([a]), score, starts, history, rng)
            except InputDataError:  # every configuration of a small discrete space was asked
                logger.debug("no unevaluated configuration of %s left", a)
                continue
            if winner is None or value > winner[0]:
                winner = (value, config)
        if winner is None:
            return random_configuration(space, rng, history.config_ids)
        return winner[1]

    def _posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """Each configuration's mean under its algorithm's GP (refitted on the whole
        history); an algorithm without a GP (fewer than 2 trials) gives its observed mean
        (all in the warped scale: for ranking configurations)."""
        models = self._models(history, space, refit=True)
        done, y = history.completed, self._warped(history.y, True)
        out = np.empty(len(configs))
        for i, (a, params) in enumerate(configs):
            if a in models:
                x = space[a].encode(params)[None, :]
                out[i] = models[a][0].predict(x)[0][0]
            else:
                out[i] = float(np.mean([v for r, v in zip(done, y) if r.algorithm == a] or [np.inf]))
        return out


__all__ = ["PerAlgorithmGPBO"]
