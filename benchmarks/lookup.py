"""Lookup benchmarks: tune a held-out task among its recorded configurations.

Notation: the held-out task ``t`` with recorded configurations ``C_t`` and mean values
``y(c)`` (:class:`~metabo.kb.past.PastRuns`); a method picks ``c_1, c_2, ...`` in
``C_t`` (a :class:`~metabo.space.finite.FiniteCASHSpace`) and sees ``y(c_i)``. Normalized
regret after ``i`` picks (Manolache & Vanschoren 2019, sec. 4; Bardenet et al. 2013):
``r_i = (min_{j <= i} y(c_j) - y*) / (y_max - y*)`` with ``y* = min_C y`` and ``y_max =
max_C y`` (0 when every configuration is as good). Ranks of methods per (task, iteration)
share ties (:func:`metabo.kb.queries.average_ranks`).

Peers in lookup mode (:class:`OptunaOnCandidates`): an optimizer that proposes points of the
continuous CASH space (Optuna's TPE) is run through the same ask/tell loop by snapping each
proposal ``x`` to the nearest candidate not yet evaluated, ``argmin_{c in C_t \\ asked}
||enc(x) - enc(c)||_2`` among the candidates of the proposed algorithm (any algorithm's when
that one has none left); the proposal itself is discarded (a failed trial, which TPE
ignores) and the candidate actually evaluated is added to the study with its value, so the
peer learns only from what was observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.space.finite import FiniteCASHSpace

if TYPE_CHECKING:
    from metabo.optimizer.history import History

Config = tuple[str, dict[str, Any]]


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

    def play(self, strategy: Any, *, seed: int, n: int) -> tuple[list[float], list[float], list[str]]:
        """``strategy`` picking ``min(n, |C_t|)`` candidates through the ask/tell optimizer
        (seeded by ``seed``): the recorded value of each pick, the seconds of each ask and
        the picks' configuration ids."""
        from benchmarks.loop import play

        played = play(self.space, strategy, self, min(n, len(self.values)), seed=seed)
        return played.values, played.seconds, played.config_ids

    def regret(self, values: Sequence[float]) -> np.ndarray:
        """Normalized regret of the best value so far after each pick (module docstring)."""
        best_so_far = np.minimum.accumulate(np.asarray(values, dtype=float))
        span = self.worst - self.best
        return np.zeros(len(best_so_far)) if span <= 0 else (best_so_far - self.best) / span


class OptunaOnCandidates:
    """Optuna's sampler (TPE by default) as a strategy over a finite space of recorded
    candidates (module docstring). Needs the optional ``bench`` extra (optuna)."""

    name = "optuna-tpe"

    def __init__(self, *, sampler: str = "tpe", seed: int = 0) -> None:
        self.sampler, self.seed = sampler, int(seed)
        self._peer: Any = None
        self._space: CASHSpace | None = None
        self._told = 0

    def __repr__(self) -> str:
        return f"OptunaOnCandidates(sampler={self.sampler!r}, seed={self.seed})"

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        if not isinstance(space, FiniteCASHSpace):
            raise InputDataError("OptunaOnCandidates runs on a FiniteCASHSpace (a lookup benchmark)")
        from benchmarks.peers import OptunaSuggester

        if self._peer is None or self._space is not space:
            self._peer, self._space, self._told = OptunaSuggester(space, self.seed, sampler=self.sampler), space, 0
        done = [r for r in history.completed if r.ok]
        if len(done) > self._told:  # what was observed since the last suggestion
            new = done[self._told:]
            self._peer.observe([(r.algorithm, dict(r.params)) for r in new], [float(r.value) for r in new])
            self._told = len(done)
        algorithm, params = self._peer.ask()
        self._peer.discard()
        left, X = space.unevaluated(history.config_ids)
        if not left:
            raise InputDataError("every candidate has been evaluated")
        same = np.array([a == algorithm for a, _ in left])
        pool = np.flatnonzero(same) if same.any() else np.arange(len(left))
        x = space.encode(algorithm, params)
        best = pool[int(np.argmin(np.sum((X[pool] - x) ** 2, axis=1)))]
        a, p = left[best]
        return a, dict(p)


__all__ = ["LookupTask", "OptunaOnCandidates"]
