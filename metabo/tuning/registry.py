"""The strategy registry: a strategy name (``auto``, a cold one or a warm start) resolved
in one call, :func:`resolve_strategy`, to ``(name, reason, seed -> strategy)``; the CLI,
the API (:func:`~metabo.tuning.tune`, :func:`~metabo.tuning.ensemble.tune_ensemble`), the
service and the integrations all go through it.

- cold (:data:`~metabo.strategies.names.COLD_STRATEGIES`): built by
  :func:`~metabo.strategies.registry.make_strategy`;
- warm (:data:`~metabo.strategies.names.WARM_STRATEGIES`): built for a stored dataset from
  what transfers (:mod:`metabo.strategies.warm`: the other tasks' runs, the dataset's
  meta-features, the surrogate bank), read once and shared by every strategy the factory
  makes (ESMBO makes one per replicate);
- ``auto``: the default warm start whenever the knowledge base holds other tasks' runs on
  the space's algorithms, cold GP-BO otherwise, with the reason either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy, make_strategy
from metabo.strategies.names import AUTO, COLD_STRATEGIES, DEFAULT_WARM, WARM_STRATEGIES
from metabo.strategies.warm import measured_alike, past_fidelity, past_for, stored_meta_features

if TYPE_CHECKING:
    from metabo.kb.costs import FitCosts
    from metabo.kb.past import PastRuns
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

#: Under a time budget, the largest share of it one opening configuration may be
#: predicted to take (eight portfolio picks then leave at least a fifth to the search).
OPENING_SHARE = 0.1


def resolve_strategy(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str, time_budget: float | None = None, n_train: int | None = None,
                     fits_per_trial: int = 1, cv: int | str | None = "auto", costs: FitCosts | None = None,
                     options: Mapping[str, Any] | None = None) -> tuple[str, str, Callable[[int], Strategy]]:
    """``(name, reason, seed -> strategy)`` for the strategy ``name`` (module docstring):
    ``auto`` resolved (:func:`_choose`, its reason logged and returned; the reason is
    empty for a named strategy) and the past it read passed on, not read twice.
    ``time_budget``, ``n_train`` and ``fits_per_trial`` make the warm start cost-aware
    (:func:`_warm_factory`); ``cv``, the search's, picks the protocol of each past task's
    runs (:func:`~metabo.strategies.warm.past_for`); ``costs``, the recorded fit seconds if
    already read; ``options`` go to a warm start's constructor (``k`` of ``knn``, say)."""
    note, past = "", None
    if name == AUTO:
        name, note, past = _choose(kb, dataset_id, space, metric=metric, cv=cv)
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
    return name, note, _warm_factory(name, kb, dataset_id, space, metric=metric, past=past,
                                     time_budget=time_budget, n_train=n_train, fits_per_trial=fits_per_trial, cv=cv,
                                     costs=costs, **dict(options or {}))


def _choose(kb: KnowledgeBase | None, dataset_id: str | None, space: Any, *, metric: str = "error_rate",
            cv: int | str | None = "auto") -> tuple[str, str, PastRuns | None]:
    """What ``auto`` means for this dataset: ``(name, reason, past)``,
    :data:`~metabo.strategies.names.DEFAULT_WARM` when the knowledge base holds other tasks'
    runs of ``metric`` on the algorithms of the CASH ``space``
    (:func:`~metabo.strategies.warm.past_for`), cold ``gp`` otherwise; the reason is one
    line for the user, the past (None for ``gp``) is passed on to :func:`_warm_factory`."""
    if kb is None or dataset_id is None:
        return "gp", "cold GP-BO: no knowledge base to warm-start from", None
    if not isinstance(space, CASHSpace):
        return "gp", "cold GP-BO: warm starts need a CASH space (the algorithm is part of what transfers)", None
    try:
        past = past_for(kb, dataset_id, space, metric=metric, cv=cv)
    except InputDataError as e:
        return "gp", f"cold GP-BO: {e}", None
    n_runs = sum(len(g.values) for t in past.tasks for g in past.task_runs(t).values())
    fidelity = past_fidelity(kb, past.tasks, metric)
    trained = "" if fidelity is None else f", trained on at most {fidelity:,.0f} rows"
    return DEFAULT_WARM, (f"warm start ({DEFAULT_WARM}): {n_runs} runs of {len(past.tasks)} other tasks on "
                          f"{len(past.algorithms)} of the space's {len(space.algorithms)} algorithms "
                          f"({measured_alike(past, cv)} of the tasks measured as this search measures){trained}"), past


def _warm_factory(name: str, kb: KnowledgeBase, dataset_id: str, space: CASHSpace, *, metric: str = "error_rate",
                  past: PastRuns | None = None, time_budget: float | None = None, n_train: int | None = None,
                  fits_per_trial: int = 1, cv: int | str | None = "auto", costs: FitCosts | None = None,
                  **kw: Any) -> Callable[[int], Strategy]:
    """Seed -> a fresh warm-start strategy ``name`` for the stored dataset ``dataset_id``
    (module docstring); what transfers (the past runs, the meta-features, the surrogate
    bank) is read once and shared by every strategy made (ESMBO makes one per replicate).
    ``past``: :func:`~metabo.strategies.warm.past_for`'s result if already read (by
    :func:`_choose`). ``kw`` go to the strategy's constructor. Under a ``time_budget``
    (seconds) on ``n_train`` training rows (of the stored dataset's features), ``warm``'s
    portfolio keeps to configurations whose trial (``fits_per_trial`` fits, one per fold of
    a cross-validated search) is predicted to take at most a tenth of it
    (:data:`OPENING_SHARE`, :mod:`metabo.kb.costs`; ``costs``: the other tasks' recorded fit
    seconds, :meth:`~metabo.kb.costs.FitCosts.for_target`, if already read, else read here)."""
    if name not in WARM_STRATEGIES:
        raise InputDataError(f"unknown warm-start strategy {name!r}; use one of {', '.join(WARM_STRATEGIES)}")
    if not isinstance(space, CASHSpace):
        raise InputDataError("warm-start strategies need a CASH space (the algorithm is part of what transfers)")
    past = past_for(kb, dataset_id, space, metric=metric, cv=cv) if past is None else past
    meta = stored_meta_features(kb, dataset_id)
    if name in ("knn", "scot") and not meta:
        raise InputDataError(f"dataset {dataset_id!r} has no meta-features: {name} needs them (store them with "
                             "`metabo data meta-features`, or use rlgp/rgpe, which need none)")
    if name == "warm":
        from metabo.strategies.portfolio import PortfolioWarmStart

        if time_budget is not None and n_train is not None:
            from metabo.kb.costs import FitCosts

            n_features = kb.get_dataset(dataset_id).get("n_features")
            if costs is None:
                costs = FitCosts.for_target(kb, dataset_id, space.algorithms, metric=metric)
            fit = costs.predict(n_train, int(n_features) if n_features else None)
            kw = {"costs": {cid: fits_per_trial * seconds for cid, seconds in fit.items()},
                  "max_cost": OPENING_SHARE * time_budget, **kw}
        return lambda seed: PortfolioWarmStart(past, meta or None, seed=seed, **kw)
    if name == "knn":
        from metabo.strategies.gp import GPBO
        from metabo.strategies.knn import KNNWarmStart

        return lambda seed: KNNWarmStart(past, meta, then=GPBO(n_init=0, seed=seed), seed=seed, **kw)
    if name == "scot":
        from metabo.strategies.scot import SCoT

        return lambda seed: SCoT(past, meta, seed=seed, **kw)
    from metabo.strategies.rgpe import RGPE
    from metabo.strategies.rlgp import RLGP
    from metabo.surrogates.bank import SurrogateBank, space_encoder

    bank: list[SurrogateBank] = []  # fitted on first use, with the first seed asked for

    def make(seed: int) -> Strategy:
        if not bank:
            bank.append(SurrogateBank.fit(past, space_encoder(space), seed=seed, kb=kb))
        return (RLGP if name == "rlgp" else RGPE)(bank[0], seed=seed, **kw)

    return make


__all__ = ["OPENING_SHARE", "resolve_strategy"]
