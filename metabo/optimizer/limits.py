"""A trial's time limit when the user gives none: bounded by what is known of its cost.

Notation: ``a`` the trial's algorithm; ``n`` the rows of one fit (the protocol's training
part) and ``d`` the features; ``p_a`` the predicted seconds of a fit of ``a`` on ``n`` rows
of ``d`` features from the knowledge base (the :data:`QUANTILE` quantile over its recorded
configurations of :meth:`metabo.kb.costs.FitCosts.predict`; none without records); ``o`` the
slowest successful split of the session so far (its fit seconds over its splits, any
algorithm). Each split of the trial may run

    L = max(L0 + c n d, F max(p_a, o))

seconds (``L0`` = :data:`BASE_SECONDS`, ``c`` = :data:`SECONDS_PER_CELL`, ``F`` =
:data:`FACTOR`), after which the evaluation runner kills it and records ``timeout``
(:mod:`metabo.evaluation.runner`). The limit is meant to stop a runaway fit (a kernel SVM
that does not converge, 20 minutes on 1,421 rows), not to judge a normal one: ``F`` times
what the slowest comparable fit took, and never less than ``L0`` plus a term in the
table's size.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from metabo.optimizer.history import History

if TYPE_CHECKING:
    from metabo.kb.costs import FitCosts, RowsScaling
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

#: seconds every split may take, whatever is known
BASE_SECONDS = 30.0
#: seconds added per cell (row x feature) of a fit's training part
SECONDS_PER_CELL = 1e-5
#: a split may take this many times the slowest comparable fit
FACTOR = 10.0
#: the quantile of an algorithm's predicted fit seconds over its recorded configurations
QUANTILE = 0.95


@dataclass(frozen=True)
class DefaultLimit:
    """``L`` of the module docstring for a table of ``n_rows`` x ``n_features`` whose
    splits per trial are ``fits``; ``predicted`` maps algorithm -> ``p_a``."""

    n_rows: int
    n_features: int
    fits: int = 1
    predicted: Mapping[str, float] = field(default_factory=dict)
    #: how fit seconds grow with rows, from the same records (linear without them)
    scaling: RowsScaling | None = None

    @property
    def floor(self) -> float:
        """``L0 + c n d``."""
        return BASE_SECONDS + SECONDS_PER_CELL * self.n_rows * max(self.n_features, 1)

    def __call__(self, algorithm: str, history: History) -> float:
        """The limit of each split of a trial of ``algorithm`` after ``history``."""
        observed = [r.fit_seconds / max(self.fits, 1) for r in history.completed
                    if r.ok and r.fit_seconds is not None and math.isfinite(r.fit_seconds)]
        expected = max([self.predicted.get(algorithm, 0.0), *observed])
        return float(max(self.floor, FACTOR * expected))

    def describe(self) -> str:
        """The rule as stored with a session's settings."""
        return (f"per split: max({BASE_SECONDS:g} s + {SECONDS_PER_CELL:g} s x {self.n_rows} rows x "
                f"{self.n_features} features, {FACTOR:g} x the slowest expected fit)")


def default_limit(kb: KnowledgeBase | None, *, dataset_id: str | None, algorithms: list[str], n_rows: int,
                  n_features: int, fits: int, metric: str = "error_rate", costs: FitCosts | None = None
                  ) -> DefaultLimit:
    """The :class:`DefaultLimit` of a table, ``p_a`` from the recorded fit seconds of
    ``algorithms`` on the other tasks (``costs``, else read from ``kb``:
    :meth:`metabo.kb.costs.FitCosts.for_target`); without records, only the floor and the
    session's own trials count."""
    predicted: dict[str, float] = {}
    scaling = None
    if costs is None and kb is not None and algorithms:
        from metabo.kb.costs import FitCosts

        costs = FitCosts.for_target(kb, dataset_id, algorithms, metric=metric)
    if costs is not None and not costs.empty:
        scaling = costs.scaling
        algorithm_of = costs.algorithm_of()
        per_algorithm: dict[str, list[float]] = {}
        for config_id, seconds in costs.predict(n_rows, n_features).items():
            if algorithm_of[config_id] in algorithms:
                per_algorithm.setdefault(algorithm_of[config_id], []).append(seconds)
        predicted = {a: float(np.quantile(v, QUANTILE)) for a, v in per_algorithm.items()}
    limit = DefaultLimit(n_rows, n_features, fits, predicted, scaling)
    logger.info("no time limit given: %s", limit.describe())
    return limit


__all__ = ["BASE_SECONDS", "DefaultLimit", "FACTOR", "QUANTILE", "SECONDS_PER_CELL", "default_limit"]
