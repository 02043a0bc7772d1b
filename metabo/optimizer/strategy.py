"""The contract the optimizer drives: a strategy proposes the next configuration from the
history, and may model the posterior mean its selection uses.

The strategies themselves (:mod:`metabo.strategies`) stand above this package and
implement it; :mod:`metabo.strategies.base` documents the contract in full (no repeated
configuration, state a function of the history, failed trials as the worst value,
pending trials shown as constant lies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.space.cash import CASHSpace

#: a configuration: (algorithm, hyperparameters)
Config = tuple[str, dict[str, Any]]


@runtime_checkable
class Strategy(Protocol):
    """Proposes the next configuration from the history."""

    name: str

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next configuration ``(algorithm, params)`` to evaluate, given ``history``."""
        ...


@runtime_checkable
class PosteriorModel(Protocol):
    """A model of the objective's posterior mean at evaluated configurations (thesis 3.4
    selection): a strategy's own surrogate, or one fitted for the selection alone."""

    def posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """The posterior mean of the objective at ``configs`` given ``history``, one value per
        configuration."""
        ...


__all__ = ["Config", "PosteriorModel", "Strategy"]
