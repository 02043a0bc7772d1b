"""The strategy contract: what to evaluate next, given the history (Optuna's sampler,
SMAC's "intensifier + acquisition" folded into one small object).

A :class:`Strategy` has a ``name`` and ``suggest(history, space, rng) -> (algorithm,
params)``; it must not repeat an asked configuration (``history.config_ids``). Its state
is a function of the history only (caches are allowed, not memory), so a resumed session
continues the seeded sequence of an uninterrupted one. Failed trials count as the worst
observed value (:attr:`History.y`). Pending trials (asked, not told) are never suggested
again; while trials are pending, :class:`~metabo.optimizer.Optimizer` hands the strategy
the history with their constant lies (:meth:`History.with_lies`), so a strategy needs no
notion of pending trials of its own. The :class:`Strategy` and :class:`PosteriorModel`
protocols live in :mod:`metabo.optimizer.strategy` (below this package) and are
re-exported here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id

# the contract is defined where the optimizer that drives it can see it (re-exported here)
from metabo.optimizer.strategy import Config, PosteriorModel, Strategy
from metabo.space.cash import CASHSpace
from metabo.space.finite import FiniteCASHSpace


def thread_limits(threads: int | None) -> AbstractContextManager[Any]:
    """BLAS / OpenMP limited to ``threads`` while suggesting (threadpoolctl; None: as they
    are): the small GPs of a suggestion run faster on one thread."""
    if threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads)


def random_configuration(
    space: CASHSpace, rng: np.random.Generator, exclude: set[str] | frozenset[str] = frozenset(),
    algorithm: str | None = None, max_tries: int = 1000,
) -> Config:
    """A uniform configuration (of ``algorithm``, if given) whose id is not in ``exclude``."""
    sub = space if algorithm is None else space.subset([algorithm])
    if isinstance(sub, FiniteCASHSpace):  # an algorithm with candidates left, then one of them
        left, _ = sub.unevaluated(exclude)
        by_alg: dict[str, list[Config]] = {}
        for a, params in left:
            by_alg.setdefault(a, []).append((a, params))
        if by_alg:
            names = [a for a in sub.algorithms if a in by_alg]
            pool = by_alg[names[int(rng.integers(len(names)))]]
            a, params = pool[int(rng.integers(len(pool)))]
            return a, dict(params)
        max_tries = 0
    for _ in range(max_tries):
        (a, params), = sub.sample(rng, 1)
        if config_id(a, params) not in exclude:
            return a, params
    what = f"algorithm {algorithm!r}" if algorithm else "the space"
    raise InputDataError(
        f"no unevaluated configuration of {what} left (random draws: {max_tries}): the space looks "
        "exhausted (lower the budget or widen the space)"
    )


__all__ = ["Config", "PosteriorModel", "Strategy", "random_configuration"]
