"""Lookup benchmarks: tune a held-out task among its recorded configurations.

Notation: the held-out task ``t`` with recorded configurations ``C_t`` and mean values
``y(c)`` (:class:`~metabo.kb.past.PastRuns`); a method picks ``c_1, c_2, ...`` in
``C_t`` (a :class:`~metabo.space.finite.FiniteCASHSpace`) and sees ``y(c_i)``. Normalized
regret after ``i`` picks (Manolache & Vanschoren 2019, sec. 4; Bardenet et al. 2013):
``r_i = (min_{j <= i} y(c_j) - y*) / (y_max - y*)`` with ``y* = min_C y`` and ``y_max =
max_C y`` (0 when every configuration is as good). Ranks of methods per (task, iteration)
share ties (:func:`metabo.kb.queries.average_ranks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.space.finite import FiniteCASHSpace


@dataclass(frozen=True)
class LookupTask:
    """One held-out task: its finite space and its recorded values."""

    task: str
    space: FiniteCASHSpace
    values: Mapping[str, float]  # config id -> mean value

    @classmethod
    def from_past(cls, past: PastRuns, task: str, space: CASHSpace) -> LookupTask:
        """The recorded configurations of ``task`` valid in ``space``."""
        configs, values = [], {}
        for algorithm, runs in sorted(past.task_runs(task).items()):
            if algorithm not in space:
                continue
            for params, value in zip(runs.params, runs.values):
                try:
                    a, p = space.normalize(algorithm, params)
                except InputDataError:
                    continue
                configs.append((a, p))
                values[config_id(a, p)] = float(value)
        if not configs:
            raise InputDataError(f"task {task!r} has no recorded configuration in the space")
        return cls(task, FiniteCASHSpace(space, configs), values)

    @property
    def best(self) -> float:
        return min(self.values.values())

    @property
    def worst(self) -> float:
        return max(self.values.values())

    def __call__(self, algorithm: str, params: Mapping[str, Any]) -> float:
        """The recorded value of a candidate (:class:`InputDataError` for any other)."""
        cid = config_id(*self.space.normalize(algorithm, params))
        if cid not in self.values:
            raise InputDataError(f"{algorithm} {dict(params)} was not recorded on task {self.task!r}")
        return self.values[cid]

    def regret(self, values: Sequence[float]) -> np.ndarray:
        """Normalized regret of the best value so far after each pick (module docstring)."""
        best_so_far = np.minimum.accumulate(np.asarray(values, dtype=float))
        span = self.worst - self.best
        return np.zeros(len(best_so_far)) if span <= 0 else (best_so_far - self.best) / span


__all__ = ["LookupTask"]
