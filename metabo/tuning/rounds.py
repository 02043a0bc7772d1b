"""More boosting rounds for a booster final model, chosen on the validation rows.

The default space searches at most 200 boosting rounds (``metabo.space.algorithms.boosting``:
so that one trial stays fast), and on a large table successive halving compares
configurations on a few thousand rows (:mod:`metabo.optimizer.halving`), where a few hundred
rounds are what the data support. The same configuration keeps gaining from rounds the search
never measured, the more so on more rows: the number of rounds ``M`` is the complexity that grows with
the data, and it is chosen on held-out rows (Friedman 2001, "Greedy function approximation",
sec. 5: for a given shrinkage ``M`` is estimated by monitoring the prediction risk on a
validation sample; Zhang & Yu 2005, early stopping as boosting's regularization, consistent as
the sample grows). AutoGluon and the libraries' own early stopping choose it the same way.

:func:`more_rounds`: the selected configuration is fitted with up to ``cap`` rounds on every
training row of the search's hold-out split (not only successive halving's first rung's), or
of each fold of its cross-validation (every selection row then has its out-of-fold value),
ended by the time it is given, and its validation metric read at a geometric grid of round counts: the first ``k``
rounds of a fitted booster are the booster of ``k`` rounds, and its scores are its bias plus
its rounds' (Friedman 2001, eq. 10), so every count is read in one pass over the trees
(:func:`raw_scores`). The count of lowest validation value is kept when it beats the
configuration's own count read on the same fit; the final model then has that many rounds
(:func:`~metabo.space.algorithms.normalize_params` admits them up to
:data:`~metabo.space.algorithms.spec.MAX_ROUNDS`). LightGBM, XGBoost, CatBoost and
scikit-learn's histogram boosting are read: the algorithms whose spec names their rounds
(:attr:`~metabo.space.algorithms.spec.AlgorithmSpec.rounds`); scikit-learn's
``GradientBoostingClassifier`` names none (a round fits one tree per class, in Python).

Deviation: the count is chosen on the validation rows that also selected the configuration, so
its value is optimistic by the choice among the grid's counts, as any early-stopped booster's.
CatBoost's two-class fits take one Newton step per leaf up to about 100 iterations and ten
from 200 (its ``leaf_estimation_iterations``, chosen from the iterations): there the counts
read below that are the first rounds of the long fit, not fits of that many rounds.
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
from metabo.evaluation.protocols import Split, class_codes, class_labels
from metabo.evaluation.runner import describe
from metabo.exceptions import EvaluationError
from metabo.optimizer.budget import FINAL_FIT_MARGIN, TimeBudget
from metabo.optimizer.history import TrialRecord
from metabo.space.algorithms import get_algorithm
from metabo.space.algorithms.boosting import EncodedLabelsClassifier
from metabo.space.algorithms.spec import MAX_ROUNDS
from metabo.tuning.session import Setup

logger = logging.getLogger(__name__)

#: the round counts read between the configuration's own and the rounds made (geometric)
GRID = 12
#: more rounds are read only when their fit is given at least this many times the
#: configuration's own fit's predicted seconds (a fit that makes no more rounds than its own
#: reads none)
MORE = 1.0


def rounds_name(algorithm: str) -> str | None:
    """The boosting-rounds hyperparameter of ``algorithm``
    (:attr:`~metabo.space.algorithms.spec.AlgorithmSpec.rounds`), else None."""
    return get_algorithm(algorithm).rounds


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
    #: the rounds each split's fit made (the fewest: a later split makes at most those before)
    made: int
    #: the seconds of the splits' fits (``seconds`` less the reading)
    fitting: float
    #: the validation rows' class probabilities at ``best`` rounds (the library's entry for
    #: the model, :meth:`~metabo.ensembles.library.OutOfFoldLibrary.replaced`)
    probabilities: np.ndarray = field(repr=False, compare=False)
    #: the splits read: the hold-out (1) or the folds of cross-validation, ``rows`` in each
    folds: int = 1

    @property
    def gained(self) -> bool:
        """More rounds than the configuration's own, with a lower validation value."""
        return self.best > self.own and self.best_value < self.own_value

    @property
    def kept(self) -> int:
        """The model's rounds: ``best`` when they gained, else its own."""
        return self.best if self.gained else self.own

    def params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with the rounds kept (its own when nothing was gained)."""
        return {**params, self.name: self.kept}

    def fit_seconds(self, rows: int) -> float:
        """The predicted seconds of a fit of the rounds kept on ``rows`` rows: the splits'
        fits' seconds per round and training row, times both (a round is a pass over the rows,
        Friedman 2001, Algorithm 1; the fit is its rounds). An earlier split may have made
        more rounds than ``made``: an overestimate."""
        return self.fitting * (self.kept / max(self.made, 1)) * (rows / max(self.rows * self.folds, 1))

    def describe(self) -> str:
        """One line for the summary."""
        return (f"{self.best} boosting rounds ({self.name}) where the configuration has {self.own}: validation "
                f"{self.best_value:.4g} against {self.own_value:.4g} on its {self.rows} training rows"
                f"{'' if self.folds == 1 else f' in each of {self.folds} folds'} ({self.seconds:.1f} s)")


def round_counts(own: int, cap: int, points: int = GRID) -> list[int]:
    """``own``, ``cap`` and about ``points`` counts between them, geometrically spaced."""
    grid = np.unique(np.round(np.geomspace(own, cap, num=max(points, 2))).astype(int))
    return sorted({own, cap, *(int(k) for k in grid)})


def _stop_at(estimator: Any, algorithm: str, when: float) -> dict[str, Any]:
    """Make ``estimator`` (LightGBM's, XGBoost's or CatBoost's) end its fit, keeping the
    rounds made, once :func:`time.monotonic` passes ``when``: the fit parameters that do it
    (LightGBM's and CatBoost's callbacks), or none (XGBoost's, set on the estimator)."""
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


#: scikit-learn's histogram boosting has no callback: it is fitted in chunks of rounds
#: (``warm_start``), each this many times the rounds made, while the next one's predicted
#: end (the seconds per round so far) is before the clock's
CHUNK = 1.5


def _fit_rounds(pipeline: Any, algorithm: str, name: str, own: int, cap: int, X: Any, y: np.ndarray,
                when: float) -> int:
    """Fit ``pipeline`` (its model has ``cap`` rounds) on ``X``, ``y``, ended once
    :func:`time.monotonic` passes ``when`` (LightGBM, XGBoost, CatBoost: by their callbacks;
    scikit-learn's histogram boosting: in chunks of :data:`CHUNK`, from ``own`` rounds):
    the rounds it holds."""
    if algorithm != "hist_gradient_boosting":
        stop = _stop_at(pipeline[-1], algorithm, when)
        pipeline.fit(X, y, **{f"model__{k}": v for k, v in stop.items()})
        return _fitted_rounds(pipeline[-1], cap)
    began = time.monotonic()
    features, model = pipeline[:-1].fit_transform(X, y), pipeline[-1]
    made = min(own, cap)
    model.set_params(warm_start=True, **{name: made}).fit(features, y)
    while made < cap:
        step = min(cap, max(made + 1, int(made * CHUNK)))
        if time.monotonic() + (time.monotonic() - began) / made * (step - made) > when:
            break
        model.set_params(**{name: step}).fit(features, y)
        made = step
    return made


def _segment(estimator: Any, algorithm: str, X: Any, start: int, end: int) -> np.ndarray:
    """The raw scores (log-odds; per class before the softmax) of the rounds
    ``start..end-1`` of a fitted LightGBM, XGBoost or CatBoost model, plus its bias (its
    initial score) where the library adds it to every range."""
    inner = _library_model(estimator)
    if algorithm == "lightgbm":
        return np.asarray(inner.booster_.predict(X, start_iteration=start, num_iteration=end - start,
                                                 raw_score=True), dtype=float)
    if algorithm == "xgboost":
        return np.asarray(inner.predict(X, output_margin=True, iteration_range=(start, end)), dtype=float)
    return np.asarray(inner.predict(X, prediction_type="RawFormulaVal", ntree_start=start, ntree_end=end),
                      dtype=float)


def raw_scores(estimator: Any, algorithm: str, X: Any, counts: list[int]) -> dict[int, np.ndarray]:
    """The raw scores of ``estimator``'s first ``k`` rounds on ``X``, for each ``k`` of the
    increasing ``counts``, in one pass over its trees: a boosted model's score is its bias
    plus the sum of its rounds' (Friedman 2001, eq. 10), so the scores of ``k`` rounds are
    those of the previous count plus the rounds between. The libraries predict a range of
    rounds (LightGBM's ``start_iteration``, XGBoost's ``iteration_range``, CatBoost's
    ``ntree_start``) with the bias added or not (it is folded into LightGBM's first tree):
    ``s(0,1) + s(1,2) - s(0,2)`` is what a later range carries of it, and is taken off.
    scikit-learn's histogram boosting gives them round by round
    (``staged_decision_function``)."""
    if algorithm == "hist_gradient_boosting":
        wanted, scores = set(counts), {}
        for k, raw in enumerate(estimator.staged_decision_function(X), start=1):
            if k in wanted:
                scores[k] = np.array(raw, dtype=float)
            if k >= counts[-1]:
                break
        return scores
    if isinstance(estimator, EncodedLabelsClassifier):  # the features as its library takes them
        X = estimator.features(X)
    bias = (_segment(estimator, algorithm, X, 0, 1) + _segment(estimator, algorithm, X, 1, 2)
            - _segment(estimator, algorithm, X, 0, 2))
    scores, total, start = {}, None, 0
    for k in counts:
        part = _segment(estimator, algorithm, X, start, k)
        total = part if total is None else total + part - bias
        scores[k], start = total, k
    return scores


def link(raw: np.ndarray) -> np.ndarray:
    """Class probabilities from raw scores: the logistic function of a two-class model's
    log-odds (a vector), the softmax of a multi-class model's scores (one column per class)."""
    from scipy.special import expit, softmax

    raw = np.asarray(raw, dtype=float)
    if raw.ndim == 1 or raw.shape[1] == 1:
        p = expit(raw.reshape(-1))
        return np.column_stack([1.0 - p, p])
    return np.asarray(softmax(raw, axis=1))


#: the rows on which the probabilities of the rounds made, read by :func:`raw_scores` and
#: :func:`link`, are checked against the model's own ``predict_proba``
CHECKED_ROWS = 64


def more_rounds(record: TrialRecord, setup: Setup, *, seed: int, metric: str, seconds: float,
                cap: int = MAX_ROUNDS, splits: list[Split] | None = None) -> Rounds | None:
    """``record``'s configuration fitted with up to ``cap`` rounds, ended after ``seconds``
    in all, on every training row of each of the search's ``splits`` (default:
    :func:`rounds_splits` for ``seed``: the hold-out, or every fold), and its validation
    ``metric`` on their validation rows together (the ensemble's selection rows,
    :func:`~metabo.ensembles.search.selection_rows`) at :func:`round_counts` of the rounds
    made, read in one pass (:func:`raw_scores`, module docstring). Each split's fit ends by
    its share of ``seconds`` and a later one makes at most the rounds of those before it.
    None when it is not a booster read or a fit made no more rounds than its own. A failed
    fit, or probabilities that are not the model's own (an objective whose link is not
    :func:`link`), raise :class:`~metabo.exceptions.EvaluationError`."""
    from sklearn.base import clone

    from metabo.ensembles.search import selection_rows
    from metabo.evaluation.factories import registry_factory
    from metabo.evaluation.preprocessing import make_pipeline

    name = rounds_name(record.algorithm)
    if name is None or cap <= int(record.params[name]):
        return None
    own = int(record.params[name])
    began = time.monotonic()
    splits = rounds_splits(setup, seed) if splits is None else splits
    codes, data, n_classes = class_codes(setup.data), setup.data.X, len(class_labels(setup.data))
    fitted, made = [], cap
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, split in enumerate(splits):
            needs, estimator = registry_factory(record.algorithm, {**record.params, name: made}, seed)
            pipeline = make_pipeline(needs, setup.data, clone(estimator, safe=False))
            try:
                made = _fit_rounds(pipeline, record.algorithm, name, own, made, data.iloc[split.train_idx],
                                   codes[split.train_idx], began + seconds * (i + 1) / len(splits))
            except Exception as e:
                raise EvaluationError(f"{record.algorithm} with {cap} rounds failed to fit: {describe(e)}") from e
            if made <= own:
                return None
            fitted.append(pipeline)
        fitting = time.monotonic() - began
        counts = round_counts(own, made)
        parts: dict[int, list[np.ndarray]] = {k: [] for k in counts}
        for pipeline, split in zip(fitted, splits, strict=True):
            X = pipeline[:-1].transform(data.iloc[split.valid_idx])
            estimator = pipeline[-1]
            classes = np.asarray(estimator.classes_)
            scores = raw_scores(estimator, record.algorithm, X, counts)
            for k in counts:
                parts[k].append(align_proba(link(scores[k]), classes, n_classes))
        # the last split's model has exactly the rounds made: its own probabilities check the reading
        head = X[:CHECKED_ROWS] if isinstance(X, np.ndarray) else X.iloc[:CHECKED_ROWS]
        own_proba = align_proba(estimator.predict_proba(head), classes, n_classes)
        if not np.allclose(parts[made][-1][:CHECKED_ROWS], own_proba, atol=1e-6):
            raise EvaluationError(f"{record.algorithm}'s rounds read from its raw scores are not its probabilities")
    probabilities = {k: np.concatenate(v) for k, v in parts.items()}
    truth, score = codes[selection_rows(splits)], get_metric(metric)
    values = {k: float(score(truth, p)) for k, p in probabilities.items()}
    best = min(values, key=lambda k: (values[k], k))
    return Rounds(name, own, best, values[own], values[best], rows=splits[0].n_train,
                  seconds=time.monotonic() - began, made=made, fitting=fitting,
                  probabilities=probabilities[best], folds=len(splits))


def rounds_splits(setup: Setup, seed: int) -> list[Split]:
    """The search's splits for ``seed`` with every training row (not only successive
    halving's first rung's): the rows the rounds are fitted and read on."""
    return replace(setup.protocol, max_train=None).splits(setup.data, seed)  # type: ignore[type-var]


def boosted(record: TrialRecord, setup: Setup, *, seed: int, metric: str, clock: TimeBudget,
            seconds: Callable[[TrialRecord, int], float], refit_rows: int, every_rows: int) -> Rounds | None:
    """:func:`more_rounds` for the model's configuration ``record`` under ``clock``: its fits
    on the splits' training rows (``n`` rows in all) are given the seconds ``g`` that leave
    time for the fits it decides, linear in the rows: the final fit on ``refit_rows`` rows
    (with the margin :data:`~metabo.optimizer.budget.FINAL_FIT_MARGIN`: the model depends on
    it) and the fit on ``every_rows`` rows (0: none; it is skipped when it would not fit),
    ``g (1 + (margin refit_rows + every_rows) / n)`` = the time left. None, logged, when that
    time would not hold more rounds than the configuration's own (predicted by
    ``seconds(record, rows)``, with its margin) or the fit fails."""
    name = rounds_name(record.algorithm)
    if name is None:
        return None
    splits = rounds_splits(setup, seed)
    rows = sum(s.n_train for s in splits)
    given = clock.left() / (1.0 + (FINAL_FIT_MARGIN * refit_rows + every_rows) / max(rows, 1))
    own = sum(seconds(record, s.n_train) for s in splits) / FINAL_FIT_MARGIN
    if given < MORE * own:
        logger.info("boosting rounds: %.1f s left give a fit of %.1f s, and trial %d's %d rounds take about %.1f s",
                    clock.left(), given, record.number, int(record.params[name]), own)
        return None
    try:
        rounds = more_rounds(record, setup, seed=seed, metric=metric, seconds=given, splits=splits)
    except EvaluationError as e:
        logger.warning("boosting rounds: trial %d's fit failed: %s", record.number, e)
        return None
    if rounds is not None:
        logger.info("boosting rounds of trial %d in %.1f s: %s%s", record.number, given, rounds.describe(),
                    "" if rounds.gained else " (its own kept)")
    return rounds


def lowest_read(read: Mapping[int, Rounds | None], best: int) -> int:
    """The model's trial among the search's ``best`` and the trials whose rounds were
    ``read``: when ``best``'s were read, the read trial of lowest validation value with its
    rounds (every read is measured on the same rows, :func:`rounds_splits`; a search resumed
    after a read may choose a new best that reads higher), else ``best``."""
    values = {k: r.best_value for k, r in read.items() if r is not None}
    return min(values, key=lambda k: (values[k], k)) if best in values else best


def _library_model(estimator: Any) -> Any:
    """The library's fitted model: :class:`~metabo.space.algorithms.boosting.EncodedLabelsClassifier`'s
    (XGBoost, CatBoost), or ``estimator`` itself (LightGBM, scikit-learn)."""
    return getattr(estimator, "estimator_", estimator)


def _fitted_rounds(estimator: Any, cap: int) -> int:
    """The rounds ``estimator`` holds (``cap``, or fewer when a library stopped early)."""
    inner = _library_model(estimator)
    if hasattr(inner, "get_booster"):  # XGBoost's
        return max(min(int(inner.get_booster().num_boosted_rounds()), cap), 1)
    for attribute in ("n_estimators_", "tree_count_"):
        if (n := getattr(inner, attribute, None)) is not None:
            return max(min(int(n), cap), 1)
    return cap


__all__ = ["CHECKED_ROWS", "CHUNK", "GRID", "MORE", "Rounds", "boosted", "rounds_splits", "link", "lowest_read",
           "more_rounds", "raw_scores", "round_counts", "rounds_name"]
