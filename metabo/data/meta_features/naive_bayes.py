"""Weka's naive Bayes: discrete counts for nominal attributes, Gaussians for numeric ones.

The classifier behind OpenML's ``NaiveBayesErrRate`` landmarker (Weka 3.8
``weka.classifiers.bayes.NaiveBayes`` with its default options, after John & Langley,
"Estimating continuous distributions in Bayesian classifiers", UAI 1995).

Notation: M the n x p matrix of attributes, column j nominal with L_j > 0 declared values
(M_ij an integer code 0..L_j-1) or numeric (L_j = 0); NaN marks a missing value. y the
classes, K of them in the training data, n_c rows of class c.

- Prior: p(c) = (n_c + 1) / (n + K) (``DiscreteEstimator`` with the Laplace correction).
- Nominal j: p(v | c) = (n_cjv + 1) / (n_cj + L_j), with n_cjv the rows of class c whose
  value is v and n_cj those of class c where j is present.
- Numeric j: the precision delta_j = (max - min) / (m_j - 1) over the m_j distinct
  training values (0.01 when m_j < 2); a value is rounded to r(x) = rint(x / delta_j)
  delta_j; per class, mu_cj and s_cj are the mean and the population standard deviation
  (divisor n_cj) of the rounded values, computed as Weka does, sqrt(|S2 - mu S1| / n_cj);
  sigma_cj = max(delta_j / 6, s_cj), or delta_j / 6 when s_cj <= 1e-10 or n_cj = 0
  (then mu_cj = 0). p(x | c) = Phi((r(x) - mu_cj + delta_j / 2) / sigma_cj)
  - Phi((r(x) - mu_cj - delta_j / 2) / sigma_cj) (``NormalEstimator``): the probability
  mass of the rounding interval, not a density.
- Prediction: argmax_c of log p(c) + sum over present attributes of
  log max(1e-75, p(M_ij | c)) (Weka multiplies and rescales by 1e75 against underflow, the
  same argmax); the first class wins a tie. Missing values are left out of the counts and
  of the product.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr
from sklearn.base import BaseEstimator, ClassifierMixin

from metabo.data.meta_features._prepare import mixed_matrix

#: Weka's floor for one factor p(x | c), against log(0).
MIN_PROBABILITY = 1e-75
#: Weka's precision of a numeric attribute with fewer than two distinct values.
DEFAULT_PRECISION = 0.01


class MixedNaiveBayes(ClassifierMixin, BaseEstimator):
    """Naive Bayes over nominal codes and numeric values (see the module docstring).

    Args:
        n_levels: for each column of the matrix, its number of declared values if it is
            nominal, 0 if it is numeric.
    """

    def __init__(self, *, n_levels: Sequence[int] = ()) -> None:
        self.n_levels = n_levels

    def fit(self, M: np.ndarray, y: np.ndarray) -> MixedNaiveBayes:
        """Fit the class priors, a frequency table per nominal column and a normal per numeric
        column; returns self."""
        M = self._check(M)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        K, n = len(self.classes_), len(codes)
        members = np.eye(K)[codes]  # n x K indicator of each row's class
        self.log_prior_ = np.log((np.bincount(codes, minlength=K) + 1.0) / (n + K))
        self.log_tables_: dict[int, np.ndarray] = {}  # j -> K x L_j log p(v | c)
        self.normals_: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}  # delta, mu, sigma
        for j, levels in enumerate(self.n_levels):
            x = M[:, j]
            present = ~np.isnan(x)
            if levels > 0:
                counts = np.ones((K, levels))
                np.add.at(counts, (codes[present], x[present].astype(np.int64)), 1.0)
                self.log_tables_[j] = np.log(counts / counts.sum(axis=1, keepdims=True))
            else:
                self.normals_[j] = _normal(x[present], members[present])
        return self

    def predict_log_joint(self, M: np.ndarray) -> np.ndarray:
        """n x K log p(c) + sum_j log max(1e-75, p(M_ij | c)) over present values."""
        M = self._check(M)
        joint = np.tile(self.log_prior_, (M.shape[0], 1))
        floor = np.log(MIN_PROBABILITY)
        for j, table in self.log_tables_.items():
            present = ~np.isnan(M[:, j])
            joint[present] += np.maximum(table[:, M[present, j].astype(np.int64)].T, floor)
        for j, (delta, mu, sigma) in self.normals_.items():
            present = ~np.isnan(M[:, j])
            r = (np.rint(M[present, j] / delta) * delta)[:, None]
            mass = ndtr((r - mu + delta / 2) / sigma) - ndtr((r - mu - delta / 2) / sigma)
            joint[present] += np.log(np.maximum(mass, MIN_PROBABILITY))
        return joint

    def predict(self, M: np.ndarray) -> np.ndarray:
        """The class of highest joint log-probability per row."""
        return self.classes_[np.argmax(self.predict_log_joint(M), axis=1)]

    def _check(self, M: np.ndarray) -> np.ndarray:
        return mixed_matrix(M, self.n_levels, "MixedNaiveBayes")


def _normal(x: np.ndarray, members: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Weka's ``NormalEstimator`` per class of the present values ``x`` of one attribute:
    (delta, mu (K,), sigma (K,)); ``members`` is the len(x) x K class indicator."""
    distinct = np.unique(x)
    delta = DEFAULT_PRECISION
    if len(distinct) > 1:
        delta = float((distinct[-1] - distinct[0]) / (len(distinct) - 1))
    r = np.rint(x / delta) * delta
    weight = members.sum(axis=0)
    s1 = members.T @ r
    s2 = members.T @ (r * r)
    seen = weight > 0
    mu = np.where(seen, s1 / np.where(seen, weight, 1.0), 0.0)
    s = np.sqrt(np.abs(s2 - mu * s1) / np.where(seen, weight, 1.0))
    sigma = np.where(seen & (s > 1e-10), np.maximum(delta / 6, s), delta / 6)
    return delta, mu, sigma
