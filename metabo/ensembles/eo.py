"""Ensemble Optimization (EO; Levesque 2018, thesis sec. 4.2, Algorithm 4.1), as a strategy
wrapping any base strategy.

Notation: the pool ``H`` of trained models (trials with validation probabilities), the
ensemble ``E`` of at most ``m`` slots (default 12, sec. 4.4.1), an ensemble loss ``l``
(:data:`metabo.ensembles.losses.EO_LOSSES`: squared margin, C-bound, smooth zero-one)
computed on the members' majority votes over the validation rows.

Iteration ``i`` (0-based, the trial's number):

1. ``j = i mod m`` (round robin ``C_RR``, eq. 4.4) and ``E_i = E \\ {h_j}`` (line 4);
2. every pooled model ``h`` is observed as ``L(E_i U {h})`` (line 5; a set union, so a
   model already in ``E_i`` is observed as ``L(E_i)``: "without replacement");
3. the base strategy's surrogate (a GP with EI by default, or any strategy of the project,
   the warm starts included) is fitted on those observations and suggests ``gamma_i``
   (lines 6-7);
4. once ``h_i`` is trained (:meth:`observe`), slot ``j`` takes
   ``argmin_{h in H} L(E_i U {h} | l_01)`` (lines 11-12: the zero-one loss of the majority
   vote; ties broken by ``l``, then by the earliest trial).

A failed trial adds nothing to the pool, but its slot is still updated from the pool.
Deviation: the thesis trains and scores each model with 5-fold cross-validation; here the
driver's protocol gives one validation part (60/20/20 hold-out, DivBO's setting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from metabo.ensembles.base import EnsembleSearch, weights_of
from metabo.ensembles.combine import majority_vote, relabel
from metabo.ensembles.losses import EO_LOSSES
from metabo.exceptions import InputDataError
from metabo.strategies.base import Config, Strategy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from metabo.optimizer.history import History
    from metabo.space.cash import CASHSpace


class EnsembleOptimization(EnsembleSearch):
    """EO (module docstring).

    Args:
        base: the strategy that models ``L(E_i U {h})`` and suggests (default use: GP-BO).
        y_valid: the validation set's true class codes.
        size: ``m``, the number of slots.
        loss: ``squared_margin``, ``c_bound`` or ``sigmoid``.
    """

    name = "eo"
    combine = "vote"

    def __init__(self, base: Strategy, y_valid: Sequence[int] | np.ndarray, *, size: int = 12,
                 loss: str = "squared_margin", n_classes: int | None = None) -> None:
        super().__init__(y_valid, n_classes)
        if size < 1:
            raise InputDataError(f"the ensemble size must be >= 1, got {size}")
        if loss not in EO_LOSSES:
            raise InputDataError(f"unknown EO loss {loss!r}; use one of {', '.join(EO_LOSSES)}")
        self.base, self.size, self.loss_name = base, int(size), loss
        self.loss: Callable[[np.ndarray, np.ndarray], float] = EO_LOSSES[loss]
        self.slots: list[int | None] = [None] * self.size  # trial number in each slot
        self.codes: dict[int, np.ndarray] = {}  # trial number -> (n,) its predicted codes

    def __repr__(self) -> str:
        return f"EnsembleOptimization(m={self.size}, loss={self.loss_name!r}, base={self.base!r})"

    def _without(self, j: int) -> list[int]:
        """``E_i``: the distinct members outside slot ``j``."""
        return sorted({h for s, h in enumerate(self.slots) if h is not None and s != j})

    def candidate_losses(self, j: int, loss: Callable[[np.ndarray, np.ndarray], float] | None = None
                         ) -> dict[int, float]:
        """``L(E \\ {h_j} U {h})`` for every pooled ``h`` (``loss`` default: EO's ``l``)."""
        loss = self.loss if loss is None else loss
        rest = self._without(j)
        base = np.stack([self.codes[h] for h in rest]) if rest else np.empty((0, len(self.y)), dtype=int)
        out = {}
        for h in sorted(self.codes):
            rows = base if h in rest else np.vstack([base, self.codes[h][None, :]])
            out[h] = float(loss(rows, self.y))
        return out

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The base strategy's suggestion on the history relabelled with ``L(E_i U {h})``."""
        j = len(history) % self.size
        return self.base.suggest(relabel(history, self.candidate_losses(j)), space, rng)

    def _observed(self, number: int, proba: np.ndarray | None) -> None:
        """Pool the new model, then refill slot ``number mod m`` greedily (lines 10-12)."""
        if proba is not None:
            self.codes[number] = proba.argmax(axis=1)
        if not self.codes:
            return
        j = number % self.size
        zero_one = self.candidate_losses(j, _zero_one(self.n_classes))
        smooth = self.candidate_losses(j)
        self.slots[j] = min(self.codes, key=lambda h: (zero_one[h], smooth[h], h))

    def members(self) -> list[int]:
        """The distinct trial numbers in the ensemble."""
        self._require_models()
        return sorted({h for h in self.slots if h is not None})

    def ensemble(self) -> dict[int, float]:
        """Uniform weights over the distinct members (a majority vote of ``E``)."""
        return weights_of(self.members())


def _zero_one(n_classes: int) -> Callable[[np.ndarray, np.ndarray], float]:
    """The zero-one loss of the majority vote of ``votes`` (m, n) (ties: the lowest code)."""

    def loss(votes: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(majority_vote(votes, n_classes) != y))

    return loss


__all__ = ["EnsembleOptimization"]
