"""Class probabilities for margin classifiers: the softmax of their decision function.

SVC's Platt scaling (``probability=True``) runs an internal 5-fold cross-validation,
about 4-5x the fit time (measured on 2,000 x 20), and LinearSVC has no probabilities at
all. Like auto-sklearn's LibSVM_SVC and LibLinear_SVC we use ``softmax(decision)``
(``sigmoid`` for two classes): no extra fit, monotone in the margin, uncalibrated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone


class DecisionProbaClassifier(ClassifierMixin, BaseEstimator):
    """Wraps a classifier with ``decision_function``, adding ``predict_proba``."""

    def __init__(self, estimator: Any = None) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any, **fit_params: Any) -> DecisionProbaClassifier:
        """Fit a clone of the wrapped estimator; returns self."""
        self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The wrapped estimator's predicted labels."""
        return self.estimator_.predict(X)

    def decision_function(self, X: Any) -> np.ndarray:
        """The wrapped estimator's decision function."""
        return self.estimator_.decision_function(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Rows sum to 1; columns follow ``classes_``."""
        d = np.asarray(self.decision_function(X), dtype=float)
        if d.ndim == 1:  # binary: d > 0 favours classes_[1]
            p1 = expit(d)
            return np.column_stack([1.0 - p1, p1])
        return softmax(d, axis=1)
