"""Maximizing an acquisition over a CASH space: random sampling + SMAC-style local search.

Notation: ``a(x)`` is the acquisition (``score``) of encoded configurations ``X`` (m, D),
called once per batch; ``S(g) = {g} u N_1(g) u ... u N_|G|(g)`` the one-exchange
neighbourhood of a configuration ``g`` (thesis 5.3.2, eq. 5.8), which for a CASH space
also holds every other algorithm at its default (``CASHSpace.neighbours``).

1. Score ``starts`` (e.g. the incumbents) and ``n_random`` configurations from
   ``space.sample`` in one call.
2. From the ``n_local`` best distinct ones, run best-improvement local search in lockstep,
   ``g_{i+1} = argmax_{g in S(g_i)} a(g)`` (eq. 5.7): one score call per step for the
   neighbours of every search still running; a search stops at a local maximum (no
   neighbour strictly better) or after ``max_steps``.
3. Return the best configuration seen whose ``config_id`` is not in ``evaluated``; if all
   were evaluated, score further random batches; if those are all evaluated too, raise
   :class:`InputDataError` (the space is probably exhausted).

The other algorithms' defaults are scored once per call, not once per step. Deterministic
for a seed (given a deterministic ``score``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.acquisition._encode import BatchEncoder
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.space.cash import CASHSpace

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
    """Every configuration scored in one :func:`maximize` call (for the final choice)."""

    def __init__(self) -> None:
        self.configs: list[Config] = []
        self.scores: list[np.ndarray] = []

    def add(self, configs: Sequence[Config], scores: np.ndarray) -> None:
        self.configs.extend(configs)
        self.scores.append(scores)

    def best_unevaluated(self, evaluated: Collection[str]) -> tuple[Config, float] | None:
        """The highest-scoring configuration whose id is not in ``evaluated`` (ties: first
        seen); ids are computed lazily, best first."""
        s = np.concatenate(self.scores) if self.scores else np.empty(0)
        checked: set[str] = set()
        for i in np.argsort(-s, kind="stable"):
            cid = config_id(*self.configs[i])
            if cid in checked:
                continue
            if cid not in evaluated:
                return self.configs[i], float(s[i])
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
    encoder = BatchEncoder(space)
    seen = _Seen()

    # 1. Starts + random sample, one score call.
    candidates: list[Config] = [space.normalize(a, p) for a, p in starts]
    candidates += space.sample(rng, n_random)
    cand_scores = _call(score, encoder.encode(candidates))
    seen.add(candidates, cand_scores)

    # The other algorithms' defaults (part of every CASH neighbourhood) are scored once.
    defaults = [space.default_configuration(a) for a in space.algorithms]
    default_scores = _call(score, encoder.encode(defaults))
    seen.add(defaults, default_scores)
    default_of = {a: (p, float(s)) for (a, p), s in zip(defaults, default_scores)}

    # 2. Local search from the n_local best distinct candidates, in lockstep.
    current: list[Config] = []
    current_scores: list[float] = []
    ids: set[str] = set()
    for i in np.argsort(-cand_scores, kind="stable"):
        if len(current) >= n_local:
            break
        cid = config_id(*candidates[i])
        if cid not in ids:
            ids.add(cid)
            current.append(candidates[i])
            current_scores.append(float(cand_scores[i]))
    running = list(range(len(current)))
    steps = 0
    while running and steps < max_steps:
        steps += 1
        batch: list[Config] = []
        owner: list[int] = []
        cached: dict[int, tuple[Config, float]] = {}  # best cached default neighbour per search
        for k in running:
            a, p = current[k]
            for b, q in space.neighbours(a, p, rng, n_per_numeric):
                if b != a and q == default_of[b][0]:
                    ds = default_of[b][1]
                    if k not in cached or ds > cached[k][1]:
                        cached[k] = ((b, q), ds)
                    continue
                batch.append((b, q))
                owner.append(k)
        s = _call(score, encoder.encode(batch))
        seen.add(batch, s)
        owner_a = np.asarray(owner, dtype=int)
        still = []
        for k in running:
            best: tuple[Config, float] | None = cached.get(k)
            idx = np.flatnonzero(owner_a == k)
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
        n_random, len(starts), len(current), steps, len(seen.configs),
    )

    # 3. Best configuration seen that is not evaluated; else further random batches.
    found = seen.best_unevaluated(evaluated)
    rounds = 0
    while found is None and rounds < _EXTRA_ROUNDS:
        rounds += 1
        extra = space.sample(rng, max(n_random, 100))
        seen.add(extra, _call(score, encoder.encode(extra)))
        found = seen.best_unevaluated(evaluated)
    if found is None:
        raise InputDataError(
            f"every one of the {len(seen.configs)} configurations scored is already evaluated "
            f"({len(evaluated)} evaluated ids); the search space looks exhausted: enlarge it "
            "or stop the optimization"
        )
    return found
