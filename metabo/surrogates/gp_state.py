"""What a fitted Gaussian process is, as data (:mod:`metabo.surrogates.gp`'s notation):
its hyperparameters in y's units, each group's Cholesky factor and ``alpha``, and the
one-block posterior as plain arrays that the bank predicts from and caches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular


@dataclass(frozen=True)
class GPHyperparameters:
    """GP hyperparameters in y's units: ``k = amplitude * k(x, x'; lengthscales)``,
    noise variance ``noise``, constant mean ``mean``."""

    lengthscales: np.ndarray
    amplitude: float
    noise: float
    mean: float


@dataclass
class Block:
    """One group's Cholesky factor of ``K_g + jitter I`` and ``alpha_g``."""

    index: np.ndarray
    L: np.ndarray
    alpha: np.ndarray
    jitter: float
    Linv: np.ndarray | None = None  # L^-1, computed at the first prediction

    def inverse_factor(self) -> np.ndarray:
        """``L^-1``: variances by one matrix product, cheaper than a triangular solve per call."""
        if self.Linv is None:
            self.Linv = solve_triangular(self.L, np.eye(self.L.shape[0]), lower=True, check_finite=False)
        return self.Linv


@dataclass(frozen=True)
class PosteriorState:
    """A fitted one-block GP as arrays, in standardized units (module notation):
    ``mu(x) = y_shift + y_scale (mean + amplitude k(x, X; l)^T alpha)``,
    ``v(x) = y_scale^2 (amplitude - ||L^-1 amplitude k(X, x; l)||^2)``."""

    X: np.ndarray
    L: np.ndarray
    alpha: np.ndarray
    lengthscales: np.ndarray
    amplitude: float
    noise: float
    mean: float
    y_shift: float
    y_scale: float


@dataclass
class Posterior:
    theta: np.ndarray
    blocks: dict[Any, Block] = field(default_factory=dict)


__all__ = ["Block", "GPHyperparameters", "Posterior", "PosteriorState"]
