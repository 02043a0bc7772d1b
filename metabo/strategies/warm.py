"""Warm-start strategies built from a knowledge base for one new dataset: the names
``metabo tune --strategy`` and :func:`metabo.tuning.tune` accept beside the cold ones.

For a new dataset ``d`` stored in the knowledge base (with its meta-features), the past is
every other stored task's successful runs of the objective metric (:class:`PastRuns`),
the tasks holding the same data as ``d`` (same content fingerprint) left out, so that a
dataset tuned a second time does not transfer from its own earlier session, and limited to
the algorithms of the space:

- ``warm``: :class:`~metabo.strategies.portfolio.PortfolioWarmStart` (an adaptive portfolio
  of the past tasks' recorded configurations, then GP-BO; meta-features used when stored);
- ``knn``: :class:`~metabo.strategies.knn.KNNWarmStart` (the 5 nearest tasks by
  meta-features, then GP-BO);
- ``rgpe`` / ``rlgp``: :class:`~metabo.strategies.rgpe.RGPE` /
  :class:`~metabo.strategies.rlgp.RLGP` on the surrogate bank of the past, cached in the
  same store (:meth:`SurrogateBank.fit` with ``kb``: only the tasks whose runs changed are
  refitted);
- ``scot``: :class:`~metabo.strategies.scot.SCoT` at the dataset's meta-features.

``auto`` (:data:`AUTO`, the default of ``tune``, the CLI, the service and ``MetaSearchCV``)
is resolved by :func:`choose_strategy`: ``warm`` whenever the knowledge base holds other
tasks' runs on the space's algorithms (measured ahead of cold GP-BO at every budget on
held-out tasks, ``reports/warm``), cold ``gp`` otherwise, with the reason either way; the
reason names the fidelity of what transfers (:func:`past_fidelity`: the past runs' largest
training-set size), since the shipped knowledge was measured on at most 2,000 training rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Strategy

if TYPE_CHECKING:
    from metabo.kb.costs import FitCosts
    from metabo.kb.past import PastRuns
    from metabo.kb.store import KnowledgeBase

#: The warm-start strategies by name (module docstring).
WARM_STRATEGIES = ("warm", "knn", "rgpe", "rlgp", "scot")
#: The name that picks the default warm start when there is knowledge, else cold GP-BO.
AUTO = "auto"
#: The warm start ``auto`` picks.
DEFAULT_WARM = "warm"
#: Under a time budget, the largest share of it one opening configuration may be
#: predicted to take (eight portfolio picks then leave at least a fifth to the search).
OPENING_SHARE = 0.1


def past_for(kb: KnowledgeBase, dataset_id: str, space: CASHSpace, *, metric: str = "error_rate",
             other_metrics: bool = False, cv: int | str | None = "auto") -> PastRuns:
    """Every other stored task's runs of ``metric`` on the algorithms of ``space``, the
    tasks with ``dataset_id``'s content left out (module docstring), each task's runs of
    one protocol: the one a search with ``cv`` (the target's) measures it by when stored
    (:meth:`PastRuns.from_kb`'s ``prefer_cv``). ``other_metrics``:
    also the tasks that recorded only another error rate
    (:func:`~metabo.evaluation.metrics.transfer_metrics`; OBOE's meta-dataset). Off by
    default: on 20 held-out KEEL tasks, live, adding OBOE's 418 tasks to the 42 of the
    shipped knowledge base made the default warm start worse at 1 to 10 evaluations
    (reports/warm/oboe)."""
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb.datasets import same_content_dataset_ids
    from metabo.kb.past import PastRuns

    same = same_content_dataset_ids(kb, dataset_id)
    also = transfer_metrics(metric)[1:] if other_metrics else ()
    past = PastRuns.from_kb(kb, metric=metric, algorithms=list(space.algorithms), also=also, prefer_cv=cv)
    past = past.without({dataset_id, *same})
    if not past.tasks:
        raise InputDataError(f"the knowledge base holds no other task with runs of {metric!r} on the algorithms "
                             f"{list(space.algorithms)}: nothing to warm-start from")
    return past


def choose_strategy(kb: KnowledgeBase | None, dataset_id: str | None, space: Any, *, metric: str = "error_rate",
                    cv: int | str | None = "auto") -> tuple[str, str]:
    """What ``auto`` means for this dataset: ``(name, reason)``, :data:`DEFAULT_WARM` when
    the knowledge base holds other tasks' runs of ``metric`` on the algorithms of the CASH
    ``space`` (:func:`past_for`), cold ``gp`` otherwise; the reason is one line for the user."""
    name, note, _ = choose(kb, dataset_id, space, metric=metric, cv=cv)
    return name, note


def choose(kb: KnowledgeBase | None, dataset_id: str | None, space: Any, *, metric: str = "error_rate",
           cv: int | str | None = "auto") -> tuple[str, str, PastRuns | None]:
    """:func:`choose_strategy`, with the past it read (None for ``gp``), for
    :func:`warm_factory` to take instead of reading it again."""
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


def measured_alike(past: PastRuns, cv: int | str | None) -> int:
    """How many of ``past``'s tasks contribute runs measured by ``metabo tune``'s protocol
    for ``cv`` (:attr:`PastRuns.protocols`; the rest were measured another way)."""
    from metabo.evaluation.protocols import protocol_label, search_protocol

    alike = {protocol_label(search_protocol(cv, n)) for n in (1, 10**9)}
    return sum(past.protocols.get(t) in alike for t in past.tasks)


def past_fidelity(kb: KnowledgeBase, tasks: Sequence[str], metric: str) -> float | None:
    """The largest training-set size (the runs' ``fidelity``) of the past tasks' runs of
    ``metric``: what is transferred was measured at that fidelity or below, which a target
    trained on many more rows should know (None when no run records it)."""
    if not tasks:
        return None
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb.queries import largest_fidelity

    return largest_fidelity(kb, transfer_metrics(metric), tasks)


def stored_meta_features(kb: KnowledgeBase, dataset_id: str) -> dict[str, float]:
    """The stored meta-features of ``dataset_id`` (the finite ones; empty when none)."""
    from metabo.kb.queries import meta_feature_matrix

    mf = meta_feature_matrix(kb)
    if dataset_id not in mf.index:
        return {}
    row = mf.loc[dataset_id]
    return {str(k): float(v) for k, v in row.items() if v == v}


def warm_factory(name: str, kb: KnowledgeBase, dataset_id: str, space: CASHSpace, *, metric: str = "error_rate",
                 past: PastRuns | None = None, time_budget: float | None = None, n_train: int | None = None,
                 fits_per_trial: int = 1, cv: int | str | None = "auto", costs: FitCosts | None = None,
                 **kw: Any) -> Callable[[int], Strategy]:
    """Seed -> a fresh warm-start strategy ``name`` for the stored dataset ``dataset_id``
    (module docstring); what transfers (the past runs, the meta-features, the surrogate
    bank) is read once and shared by every strategy made (ESMBO makes one per replicate).
    ``past``: :func:`past_for`'s result if already read (by :func:`choose`). ``kw`` go to
    the strategy's constructor. Under a ``time_budget`` (seconds) on ``n_train`` training
    rows (of the stored dataset's features), ``warm``'s portfolio keeps to configurations whose trial (``fits_per_trial`` fits,
    one per fold of a cross-validated search) is predicted to take at most a tenth of it
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


def warm_strategy(name: str, kb: KnowledgeBase, dataset_id: str, space: CASHSpace, *, metric: str = "error_rate",
                  seed: int = 0, **kw: Any) -> Strategy:
    """The warm-start strategy ``name`` for the stored dataset ``dataset_id`` (module
    docstring); ``kw`` go to the strategy's constructor."""
    return warm_factory(name, kb, dataset_id, space, metric=metric, **kw)(seed)


__all__ = ["AUTO", "DEFAULT_WARM", "WARM_STRATEGIES", "choose", "choose_strategy", "measured_alike", "past_fidelity",
           "past_for",
           "stored_meta_features", "warm_factory", "warm_strategy"]
