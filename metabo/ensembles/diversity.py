"""Pairwise diversity of two trained models (DivBO, Shen et al. 2022, Equation 3).

``Div(x_i, x_j) = sqrt(2)/2 * 1/|D_val| * sum_{s in D_val} ||T_i(s) - T_j(s)||_2`` with
``T_i(s)`` the class probabilities of model ``i`` on validation sample ``s``. Two
probability vectors are at most ``sqrt 2`` apart (two different one-hot vectors), so
``Div`` lies in [0, 1]; it is 0 for a model with itself. Models that only predict labels
enter as one-hot vectors (the paper's remedy for SVC-like learners).
"""

from __future__ import annotations

import numpy as np

from metabo.exceptions import InputDataError


def diversity(p: np.ndarray, q: np.ndarray) -> float:
    """``Div`` of two (n, K) probability matrices on the same validation rows."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape or p.ndim != 2 or len(p) == 0:
        raise InputDataError(f"diversity needs two (n >= 1, K) matrices of one shape, got {p.shape} and {q.shape}")
    return float(np.sqrt(2.0) / 2.0 * np.mean(np.linalg.norm(p - q, axis=1)))


def diversity_matrix(probas: np.ndarray) -> np.ndarray:
    """``Div`` of every pair of models in ``probas`` (H, n, K): a symmetric (H, H) matrix
    with zeros on the diagonal."""
    P = np.asarray(probas, dtype=float)
    if P.ndim != 3:
        raise InputDataError(f"probas must be (models, n, K), got {P.shape}")
    H = P.shape[0]
    D = np.zeros((H, H))
    for i in range(H):
        D[i, i + 1:] = np.sqrt(2.0) / 2.0 * np.mean(np.linalg.norm(P[i + 1:] - P[i][None], axis=2), axis=1)
    return D + D.T


__all__ = ["diversity", "diversity_matrix"]
