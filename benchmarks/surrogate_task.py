"""Surrogate benchmark tasks: a held-out task's objective as a model of its recorded runs,
defined everywhere in the space (the protocol of HPO-B's and YAHPO Gym's surrogate
benchmarks, Pineda Arango et al. 2021, Pfisterer et al. 2022).

Notation: held-out task ``t``; for each algorithm ``a`` with recorded runs ``(x_i, y_i)`` on
``t`` (``x_i`` in ``a``'s own unit-cube encoding, ``y_i`` the mean value, lower is better)
a random forest ``f_a`` (scikit-learn, ``n_trees`` trees, min 2 samples per leaf, seeded)
fitted on them; an algorithm with one recorded configuration (no hyperparameter) is that
constant. The objective of a configuration ``(a, x)`` is ``f_a(x)``; configurations of an
algorithm without runs on ``t`` are outside the task (its space leaves them out).

Normalized regret: ``r = (min_{j <= i} f(x_j) - f*) / (f^max - f*)`` with ``f*`` and
``f^max`` the least and largest ``f`` over the recorded configurations and ``n_probe``
uniform configurations of each algorithm (seeded): the range of the objective itself, so
that a method that leaves the recorded grid is scored on the same footing as one that stays
on it. Off the grid a forest's prediction is an average of recorded values, never below
their minimum: the recorded best stays attainable and nothing better exists, which favours
no method in particular but makes regret 0 reachable only near recorded optima.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace


@dataclass
class SurrogateTask:
    """One held-out task's surrogate objective over ``space`` (module docstring)."""

    task: str
    space: CASHSpace
    models: Mapping[str, Any] = field(repr=False)
    best: float = 0.0
    worst: float = 1.0

    @classmethod
    def from_past(cls, past: PastRuns, task: str, space: CASHSpace, *, n_trees: int = 100, n_probe: int = 2000,
                  seed: int = 0) -> SurrogateTask:
        """Fit ``f_a`` for every algorithm of ``space`` with runs of ``task``."""
        from sklearn.ensemble import RandomForestRegressor

        runs = {a: r for a, r in past.task_runs(task).items() if a in space and len(r)}
        if not runs:
            raise InputDataError(f"task {task!r} has no recorded run of the algorithms {list(space.algorithms)}")
        sub = space.subset(sorted(runs))
        models: dict[str, Any] = {}
        lo, hi = np.inf, -np.inf
        for k, (a, r) in enumerate(sorted(runs.items())):
            X = sub[a].encode_many(list(r.params))
            y = np.asarray(r.values, dtype=float)
            lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
            if X.shape[1] == 0 or len(y) < 2:
                models[a] = float(y.mean())
                continue
            rf = RandomForestRegressor(n_estimators=n_trees, min_samples_leaf=2, random_state=seed + k, n_jobs=1)
            models[a] = rf.fit(X, y)
            probe = sub[a].encode_many([p for _, p in sub.subset([a]).sample(seed + k, n_probe)])
            pred = rf.predict(probe)
            lo, hi = min(lo, float(pred.min())), max(hi, float(pred.max()))
        return cls(task, sub, models, lo, hi)

    def __call__(self, algorithm: str, params: Mapping[str, Any]) -> float:
        """``f_a(x)`` of one configuration."""
        model = self.models[algorithm]
        if isinstance(model, float):
            return model
        x = self.space[algorithm].encode_many([dict(params)])
        return float(model.predict(x)[0])

    def regret(self, values: Sequence[float]) -> np.ndarray:
        """Normalized regret of the best value so far after each trial (module docstring)."""
        best = np.minimum.accumulate(np.asarray(values, dtype=float))
        span = self.worst - self.best
        return np.zeros(len(best)) if span <= 0 else np.clip((best - self.best) / span, 0.0, None)


__all__ = ["SurrogateTask"]
