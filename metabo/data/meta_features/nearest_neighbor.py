"""Weka's one-nearest-neighbour classifier: the model behind OpenML's ``kNN1NErrRate``.

Weka 3.8 ``weka.classifiers.lazy.IBk`` with its default options (k = 1, no distance
weighting, linear search, ``EuclideanDistance`` with normalization; Aha, Kibler & Albert,
"Instance-based learning algorithms", Machine Learning 6, 1991).

Notation: M the n x p matrix of attributes, column j nominal with L_j > 0 declared values
(integer codes) or numeric (L_j = 0); NaN marks a missing value. For a numeric column,
lo_j and hi_j are its smallest and largest value, and u = (x - lo_j) / (hi_j - lo_j) the
normalized value (0 when hi_j = lo_j).

Distance between rows a and b: d(a, b)^2 = sum_j delta_j(a_j, b_j)^2 with

- nominal j: delta = 0 if both are present and equal, else 1 (a missing value differs
  from everything, another missing value included);
- numeric j, both present: delta = u(a_j) - u(b_j); one missing: delta = max(u, 1 - u)
  of the present one; both missing: delta = 1.

Prediction: every training row at the smallest distance votes for its class (Weka keeps
all rows tied with the k-th nearest); the class with the most votes wins, the first
class on a tie. Deviation: Weka widens [lo_j, hi_j] with each test row it classifies, in
the order it meets them; here the ranges span the training rows and all the rows being
classified at once.

The squared distances are computed with matrix products over indicator and value
matrices, so the work is a few n_test x n_train x p products.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from metabo.data.meta_features._prepare import mixed_matrix

#: Test rows per block of the distance matrix (block x n_train doubles at a time).
BLOCK_ROWS = 512


class WekaNearestNeighbor(ClassifierMixin, BaseEstimator):
    """1-NN with Weka's mixed distance and tie votes (see the module docstring).

    Args:
        n_levels: for each column of the matrix, its number of declared values if it is
            nominal, 0 if it is numeric.
    """

    def __init__(self, *, n_levels: Sequence[int] = ()) -> None:
        self.n_levels = n_levels

    def fit(self, M: np.ndarray, y: np.ndarray) -> WekaNearestNeighbor:
        """Store the training rows and their class votes; returns self."""
        self.M_ = self._check(M)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        self.votes_ = np.eye(len(self.classes_))[codes]  # n_train x K
        return self

    def predict(self, M: np.ndarray) -> np.ndarray:
        """The class of each row's nearest training row (numeric columns scaled to [0, 1] over
        both sets, Weka's distance)."""
        M = self._check(M)
        numeric = np.array([levels == 0 for levels in self.n_levels], dtype=bool)
        both = np.vstack([self.M_[:, numeric], M[:, numeric]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all missing: NaN range, u = 0
            lo, hi = np.nanmin(both, axis=0), np.nanmax(both, axis=0)
        train = _Encoded(self.M_, self.n_levels, lo, hi)
        predicted = np.empty(len(M), dtype=np.int64)
        for start in range(0, len(M), BLOCK_ROWS):
            block = _Encoded(M[start:start + BLOCK_ROWS], self.n_levels, lo, hi)
            d2 = block.squared_distances(train)
            closest = d2.min(axis=1, keepdims=True)
            nearest = d2 <= closest + 1e-12 * (1.0 + closest)  # ties, up to rounding
            votes = nearest.astype(np.float64) @ self.votes_
            predicted[start:start + BLOCK_ROWS] = np.argmax(votes, axis=1)
        return self.classes_[predicted]

    def _check(self, M: np.ndarray) -> np.ndarray:
        return mixed_matrix(M, self.n_levels, "WekaNearestNeighbor")


class _Encoded:
    """The matrices whose products give the squared distances of a block of rows."""

    def __init__(self, M: np.ndarray, n_levels: Sequence[int], lo: np.ndarray, hi: np.ndarray):
        numeric = np.array([levels == 0 for levels in n_levels], dtype=bool)
        X = M[:, numeric]
        width = hi - lo
        flat = ~(width > 0)  # constant or all-missing column: u = 0
        u = np.where(flat, 0.0, (X - lo) / np.where(flat, 1.0, width))
        self.present = (~np.isnan(X)).astype(np.float64)
        self.u = np.where(np.isnan(u), 0.0, u)
        self.far = np.where(np.isnan(u), 0.0, np.maximum(self.u, 1.0 - self.u) ** 2)
        nominal = [j for j, levels in enumerate(n_levels) if levels > 0]
        self.n_nominal = len(nominal)
        offsets = np.cumsum([0, *(n_levels[j] for j in nominal)])
        self.one_hot = np.zeros((len(M), int(offsets[-1])))
        for k, j in enumerate(nominal):
            codes = M[:, j]
            rows = np.flatnonzero(~np.isnan(codes))
            self.one_hot[rows, offsets[k] + codes[rows].astype(np.int64)] = 1.0

    def squared_distances(self, other: _Encoded) -> np.ndarray:
        """len(self) x len(other) matrix of d(a, b)^2."""
        pa, pb = self.present, other.present
        ua, ub = self.u, other.u
        d2 = (pa * ua**2) @ pb.T + pa @ (pb * ub**2).T - 2.0 * (ua * pa) @ (ub * pb).T
        d2 += self.far @ (1.0 - pb).T + (1.0 - pa) @ other.far.T  # one value missing
        d2 += (1.0 - pa) @ (1.0 - pb).T  # both missing
        d2 += self.n_nominal - self.one_hot @ other.one_hot.T  # nominal mismatches
        return np.maximum(d2, 0.0)

