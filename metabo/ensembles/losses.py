"""Losses of a majority-vote ensemble on a validation set (Levesque 2018, thesis sec. 4.3),
the objectives of Ensemble Optimization (EO).

Notation: ``m`` classifiers vote on ``n`` samples; ``votes`` (m, n) holds each classifier's
predicted class code and ``y`` (n,) the true codes (``0..K-1``). Per sample:

- ``M(E, x, y) = 1/m sum_h [1 - 2 l01(h(x), y)]`` the normalized margin (eq. 4.6, the
  multiclass form, which equals eq. 4.5 on binary problems), in [-1, 1];
- ``v*`` the votes for the true class (eq. 4.25), ``v_max`` the most votes of a wrong class
  (eq. 4.26);
- ``mu_z = E_{D_V}[M^z]`` the moments of the margin over the samples (eq. 4.12).

Losses (lower is better), each a mean over the samples unless said:

- margin ``l_M = (1 - M) / 2`` (eq. 4.7: not to be optimized, it only rewards accurate
  members);
- squared margin ``l_M2 = (1 - M)^2 / 4`` (eq. 4.8), whose mean is
  ``(1 - 2 mu_1 + mu_2) / 4`` (eq. 4.16);
- C-bound ``C = 1 - mu_1^2 / mu_2`` (eq. 4.11), a bound on the majority vote's risk that
  holds when ``mu_1 > 0``; with ``mu_1 <= 0`` it is taken as 1 (the bound says nothing),
  a choice of ours: the thesis' Table 4.1 shows 1.00 for its two ensembles of constant
  negative margin, where the formula would give 0;
- smooth zero-one ``l_sig = 1 - s((v* - v_max) / m, a)`` with ``s(x, a) = 1 / (1 +
  e^{-a x})`` (eq. 4.23 and the multiclass form of the text after eq. 4.26: a sigmoid of
  ``v* - v_max`` centred at 0). The votes are divided by ``m`` so that on binary problems
  ``(v* - v_max) / m = M`` and the loss is exactly eq. 4.23; ``a`` by default from
  :func:`sigmoid_scale` (the thesis' ``d_min(a | m) = epsilon`` with ``epsilon = 1e-3``,
  the root with ``a > 1``; for ``m <= 2``, which has none, ``s(-1, a) = epsilon``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq

from metabo.exceptions import InputDataError

#: The smallest loss difference between consecutive vote counts (thesis sec. 4.3.3).
SIGMOID_EPSILON = 1e-3


def _check(votes: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    votes = np.asarray(votes)
    y = np.asarray(y)
    if votes.ndim != 2 or y.ndim != 1 or votes.shape[1] != len(y) or votes.shape[0] < 1:
        raise InputDataError(f"votes must be (m >= 1, n) and y (n,), got {votes.shape} and {y.shape}")
    return votes, y


def margins(votes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``M(E, x, y)`` (n,) of each sample (eq. 4.6)."""
    votes, y = _check(votes, y)
    return 1.0 - 2.0 * np.mean(votes != y[None, :], axis=0)


def margin_moments(votes: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(mu_1, mu_2)``, the first two moments of the margin over the samples (eq. 4.12)."""
    M = margins(votes, y)
    return float(M.mean()), float(np.mean(M**2))


def margin_loss(votes: np.ndarray, y: np.ndarray) -> float:
    """Mean ``l_M`` (eq. 4.7)."""
    return float(np.mean((1.0 - margins(votes, y)) / 2.0))


def squared_margin_loss(votes: np.ndarray, y: np.ndarray) -> float:
    """Mean ``l_M2`` (eq. 4.8)."""
    return float(np.mean((1.0 - margins(votes, y)) ** 2 / 4.0))


def c_bound(votes: np.ndarray, y: np.ndarray) -> float:
    """The C-bound ``1 - mu_1^2 / mu_2`` (eq. 4.11); 1 when ``mu_1 <= 0`` (module docstring)."""
    mu1, mu2 = margin_moments(votes, y)
    if mu1 <= 0.0 or mu2 <= 0.0:
        return 1.0
    return float(1.0 - mu1**2 / mu2)


def _sigmoid(x: np.ndarray | float, a: float) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * a * np.asarray(x, dtype=float)))  # 1 / (1 + e^{-a x}), stable


@functools.lru_cache(maxsize=256)
def sigmoid_scale(m: int, epsilon: float = SIGMOID_EPSILON) -> float:
    """The sigmoid's ``a`` for ensembles of ``m`` members: the root ``a > 1`` of
    ``d_min(a | m) = s(1, a) - s(1 - 2/m, a) = epsilon`` (thesis sec. 4.3.3)."""
    if m < 1 or not 0.0 < epsilon < 0.5:
        raise InputDataError(f"sigmoid_scale needs m >= 1 and 0 < epsilon < 0.5, got m={m}, epsilon={epsilon}")
    if m <= 2:  # no root a > 1 (m = 2: d_min rises to 1/2); take s(-1, a) = epsilon instead
        return math.log(1.0 / epsilon - 1.0)

    def d_min(a: float) -> float:
        return float(_sigmoid(1.0, a) - _sigmoid(1.0 - 2.0 / m, a)) - epsilon

    # d_min rises from 0 (a = 0) to a maximum, then decays to 0: the root past the maximum
    grid = np.linspace(1.0, 200.0, 2000)
    values = np.array([d_min(a) for a in grid])
    peak = int(np.argmax(values))
    if values[peak] < 0:
        raise InputDataError(f"no sigmoid scale separates vote counts by {epsilon} for m={m}")
    after = np.flatnonzero(values[peak:] < 0)
    if not len(after):
        raise InputDataError(f"the sigmoid scale for m={m}, epsilon={epsilon} is beyond a = 200")
    hi = peak + int(after[0])
    return float(brentq(d_min, grid[hi - 1], grid[hi]))


def sigmoid_loss(votes: np.ndarray, y: np.ndarray, a: float | None = None) -> float:
    """Mean smooth zero-one loss ``1 - s((v* - v_max) / m, a)`` (module docstring)."""
    votes, y = _check(votes, y)
    m = votes.shape[0]
    a = sigmoid_scale(m) if a is None else float(a)
    correct = votes == y[None, :]
    v_star = correct.sum(axis=0)
    wrong = np.where(correct, -1, votes)  # the wrong votes; -1 never counts as a class
    k = int(max(votes.max(), y.max())) + 1
    counts = np.stack([(wrong == c).sum(axis=0) for c in range(k)])  # (K, n)
    v_max = counts.max(axis=0)
    return float(np.mean(1.0 - _sigmoid((v_star - v_max) / m, a)))


#: EO's losses by name (thesis sec. 4.3).
EO_LOSSES = {"squared_margin": squared_margin_loss, "c_bound": c_bound, "sigmoid": sigmoid_loss}

__all__ = ["EO_LOSSES", "SIGMOID_EPSILON", "c_bound", "margin_loss", "margin_moments", "margins",
           "sigmoid_loss", "sigmoid_scale", "squared_margin_loss"]
