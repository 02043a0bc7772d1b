"""Uniform random search over a CASH space (the algorithm, then its parameters), without repetitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration

if TYPE_CHECKING:
    from metabo.optimizer.history import History


class RandomSearch:
    """Uniform random search without repetitions."""

    name = "random"

    def __init__(self, *, max_tries: int = 1000) -> None:
        self.max_tries = max_tries

    def __repr__(self) -> str:
        return f"RandomSearch(max_tries={self.max_tries})"

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """A configuration drawn uniformly, not yet asked (up to ``max_tries`` draws)."""
        return random_configuration(space, rng, history.config_ids, max_tries=self.max_tries)


__all__ = ["RandomSearch"]
