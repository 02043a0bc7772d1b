"""Tune an ensemble on one dataset: an ensemble search (post-hoc selection, ESMBO, EO or
DivBO) around any strategy of the project, every trained model recorded with its
predictions in the knowledge base.

The dataset is split once (the ensemble searches combine predictions on the same rows, so
the reshuffled protocol is refused), in one of two ways:

- ``cv=None``: a stratified 60/20/20 hold-out (DivBO's setting). A trial's validation
  probabilities are its predictions on the 20% validation part.
- ``cv=k``: a stratified 20% test part, and k-fold cross-validation on the other 80%
  (the thesis' EO scores every model by 5-fold CV, sec. 4.4.1; auto-sklearn can). A
  trial's "validation" probabilities are its out-of-fold predictions on all of the 80%
  (each row predicted by the fold model that did not train on it), so selection, the
  EO/ESMBO losses and the guard see every training row instead of a 20% part; its test
  probabilities are the mean of its k fold models'. It costs k fits per trial, each on
  80% x (k-1)/k of the rows.
- ``cv="auto"`` (the default): ``k = 5`` when the dataset has at most
  :data:`~metabo.evaluation.protocols.AUTO_CV_MAX_ROWS` rows, else the hold-out, as for
  a single configuration's search (:func:`~metabo.evaluation.protocols.search_protocol`,
  where the line is argued).

Each trial is evaluated and recorded as :func:`metabo.tuning.tune` does
(:func:`~metabo.tuning.trials.run_trials`); its validation probabilities go to the search
(:meth:`~metabo.ensembles.base.EnsembleSearch.observe`) and its test probabilities are
kept. The final ensemble passes the guard (:mod:`metabo.ensembles.guard`; ``guard=False``
skips it): the single best trial replaces it unless its cross-validated gain over that
trial exceeds one standard error, and its members are combined by averaged probabilities
or by vote, whichever is better out of sample. Then:

- ``test_error``: the final ensemble on the test part, its members as trained on the
  training part (or the mean of their fold models; the searches' own protocol: DivBO
  sec. 4.1);
- with ``refit=True``, ``model``: an :class:`~metabo.ensembles.model.EnsembleModel` of the
  members refitted on training + validation rows (thesis sec. 4.4.1) and its
  ``refit_test_error``;
- ``best``: the search's single best trial (BO-best / DivBO- in the papers' tables) and
  ``diversity``: the mean pairwise diversity (DivBO eq. 3) of the distinct members.

The base strategy: a cold one by name (``gp``, ``random``, ...) or a warm start from the
knowledge base (``knn``, ``rgpe``, ``rlgp``, ``scot``) built for the stored dataset with
its own earlier runs left out (:func:`~metabo.tuning.registry.resolve_strategy`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.data.dataset import Dataset
from metabo.ensembles.guard import guarded_ensemble
from metabo.ensembles.search import (
    METHODS,
    EnsembleResult,
    combined_error,
    make_search,
    mean_pairwise_diversity,
    out_of_fold,
    selection_rows,
)
from metabo.evaluation.protocols import class_codes, class_labels
from metabo.exceptions import InputDataError
from metabo.optimizer.history import TrialRecord
from metabo.optimizer.optimizer import get_session
from metabo.space.algorithms import default_cash_space
from metabo.strategies import Strategy
from metabo.tuning.registry import resolve_strategy
from metabo.tuning.session import check_budget, default_trial_limit, open_session, prepare, search_costs
from metabo.tuning.trials import run_trials

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase
    from metabo.space.cash import CASHSpace

logger = logging.getLogger(__name__)


def base_factory(strategy: str | Strategy | Callable[[int], Strategy], kb: KnowledgeBase | None,
                 dataset_id: str | None, space: CASHSpace, *, metric: str) -> Callable[[int], Strategy]:
    """Seed -> a fresh base strategy (cold by name, warm from ``kb``, or given)."""
    if isinstance(strategy, str):
        return resolve_strategy(strategy, kb, dataset_id, space, metric=metric)[2]
    if callable(strategy) and not hasattr(strategy, "suggest"):
        return strategy
    fixed = strategy
    shared: list[int] = []

    def once(seed: int) -> Strategy:  # one instance keeps one surrogate state: never two searches on it
        if shared:
            raise InputDataError("a strategy instance cannot serve several replicates (ESMBO): pass its name or a "
                                 "callable seed -> strategy")
        shared.append(seed)
        return fixed  # type: ignore[return-value]

    return once


def tune_ensemble(
    dataset: Dataset | str,
    *,
    method: str = "posthoc",
    budget: int,
    strategy: str | Strategy | Callable[[int], Strategy] = "gp",
    space: CASHSpace | None = None,
    kb: KnowledgeBase | None = None,
    seed: int = 0,
    target: str | None = None,
    metric: str = "error_rate",
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
    session_id: str | None = None,
    meta_features: bool = True,
    refit: bool = False,
    progress: Callable[[TrialRecord], None] | None = None,
    cv: int | str | None = "auto",
    guard: bool = True,
    **search_options: Any,
) -> EnsembleResult:
    """Run the ensemble search ``method`` for ``budget`` trials (module docstring).

    ``cv``: the folds of the search's cross-validation, ``None`` for the 60/20/20 hold-out,
    ``"auto"`` for 5 folds up to :data:`~metabo.evaluation.protocols.AUTO_CV_MAX_ROWS` rows. ``guard``: pass the final
    ensemble through :func:`~metabo.ensembles.guard.guarded_ensemble`.

    ``search_options`` go to :func:`make_search` (``ensemble_size``, ``loss``,
    ``n_replicates``, ``combine``, ``n_init``, and the search's own keyword arguments).
    ``strategy="auto"``: the default warm start when ``kb`` has runs for the space, else
    ``gp`` (:func:`~metabo.tuning.registry.resolve_strategy`; the result says which, and why).
    """
    check_budget(budget)
    if method not in METHODS:
        raise InputDataError(f"unknown ensemble method {method!r}; use one of {', '.join(METHODS)}")
    if kb is not None and session_id is not None:
        if get_session(kb, session_id) is not None:
            raise InputDataError(f"session {session_id!r} exists; an ensemble search is not resumed (its "
                                 "members' predictions are replayed in no order it can trust): choose another id")
    space = default_cash_space() if space is None else space
    setup = prepare(dataset, kb=kb, target=target, cv=cv, metric=metric, meta_features=meta_features, seed=seed)
    folds = setup.folds
    protocol = setup.protocol
    splits = protocol.splits(setup.data, seed)
    codes = class_codes(setup.data)
    n_classes = len(class_labels(setup.data))
    y_valid, y_test = codes[selection_rows(splits)], codes[splits[0].test_idx]
    if isinstance(strategy, str):  # auto resolved here, for the result to say which and why
        name, note, strategy = resolve_strategy(strategy, kb, setup.dataset_id, space, metric=metric, cv=cv)
    else:
        name, note = getattr(strategy, "name", type(strategy).__name__), ""
    base = base_factory(strategy, kb, setup.dataset_id, space, metric=metric)
    search = make_search(method, base, y_valid, n_classes, budget=budget, seed=seed, metric=metric,
                         **search_options)
    settings = {**setup.settings(budget, time_limit, memory_limit_mb), "ensemble": method,
                "search": repr(search)}
    limit = None
    if time_limit is None:  # every trial is bounded all the same (metabo.optimizer.limits)
        limit = default_trial_limit(setup, kb, space, seed=seed, metric=metric,
                                    costs=search_costs(kb, setup, space, metric=metric))
        settings["default_time_limit"] = limit.describe()
    opt = open_session(kb, space, search, session_id=session_id, dataset_id=setup.dataset_id, metric=metric, seed=seed,
                 settings=settings)
    test_probas: dict[int, np.ndarray] = {}

    def on_evaluated(record: TrialRecord, evaluations: list) -> None:
        ok = record.ok and len(evaluations) == len(splits) and all(
            e.ok and e.valid_proba is not None for e in evaluations)
        search.observe(record.number, out_of_fold([e.valid_proba for e in evaluations]) if ok else None)
        if ok and all(e.test_proba is not None for e in evaluations):
            test_probas[record.number] = np.mean([e.test_proba for e in evaluations], axis=0)

    run_trials(opt, setup, budget=budget, seed=seed, time_limit=time_limit, memory_limit_mb=memory_limit_mb,
               keep_predictions=True, progress=progress, on_evaluated=on_evaluated, default_limit=limit)
    opt.finish()
    search_weights, search_combine = search.ensemble(), search.combine
    weights, combine, decision = search_weights, search_combine, None
    if guard:
        best = opt.best().number
        decision = guarded_ensemble(search, metric=metric, seed=seed,
                                    single=best if best in search.probas else None)
        weights, combine = decision.weights, decision.combine
        logger.info("guard: %s", decision.summary)
    valid_error = combined_error(weights, search.probas, y_valid, combine=combine, metric=metric,
                                 n_classes=n_classes)
    test_error = combined_error(weights, test_probas, y_test, combine=combine, metric=metric, n_classes=n_classes)
    result = EnsembleResult(
        opt.session_id, setup.dataset_id, method, metric, weights, combine, opt.history, valid_error, test_error,
        opt.best(), mean_pairwise_diversity([search.probas[k] for k in weights]), valid_probas=dict(search.probas),
        test_probas=test_probas, y_valid=y_valid, y_test=y_test, n_classes=n_classes, strategy=name,
        strategy_note=note, cv=folds, test_idx=splits[0].test_idx, guard=decision, search_weights=search_weights,
        search_combine=search_combine,
    )
    if not refit:
        return result
    from metabo.ensembles.model import refit_test_error

    members = [(opt.history[k].algorithm, dict(opt.history[k].params)) for k in weights]
    model, error = refit_test_error(members, list(weights.values()), combine, setup.data, protocol, seed=seed,
                                    metric=metric)
    return replace(result, model=model, refit_test_error=error if math.isfinite(error) else None)


__all__ = ["base_factory", "tune_ensemble"]
