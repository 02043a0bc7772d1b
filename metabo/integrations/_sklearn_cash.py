"""A CASH candidate as a scikit-learn classifier: one configuration of
:mod:`metabo.space.algorithms` (or a weighted ensemble of several), built, preprocessed
and fitted by :class:`~metabo.ensembles.model.EnsembleModel`, with scikit-learn's input
validation in front (array shapes, sparse input, the number of features at predict).

Input: a DataFrame (numeric and nominal columns, missing values allowed: the pipelines
impute) or a numeric array; nominal data goes in a DataFrame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from metabo.ensembles.model import Combine, EnsembleModel


class CASHClassifier(ClassifierMixin, BaseEstimator):
    """``EnsembleModel(members, weights, combine, seed=seed)`` behind scikit-learn's input
    checks (module docstring); one member is one configuration."""

    def __init__(self, members: Sequence[tuple[str, Mapping[str, Any]]] = (), weights: Sequence[float] | None = None,
                 seed: int = 0, combine: str = "average") -> None:
        self.members = members
        self.weights = weights
        self.seed = seed
        self.combine = combine

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _checked(self, X: Any, *, reset: bool) -> Any:
        if isinstance(X, pd.DataFrame):
            validate_data(self, X, reset=reset, skip_check_array=True)
            check_array(X, dtype=None, ensure_all_finite=False)  # shape checks only
            return X
        return validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite="allow-nan")

    def fit(self, X: Any, y: Any) -> CASHClassifier:
        """Fit the ensemble of the chosen members on ``X``, ``y``; returns self."""
        X = self._checked(X, reset=True)
        self.model_ = EnsembleModel(self.members, self.weights, combine=cast(Combine, self.combine),
                                    seed=self.seed).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """The ensemble's class probabilities for ``X`` (columns in ``classes_``'s order)."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._checked(X, reset=False))

    def predict(self, X: Any) -> np.ndarray:
        """The ensemble's predicted class per row of ``X``."""
        check_is_fitted(self, "model_")
        return self.model_.predict(self._checked(X, reset=False))
