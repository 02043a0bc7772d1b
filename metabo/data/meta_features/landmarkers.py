"""Landmarkers: cross-validated error rates of four fast classifiers.

Notation: Z the n x D encoding (median-imputed numeric columns, one-hot nominal
columns; ``_prepare.encode``), Zs its standardized copy, M the n x (d_num + d_nom)
attribute matrix (numeric values and nominal codes, NaN where missing), y the class
codes.

Protocol (the same for the four classifiers; OpenML's, ``GlobalMetafeatures`` in
openml/EvaluationEngine, which runs Weka's ``crossValidateModel`` with 2 folds):

1. Rows: all n rows in canonical order (``_prepare``), or, when n > 5,000, a uniform
   random subset of 5,000 drawn with the seed (then kept in canonical order).
2. Folds: scikit-learn ``StratifiedKFold(2, shuffle=True)`` with an integer drawn from
   the seed. Because the rows are in canonical order before the subsample and the
   split, the folds, and so the error rates, are the same for any row order of the
   input. (OpenML's folds come from Weka's ``Random(1)`` on the file's row order, so the
   two values differ by the partition noise of a 2-fold estimate.)
3. Error = the fraction of rows misclassified when predicted by the model trained on the
   other fold (pooled over folds, as Weka's ``Evaluation.errorRate``).

Classifiers (OpenML's landmarker names and Weka models, with default options):

- DecisionStumpErrRate: ``DecisionTreeClassifier(max_depth=1, criterion="entropy")`` on
  Z, Weka's ``DecisionStump`` split (one value against the rest for a nominal attribute,
  a threshold for a numeric one, chosen by entropy), except that Weka gives missing
  values a branch of their own;
- NaiveBayesErrRate: Weka's ``NaiveBayes`` on M: discrete counts for nominal
  attributes, rounded Gaussians for numeric ones, missing values left out
  (:class:`~metabo.data.meta_features.naive_bayes.MixedNaiveBayes`);
- kNN1NErrRate: Weka's ``IBk`` (k = 1) on M: range-normalized numeric differences,
  0/1 nominal ones, Weka's rules for missing values, tied neighbours voting
  (:class:`~metabo.data.meta_features.nearest_neighbor.WekaNearestNeighbor`);
- LinearDiscriminantAnalysisErrRate (not an OpenML quality):
  ``LinearDiscriminantAnalysis(solver="lsqr")`` on Zs (no shrinkage; a singular
  within-class covariance, from one-hot columns or constant ones, gets the
  least-squares minimum-norm solution; cheaper than the SVD solver).

All four are NaN for regression, for fewer than two classes, when no class has two
rows, or when there is no numeric or nominal feature column (free-text columns are not
used; Weka refuses them). A classifier that fails (a LinAlgError, say) gets NaN and a
logged warning.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.tree import DecisionTreeClassifier

from metabo._typing import Seed, as_generator
from metabo.data.meta_features._prepare import Prepared
from metabo.data.meta_features.naive_bayes import MixedNaiveBayes
from metabo.data.meta_features.nearest_neighbor import WekaNearestNeighbor

logger = logging.getLogger(__name__)

MAX_ROWS = 5000
N_FOLDS = 2

NAMES: tuple[str, ...] = (
    "DecisionStumpErrRate",
    "NaiveBayesErrRate",
    "kNN1NErrRate",
    "LinearDiscriminantAnalysisErrRate",
)

# name -> (classifier, the matrix it sees: Z, Zs or M)
_LANDMARKERS: dict[str, tuple[ClassifierMixin, str]] = {
    "DecisionStumpErrRate": (
        DecisionTreeClassifier(max_depth=1, criterion="entropy", random_state=0), "Z"
    ),
    "NaiveBayesErrRate": (MixedNaiveBayes(), "M"),
    "kNN1NErrRate": (WekaNearestNeighbor(), "M"),
    "LinearDiscriminantAnalysisErrRate": (LinearDiscriminantAnalysis(solver="lsqr"), "Zs"),
}


def attribute_matrix(prep: Prepared) -> tuple[np.ndarray, tuple[int, ...]]:
    """M (numeric columns, then nominal codes; NaN where missing) and, per column, its
    number of declared values (0 for a numeric column)."""
    columns = [prep.X[c].to_numpy(np.float64) for c in prep.numeric]
    for c in prep.nominal:
        codes = prep.X[c].cat.codes.to_numpy(np.float64)
        columns.append(np.where(codes < 0, np.nan, codes))
    levels = (0,) * len(prep.numeric) + tuple(len(prep.X[c].cat.categories) for c in prep.nominal)
    M = np.column_stack(columns) if columns else np.empty((prep.n, 0))
    return M, levels


def landmarker_features(
    prep: Prepared, Z: np.ndarray, Zs: np.ndarray, *, seed: Seed
) -> dict[str, float]:
    """The landmarkers (:data:`NAMES`, module docstring) of ``prep`` from its encodings ``Z``
    and ``Zs``, with folds drawn by ``seed``; all NaN for regression or without feature columns."""
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "least populated class has 1 member"
        splitter = StratifiedKFold(n_splits=N_FOLDS, shuffle=True, random_state=cv_seed)
        folds = list(splitter.split(np.zeros((len(rows), 1)), y_sub))
    M, levels = attribute_matrix(prep)
    matrices = {"Z": Z[rows], "Zs": Zs[rows], "M": M[rows]}
    out: dict[str, float] = {}
    for name, (model, matrix) in _LANDMARKERS.items():
        model = clone(model)
        if matrix == "M":
            model.set_params(n_levels=levels)
        out[name] = _cv_error(name, model, matrices[matrix], y_sub, folds)
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
