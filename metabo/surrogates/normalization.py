"""Per-task normalization of objective values onto a shared scale (the surrogate bank's
base GPs and the target of :mod:`metabo.strategies.transfer_ensemble`).

- ``"copula"`` (default): the Gaussian copula transform of Salinas, Shen & Perrone 2020
  ("A quantile-based approach for hyperparameter transfer learning", ICML, sec. 3):
  ``z = Phi^{-1}(F~(y))`` with ``F~`` the empirical CDF of the task's own ``n`` values,
  winsorized to ``[delta_n, 1 - delta_n]``, ``delta_n = 1 / (4 n^{1/4} sqrt(pi log n))``
  (the paper's choice, after Liu, Lafferty & Wasserman 2009; Syne Tune does the same).
  Every task's values then have (about) standard normal marginals, whatever their
  original scale, skew or outliers, so values of different tasks are comparable and a
  monotone transform of a task's values does not change its ``z``.
  Where we deviate: ``F~`` is the mid-rank ECDF ``(#{y_i < y} + #{y_i = y} / 2) / n``
  instead of the right-continuous ``#{y_i <= y} / n``: tied values share one ``z``, and the
  transform is symmetric (``z(-y) = -z(y)``: the best and the worst value are equally far
  from 0), before the same winsorization. ``n = 1``: ``z = 0``.
- ``"standardize"``: ``z = (y - mean) / std`` (``std = 1`` for constant values).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from metabo.exceptions import InputDataError

Normalization = Literal["copula", "standardize"]
NORMALIZATIONS: tuple[str, ...] = ("copula", "standardize")


def winsorized_delta(n: int) -> float:
    """``delta_n = 1 / (4 n^{1/4} sqrt(pi log n))`` (Salinas et al. 2020, sec. 3), ``n >= 2``."""
    if n < 2:
        raise InputDataError(f"delta_n needs n >= 2, got {n}")
    return float(1.0 / (4.0 * n**0.25 * np.sqrt(np.pi * np.log(n))))


def copula(values: np.ndarray) -> np.ndarray:
    """``Phi^{-1}`` of the winsorized mid-rank empirical CDF of ``values`` (module docstring)."""
    y = _check(values)
    n = len(y)
    if n < 2:
        return np.zeros(n)
    F = (rankdata(y, method="average") - 0.5) / n  # (#{< y} + #{= y} / 2) / n
    delta = winsorized_delta(n)
    return ndtri(np.clip(F, delta, 1.0 - delta))


def standardize(values: np.ndarray) -> np.ndarray:
    """``(y - mean) / std`` (``std = 1`` when the values are constant to rounding)."""
    y = _check(values)
    if not len(y):
        return y.copy()
    shift, sd = float(y.mean()), float(y.std())
    return (y - shift) / (sd if sd > 1e-12 * max(1.0, abs(shift)) else 1.0)


def normalize(values: np.ndarray, kind: Normalization = "copula") -> np.ndarray:
    """``values`` on the shared scale ``kind`` (module docstring)."""
    if kind == "copula":
        return copula(values)
    if kind == "standardize":
        return standardize(values)
    raise InputDataError(f"unknown normalization {kind!r}; use one of {list(NORMALIZATIONS)}")


def _check(values: np.ndarray) -> np.ndarray:
    y = np.asarray(values, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise InputDataError("values to normalize must be a finite 1-d array")
    return y


__all__ = ["NORMALIZATIONS", "Normalization", "copula", "normalize", "standardize", "winsorized_delta"]
