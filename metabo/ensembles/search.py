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

Each trial is evaluated and recorded as :func:`metabo.optimizer.tune` does
(:func:`~metabo.optimizer.tune.run_trials`); its validation probabilities go to the search
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
its own earlier runs left out (:func:`~metabo.strategies.warm.warm_factory`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.data.dataset import Dataset
from metabo.ensembles.base import EnsembleSearch
from metabo.ensembles.combine import combined_codes, weighted_average
from metabo.ensembles.diversity import diversity_matrix
from metabo.ensembles.guard import GuardDecision, guarded_ensemble
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.protocols import Split, class_codes, class_labels
from metabo.exceptions import InputDataError
from metabo.optimizer.history import History, TrialRecord
from metabo.strategies import Strategy

if TYPE_CHECKING:
    from metabo.ensembles.model import EnsembleModel
    from metabo.kb.store import KnowledgeBase
    from metabo.space.cash import CASHSpace

logger = logging.getLogger(__name__)

METHODS = ("posthoc", "esmbo", "eo", "divbo")


@dataclass(frozen=True)
class EnsembleResult:
    """The final ensemble of a search, its errors, and the whole history (module docstring)."""

    session_id: str
    dataset_id: str | None
    method: str
    metric: str
    weights: dict[int, float]  # trial number -> weight
    combine: str
    history: History = field(repr=False)
    valid_error: float
    test_error: float | None
    best: TrialRecord
    diversity: float
    refit_test_error: float | None = None
    model: EnsembleModel | None = field(default=None, repr=False)
    valid_probas: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    test_probas: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    y_valid: np.ndarray | None = field(default=None, repr=False)
    y_test: np.ndarray | None = field(default=None, repr=False)
    n_classes: int = 0
    #: the base strategy's name (``auto`` resolved) and, for ``auto``, why it was chosen
    strategy: str = ""
    strategy_note: str = ""
    #: the folds of the search's cross-validation (None: the 60/20/20 hold-out)
    cv: int | None = None
    #: the dataset's test rows (``y_test``'s, in that order)
    test_idx: np.ndarray | None = field(default=None, repr=False)
    #: what the guard decided (None: no guard); ``search_weights``/``search_combine``: the
    #: search's own final ensemble before the guard
    guard: GuardDecision | None = None
    search_weights: dict[int, float] = field(default_factory=dict)
    search_combine: str = ""

    @property
    def members(self) -> list[tuple[str, dict[str, Any], float]]:
        """``(algorithm, params, weight)`` of each distinct member."""
        return [(self.history[k].algorithm, dict(self.history[k].params), w) for k, w in self.weights.items()]


def combined_error(weights: Mapping[int, float], probas: Mapping[int, np.ndarray], y: np.ndarray, *,
                   combine: str, metric: str, n_classes: int) -> float:
    """``metric`` of the ensemble ``weights`` on rows with true codes ``y``: the error rate of
    the weighted majority vote for ``combine="vote"``, else the metric of the weighted
    average of probabilities."""
    if combine == "vote" and metric == "error_rate":
        return float(np.mean(combined_codes(weights, probas, combine, n_classes) != y))
    return float(get_metric(metric)(y, weighted_average(weights, probas)))


def mean_pairwise_diversity(probas: list[np.ndarray]) -> float:
    """The mean ``Div`` (DivBO eq. 3) over the distinct pairs of ``probas`` (0 for one model)."""
    if len(probas) < 2:
        return 0.0
    D = diversity_matrix(np.asarray(probas, dtype=float))
    return float(D[np.triu_indices(len(probas), k=1)].mean())


def base_factory(strategy: str | Strategy | Callable[[int], Strategy], kb: KnowledgeBase | None,
                 dataset_id: str | None, space: CASHSpace, *, metric: str) -> Callable[[int], Strategy]:
    """Seed -> a fresh base strategy (cold by name, warm from ``kb``, or given)."""
    if isinstance(strategy, str):
        from metabo.optimizer.tune import strategy_factory

        return strategy_factory(strategy, kb, dataset_id, space, metric=metric)
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


def selection_rows(splits: list[Split]) -> np.ndarray:
    """The rows the ensemble searches select on, in the order their probabilities are
    given: the one validation part, or the folds' validation parts one after the other
    (every non-test row once, for k-fold)."""
    return np.concatenate([s.valid_idx for s in splits])


def out_of_fold(fold_probas: list[np.ndarray]) -> np.ndarray:
    """A trial's probabilities on :func:`selection_rows`: its fold models' predictions on
    their own validation parts, stacked in fold order."""
    return np.concatenate([np.asarray(P, dtype=float) for P in fold_probas], axis=0)


def make_search(method: str, base: Callable[[int], Strategy], y_valid: np.ndarray, n_classes: int, *, budget: int,
                seed: int, metric: str = "error_rate", ensemble_size: int | None = None, loss: str = "squared_margin",
                n_replicates: int | None = None, combine: str | None = None, n_init: int | None = None,
                **options: Any) -> EnsembleSearch:
    """The ensemble search ``method`` around ``base`` (defaults: ensemble selection of at
    most 50, EO's m = 12, DivBO's E = 25 and 5 random initial trials, ESMBO's N = floor(M/2))."""
    from metabo.ensembles.divbo import DivBO
    from metabo.ensembles.eo import EnsembleOptimization
    from metabo.ensembles.esmbo import ESMBO
    from metabo.ensembles.selection import PostHocSelection

    given = {"ensemble_size": ensemble_size, "loss": None if loss == "squared_margin" else loss,
             "n_replicates": n_replicates, "combine": combine, "n_init": n_init}
    applies = {"posthoc": {"ensemble_size"}, "esmbo": {"n_replicates", "combine"}, "eo": {"ensemble_size", "loss"},
               "divbo": {"ensemble_size", "n_init"}}
    ignored = [k for k, v in given.items() if v is not None and k not in applies.get(method, set(given))]
    if ignored:
        raise InputDataError(f"{', '.join(ignored)} do not apply to the {method} search")
    if method == "posthoc":
        return PostHocSelection(base(seed), y_valid, metric=metric, ensemble_size=ensemble_size or 50,
                                n_classes=n_classes, seed=seed, **options)
    if method == "esmbo":
        return ESMBO(lambda j: base(seed + j), y_valid, n_replicates=n_replicates, budget=budget, metric=metric,
                     combine=combine or "vote", n_classes=n_classes, seed=seed, **options)
    if method == "eo":
        return EnsembleOptimization(base(seed), y_valid, size=ensemble_size or 12, loss=loss, n_classes=n_classes,
                                    **options)
    if method == "divbo":
        return DivBO(base(seed), y_valid, metric=metric, ensemble_size=ensemble_size or 25,
                     n_init=5 if n_init is None else n_init, n_classes=n_classes, seed=seed, **options)
    raise InputDataError(f"unknown ensemble method {method!r}; use one of {', '.join(METHODS)}")


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
    ``gp`` (:func:`~metabo.strategies.warm.choose_strategy`; the result says which, and why).
    """
    from metabo.optimizer.tune import (check_budget, default_trial_limit, open_session, prepare, run_trials,
                                       search_costs)
    from metabo.space.algorithms import default_cash_space

    check_budget(budget)
    if method not in METHODS:
        raise InputDataError(f"unknown ensemble method {method!r}; use one of {', '.join(METHODS)}")
    if kb is not None and session_id is not None:
        from metabo.optimizer.optimizer import get_session

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
        from metabo.optimizer.tune import resolve_strategy

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
        strategy_note=note, cv=folds, test_idx=splits[0].test_idx, guard=decision, search_weights=search_weights, search_combine=search_combine,
    )
    if not refit:
        return result
    from metabo.ensembles.model import refit_test_error

    members = [(opt.history[k].algorithm, dict(opt.history[k].params)) for k in weights]
    model, error = refit_test_error(members, list(weights.values()), combine, setup.data, protocol, seed=seed,
                                    metric=metric)
    return replace(result, model=model, refit_test_error=error if math.isfinite(error) else None)


__all__ = ["METHODS", "EnsembleResult", "base_factory", "combined_error", "make_search",
           "mean_pairwise_diversity", "out_of_fold", "selection_rows", "tune_ensemble"]
