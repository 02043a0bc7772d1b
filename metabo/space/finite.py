"""A CASH space restricted to a finite set of configurations: the recorded ones of a lookup
benchmark (every suggestion must be a configuration whose result is stored).

Notation: the candidates ``C = {c_1..c_N}`` (normalized, distinct by configuration id)
and their encodings ``X_C`` (N, D) (:meth:`CASHSpace.encode`). Sampling draws candidates
uniformly (the algorithm, then its configuration, as :meth:`CASHSpace.sample` does, over
the candidates of each algorithm); the acquisition search scores every candidate not yet
evaluated instead of searching (:func:`metabo.acquisition.search.maximize`); a candidate
has no neighbours outside ``C``. Algorithms without a candidate are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError
from metabo.space.canonical import config_id
from metabo.space.cash import CASHSpace

Config = tuple[str, dict[str, Any]]


class FiniteCASHSpace(CASHSpace):
    """``space`` restricted to ``candidates`` (module docstring)."""

    def __init__(self, space: CASHSpace, candidates: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        by_alg: dict[str, dict[str, Config]] = {}
        for algorithm, params in candidates:
            a, p = space.normalize(algorithm, params)
            by_alg.setdefault(a, {})[config_id(a, p)] = (a, p)
        if not by_alg:
            raise InputDataError("a finite CASH space needs at least one candidate")
        super().__init__({a: space[a] for a in space.algorithms if a in by_alg})
        self._candidates: dict[str, list[Config]] = {a: list(by_alg[a].values()) for a in self.algorithms}
        self._encoded = {a: super(FiniteCASHSpace, self).encode_many(c) for a, c in self._candidates.items()}
        self._ids = {a: [config_id(*c) for c in cs] for a, cs in self._candidates.items()}

    def __repr__(self) -> str:
        return f"FiniteCASHSpace({len(self.candidates)} candidates of {list(self.algorithms)})"

    @property
    def candidates(self) -> list[Config]:
        """Every candidate, by algorithm in the space's order."""
        return [c for a in self.algorithms for c in self._candidates[a]]

    def candidate_ids(self) -> list[str]:
        """Every candidate's id, algorithm by algorithm."""
        return [cid for a in self.algorithms for cid in self._ids[a]]

    def encoded_candidates(self) -> np.ndarray:
        """``X_C`` (N, D), rows in :attr:`candidates` order."""
        return np.vstack([self._encoded[a] for a in self.algorithms])

    def subset(self, names: Iterable[str]) -> FiniteCASHSpace:
        """The finite space of the algorithms ``names`` and their candidates only."""
        names = list(names)
        return FiniteCASHSpace(CASHSpace({n: self[n] for n in names}),
                               [c for n in names for c in self._candidates.get(n, [])])

    def sample(self, seed: Seed, n: int = 1) -> list[Config]:
        """``n`` candidates: an algorithm uniformly, then one of its candidates uniformly."""
        rng = as_generator(seed)
        out = []
        for _ in range(n):
            a = self.algorithms[int(rng.integers(len(self.algorithms)))]
            algorithm, params = self._candidates[a][int(rng.integers(len(self._candidates[a])))]
            out.append((algorithm, dict(params)))
        return out

    def sample_encoded(self, seed: Seed, n: int = 1) -> np.ndarray:
        """``n`` candidates drawn with ``seed``, encoded as rows."""
        return self.encode_many(self.sample(seed, n))

    def neighbours(self, algorithm: str, params: Mapping[str, Any], rng: Seed,
                   n_per_numeric: int = 4) -> list[Config]:
        """No configurations: a finite space has no local moves, only its candidates."""
        return []

    def neighbours_encoded(self, x: Any, rng: Seed, n_per_numeric: int = 4, *,
                           other_algorithms: bool = True) -> np.ndarray:
        """No rows: a finite space has no local moves, only its candidates."""
        return np.empty((0, self.n_dims))

    def neighbours_encoded_many(self, X: Any, rng: Seed, n_per_numeric: int = 4, *,
                                other_algorithms: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """No rows and no parent indices: a finite space has no local moves."""
        return np.empty((0, self.n_dims)), np.empty(0, dtype=np.intp)

    def unevaluated(self, evaluated: Iterable[str]) -> tuple[list[Config], np.ndarray]:
        """The candidates whose id is not in ``evaluated``, and their encodings."""
        done = set(evaluated)
        ids = self.candidate_ids()
        keep = [i for i, cid in enumerate(ids) if cid not in done]
        allc = self.candidates
        return [allc[i] for i in keep], self.encoded_candidates()[keep]


__all__ = ["FiniteCASHSpace"]
