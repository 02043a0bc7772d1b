"""What the ensemble searches (ESMBO, EO, DivBO, and post-hoc selection over any strategy)
share: the validation labels, every trained model's validation probabilities given once
through :meth:`EnsembleSearch.observe` after its trial is told, and the final ensemble as
trial numbers with weights (:meth:`EnsembleSearch.ensemble`) and a combination rule.

The driver (:func:`metabo.tuning.ensemble.tune_ensemble`) asks the wrapped strategy,
evaluates, tells the optimizer, then calls ``observe(number, valid_proba)``, or
``observe(number, None)`` for a trial that failed (no model, nothing to combine).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from metabo.ensembles.combine import combined_codes, weighted_average
from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.optimizer.strategy import Config
    from metabo.space.cash import CASHSpace

Combine = Literal["vote", "average"]


class EnsembleSearch:
    """Base of the ensemble searches (module docstring)."""

    name = "ensemble-search"
    combine: Combine = "average"

    def __init__(self, y_valid: Sequence[int] | np.ndarray, n_classes: int | None = None) -> None:
        self.y = np.asarray(y_valid)
        if self.y.ndim != 1 or len(self.y) == 0 or not np.issubdtype(self.y.dtype, np.integer) or self.y.min() < 0:
            raise InputDataError("y_valid must be a non-empty 1-D array of class codes 0..K-1")
        self.n_classes = int(self.y.max()) + 1 if n_classes is None else int(n_classes)
        self.probas: dict[int, np.ndarray] = {}  # trial number -> (n, K) validation probabilities

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next configuration: each search's own (the strategy contract,
        :class:`~metabo.optimizer.strategy.Strategy`)."""
        raise NotImplementedError(f"{type(self).__name__} does not suggest")

    def observe(self, number: int, valid_proba: np.ndarray | None) -> None:
        """Trial ``number``'s validation probabilities (None: the trial failed)."""
        number = int(number)
        if valid_proba is None:
            self._observed(number, None)
            return
        P = np.asarray(valid_proba, dtype=float)
        if P.ndim != 2 or len(P) != len(self.y) or P.shape[1] < self.n_classes or not np.all(np.isfinite(P)):
            raise InputDataError(f"trial {number}: validation probabilities must be finite, shape ({len(self.y)}, "
                                 f"{self.n_classes}); got {P.shape}")
        self.probas[number] = P
        self._observed(number, P)

    def _observed(self, number: int, proba: np.ndarray | None) -> None:
        """What a search does with a new observation (nothing by default)."""

    def ensemble(self) -> dict[int, float]:
        """The final ensemble: trial number -> weight (summing to 1)."""
        raise NotImplementedError

    def final(self, rows: np.ndarray, seed: int = 0) -> dict[int, float]:
        """The final ensemble as the search's last step would choose it from the validation
        rows ``rows`` alone (the guard's cross-validation,
        :mod:`metabo.ensembles.guard`). By default the members cannot be re-chosen without
        replaying the search, so they are :meth:`ensemble`'s; searches whose last step is a
        selection over the pool (post-hoc, DivBO, ESMBO's arg mins) redo it on ``rows``."""
        return self.ensemble()

    def predict_proba(self, probas: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
        """The ensemble's weighted average of its members' probabilities, on the validation
        rows or on ``probas`` (trial number -> that model's probabilities on other rows)."""
        return weighted_average(self.ensemble(), self.probas if probas is None else probas)

    def predict(self, probas: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
        """Class codes: the weighted majority vote of the members (``combine="vote"``) or
        the arg max of :meth:`predict_proba` (``"average"``)."""
        source = self.probas if probas is None else probas
        weights = self.ensemble()
        n_classes = max(self.n_classes, np.asarray(source[next(iter(weights))]).shape[1])
        return combined_codes(weights, source, self.combine, n_classes)

    def _require_models(self) -> list[int]:
        if not self.probas:
            raise InputDataError("no trained model observed yet")
        return sorted(self.probas)


def weights_of(members: Sequence[int]) -> dict[int, float]:
    """Trial number -> share of a multiset of members."""
    numbers, counts = np.unique(np.asarray(members, dtype=int), return_counts=True)
    return {int(k): float(c) / len(members) for k, c in zip(numbers, counts)}


__all__ = ["Combine", "EnsembleSearch", "weights_of"]
