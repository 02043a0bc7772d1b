"""The surrogate bank's batched predictions: members of one algorithm stacked in bins of
similar size and predicted together, chunk by chunk (:class:`~metabo.surrogates.bank.SurrogateBank`
and :func:`state_predictor` for one GP's posterior arrays).

Member ``i`` of a bin: standardized inputs ``X_i`` (``n_i`` rows, zero-padded to the bin's
``n``), lengthscales ``l_i``, signal variance ``sigma_i^2``, ``alpha_i`` and the lower
Cholesky factor ``L_i`` of ``K_i``; at test points ``X*`` the Matérn 5/2 cross-covariance
``k_i = sigma_i^2 k(X*, X_i; l_i)`` gives ``mu_i = m_i + k_i alpha_i`` and
``v_i = sigma_i^2 - ||L_i^-1 k_i||^2`` (:mod:`metabo.surrogates.gp`'s posterior), computed
for every member at once with BLAS (``syrk``/``trmm``) on arrays kept inside L2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import get_blas_funcs, solve_triangular
from scipy.spatial.distance import cdist

from metabo.surrogates.gp import PosteriorState

if TYPE_CHECKING:
    pass


SQRT5 = float(np.sqrt(5.0))


SYRK, TRMM = get_blas_funcs(("syrk", "trmm"), dtype=np.float64)


#: Elements of one chunk's (chunk, M, n) arrays: 2^16 doubles = 512 KB, inside L2.
CHUNK_ELEMENTS = 1 << 16


#: Elements per block of the elementwise kernel passes.
BLOCK_ELEMENTS = 1 << 16


#: A bin holds members whose n is at least this fraction of its largest n.
BIN_FILL = 0.75


#: At most this many doubles in one bin's stacked W (G, n, n).
BIN_MAX_ELEMENTS = 1 << 22


def matern52_r2(r2: np.ndarray) -> np.ndarray:
    """``k = (1 + r + r^2/3) exp(-r)`` from ``r^2`` (C-contiguous), in place (returned); in
    blocks of :data:`BLOCK_ELEMENTS` so that the seven passes stay in cache (twice as
    fast as whole-array passes at 10^6 elements)."""
    flat = r2.reshape(-1)
    scratch = np.empty(min(BLOCK_ELEMENTS, flat.size))
    for lo in range(0, flat.size, BLOCK_ELEMENTS):
        x = flat[lo:lo + BLOCK_ELEMENTS]
        r = scratch[:len(x)]
        np.sqrt(x, out=r)
        x *= 1.0 / 3.0
        x += r
        x += 1.0  # 1 + r + r^2/3
        np.negative(r, out=r)
        np.exp(r, out=r)
        x *= r
    return r2


@dataclass(frozen=True)
class Prepared:
    """Arrays of one member for prediction (module notation)."""

    ls: np.ndarray  # (d,) sqrt5 / l
    B: np.ndarray  # (n, d) scaled training inputs X sqrt5 / l
    alpha: np.ndarray  # (n,) sigma_a^2 alpha
    W: np.ndarray  # (n, n) sigma_a^2 L^-T

    @classmethod
    def of(cls, s: PosteriorState) -> Prepared:
        """The precomputed form of the posterior ``s``: scaled lengthscales and inputs,
        ``amplitude * alpha`` and ``amplitude * L^-T``."""
        ls = SQRT5 / np.asarray(s.lengthscales, dtype=float)
        Linv = solve_triangular(s.L, np.eye(len(s.alpha)), lower=True, check_finite=False)  # L^-1 (LAPACK trtrs)
        return cls(ls, s.X * ls, s.amplitude * s.alpha, np.ascontiguousarray(s.amplitude * Linv.T))


@dataclass(frozen=True)
class Bin:
    """Members of one algorithm with similar n, stacked and zero-padded to ``n``."""

    rows: np.ndarray  # (G,) positions in members(algorithm)
    ls: np.ndarray  # (G, d)
    B: np.ndarray  # (G, n, d)
    alpha: np.ndarray  # (G, n)
    W: np.ndarray  # (G, n, n)
    amp: np.ndarray  # (G,) sigma_a^2
    mean: np.ndarray  # (G,) m
    shift: np.ndarray  # (G,) c
    scale: np.ndarray  # (G,) s

    def take(self, pick: np.ndarray | slice) -> Bin:
        """The bin of the members ``pick`` only."""
        return Bin(*(getattr(self, f)[pick] for f in self.__dataclass_fields__))


#: One member's sampling factors at some X* (m points): shift c, scale s, the mean
#: ``m + k0 (sigma_a^2 alpha)`` (m,) and the lower Cholesky factor C of Sigma (m, m).
Factor = tuple[float, float, np.ndarray, np.ndarray]


def stack_bin(rows: Sequence[int], states: Sequence[PosteriorState], prepared: Sequence[Prepared]) -> Bin:
    """The members ``rows`` stacked into one bin, zero-padded to the largest ``n`` (a padded
    point contributes nothing)."""
    n = max(len(s.alpha) for s in states)
    G, d = len(states), states[0].X.shape[1]
    B, alpha, W = np.zeros((G, n, d)), np.zeros((G, n)), np.zeros((G, n, n))
    for g, p in enumerate(prepared):
        k = len(p.alpha)
        B[g, :k], alpha[g, :k], W[g, :k, :k] = p.B, p.alpha, p.W
    return Bin(np.asarray(rows, dtype=int), np.stack([p.ls for p in prepared]), B, alpha, W,
                np.array([s.amplitude for s in states]), np.array([s.mean for s in states]),
                np.array([s.y_shift for s in states]), np.array([s.y_scale for s in states]))


def cross_kernel(b: Bin, X: np.ndarray) -> np.ndarray:
    """``k0(X*, X)`` of every member of ``b``: (G, M, n)."""
    A = X[None, :, :] * b.ls[:, None, :]  # (G, M, d)
    r2 = np.empty((A.shape[0], A.shape[1], b.B.shape[1]))
    for g in range(A.shape[0]):  # differences, not |a|^2 + |b|^2 - 2ab: no cancellation
        cdist(A[g], b.B[g], "sqeuclidean", out=r2[g])
    return matern52_r2(r2)


def bin_posterior(b: Bin, X: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
    """Mean and latent variance of every member of ``b`` at ``X`` into (G, M) ``mean``, ``var``."""
    k0 = cross_kernel(b, X)
    np.matmul(k0, b.alpha[:, :, None], out=mean[:, :, None])  # k0 (sigma_a^2 alpha)
    V = k0 @ b.W  # (L^-1 k*)^T
    np.einsum("gmn,gmn->gm", V, V, out=var)
    mean += b.mean[:, None]
    mean *= b.scale[:, None]
    mean += b.shift[:, None]
    np.subtract(b.amp[:, None], var, out=var)
    np.maximum(var, 0.0, out=var)
    var *= (b.scale**2)[:, None]


def state_predictor(state: PosteriorState) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``X (m, d) -> (mean, latent variance)`` (m,) of one fitted GP from its posterior
    arrays, in its y units, by the bank's batched path (a bin of one member): the same
    posterior as :meth:`GaussianProcess.predict <metabo.surrogates.gp.GaussianProcess.predict>`
    of a MAP one-block GP, to rounding, without its per-call validation and bookkeeping
    (RLGP's target GPs are predicted at every step of the acquisition search)."""
    b = stack_bin([0], [state], [Prepared.of(state)])

    def predict(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Xc = np.asarray(X, dtype=float)
        mean, var = np.empty((1, len(Xc))), np.empty((1, len(Xc)))
        if len(Xc):
            bin_posterior(b, Xc, mean, var)
        return mean[0], var[0]

    return predict


__all__ = ["Bin", "Prepared", "bin_posterior", "cross_kernel", "matern52_r2", "stack_bin", "state_predictor"]
