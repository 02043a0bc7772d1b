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
:mod:`metabo.evaluation.preprocessing`): their own categorical handling (the ``native``
encoding, :class:`EncodedLabelsClassifier`'s ``categorical``) did not do better on the
KEEL tables with nominal features (``scripts/bench_native_categorical.py``), so it is
available, not the default. Both see the class labels through
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
    with probability 1 and fits nothing.

    ``categorical``: the columns of ``X`` that hold nominal codes (``0..``, -1 for a
    category unseen in training; :func:`metabo.evaluation.preprocessing.tell_nominal`),
    given to the library's own categorical handling: XGBoost's categorical splits
    (``enable_categorical`` with ``feature_types``, an unseen category missing) and
    CatBoost's ordered target statistics (``cat_features``, the codes as integers)."""

    def __init__(self, estimator: Any = None, categorical: tuple[int, ...] = ()) -> None:
        self.estimator = estimator
        self.categorical = categorical

    def fit(self, X: Any, y: Any, **fit_params: Any) -> EncodedLabelsClassifier:
        """Fit the wrapped estimator on the labels encoded as 0..k-1 (categorical columns passed
        natively); returns self."""
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) < 2:
            self.estimator_ = None
            return self
        estimator = clone(self.estimator)
        cats = list(self.categorical)
        if cats and _library(estimator) == "xgboost":
            d = np.shape(X)[1]
            estimator.set_params(enable_categorical=True, feature_types=["c" if j in cats else "q" for j in range(d)])
        elif cats and _library(estimator) == "catboost":
            fit_params = {**fit_params, "cat_features": cats}
        self.estimator_ = estimator.fit(self.features(X), codes, **fit_params)
        return self

    def features(self, X: Any) -> Any:
        """``X`` as the library takes categories: XGBoost a float matrix with an unseen
        category (-1) missing, CatBoost a frame whose nominal columns are integers."""
        cats = list(self.categorical)
        if not cats:
            return X
        library = _library(self.estimator)
        if library == "xgboost":
            X = np.array(X, dtype=float)
            block = X[:, cats]
            block[block < 0] = np.nan
            X[:, cats] = block
            return X
        if library == "catboost":
            import pandas as pd

            frame = pd.DataFrame(np.asarray(X, dtype=float))
            frame[cats] = frame[cats].astype(np.int64)
            return frame
        return X

    def predict_proba(self, X: Any, **kwargs: Any) -> np.ndarray:
        """Rows sum to 1; columns follow ``classes_``. ``kwargs`` go to the library's
        ``predict_proba`` (the rounds it predicts with, :mod:`metabo.tuning.rounds`)."""
        if self.estimator_ is None:
            return np.ones((len(X), 1))
        return np.asarray(self.estimator_.predict_proba(self.features(X), **kwargs), dtype=float)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class per row, in the original labels."""
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


def _library(estimator: Any) -> str:
    """The top-level package of ``estimator``'s class (``xgboost``, ``catboost``, ...)."""
    return type(estimator).__module__.split(".", 1)[0]


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
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_xgboost, rounds="n_estimators",
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
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_catboost, rounds="iterations",
    ),
)
