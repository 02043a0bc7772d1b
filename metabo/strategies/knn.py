"""kNN warm start (auto-sklearn style): the best configurations of the nearest past tasks
first, then Bayesian optimization.

Feurer, Springenberg and Hutter 2015 ("Initializing Bayesian hyperparameter optimization
via meta-learning", sec. 3) and auto-sklearn (Feurer et al. 2015, sec. 3.1): past tasks
are ranked by their distance to the new task in meta-feature space, and the best
configuration found on each of the ``k`` nearest is evaluated first, nearest first; the
optimizer (``then``, GP-BO by default) takes over afterwards, with those results in its
history.

Distance: Euclidean on meta-features z-scored over the past tasks
(:func:`metabo.kb.queries.nearest_from_matrix`, the knowledge base's own nearest-task
query; auto-sklearn uses the L1 norm on its normalized meta-features, a difference of
metric only). Configurations of algorithms outside the CASH space, or invalid in it, are
passed over, as are duplicates (two neighbours sharing a best configuration), so the
design may hold fewer than ``k`` configurations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import (
    InputDataError,
    InvalidConfigurationError,
    UnknownAlgorithmError,
)
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.kb.queries import nearest_from_matrix
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, Strategy

if TYPE_CHECKING:
    from metabo.optimizer.history import History


class KNNWarmStart:
    """The ``k`` nearest past tasks' best configurations, then ``then`` (module docstring).

    Args:
        past: the past runs (with the tasks' meta-features).
        meta_features: the new task's meta-features (names as in ``past.meta_features``).
        k: number of nearest tasks (and at most of warm-start configurations).
        then: the strategy after the design (default: :class:`~metabo.strategies.gp.GPBO`
            with no random initial design, the design playing that part).
    """

    name = "knn"

    def __init__(self, past: PastRuns, meta_features: Mapping[str, float] | pd.Series, *, k: int = 5,
                 then: Strategy | None = None, seed: int = 0) -> None:
        if k < 1:
            raise InputDataError(f"k must be >= 1, got {k}")
        if past.meta_features.empty:
            raise InputDataError("the past tasks have no meta-features: kNN warm start needs them")
        from metabo.strategies.gp import GPBO

        self.past, self.k, self.seed = past, k, seed
        self.meta_features = {str(n): float(v) for n, v in dict(meta_features).items()}
        self.then = then if then is not None else GPBO(n_init=2, seed=seed)
        self._design: tuple[CASHSpace, list[tuple[Config, str, float]]] | None = None

    def __repr__(self) -> str:
        return f"KNNWarmStart(k={self.k}, then={self.then!r}, seed={self.seed})"

    def neighbours(self) -> pd.DataFrame:
        """The ``k`` nearest past tasks (``dataset_id``, ``distance``, ``n_features_used``)
        among those with runs."""
        matrix = self.past.meta_features.loc[[t for t in self.past.meta_features.index if t in set(self.past.tasks)]]
        return nearest_from_matrix(matrix, self.meta_features, k=self.k)

    def design(self, space: CASHSpace) -> list[tuple[Config, str, float]]:
        """The warm-start configurations valid in ``space``, nearest task first, each with
        the task it comes from and its value there."""
        if self._design is None or self._design[0] is not space:
            out: list[tuple[Config, str, float]] = []
            seen: set[str] = set()
            for task in self.neighbours()["dataset_id"]:
                best = self._best_of(task, space)
                if best is not None and config_id(*best[1]) not in seen:
                    seen.add(config_id(*best[1]))
                    out.append((best[1], str(task), best[0]))
            self._design = (space, out)
        return self._design[1]

    def _best_of(self, task: str, space: CASHSpace) -> tuple[float, Config] | None:
        """The best configuration of ``task`` among the algorithms of ``space``, with its value."""
        best: tuple[float, Config] | None = None
        for algorithm, runs in sorted(self.past.task_runs(task).items()):
            if algorithm not in space:
                continue
            for i in np.argsort(runs.values, kind="stable"):
                if best is not None and runs.values[i] >= best[0]:
                    break
                try:
                    config = space.normalize(algorithm, runs.params[i])
                except (InvalidConfigurationError, UnknownAlgorithmError):
                    continue
                best = (float(runs.values[i]), config)
                break
        return best

    def acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Any:
        """None while the design has configurations not asked yet, then ``then``'s
        acquisition (for the ensemble searches that rank candidates, :mod:`metabo.ensembles`)."""
        if self._next_design(history, space) is not None:
            return None
        acquisition = getattr(self.then, "acquisition", None)
        return acquisition(history, space, rng) if callable(acquisition) else None

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The first design configuration not asked yet, then ``then``'s suggestion."""
        config = self._next_design(history, space)
        return config if config is not None else self.then.suggest(history, space, rng)

    def _next_design(self, history: History, space: CASHSpace) -> Config | None:
        """The first design configuration not asked yet (None once all are)."""
        asked = history.config_ids
        return next((config for config, _, _ in self.design(space) if config_id(*config) not in asked), None)


def warm_start_suggestions(
    past: PastRuns, meta_features: Mapping[str, float], space: CASHSpace, *, k: int = 5
) -> list[dict[str, Any]]:
    """What to try first on a new task with ``meta_features``: the design of
    :class:`KNNWarmStart` (one configuration per nearest task, nearest first), each row
    with ``algorithm``, ``params``, ``from_task``, its ``distance`` and its ``value`` there."""
    strategy = KNNWarmStart(past, meta_features, k=k)
    near = strategy.neighbours().set_index("dataset_id")
    return [
        {"algorithm": algorithm, "params": params, "from_task": task,
         "distance": float(near.loc[task, "distance"]), "value": float(value)}
        for (algorithm, params), task, value in strategy.design(space)
    ]


__all__ = ["KNNWarmStart", "warm_start_suggestions"]
