"""The dataset features of SCoT (Bardenet, Brendel, Kegl, Sebag 2013, sections 4.1.1
and 4.2).

Notation: n rows, d feature columns, K observed classes; Zs the n x D standardized
encoding (median imputation, one-hot nominal columns, each column to zero mean and unit
variance; see ``_prepare.encode``); lambda_1 >= ... >= lambda_D the eigenvalues of its
covariance (PCA); p = Zs v_1 the projection on the first principal direction.

- scot_K = K (NaN for regression);
- scot_log_d = ln d; scot_log_n_over_d = ln(n / d) (natural logarithms; NaN when d = 0);
- scot_pca_rho95 = d' / D, d' the smallest number of components whose variance
  (lambda_1 + ... + lambda_d') reaches 95% of the total (data on a line: 1 / D; for
  all-numeric data D = d, the paper's rho = d' / d);
- scot_pc1_skewness = |G1(p)|: the sign of a principal direction is arbitrary, so the
  direction is oriented to make the skewness non-negative;
- scot_pc1_kurtosis = G2(p), the excess kurtosis (sign-invariant).

G1 and G2 are the bias-corrected sample skewness and excess kurtosis used for the
numeric attributes (``statistical`` module). The PCA quantities are NaN when there is
no variance at all (every column constant) or fewer than 2 rows.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.decomposition import PCA

from metabo.data.meta_features._prepare import Prepared
from metabo.data.meta_features.statistical import column_moments

VARIANCE_FRACTION = 0.95

NAMES: tuple[str, ...] = (
    "scot_K",
    "scot_log_d",
    "scot_log_n_over_d",
    "scot_pca_rho95",
    "scot_pc1_skewness",
    "scot_pc1_kurtosis",
)


#: The SCoT features that are counts (they do not depend on the feature values).
COUNT_NAMES: tuple[str, ...] = NAMES[:3]


def scot_count_features(prep: Prepared) -> dict[str, float]:
    """scot_K, scot_log_d and scot_log_n_over_d."""
    nan = float("nan")
    n, d = prep.n, prep.d
    return {
        "scot_K": float(prep.y.nunique()) if prep.is_classification else nan,
        "scot_log_d": math.log(d) if d > 0 else nan,
        "scot_log_n_over_d": math.log(n / d) if d > 0 else nan,
    }


def scot_features(prep: Prepared, Zs: np.ndarray) -> dict[str, float]:
    """The SCoT features (:data:`NAMES`): the counts of :func:`scot_count_features` and the PCA
    features of ``Zs``."""
    out = scot_count_features(prep)
    out.update(_pca_features(Zs))
    return {name: out[name] for name in NAMES}


def _pca_features(Zs: np.ndarray) -> dict[str, float]:
    nan = float("nan")
    undefined = {"scot_pca_rho95": nan, "scot_pc1_skewness": nan, "scot_pc1_kurtosis": nan}
    n, D = Zs.shape
    if n < 2 or D == 0 or not np.any(Zs.var(axis=0) > 0):
        return undefined
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        # "auto": the covariance eigendecomposition when n >= 10 D (scikit-learn >= 1.5),
        # else a full SVD; both deterministic.
        pca = PCA(n_components=None, svd_solver="auto").fit(Zs)
    cumulative = np.cumsum(pca.explained_variance_ratio_)
    # a 1e-12 slack so that a fraction of exactly 0.95 is not missed by rounding
    n_needed = int(np.searchsorted(cumulative, VARIANCE_FRACTION - 1e-12, side="left")) + 1
    n_needed = min(n_needed, pca.n_components_)
    projection = (Zs - pca.mean_) @ pca.components_[0]
    _, _, skew, kurt = column_moments(projection)
    return {
        "scot_pca_rho95": n_needed / D,
        "scot_pc1_skewness": abs(skew) if np.isfinite(skew) else nan,
        "scot_pc1_kurtosis": kurt,
    }
