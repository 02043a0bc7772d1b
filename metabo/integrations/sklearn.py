"""``MetaSearchCV``: scikit-learn's ``RandomizedSearchCV``, its candidates proposed by
metabo's strategies and warm-started from a knowledge base.

Each of ``n_iter`` trials is asked of a :class:`~metabo.optimizer.Optimizer`, evaluated by
cross-validation on the same splits, and told its loss ``1 - mean_test_score`` (the error
rate for accuracy). ``cv_results_`` has the keys and the semantics of
``RandomizedSearchCV``'s (it is formatted by the same base class); the best candidate is
refitted on all the data.

With ``kb`` the data ``(X, y)`` is stored with its meta-features (so that warm starts
find the nearest past tasks), the search is a session and every trial one of its runs;
the warm-start strategies (``knn``, ``rgpe``, ``rlgp``, ``scot``) read the other tasks'
runs. Without ``kb`` (the default) nothing is read or written: a knowledge base is
never opened implicitly.

``ensemble="auto"`` (default) or ``k``: post-hoc ensemble selection over the trials'
out-of-fold class probabilities, as ``metabo tune`` does by default (the same
:class:`~metabo.ensembles.library.OutOfFoldLibrary` and
:class:`~metabo.ensembles.selection.PostHocSelection`: Caruana et al. 2004's selection
with replacement, at most ``k`` picks in each of 20 bags of half the library, the bags'
weights averaged, so the result can hold more than ``k`` distinct members), then, with ``ensemble_guard``
(default), :func:`~metabo.ensembles.guard.guarded_ensemble`: the single best candidate is
kept unless the ensemble's cross-validated gain over it exceeds one standard error, and
the members are combined by averaged probabilities or by vote, whichever loses less out
of sample. ``best_estimator_`` is the result refitted on all the data (an
:class:`~metabo.ensembles.model.EnsembleModel` under CASH, in a
:class:`~metabo.integrations._sklearn_cash.CASHClassifier`; a scikit-learn
``VotingClassifier``, soft or hard, otherwise); ``ensemble_weights_`` maps candidate
indices to weights and ``ensemble_decision_`` is the guard's
:class:`~metabo.ensembles.guard.GuardDecision`. When the guard keeps the single best,
``best_estimator_`` is that candidate alone, as without an ensemble. ``"auto"`` is
``k = 50`` when an ensemble can be formed (the estimator has ``predict_proba``, or the
search is CASH, and the cv's test folds partition the rows), no ensemble otherwise;
``ensemble_note_`` says which and why. ``ensemble=None`` turns it off.
"""

from __future__ import annotations

import logging
import numbers
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone, is_classifier
from sklearn.ensemble import VotingClassifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import _safe_indexing, check_random_state, get_tags, indexable
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from metabo.ensembles.library import ENSEMBLE_SIZE, OutOfFoldLibrary
from metabo.evaluation.metrics import align_proba
from metabo.evaluation.runner import describe
from metabo.exceptions import InputDataError
from metabo.integrations._sklearn_cash import CASHClassifier
from metabo.integrations._sklearn_space import TunedSpace, tuned_space
from metabo.strategies.names import AUTO, COLD_STRATEGIES, WARM_STRATEGIES

logger = logging.getLogger(__name__)

#: scoring -> the knowledge base's metric equal to ``1 - score`` (others: ``one_minus_<scoring>``)
KB_METRICS = {None: "error_rate", "accuracy": "error_rate", "balanced_accuracy": "balanced_error_rate",
              "roc_auc": "one_minus_auc", "roc_auc_ovr": "one_minus_auc"}


class MetaSearchCV(BaseSearchCV):
    """Hyperparameter (or CASH) search by metabo's strategies, scikit-learn style.

    Args:
        estimator: the classifier to tune; None tunes the algorithm too (CASH, with the
            project's estimators and preprocessing, :mod:`metabo.space.algorithms`).
        search_space: see :mod:`metabo.integrations._sklearn_space` (a dict like
            ``RandomizedSearchCV``'s ``param_distributions``, a SearchSpace or a
            ConfigSpace space; None or ``"cash"`` without an estimator).
        kb: a :class:`~metabo.kb.store.KnowledgeBase` or the path of one (a path keeps the
            search cloneable and picklable); None: no warm start, nothing recorded.
        strategy: ``warm``, ``knn``, ``rgpe``, ``rlgp``, ``scot`` (warm, need ``kb``),
            ``random``, ``gp``, ``gp-dense``, ``gp-per-algorithm``; None or ``auto``: the
            default warm start ``warm`` when ``kb`` holds other tasks' runs for the space,
            else ``gp`` (:func:`~metabo.tuning.registry.resolve_strategy`, logged with why).
        n_iter: the number of candidates (trials).
        cv, scoring, refit, n_jobs, error_score, return_train_score: as in
            ``RandomizedSearchCV`` (one scorer; ``n_jobs`` runs a candidate's folds in
            parallel, candidates are sequential).
        ensemble: ``"auto"`` (default), the size limit of each bag's post-hoc selection, or
            None (no ensemble); module docstring.
        ensemble_guard: with ``ensemble``, keep the single best candidate unless the
            ensemble's cross-validated gain is beyond its noise (module docstring).
        random_state: seeds the suggestions (and the CASH estimators); an int gives the
            same ``cv_results_`` scores every time.
        dataset_name: the name the data is stored under in ``kb`` (default: from its
            content fingerprint).

    Fitted attributes: those of ``RandomizedSearchCV`` (``cv_results_``, ``best_index_``,
    ``best_score_``, ``best_params_``, ``best_estimator_``, ``scorer_``, ``n_splits_``,
    ``refit_time_``, ``multimetric_``), ``ensemble_note_``, ``ensemble_weights_`` and
    ``ensemble_combine_`` (with an ensemble; ``ensemble_decision_`` with the guard too),
    ``session_id_`` and ``dataset_id_`` (with ``kb``).
    """

    def __init__(self, estimator: Any = None, search_space: Any = None, *, kb: Any = None,
                 strategy: str | None = None, n_iter: int = 10, cv: Any = 5, scoring: Any = None,
                 refit: bool | Callable[..., int] = True, ensemble: int | str | None = "auto",
                 ensemble_guard: bool = True,
                 random_state: Any = None, n_jobs: int | None = None, error_score: Any = np.nan,
                 return_train_score: bool = False, dataset_name: str | None = None) -> None:
        self.estimator = estimator
        self.search_space = search_space
        self.kb = kb
        self.strategy = strategy
        self.n_iter = n_iter
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.ensemble = ensemble
        self.ensemble_guard = ensemble_guard
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.dataset_name = dataset_name

    def __sklearn_tags__(self) -> Any:
        if self.estimator is None:
            return CASHClassifier().__sklearn_tags__()
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = get_tags(self.estimator).input_tags.allow_nan  # the folds fit the estimator
        tags.target_tags.multi_output = False  # one label per row: the metrics and ensembles assume it
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_label = False
        return tags

    # ------------------------------------------------------------------ checks
    def _checked(self) -> tuple[TunedSpace, str]:
        """The space and the strategy name, after every check that needs no data."""
        n_iter, ensemble = self.n_iter, self.ensemble
        if isinstance(n_iter, bool) or not isinstance(n_iter, numbers.Integral) or n_iter < 1:
            raise InputDataError(f"n_iter must be a positive integer, got {n_iter!r}")
        if ensemble is not None and ensemble != "auto" and (
                isinstance(ensemble, bool) or not isinstance(ensemble, numbers.Integral) or ensemble < 1):
            raise InputDataError(f"ensemble must be 'auto', None or a positive integer (each bag's selection size), "
                                 f"got {ensemble!r}")
        if not (self.scoring is None or isinstance(self.scoring, str) or callable(self.scoring)):
            raise InputDataError("MetaSearchCV optimizes one scorer: pass a scorer name or callable, not "
                                 f"{type(self.scoring).__name__}")
        if not (isinstance(self.refit, bool) or callable(self.refit)):
            raise InputDataError(f"refit must be True, False or a callable, got {self.refit!r}")
        if not (self.error_score == "raise" or isinstance(self.error_score, numbers.Real)):
            raise InputDataError(f"error_score must be 'raise' or a number, got {self.error_score!r}")
        if self.estimator is not None and not is_classifier(self.estimator):
            raise InputDataError(f"MetaSearchCV tunes classifiers; {type(self.estimator).__name__} is not one")
        strategy = self.strategy if self.strategy is not None else AUTO
        if strategy not in (AUTO, *WARM_STRATEGIES, *COLD_STRATEGIES):
            raise InputDataError(f"unknown strategy {strategy!r}; use {AUTO}, one of {', '.join(WARM_STRATEGIES)} "
                                 f"(warm starts, with kb) or {', '.join(COLD_STRATEGIES)}")
        if strategy in WARM_STRATEGIES and self.kb is None:
            raise InputDataError(f"strategy {strategy!r} warm-starts from a knowledge base: pass kb")
        space = tuned_space(self.estimator, self.search_space)
        if ensemble not in (None, "auto") and not space.cash and not hasattr(self.estimator, "predict_proba"):
            raise InputDataError(f"ensemble needs class probabilities; {type(self.estimator).__name__} has no "
                                 "predict_proba")
        return space, strategy

    def _candidate(self, space: TunedSpace, params: dict[str, Any], seed: int) -> Any:
        """An unfitted estimator for a candidate's parameters (``cv_results_['params']``)."""
        if space.cash:
            params = dict(params)
            return CASHClassifier([(params.pop("algorithm"), params)], seed=seed)
        return clone(self.estimator).set_params(**clone(params, safe=False))

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, groups: Any = None) -> MetaSearchCV:
        """Run the search on ``(X, y)`` and refit the best candidate (or the ensemble)."""
        from metabo.integrations._sklearn_session import open_search

        space, strategy = self._checked()
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        rs = self.random_state
        seed = int(rs) if isinstance(rs, numbers.Integral) else int(check_random_state(rs).randint(2**31 - 1))
        scorer = check_scoring(self.estimator if self.estimator is not None else CASHClassifier(), self.scoring)
        splits = list(check_cv(self.cv, y, classifier=True).split(X, y, groups))
        self.n_splits_ = len(splits)
        ensemble, self.ensemble_note_ = self._ensemble_size(space, splits, len(y))
        n_iter, size = int(self.n_iter), space.size()
        if size is not None and size < n_iter:  # as RandomizedSearchCV does with lists only
            warnings.warn(f"the search space has {size} configurations, fewer than n_iter={n_iter}; running "
                          f"{size} candidates", UserWarning, stacklevel=2)
            n_iter = size
        metric = KB_METRICS.get(self.scoring, f"one_minus_{self.scoring if isinstance(self.scoring, str) else 'score'}")
        candidates, outs, oof, failures = [], [], {}, []
        with open_search(self, space, X, y, strategy=strategy, metric=metric, seed=seed) as opt:
            for _ in range(n_iter):
                trial = opt.ask()
                params = space.params(trial.algorithm, trial.params)
                folds = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_fold)(self._candidate(space, params, seed), X, y, train, test, scorer,
                                       self.error_score, self.return_train_score, ensemble is not None)
                    for train, test in splits)
                candidates.append(params)
                outs.extend(folds)
                errors = [f["error"] for f in folds if f["error"] is not None]
                fit_seconds, score_seconds = sum(f["fit_time"] for f in folds), sum(f["score_time"] for f in folds)
                if errors:
                    failures.append(next(f["exception"] for f in folds if f["exception"] is not None))
                    opt.tell(trial, None, status="crash", message=errors[0], fit_seconds=fit_seconds,
                             predict_seconds=score_seconds)
                    continue
                score = float(np.mean([f["test_scores"] for f in folds]))
                opt.tell(trial, 1.0 - score, fit_seconds=fit_seconds, predict_seconds=score_seconds)
                logger.info("trial %d %s: score %.4g", trial.number, params, score)
                if ensemble is not None:
                    oof[trial.number] = (1.0 - score, _out_of_fold(folds, splits, classes, len(y)))
            self.session_id_, self.dataset_id_ = opt.session_id, opt.dataset_id
        if len(failures) == n_iter:  # nothing to select: the estimator's own error (data, parameters)
            failures[0].add_note(f"MetaSearchCV: all {n_iter} candidates failed; this is the first error")
            raise failures[0]
        if failures:
            warnings.warn(f"{len(failures)} of {n_iter} candidates failed (score {self.error_score}); the "
                          f"first error: {describe(failures[0])}", FitFailedWarning, stacklevel=2)
        self.cv_results_ = self._format_results(candidates, self.n_splits_, outs)
        self.multimetric_ = False
        self.scorer_ = scorer
        self.best_index_ = int(self._select_best_index(self.refit, "score", self.cv_results_))
        if not callable(self.refit):
            self.best_score_ = float(self.cv_results_["mean_test_score"][self.best_index_])
        self.best_params_ = candidates[self.best_index_]
        if ensemble is not None:
            self._select_ensemble(oof, codes, len(classes), seed, ensemble)
        if self.refit:
            start = time.perf_counter()
            self.best_estimator_ = self._refitted(space, candidates, seed, X, y, ensemble is not None)
            self.refit_time_ = time.perf_counter() - start
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        return self

    def _ensemble_size(self, space: TunedSpace, splits: list[tuple[np.ndarray, np.ndarray]], n: int
                       ) -> tuple[int | None, str]:
        """Each bag's selection size (None: no ensemble) and why (module docstring); an
        ensemble asked for by size that cannot be formed is an error."""
        if self.ensemble is None:
            return None, "no ensemble: ensemble=None"
        partition = np.array_equal(np.sort(np.concatenate([t for _, t in splits])), np.arange(n))
        if self.ensemble != "auto":
            if not partition:
                raise InputDataError("ensemble needs out-of-fold predictions of every row: use a cv whose test "
                                     "folds partition the data (KFold, StratifiedKFold, ...)")
            return int(self.ensemble), ""
        if not space.cash and not hasattr(self.estimator, "predict_proba"):
            return None, f"no ensemble: {type(self.estimator).__name__} has no predict_proba"
        if not partition:
            return None, "no ensemble: the cv's test folds do not partition the rows (no out-of-fold predictions)"
        return ENSEMBLE_SIZE, ""

    def _select_ensemble(self, oof: dict[int, tuple[float, np.ndarray]], codes: np.ndarray, n_classes: int,
                         seed: int, size: int) -> None:
        """``ensemble_weights_``, ``ensemble_combine_`` (and ``ensemble_decision_``) from the
        candidates' losses and out-of-fold probabilities ``oof`` (module docstring)."""
        library = OutOfFoldLibrary(codes, n_classes, metric=_selection_metric(self.scoring), ensemble_size=size,
                                   max_models=max(len(oof), 1), seed=seed)
        for number in sorted(oof):
            library.add(number, *oof[number])
        if not self.ensemble_guard:
            self.ensemble_weights_ = {int(k): float(w) for k, w in library.selection.ensemble().items()}
            self.ensemble_combine_ = "average"
            return
        choice = library.choose(self.best_index_ if self.best_index_ in oof else None)
        if choice is None:  # one candidate succeeded: nothing to ensemble
            self.ensemble_weights_, self.ensemble_combine_ = {int(self.best_index_): 1.0}, "average"
            self.ensemble_note_ = f"{len(library)} candidate(s) with out-of-fold predictions: nothing to ensemble"
            return
        self.ensemble_weights_ = {int(k): float(w) for k, w in choice.weights.items()}
        self.ensemble_combine_, self.ensemble_decision_ = choice.combine, choice.decision
        self.ensemble_note_ = choice.decision.summary
        logger.info("ensemble guard: %s", choice.decision.summary)

    def _refitted(self, space: TunedSpace, candidates: list[dict[str, Any]], seed: int, X: Any, y: Any,
                  ensembled: bool) -> Any:
        """The best candidate, or the selected ensemble, fitted on all of ``(X, y)``."""
        decision = getattr(self, "ensemble_decision_", None)
        if not ensembled or (decision is not None and decision.kept == "single") or len(self.ensemble_weights_) < 2:
            return self._candidate(space, candidates[self.best_index_], seed).fit(X, y)
        members, weights = list(self.ensemble_weights_), list(self.ensemble_weights_.values())
        if space.cash:
            configs = [self._candidate(space, candidates[i], seed).members[0] for i in members]
            return CASHClassifier(configs, weights, seed=seed, combine=self.ensemble_combine_).fit(X, y)
        estimators = [(f"candidate_{i}", self._candidate(space, candidates[i], seed)) for i in members]
        voting = "soft" if self.ensemble_combine_ == "average" else "hard"
        return VotingClassifier(estimators, voting=voting, weights=weights).fit(X, y)


def _fit_fold(estimator: Any, X: Any, y: np.ndarray, train: np.ndarray, test: np.ndarray, scorer: Any,
              error_score: Any, train_score: bool, keep_proba: bool) -> dict[str, Any]:
    """Fit on ``train``, score on ``test`` (and ``train``), keep the test probabilities:
    the fields ``BaseSearchCV._format_results`` reads, with ``error`` and ``proba``."""
    X_train, X_test = _safe_indexing(X, train), _safe_indexing(X, test)
    y_train, y_test = y[train], y[test]
    out: dict[str, Any] = {"fit_time": 0.0, "score_time": 0.0, "test_scores": np.nan, "train_scores": np.nan,
                           "error": None, "exception": None, "proba": None, "model_classes": None}
    start = time.perf_counter()
    try:
        estimator.fit(X_train, y_train)
        out["fit_time"] = time.perf_counter() - start
        start = time.perf_counter()
        out["test_scores"] = float(scorer(estimator, X_test, y_test))
        if train_score:
            out["train_scores"] = float(scorer(estimator, X_train, y_train))
        out["score_time"] = time.perf_counter() - start
        if keep_proba:
            out["proba"], out["model_classes"] = estimator.predict_proba(X_test), estimator.classes_
    except Exception as e:
        if error_score == "raise":
            raise
        out.update(test_scores=error_score, train_scores=error_score, error=describe(e), exception=e, proba=None)
        logger.debug("fit failed: %s", out["error"])
    return out


def _out_of_fold(folds: list[dict[str, Any]], splits: list[tuple[np.ndarray, np.ndarray]], classes: np.ndarray,
                 n: int) -> np.ndarray:
    """(n, K) a candidate's out-of-fold class probabilities, columns in ``classes`` order."""
    P = np.zeros((n, len(classes)))
    for fold, (_, test) in zip(folds, splits):
        codes = np.searchsorted(classes, fold["model_classes"])
        P[test] = align_proba(fold["proba"], codes, len(classes))
    return P


def _selection_metric(scoring: Any) -> str:
    """The metric ensemble selection minimizes: the one ``scoring`` is ``1 -`` of (or the
    log loss for ``neg_log_loss``), else the error rate."""
    if scoring == "neg_log_loss":
        return "log_loss"
    if scoring in KB_METRICS:
        return KB_METRICS[scoring]
    logger.warning("ensemble selection has no metric equal to scoring=%r; it minimizes the error rate", scoring)
    return "error_rate"


__all__ = ["MetaSearchCV"]
