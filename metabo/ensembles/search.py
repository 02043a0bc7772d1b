"""Tune an ensemble on one dataset: an ensemble search (post-hoc selection, ESMBO, EO or
DivBO) around any strategy of the project, every trained model recorded with its
predictions in the knowledge base.

The dataset is split once, a stratified 60/20/20 hold-out (DivBO's setting; the ensemble
searches combine predictions on the same validation rows, so the reshuffled protocol is
refused). Each trial is evaluated and recorded as :func:`metabo.optimizer.tune` does
(:func:`~metabo.optimizer.tune.run_trials`); its validation probabilities go to the search
(:meth:`~metabo.ensembles.base.EnsembleSearch.observe`) and its test probabilities are
kept. Then:

- ``test_error``: the final ensemble on the test part, its members as trained on the
  training part (the searches' own protocol: DivBO sec. 4.1);
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.data.dataset import Dataset
from metabo.ensembles.base import EnsembleSearch
from metabo.ensembles.combine import combined_codes, weighted_average
from metabo.ensembles.diversity import diversity_matrix
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.protocols import Holdout, class_codes, class_labels
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
                                n_classes=n_classes, **options)
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
    **search_options: Any,
) -> EnsembleResult:
    """Run the ensemble search ``method`` for ``budget`` trials (module docstring).

    ``search_options`` go to :func:`make_search` (``ensemble_size``, ``loss``,
    ``n_replicates``, ``combine``, ``n_init``, and the search's own keyword arguments).
    ``strategy="auto"``: the default warm start when ``kb`` has runs for the space, else
    ``gp`` (:func:`~metabo.strategies.warm.choose_strategy`; the result says which, and why).
    """
    from metabo.optimizer.tune import check_budget, open_session, prepare, run_trials
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
    protocol = Holdout(0.6, 0.2, 0.2)
    setup = prepare(dataset, kb=kb, target=target, protocol=protocol, metric=metric, meta_features=meta_features,
                    seed=seed)
    split = protocol.splits(setup.data, seed)[0]
    codes = class_codes(setup.data)
    n_classes = len(class_labels(setup.data))
    y_valid, y_test = codes[split.valid_idx], codes[split.test_idx]
    if isinstance(strategy, str):  # auto resolved here, for the result to say which and why
        from metabo.optimizer.tune import resolve_strategy

        name, note, strategy = resolve_strategy(strategy, kb, setup.dataset_id, space, metric=metric)
    else:
        name, note = getattr(strategy, "name", type(strategy).__name__), ""
    base = base_factory(strategy, kb, setup.dataset_id, space, metric=metric)
    search = make_search(method, base, y_valid, n_classes, budget=budget, seed=seed, metric=metric,
                         **search_options)
    settings = {**setup.settings(budget, time_limit, memory_limit_mb), "ensemble": method,
                "search": repr(search)}
    opt = open_session(kb, space, search, session_id=session_id, dataset_id=setup.dataset_id, metric=metric, seed=seed,
                 settings=settings)
    test_probas: dict[int, np.ndarray] = {}

    def on_evaluated(record: TrialRecord, evaluations: list) -> None:
        ok = record.ok and evaluations and evaluations[0].valid_proba is not None
        search.observe(record.number, evaluations[0].valid_proba if ok else None)
        if ok and evaluations[0].test_proba is not None:
            test_probas[record.number] = evaluations[0].test_proba

    run_trials(opt, setup, budget=budget, seed=seed, time_limit=time_limit, memory_limit_mb=memory_limit_mb,
               keep_predictions=True, progress=progress, on_evaluated=on_evaluated)
    opt.finish()
    weights = search.ensemble()
    combine = search.combine
    valid_error = combined_error(weights, search.probas, y_valid, combine=combine, metric=metric,
                                 n_classes=n_classes)
    test_error = combined_error(weights, test_probas, y_test, combine=combine, metric=metric, n_classes=n_classes)
    result = EnsembleResult(
        opt.session_id, setup.dataset_id, method, metric, weights, combine, opt.history, valid_error, test_error,
        opt.best(), mean_pairwise_diversity([search.probas[k] for k in weights]), valid_probas=dict(search.probas),
        test_probas=test_probas, y_valid=y_valid, y_test=y_test, n_classes=n_classes, strategy=name,
        strategy_note=note,
    )
    if not refit:
        return result
    from dataclasses import replace

    from metabo.ensembles.model import refit_test_error

    members = [(opt.history[k].algorithm, dict(opt.history[k].params)) for k in weights]
    model, error = refit_test_error(members, list(weights.values()), combine, setup.data, protocol, seed=seed,
                                    metric=metric)
    return replace(result, model=model, refit_test_error=error if math.isfinite(error) else None)


__all__ = ["METHODS", "EnsembleResult", "base_factory", "combined_error", "make_search", "mean_pairwise_diversity",
           "tune_ensemble"]
