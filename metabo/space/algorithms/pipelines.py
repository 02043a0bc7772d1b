"""Tensor-OBOE's pipelines as points of a space: ``pipeline_<algorithm>``.

Tensor-OBOE (Yang, Fan, Wu, Udell, KDD 2020, section 4 and its ``classification.json``)
evaluated 23,424 scikit-learn pipelines of five steps: imputer, encoder, standardizer,
dimensionality reducer, estimator. The estimators are OBOE's grid without kSVM, and each
of their settings is already a point of the CASH space (:func:`metabo.metadatasets.oboe.to_project`).
Here every estimator algorithm ``a`` it maps to gets a pipeline algorithm
``pipeline_<a>``: ``a``'s hyperparameters plus four step hyperparameters, each a
Categorical over Tensor-OBOE's options:

- ``imputer``: ``SimpleImputer(strategy=...)``: mean, median, most_frequent, constant (0);
- ``encoder``: ``onehot`` (its ``OneHotEncoder``) or ``ordinal`` (its ``None``: the nominal
  columns stay integer codes, as OpenML's numeric-coded data reached it);
- ``standardizer``: ``standard`` (``StandardScaler``) or ``none``;
- ``dim_reducer``: ``none``, ``pca_25`` / ``pca_50`` / ``pca_75`` (PCA keeping that share
  of the features), ``variance_threshold`` (``VarianceThreshold()``), ``kbest_25`` /
  ``kbest_50`` / ``kbest_75`` (``SelectKBest`` with its default ``f_classif``, keeping
  that share).

A pipeline is built as the project builds every model (the column transformer of
:mod:`metabo.evaluation.preprocessing`, here with the encoder the ``encoder`` step names
and no imputation or scaling of its own: :meth:`AlgorithmSpec.needs_for`), then
``imputer -> standardizer -> dim_reducer -> estimator``.

Deviations from Tensor-OBOE's code (``oboe/pipeline.py``, ``auto_learner.py`` of 2020):
its imputer runs first, on nominal codes too, where here a missing nominal value is its
own category (as for every model of the project), so the imputer acts on the numeric
columns and the encoded nominal ones; the reducers' shares are taken of the features
after encoding, ``max(1, floor(share x features))`` (its ``int(share x features)`` can be
0 on very narrow data, which PCA and SelectKBest refuse), PCA's also capped by the
training rows as it caps them. ``variance_threshold`` on data whose every column is
constant fails its fit (recorded as a crash), as it did in Tensor-OBOE. These spaces are not part of
:func:`~metabo.space.algorithms.default_cash_space`: the default search stays the 22
algorithms; :func:`pipeline_cash_space` gives them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from metabo.space.algorithms.spec import AlgorithmSpec
from metabo.space.hyperparameters import Categorical
from metabo.space.space import SearchSpace

#: The project algorithms Tensor-OBOE's estimators map to (:data:`metabo.metadatasets.oboe.PROJECT_ALGORITHMS`
#: without kSVM, MLP by solver).
ESTIMATORS: tuple[str, ...] = (
    "knn", "full_decision_tree", "full_random_forest", "gradient_boosting", "adaboost", "linear_svm",
    "ovr_logistic_regression", "perceptron", "gaussian_nb", "mlp", "sgd_mlp", "full_extra_trees",
)
PREFIX = "pipeline_"
STEP_HYPERPARAMETERS: tuple[Categorical, ...] = (
    Categorical("imputer", ("mean", "median", "most_frequent", "constant"), default="median"),
    Categorical("encoder", ("onehot", "ordinal"), default="onehot"),
    Categorical("standardizer", ("standard", "none"), default="standard"),
    Categorical("dim_reducer", ("none", "pca_25", "pca_50", "pca_75", "variance_threshold",
                                "kbest_25", "kbest_50", "kbest_75"), default="none"),
)
STEPS: tuple[str, ...] = tuple(h.name for h in STEP_HYPERPARAMETERS)


def _kept(share: float, n_features: int) -> int:
    return max(1, min(n_features, math.floor(share * n_features)))


class SharePCA(TransformerMixin, BaseEstimator):
    """PCA keeping ``share`` of the input features (module docstring: at least 1, at
    most the training rows)."""

    def __init__(self, share: float = 0.5, random_state: int | None = None) -> None:
        self.share = share
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> SharePCA:
        """Fit a PCA keeping ``share`` of the columns (at most the rows); returns self."""
        from sklearn.decomposition import PCA

        n, p = np.shape(X)
        k = min(_kept(self.share, p), n)
        self.pca_ = PCA(n_components=k, random_state=self.random_state).fit(X)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """``X`` projected on the fitted principal components."""
        return self.pca_.transform(X)


class ShareKBest(TransformerMixin, BaseEstimator):
    """``SelectKBest(f_classif)`` keeping ``share`` of the input features (at least 1)."""

    def __init__(self, share: float = 0.5) -> None:
        self.share = share

    def fit(self, X: Any, y: Any = None) -> ShareKBest:
        """Fit a univariate selection keeping ``share`` of the columns; returns self."""
        from sklearn.feature_selection import SelectKBest

        self.select_ = SelectKBest(k=_kept(self.share, np.shape(X)[1])).fit(X, y)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """``X``'s selected columns."""
        return self.select_.transform(X)


def _reducer(name: str, seed: int | None) -> Any:
    from sklearn.feature_selection import VarianceThreshold

    if name == "none":
        return "passthrough"
    if name == "variance_threshold":
        return VarianceThreshold()
    kind, _, pct = name.partition("_")
    share = int(pct) / 100
    return SharePCA(share, random_state=seed) if kind == "pca" else ShareKBest(share)


def build_pipeline(estimator: AlgorithmSpec, params: Mapping[str, Any], seed: int | None) -> Any:
    """``imputer -> standardizer -> dim_reducer -> estimator`` for a configuration of
    ``pipeline_<estimator>`` that its space already normalized (as :func:`~metabo.space.algorithms.build_estimator`
    does: the estimator's own hyperparameters are the same objects, so they are valid for
    ``estimator.build`` as they are); the encoder is the column transformer's."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    own = {k: v for k, v in params.items() if k not in STEPS}
    return Pipeline([
        ("imputer", SimpleImputer(strategy=params["imputer"], fill_value=0, keep_empty_features=True)),
        ("standardizer", StandardScaler() if params["standardizer"] == "standard" else "passthrough"),
        ("dim_reducer", _reducer(params["dim_reducer"], seed)),
        ("estimator", estimator.build(own, seed)),
    ])


def pipeline_spec(estimator: AlgorithmSpec) -> AlgorithmSpec:
    """The spec of ``pipeline_<estimator.name>`` (module docstring)."""
    space = estimator.space
    name = PREFIX + estimator.name
    return AlgorithmSpec(
        name, SearchSpace(name, (*space.hyperparameters, *STEP_HYPERPARAMETERS), space.conditions),
        needs_scaling=False, encoding="onehot", handles_missing=True,
        build=partial(build_pipeline, estimator), encoding_param="encoder",
    )


__all__ = ["ESTIMATORS", "PREFIX", "STEPS", "STEP_HYPERPARAMETERS", "SharePCA", "ShareKBest", "build_pipeline",
           "pipeline_spec"]
