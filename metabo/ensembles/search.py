"""What the ensemble searches share: their result, the search by name, the combined error
and diversity of members, and the rows they select on.

The searches themselves: post-hoc selection (:mod:`metabo.ensembles.selection`), ESMBO
(:mod:`metabo.ensembles.esmbo`), EO (:mod:`metabo.ensembles.eo`) and DivBO
(:mod:`metabo.ensembles.divbo`); :func:`metabo.tuning.ensemble.tune_ensemble` runs one on
a dataset (its docstring has the protocol).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from metabo.ensembles.base import EnsembleSearch
from metabo.ensembles.combine import combined_codes, weighted_average
from metabo.ensembles.diversity import diversity_matrix
from metabo.ensembles.guard import GuardDecision
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.protocols import Split
from metabo.exceptions import InputDataError
from metabo.optimizer.history import History, TrialRecord
from metabo.strategies import Strategy

if TYPE_CHECKING:
    from metabo.ensembles.model import EnsembleModel

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
                n_replicates: int | None = None, combine: Literal["vote", "average"] | None = None,
                n_init: int | None = None,
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


__all__ = ["METHODS", "EnsembleResult", "combined_error", "make_search", "mean_pairwise_diversity",
           "out_of_fold", "selection_rows"]
