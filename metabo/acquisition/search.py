"""Maximizing an acquisition over a CASH space: random sampling + SMAC-style local search.

Notation: ``a(x)`` is the acquisition (``score``) of encoded configurations ``X`` (m, D),
called once per batch; ``S(g) = {g} u N_1(g) u ... u N_|G|(g)`` the one-exchange
neighbourhood of a configuration ``g`` (thesis 5.3.2, eq. 5.8), which for a CASH space
also holds every other algorithm at its default (``CASHSpace.neighbours``).

1. Score ``starts`` (e.g. the incumbents) and ``n_random`` configurations drawn straight
   into the encoding (``space.sample_encoded``; decoded only when looked at).
2. From the ``n_local`` best distinct ones, run best-improvement local search in lockstep,
   ``g_{i+1} = argmax_{g in S(g_i)} a(g)`` (eq. 5.7): one score call per step for the
   neighbours of every search still running; a search stops at a local maximum (no
   neighbour strictly better) or after ``max_steps``.
3. Return the best configuration seen whose ``config_id`` is not in ``evaluated``; if all
   were evaluated, score further random batches; if those are all evaluated too, raise
   :class:`InputDataError` (the space is probably exhausted).

On a :class:`~metabo.space.finite.FiniteCASHSpace` (the recorded configurations of a
lookup benchmark) every candidate not evaluated is scored and the best returned.

Everything runs on encoded rows (``CASHSpace.neighbours_encoded_many``: the neighbourhoods of
every running search in one call per step); a row is decoded to a
configuration only to check its id. The other algorithms' defaults are scored once per
call, not once per step. Deterministic for a seed (given a deterministic ``score``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.space.cash import CASHSpace
from metabo.space.finite import FiniteCASHSpace

__all__ = ["maximize"]

log = logging.getLogger(__name__)

Config = tuple[str, dict[str, Any]]
Score = Callable[[np.ndarray], np.ndarray]

_EXTRA_ROUNDS = 3  # random batches tried when every configuration seen is evaluated


def _call(score: Score, X: np.ndarray) -> np.ndarray:
    """``score(X)`` checked: shape (m,), no NaN (-inf is allowed: log EI of no improvement)."""
    if len(X) == 0:
        return np.empty(0)
    s = np.asarray(score(X), dtype=float)
    if s.shape != (len(X),):
        raise InputDataError(f"score must return one value per row, shape ({len(X)},); got {s.shape}")
    if np.isnan(s).any():
        raise InputDataError(
            f"score returned NaN for {int(np.isnan(s).sum())} of {len(s)} configurations; "
            "check the surrogate (use log expected improvement for tiny values)"
        )
    return s


class _Seen:
    """Every configuration scored in one :func:`maximize` call (for the final choice);
    encoded random samples are decoded only when looked at."""

    def __init__(self, space: CASHSpace) -> None:
        self.space = space
        self._blocks: list[tuple[Sequence[Config] | np.ndarray, np.ndarray]] = []
        self._decoded: dict[tuple[int, int], Config] = {}

    def __len__(self) -> int:
        return sum(len(s) for _, s in self._blocks)

    def add(self, configs: Sequence[Config] | np.ndarray, scores: np.ndarray) -> int:
        """Add configurations (or encoded rows) with their scores; returns the block index."""
        self._blocks.append((configs, scores))
        return len(self._blocks) - 1

    def config(self, block: int, i: int) -> Config:
        items = self._blocks[block][0]
        if isinstance(items, np.ndarray):
            key = (block, i)
            if key not in self._decoded:
                self._decoded[key] = self.space.decode(items[i])
            return self._decoded[key]
        return items[i]

    def best_unevaluated(self, evaluated: Collection[str]) -> tuple[Config, float] | None:
        """The highest-scoring configuration whose id is not in ``evaluated`` (ties: first
        seen); ids are computed lazily, best first."""
        if not self._blocks:
            return None
        s = np.concatenate([sc for _, sc in self._blocks])
        owner = np.concatenate([np.full(len(sc), b) for b, (_, sc) in enumerate(self._blocks)])
        offset = np.concatenate([np.arange(len(sc)) for _, sc in self._blocks])
        checked: set[str] = set()
        for i in np.argsort(-s, kind="stable"):
            config = self.config(int(owner[i]), int(offset[i]))
            cid = config_id(*config)
            if cid in checked:
                continue
            if cid not in evaluated:
                return config, float(s[i])
            checked.add(cid)
        return None


def maximize(
    space: CASHSpace,
    score: Score,
    *,
    starts: Sequence[tuple[str, Mapping[str, Any]]] = (),
    evaluated: Collection[str] = (),
    n_random: int = 1000,
    n_local: int = 10,
    max_steps: int = 50,
    n_per_numeric: int = 4,
    seed: Seed = 0,
) -> tuple[Config, float]:
    """``argmax a(g)`` over ``space`` by random sampling + local search (thesis 5.3.2);
    returns ``((algorithm, params), a)`` for the best configuration not in ``evaluated``.

    ``score`` maps encoded rows (m, D) (``space.encode_many``) to (m,) values, higher is
    better; ``starts`` are extra candidates (validated), ``evaluated`` config ids
    (:func:`metabo.kb.canonical.config_id`) that must not be returned; ``n_per_numeric``
    neighbours per numeric hyperparameter (``CASHSpace.neighbours``).
    """
    if not isinstance(space, CASHSpace):
        raise InputDataError(
            f"maximize needs a CASHSpace, got {type(space).__name__}; wrap a SearchSpace with "
            "metabo.space.cash.as_cash(space)"
        )
    if n_random < 0 or n_local < 0 or max_steps < 0:
        raise InputDataError(
            f"n_random, n_local and max_steps must be >= 0, got {n_random}, {n_local}, {max_steps}"
        )
    if n_random == 0 and not starts:
        raise InputDataError("nothing to search from: give starts or n_random > 0")
    rng = as_generator(seed)
    evaluated = evaluated if isinstance(evaluated, (set, frozenset, dict)) else set(evaluated)
    if isinstance(space, FiniteCASHSpace):  # a lookup benchmark: score every candidate left
        configs, X = space.unevaluated(evaluated)
        if not configs:
            raise InputDataError(f"every one of the {len(space.candidates)} candidates is already evaluated")
        scores = _call(score, X)
        top = int(np.argmax(scores))
        return configs[top], float(scores[top])
    seen = _Seen(space)
    m = len(space.algorithms)

    # 1. Starts + random sample (drawn straight into the encoding), one score call each.
    start_configs: list[Config] = [space.normalize(a, p) for a, p in starts]
    X_start = space.encode_many(start_configs)
    start_scores = _call(score, X_start)
    start_block = seen.add(start_configs, start_scores)
    X_random = space.sample_encoded(rng, n_random)
    random_scores = _call(score, X_random)
    random_block = seen.add(X_random, random_scores)

    # The other algorithms' defaults (part of every CASH neighbourhood) are scored once.
    defaults = [space.default_configuration(a) for a in space.algorithms]
    X_default = space.encode_many(defaults)
    default_scores = _call(score, X_default)
    seen.add(defaults, default_scores)
    by_default_score = np.argsort(-default_scores, kind="stable")

    def best_other_default(k: int) -> int | None:
        """The best-scoring default of an algorithm other than ``k``."""
        others = [int(j) for j in by_default_score[:2] if j != k]
        return others[0] if others else None

    # 2. Local search from the n_local best distinct candidates, in lockstep.
    current: list[np.ndarray] = []
    current_scores: list[float] = []
    ids: set[str] = set()
    X_cand = np.vstack([X_start, X_random])
    cand_scores = np.concatenate([start_scores, random_scores])
    n_start = len(start_configs)
    for j in np.argsort(-cand_scores, kind="stable"):
        if len(current) >= n_local:
            break
        config = seen.config(start_block, j) if j < n_start else seen.config(random_block, j - n_start)
        cid = config_id(*config)
        if cid not in ids:
            ids.add(cid)
            current.append(X_cand[j])
            current_scores.append(float(cand_scores[j]))
    running = list(range(len(current)))
    steps = 0
    while running and steps < max_steps:
        steps += 1
        batch, local = space.neighbours_encoded_many(np.vstack([current[k] for k in running]), rng, n_per_numeric,
                                                     other_algorithms=False)
        owner = np.asarray(running, dtype=np.intp)[local]
        s = _call(score, batch)
        seen.add(batch, s)
        still = []
        for k in running:
            best: tuple[np.ndarray, float] | None = None
            other = best_other_default(int(np.argmax(current[k][:m])))
            if other is not None:
                best = (X_default[other], float(default_scores[other]))
            idx = np.flatnonzero(owner == k)
            if len(idx):
                j = idx[int(np.argmax(s[idx]))]
                if best is None or s[j] > best[1]:
                    best = (batch[j], float(s[j]))
            if best is not None and best[1] > current_scores[k]:  # eq. 5.7: strict improvement
                current[k], current_scores[k] = best
                still.append(k)
        running = still
    log.debug(
        "maximize: %d random + %d starts, %d local searches, %d steps, %d configurations scored",
        n_random, len(starts), len(current), steps, len(seen),
    )

    # 3. Best configuration seen that is not evaluated; else further random batches.
    found = seen.best_unevaluated(evaluated)
    rounds = 0
    while found is None and rounds < _EXTRA_ROUNDS:
        rounds += 1
        extra = space.sample_encoded(rng, max(n_random, 100))
        seen.add(extra, _call(score, extra))
        found = seen.best_unevaluated(evaluated)
    if found is None:
        raise InputDataError(
            f"every one of the {len(seen)} configurations scored is already evaluated "
            f"({len(evaluated)} evaluated ids); the search space looks exhausted: enlarge it "
            "or stop the optimization"
        )
    return found
