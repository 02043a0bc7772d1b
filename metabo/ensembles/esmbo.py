"""ESMBO: the Agnostic Bayes ensemble built with SMBO (Lacoste, Larochelle, Marchand and
Laviolette 2014, Algorithm 2), as a strategy of the ask/tell optimizer.

Notation: the validation set ``S`` (n rows, true codes ``y``); ``N`` bootstrap replicates
``S'_j`` of ``S`` (row multisets drawn with replacement, seeded), ``M`` the budget of
trained models. For every trained model ``h`` (trial ``k``), its validation probabilities
``P_k`` (n, K) are given once (:meth:`ESMBO.observe`) and its empirical risk on each
replicate ``R_{S'_j}(h) = L(y[S'_j], P_k[S'_j])`` is computed from them; for the metrics
that are means of per-example losses (error rate, log loss) the per-example losses are
cached and ``R_{S'_j}`` is a weighted mean with the replicate's row counts (the paper's
cache of ``L(h(x_i), y_i)``).

- Suggestion ``k`` (0-based): replicate ``v = k mod N`` (round robin), and the suggestion
  of replicate ``v``'s own SMBO (``base(v)``, any strategy of the project: GP-BO, a warm
  start, ...) on the history ``R_v``: every trial so far with its value replaced by
  ``R_{S'_v}`` (each history holds every trained model, "tricking" each SMBO with points
  it did not suggest, as the paper does).
- Final ensemble (:meth:`ESMBO.members`): for each ``j``, ``h_j = argmin_k R_{S'_j}(h_k)``
  (ties: the earliest); the uniform distribution over ``{h_1..h_N}`` (a multiset: a model
  chosen by several replicates weighs more). :meth:`ESMBO.predict_proba` averages their
  probabilities, :meth:`ESMBO.predict` takes their majority vote (ties: the lowest class
  code).
- ``N`` by default (:func:`default_replicates`): the paper's ``floor(M / 2)`` (sec. 4) is
  the limit, reached only at budgets where each replicate still gets ``min_own`` (8)
  suggestions of its own: ``N = min(floor(M / 2), max(1, floor(M / 8)))``. Deviation: with
  ``N = M / 2`` each replicate's SMBO proposes 2 of the ``M`` trials (12 replicates at 25
  trials), so no replicate's surrogate steers its search, and the search is a random one
  around each replicate's first points; the scaled count keeps the bootstrap's spread
  (several replicates) and gives each SMBO room to exploit.

``bootstrap=False`` uses ``S`` itself for every replicate: with ``N = 1`` ESMBO is then
SMBO with the base strategy and its final "ensemble" SMBO's arg min.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from metabo.ensembles.base import Combine, EnsembleSearch, weights_of
from metabo.ensembles.combine import per_example_losses, relabel
from metabo.evaluation.metrics import get_metric
from metabo.exceptions import InputDataError
from metabo.optimizer.history import History
from metabo.strategies.base import Config, Strategy

if TYPE_CHECKING:
    from metabo.space.cash import CASHSpace


class ESMBO(EnsembleSearch):
    """ESMBO (module docstring).

    Args:
        base: replicate index -> a fresh strategy (one per replicate, so each keeps its own
            surrogate state).
        y_valid: the validation set's true class codes.
        n_replicates: ``N``; None: ``floor(budget / 2)``.
        budget: ``M``, the number of models to train (for the default ``N``).
        metric: the empirical risk ``L`` (any metric of :mod:`metabo.evaluation.metrics`).
        bootstrap: False: every replicate is ``S`` itself.
        combine: ``vote`` (the paper's majority vote) or ``average`` (of probabilities).
        seed: seeds the bootstrap replicates.
    """

    name = "esmbo"

    def __init__(self, base: Callable[[int], Strategy], y_valid: Sequence[int] | np.ndarray, *,
                 n_replicates: int | None = None, budget: int | None = None, metric: str = "error_rate",
                 bootstrap: bool = True, combine: Combine = "vote", n_classes: int | None = None,
                 seed: int = 0) -> None:
        super().__init__(y_valid, n_classes)
        if n_replicates is None:
            if budget is None or budget < 2:
                raise InputDataError("ESMBO needs n_replicates or a budget >= 2 (N = floor(budget / 2))")
            n_replicates = default_replicates(budget)
        if n_replicates < 1:
            raise InputDataError(f"n_replicates must be >= 1, got {n_replicates}")
        if combine not in ("vote", "average"):
            raise InputDataError(f"combine must be 'vote' or 'average', got {combine!r}")
        get_metric(metric)  # an unknown metric fails here, before any trial
        self.metric, self.combine = metric, combine
        self.n_replicates, self.bootstrap, self.seed = n_replicates, bootstrap, int(seed)
        n = len(self.y)
        rng = np.random.default_rng(self.seed)
        self.rows = [rng.integers(n, size=n) if bootstrap else np.arange(n) for _ in range(n_replicates)]
        self.strategies = [base(j) for j in range(n_replicates)]
        self.risks: dict[int, np.ndarray] = {}  # trial number -> (N,) R_{S'_j}

    def __repr__(self) -> str:
        return (f"ESMBO(N={self.n_replicates}, metric={self.metric!r}, bootstrap={self.bootstrap}, "
                f"base={self.strategies[0]!r}, seed={self.seed})")

    def _observed(self, number: int, proba: np.ndarray | None) -> None:
        """Trial ``number``'s risks on every replicate, ``R_{S'_j}`` (N,)."""
        if proba is not None:
            self.risks[number] = replicate_risks(self.metric, self.y, proba, self.rows)

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """Replicate ``k mod N``'s SMBO suggestion on its history (module docstring)."""
        v = len(history) % self.n_replicates
        values = {k: float(r[v]) for k, r in self.risks.items()}
        return self.strategies[v].suggest(relabel(history, values), space, rng)

    def members(self) -> list[int]:
        """The trial numbers ``h_1..h_N``, each replicate's arg min (module docstring)."""
        numbers = self._require_models()
        R = np.stack([self.risks[k] for k in numbers])  # (trials, N)
        return [numbers[int(i)] for i in np.argmin(R, axis=0)]

    def ensemble(self) -> dict[int, float]:
        """The uniform distribution over the multiset of :meth:`members`."""
        return weights_of(self.members())

    def final(self, rows: np.ndarray, seed: int = 0) -> dict[int, float]:
        """The last step on the validation rows ``rows``: ``N`` seeded bootstrap replicates
        of ``rows``, each one's arg min risk (ties: the earliest trial), uniform weights."""
        numbers = self._require_models()
        rows = np.asarray(rows)
        rng = np.random.default_rng(seed)
        n = len(rows)
        boots = [rng.integers(n, size=n) if self.bootstrap else np.arange(n) for _ in range(self.n_replicates)]
        R = np.stack([replicate_risks(self.metric, self.y[rows], self.probas[k][rows], boots) for k in numbers])
        return weights_of([numbers[int(i)] for i in np.argmin(R, axis=0)])


def replicate_risks(metric: str, y: np.ndarray, proba: np.ndarray, replicates: Sequence[np.ndarray]) -> np.ndarray:
    """``R_{S'_j}`` for each replicate ``S'_j`` (row indices into ``y``, repeats allowed):
    the mean per-row loss over its rows where the metric has per-row losses, else the
    metric on its rows (Lacoste et al. 2014, Algorithm 1's risk)."""
    losses = per_example_losses(metric, y, proba)
    if losses is not None:
        return np.array([losses[r].mean() for r in replicates])
    loss = get_metric(metric)
    return np.array([loss(y[r], proba[r]) for r in replicates])


def default_replicates(budget: int, min_own: int = 8) -> int:
    """``N = min(floor(M / 2), max(1, floor(M / min_own)))`` (module docstring): each
    replicate proposes at least ``min_own`` of the ``M`` trials, and never more replicates
    than the paper's ``floor(M / 2)`` (sec. 4)."""
    if min_own < 2:
        raise InputDataError(f"min_own must be >= 2, got {min_own}")
    return max(1, min(math.floor(budget / 2), math.floor(budget / min_own)))


__all__ = ["ESMBO", "default_replicates", "replicate_risks"]
