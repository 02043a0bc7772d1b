"""A strategy by name, resolved against the knowledge base."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy, make_strategy
from metabo.strategies.names import COLD_STRATEGIES
from metabo.strategies.warm import AUTO, WARM_STRATEGIES, choose, warm_factory

if TYPE_CHECKING:
    from metabo.kb.costs import FitCosts
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)


def strategy_factory(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str, cv: int | str | None = "auto") -> Callable[[int], Strategy]:
    """Seed -> a fresh strategy ``name``: cold (:func:`~metabo.strategies.make_strategy`) or a
    warm start from ``kb`` for the stored ``dataset_id`` (:func:`~metabo.strategies.warm.warm_factory`,
    which reads what transfers once for every strategy it makes); ``auto``: the one
    :func:`~metabo.strategies.warm.choose_strategy` picks (:func:`resolve_strategy`)."""
    return resolve_strategy(name, kb, dataset_id, space, metric=metric, cv=cv)[2]


def resolve_strategy(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str, time_budget: float | None = None, n_train: int | None = None,
                     fits_per_trial: int = 1, cv: int | str | None = "auto", costs: FitCosts | None = None
                     ) -> tuple[str, str, Callable[[int], Strategy]]:
    """``(name, note, seed -> strategy)`` of :func:`strategy_factory`, with ``auto``
    resolved (:func:`~metabo.strategies.warm.choose`, its reason logged and returned as
    ``note``; empty for a named strategy) and the past it read passed on, not read twice.
    ``time_budget``, ``n_train`` and ``fits_per_trial`` make the warm start cost-aware
    (:func:`~metabo.strategies.warm.warm_factory`); ``cv``, the search's, picks the
    protocol of each past task's runs (:func:`~metabo.strategies.warm.past_for`); ``costs``,
    the recorded fit seconds if already read."""
    note, past = "", None
    if name == AUTO:
        name, note, past = choose(kb, dataset_id, space, metric=metric, cv=cv)
        logger.info("strategy auto: %s", note)
    if name not in WARM_STRATEGIES:
        if name not in COLD_STRATEGIES:
            raise InputDataError(f"unknown strategy {name!r}; use {AUTO}, a warm start ({', '.join(WARM_STRATEGIES)}) "
                                 f"or a cold one ({', '.join(COLD_STRATEGIES)})")
        cold = name
        return name, note, lambda seed: make_strategy(cold, seed=seed)
    if kb is None or dataset_id is None:
        raise InputDataError(f"strategy {name!r} warm-starts from a knowledge base: pass kb")
    if not isinstance(space, CASHSpace):
        raise InputDataError(f"strategy {name!r} needs a CASH space")
    return name, note, warm_factory(name, kb, dataset_id, space, metric=metric, past=past,
                                    time_budget=time_budget, n_train=n_train, fits_per_trial=fits_per_trial, cv=cv,
                                    costs=costs)

