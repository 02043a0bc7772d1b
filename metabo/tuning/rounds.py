"""More boosting rounds for a large table's final model, chosen on the validation rows.

The default space searches at most 200 boosting rounds (``metabo.space.algorithms.boosting``:
so that one trial stays fast), and on a large table successive halving compares
configurations on a few thousand rows (:mod:`metabo.optimizer.halving`), where a few hundred
rounds are what the data support. On every row the same configuration keeps gaining from
rounds the search never measured: the number of rounds ``M`` is the complexity that grows with
the data, and it is chosen on held-out rows (Friedman 2001, "Greedy function approximation",
sec. 5: for a given shrinkage ``M`` is estimated by monitoring the prediction risk on a
validation sample; Zhang & Yu 2005, early stopping as boosting's regularization, consistent as
the sample grows). AutoGluon and the libraries' own early stopping choose it the same way.

:func:`more_rounds`: the selected configuration is fitted with up to ``cap`` rounds on every
training row of the search's hold-out split (not only the first rung's), and its validation
metric read at a geometric grid of round counts by staged prediction (the first ``k`` trees of
a fitted booster are the booster of ``k`` rounds: the libraries' ``num_iteration``,
``iteration_range`` and ``ntree_end``). The count of lowest validation value is kept when it
beats the configuration's own count read on the same fit; the final model then has that many
rounds (:func:`~metabo.space.algorithms.normalize_params` admits them up to
:data:`~metabo.space.algorithms.spec.MAX_ROUNDS`).

Deviation: the count is chosen on the validation rows that also selected the configuration, so
its value is optimistic by the choice among the grid's counts, as any early-stopped booster's.
Only the model's configuration is given more rounds; an ensemble's other members keep their
own, and the model's predictions with its rounds stand for it among them when the ensemble is
chosen (:meth:`~metabo.ensembles.library.OutOfFoldLibrary.replaced`).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from metabo.evaluation.metrics import align_proba, get_metric
from metabo.evaluation.protocols import class_codes, class_labels
from metabo.evaluation.runner import describe
from metabo.exceptions import EvaluationError
from metabo.optimizer.budget import FINAL_FIT_MARGIN, TimeBudget
from metabo.optimizer.history import TrialRecord
from metabo.space.algorithms import get_algorithm
from metabo.space.algorithms.spec import MAX_ROUNDS
from metabo.tuning.session import Setup

logger = logging.getLogger(__name__)

#: how each library predicts with its first ``k`` rounds
STAGED: Mapping[str, Callable[[int], dict[str, Any]]] = {
    "lightgbm": lambda k: {"num_iteration": k},
    "xgboost": lambda k: {"iteration_range": (0, k)},
    "catboost": lambda k: {"ntree_end": k},
}
#: the round counts read between the configuration's own and the rounds made (geometric)
GRID = 12
#: more rounds are read only when their fit is given at least this many times the
#: configuration's own fit's predicted seconds (a fit that makes no more rounds than its own
#: reads none)
MORE = 1.0


def rounds_name(algorithm: str) -> str | None:
    """The boosting-rounds hyperparameter of ``algorithm`` when its rounds can be read
    staged (:data:`STAGED`), else None."""
    return get_algorithm(algorithm).rounds if algorithm in STAGED else None


@dataclass(frozen=True)
class Rounds:
    """What :func:`more_rounds` measured: the configuration's own rounds ``own`` and the
    best count ``best`` of the grid, their validation values, on ``rows`` training rows."""

    name: str
    own: int
    best: int
    own_value: float
    best_value: float
    rows: int
    seconds: float
    #: the validation rows' class probabilities at ``best`` rounds (the library's entry for
    #: the model, :meth:`~metabo.ensembles.library.OutOfFoldLibrary.replaced`)
    probabilities: np.ndarray = field(repr=False, compare=False)

    @property
    def gained(self) -> bool:
        """More rounds than the configuration's own, with a lower validation value."""
        return self.best > self.own and self.best_value < self.own_value

    def params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with the rounds kept (its own when nothing was gained)."""
        return {**params, self.name: self.best if self.gained else self.own}

    def describe(self) -> str:
        """One line for the summary."""
        return (f"{self.best} boosting rounds ({self.name}) where the configuration has {self.own}: validation "
                f"{self.best_value:.4g} against {self.own_value:.4g} on its {self.rows} training rows "
                f"({self.seconds:.1f} s)")


def round_counts(own: int, cap: int, points: int = GRID) -> list[int]:
    """``own``, ``cap`` and about ``points`` counts between them, geometrically spaced."""
    grid = np.unique(np.round(np.geomspace(own, cap, num=max(points, 2))).astype(int))
    return sorted({own, cap, *(int(k) for k in grid)})


def _stop_at(estimator: Any, algorithm: str, when: float) -> dict[str, Any]:
    """Make ``estimator`` (a booster of :data:`STAGED`) end its fit, keeping the rounds made,
    once :func:`time.monotonic` passes ``when``: the fit parameters that do it (LightGBM's
    and CatBoost's callbacks), or none (XGBoost's, set on the estimator)."""
    if algorithm == "lightgbm":
        from lightgbm.callback import EarlyStopException

        def lightgbm_stop(env: Any) -> None:
            if time.monotonic() > when:
                raise EarlyStopException(env.iteration, env.evaluation_result_list or [])

        return {"callbacks": [lightgbm_stop]}
    if algorithm == "xgboost":
        from xgboost.callback import TrainingCallback

        class XGBoostStop(TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                return time.monotonic() > when

        estimator.estimator.set_params(callbacks=[XGBoostStop()])
        return {}

    class CatBoostStop:
        def after_iteration(self, info: Any) -> bool:
            return time.monotonic() <= when  # False ends the fit

    return {"callbacks": [CatBoostStop()]}


def more_rounds(record: TrialRecord, setup: Setup, *, seed: int, metric: str, seconds: float,
                cap: int = MAX_ROUNDS) -> Rounds | None:
    """``record``'s configuration fitted with up to ``cap`` rounds, ended after ``seconds``,
    on every training row of the search's hold-out split, and its validation ``metric`` at
    :func:`round_counts` of the rounds made (module docstring); None when it is not a booster
    read staged or it made no more rounds than its own. A failed fit raises
    :class:`~metabo.exceptions.EvaluationError`."""
    from sklearn.base import clone

    from metabo.evaluation.factories import registry_factory
    from metabo.evaluation.preprocessing import make_pipeline

    name = rounds_name(record.algorithm)
    if name is None or cap <= int(record.params[name]):
        return None
    own = int(record.params[name])
    began = time.monotonic()
    protocol = replace(setup.protocol, max_train=None)  # type: ignore[type-var]
    split = protocol.splits(setup.data, seed)[0]
    needs, estimator = registry_factory(record.algorithm, {**record.params, name: cap}, seed)
    pipeline = make_pipeline(needs, setup.data, clone(estimator, safe=False))
    codes = class_codes(setup.data)
    data = setup.data.X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pipeline.fit(data.iloc[split.train_idx], codes[split.train_idx],
                         **{f"model__{k}": v for k, v in _stop_at(pipeline[-1], record.algorithm,
                                                                   began + seconds).items()})
        except Exception as e:
            raise EvaluationError(f"{record.algorithm} with {cap} rounds failed to fit: {describe(e)}") from e
        made = _fitted_rounds(pipeline[-1], cap)
        if made <= own:
            return None
        X = pipeline[:-1].transform(data.iloc[split.valid_idx])
        estimator, truth = pipeline[-1], codes[split.valid_idx]
        score, staged, n_classes = get_metric(metric), STAGED[record.algorithm], len(class_labels(setup.data))
        values, probabilities = {}, {}
        for k in round_counts(own, made):
            proba = np.asarray(estimator.predict_proba(X, **staged(k)), dtype=float)
            probabilities[k] = align_proba(proba, np.asarray(estimator.classes_), n_classes)
            values[k] = float(score(truth, probabilities[k]))
    best = min(values, key=lambda k: (values[k], k))
    return Rounds(name, own, best, values[own], values[best], split.n_train, time.monotonic() - began,
                  probabilities[best])


def boosted(record: TrialRecord, setup: Setup, *, seed: int, metric: str, clock: TimeBudget,
            seconds: Callable[[TrialRecord, int], float], refit_rows: int, every_rows: int) -> Rounds | None:
    """:func:`more_rounds` for the model's configuration ``record`` under ``clock``: its fit
    on the hold-out's training rows is given the seconds that leave time for the fits it
    decides, linear in the rows: the final fit on ``refit_rows`` rows (with the margin
    :data:`~metabo.optimizer.budget.FINAL_FIT_MARGIN`: the model depends on it) and the fit
    on ``every_rows`` rows (0: none; it is skipped when it would not fit). None, logged,
    when that time would not hold more rounds than the configuration's own (predicted by
    ``seconds(record, rows)``, with its margin) or the fit fails."""
    name = rounds_name(record.algorithm)
    if name is None or not setup.rungs:
        return None
    rows = replace(setup.protocol, max_train=None).splits(setup.data, seed)[0].n_train  # type: ignore[type-var]
    given = clock.left() / (1.0 + (FINAL_FIT_MARGIN * refit_rows + every_rows) / max(rows, 1))
    own = seconds(record, rows) / FINAL_FIT_MARGIN
    if given < MORE * own:
        logger.info("boosting rounds: %.1f s left give a fit of %.1f s, and trial %d's %d rounds take about %.1f s",
                    clock.left(), given, record.number, int(record.params[name]), own)
        return None
    try:
        rounds = more_rounds(record, setup, seed=seed, metric=metric, seconds=given)
    except EvaluationError as e:
        logger.warning("boosting rounds: trial %d's fit failed: %s", record.number, e)
        return None
    if rounds is not None:
        logger.info("boosting rounds of trial %d in %.1f s: %s%s", record.number, given, rounds.describe(),
                    "" if rounds.gained else " (its own kept)")
    return rounds


def _fitted_rounds(estimator: Any, cap: int) -> int:
    """The rounds ``estimator`` holds (``cap``, or fewer when a library stopped early)."""
    inner = getattr(estimator, "estimator_", estimator)  # EncodedLabelsClassifier's library model
    if hasattr(inner, "get_booster"):  # XGBoost's
        return max(min(int(inner.get_booster().num_boosted_rounds()), cap), 1)
    for attribute in ("n_estimators_", "tree_count_"):
        if (n := getattr(inner, attribute, None)) is not None:
            return max(min(int(n), cap), 1)
    return cap


__all__ = ["GRID", "MORE", "STAGED", "Rounds", "boosted", "more_rounds", "round_counts", "rounds_name"]
