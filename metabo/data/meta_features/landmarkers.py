"""Landmarkers: cross-validated error rates of four fast classifiers.

Notation: Z the n x D encoding (median-imputed numeric columns, one-hot nominal
columns; ``_prepare.encode``), Zs its standardized copy, y the class codes.

Protocol (the same for the four classifiers):

1. Rows: all n rows in canonical order (``_prepare``), or, when n > 5,000, a uniform
   random subset of 5,000 drawn with the seed (then kept in canonical order).
2. Folds: scikit-learn ``StratifiedKFold(k, shuffle=True)`` with an integer drawn from
   the seed, k = min(10, size of the smallest class), at least 2. Because the rows are in
   canonical order before the subsample and the split, the folds, and so the error
   rates, are the same for any row order of the input.
3. Error = the fraction of rows misclassified when predicted by the model trained on the
   other folds (pooled over folds, as Weka's ``Evaluation.errorRate``).

Classifiers (OpenML's landmarker names; OpenML runs Weka with 2-fold CV):

- DecisionStumpErrRate: ``DecisionTreeClassifier(max_depth=1)`` on Z;
- NaiveBayesErrRate: ``GaussianNB`` on Z (Weka's NaiveBayes counts nominal values
  instead; here each one-hot column is a Gaussian);
- kNN1NErrRate: ``KNeighborsClassifier(n_neighbors=1)`` on Zs;
- LinearDiscriminantAnalysisErrRate: ``LinearDiscriminantAnalysis(solver="lsqr")`` on
  Zs (no shrinkage; a singular within-class covariance, from one-hot columns or
  constant ones, gets the least-squares minimum-norm solution; 2-3 times faster than
  the SVD solver).

All four are NaN for regression, for fewer than two classes, when no class has two
rows, or when there is no feature column. A classifier that fails (a LinAlgError, say)
gets NaN and a logged warning.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from metabo._typing import Seed, as_generator
from metabo.data.meta_features._prepare import Prepared

logger = logging.getLogger(__name__)

MAX_ROWS = 5000
MAX_FOLDS = 10

NAMES: tuple[str, ...] = (
    "DecisionStumpErrRate",
    "NaiveBayesErrRate",
    "kNN1NErrRate",
    "LinearDiscriminantAnalysisErrRate",
)

# name -> (classifier, whether it sees the standardized matrix)
_LANDMARKERS: dict[str, tuple[ClassifierMixin, bool]] = {
    "DecisionStumpErrRate": (DecisionTreeClassifier(max_depth=1, random_state=0), False),
    "NaiveBayesErrRate": (GaussianNB(), False),
    "kNN1NErrRate": (KNeighborsClassifier(n_neighbors=1, algorithm="brute"), True),
    "LinearDiscriminantAnalysisErrRate": (LinearDiscriminantAnalysis(solver="lsqr"), True),
}


def landmarker_features(
    prep: Prepared, Z: np.ndarray, Zs: np.ndarray, *, seed: Seed
) -> dict[str, float]:
    undefined = {name: float("nan") for name in NAMES}
    if not prep.is_classification or Z.shape[1] == 0:
        return undefined
    rng = as_generator(seed)
    y = prep.class_codes()
    rows = np.arange(len(y))
    if len(y) > MAX_ROWS:
        rows = np.sort(rng.choice(len(y), size=MAX_ROWS, replace=False))
    cv_seed = int(rng.integers(2**31 - 1))
    y_sub = y[rows]
    counts = np.bincount(y_sub)
    counts = counts[counts > 0]
    if len(counts) < 2 or counts.max() < 2:
        return undefined
    n_folds = int(min(MAX_FOLDS, max(2, counts.min())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "least populated class has 1 member"
        splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=cv_seed)
        folds = list(splitter.split(np.zeros((len(rows), 1)), y_sub))
    Z_sub, Zs_sub = Z[rows], Zs[rows]
    out: dict[str, float] = {}
    for name, (model, standardized) in _LANDMARKERS.items():
        out[name] = _cv_error(name, clone(model), Zs_sub if standardized else Z_sub, y_sub, folds)
    return out


def _cv_error(
    name: str,
    model: ClassifierMixin,
    M: np.ndarray,
    y: np.ndarray,
    folds: list[tuple[np.ndarray, np.ndarray]],
) -> float:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # collinear variables, empty classes in a fold
            predicted = cross_val_predict(model, M, y, cv=folds)
    except (ValueError, np.linalg.LinAlgError) as e:
        logger.warning("landmarker %s failed (%s); its value is NaN", name, e)
        return float("nan")
    return float(np.mean(predicted != y))
