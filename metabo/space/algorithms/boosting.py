"""Gradient-boosting libraries beside LightGBM: XGBoost (Chen & Guestrin 2016) and CatBoost
(Prokhorenkova et al. 2018), with the ranges these papers and their tuning studies search
(Probst, Boulesteix & Bischl 2019, Table 1, for XGBoost; Prokhorenkova et al. 2018, sec. 6
and appendix, for CatBoost), trimmed as the other boosters here are so that one evaluation
stays fast: at most 200 trees or iterations (log scale), one thread.

- xgboost: the ``hist`` tree method (the fast one, as LightGBM's); ``n_estimators`` 10..200
  (log, default 100); ``max_depth`` 1..12 (default 6, XGBoost's); ``learning_rate``
  0.01..1 (log, default 0.3, XGBoost's ``eta``); ``subsample`` and ``colsample_bytree``
  0.5..1; ``min_child_weight`` 0.01..100 (log, default 1); ``reg_lambda`` 1e-3..1e3
  (log, default 1). Probst et al. search ``alpha`` too; it is left at 0 to keep the space
  at LightGBM's size.
- catboost: ``iterations`` 10..200 (log, default 100; CatBoost's own default of 1,000 is
  a minute on a few thousand rows on one thread); ``depth`` 2..8 (default 6; CatBoost's
  trees are symmetric, so a depth of 10 is 1,024 leaves in every tree, 4 s on 400 rows);
  ``learning_rate`` 0.01..1 (log, default 0.1: CatBoost otherwise derives one from the
  iterations and the data); ``l2_leaf_reg`` 1..10 (log, default 3) and
  ``bagging_temperature`` 0..1 (default 1), the ranges of Prokhorenkova et al.'s tuning.
  No files written, no output.

Both are given ordinal-encoded categories (as LightGBM is; the preprocessing step of
:mod:`metabo.evaluation.preprocessing`), and both see the class labels through
:class:`EncodedLabelsClassifier`: XGBoost requires the labels ``0..K-1`` and a training
part that misses a class (a fold of a rare class) would otherwise fail, and neither fits
a single class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from metabo.space.algorithms.spec import AlgorithmSpec, make_space
from metabo.space.hyperparameters import Float, Integer


class EncodedLabelsClassifier(ClassifierMixin, BaseEstimator):
    """Fits ``estimator`` on the labels' codes ``0..K-1`` of the classes present and maps
    its outputs back (``classes_`` are the labels); with one class present, predicts it
    with probability 1 and fits nothing."""

    def __init__(self, estimator: Any = None) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any, **fit_params: Any) -> EncodedLabelsClassifier:
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        self.estimator_ = None if len(self.classes_) < 2 else clone(self.estimator).fit(X, codes, **fit_params)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Rows sum to 1; columns follow ``classes_``."""
        if self.estimator_ is None:
            return np.ones((len(X), 1))
        return np.asarray(self.estimator_.predict_proba(X), dtype=float)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


def _xgboost(p: Mapping[str, Any], seed: int | None) -> Any:
    from xgboost import XGBClassifier

    return EncodedLabelsClassifier(XGBClassifier(**p, tree_method="hist", n_jobs=1, random_state=seed,
                                                 verbosity=0))


def _catboost(p: Mapping[str, Any], seed: int | None) -> Any:
    from catboost import CatBoostClassifier

    return EncodedLabelsClassifier(CatBoostClassifier(**p, thread_count=1, random_seed=seed, verbose=0,
                                                      allow_writing_files=False))


SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        "xgboost",
        make_space(
            "xgboost",
            Integer("n_estimators", 10, 200, log=True, default=100),
            Integer("max_depth", 1, 12, default=6),
            Float("learning_rate", 0.01, 1.0, log=True, default=0.3),
            Float("subsample", 0.5, 1.0, default=1.0),
            Float("colsample_bytree", 0.5, 1.0, default=1.0),
            Float("min_child_weight", 0.01, 100.0, log=True, default=1.0),
            Float("reg_lambda", 1e-3, 1e3, log=True, default=1.0),
        ),
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_xgboost,
    ),
    AlgorithmSpec(
        "catboost",
        make_space(
            "catboost",
            Integer("iterations", 10, 200, log=True, default=100),
            Integer("depth", 2, 8, default=6),
            Float("learning_rate", 0.01, 1.0, log=True, default=0.1),
            Float("l2_leaf_reg", 1.0, 10.0, log=True, default=3.0),
            Float("bagging_temperature", 0.0, 1.0, default=1.0),
        ),
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_catboost,
    ),
)
