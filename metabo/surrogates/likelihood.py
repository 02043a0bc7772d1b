"""The log marginal likelihood of one block of a GP and its analytic gradient.

Notation as in :mod:`metabo.surrogates.gp`: ``K = sigma_a^2 k(X, X) + nu I = L L^T``,
``alpha = K^-1 (z - m 1)``;
``log p(z | X, theta) = -1/2 (z - m)^T alpha - sum_i log L_ii - n/2 log 2 pi`` (thesis eq.
2.16), ``d/dtheta_j = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta_j)`` (Rasmussen & Williams
eq. 5.9), ``d/dm = 1^T alpha``; ``theta = [log l (d), log sigma_a^2, log nu, m]``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import get_lapack_funcs

from metabo.exceptions import SurrogateError
from metabo.surrogates.kernels import Kernel

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Jitter added to a diagonal that fails Cholesky: 1e-10 of its mean, times 10 until 1e-2.
JITTER_START, JITTER_MAX = 1e-10, 1e-2


# The marginal-likelihood loop calls LAPACK through scipy.linalg's own wrappers (what
# cholesky / cho_solve wrap), skipping their input validation: ~4x less overhead at n = 50.
_POTRF, _POTRS, _POTRI = get_lapack_funcs(("potrf", "potrs", "potri"), dtype=np.float64)


def _potrf(K: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor (zero upper triangle), or None if K is not positive definite."""
    L, info = _POTRF(K, lower=1, clean=1)
    return L if info == 0 and np.isfinite(L.diagonal().sum()) else None


def cholesky_jitter(K: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of ``K + j I`` and the jitter ``j``: 0 when K factors, else
    ``JITTER_START`` x its mean diagonal, times 10 until ``JITTER_MAX`` x (then
    :class:`SurrogateError`)."""
    L = _potrf(K)
    if L is not None:
        return L, 0.0
    scale = float(np.mean(np.diag(K))) if K.size else 1.0
    if not np.isfinite(scale) or scale <= 0:
        raise SurrogateError("covariance matrix has a non-finite or non-positive diagonal")
    jitter = JITTER_START * scale
    eye = np.eye(K.shape[0])
    while jitter <= JITTER_MAX * scale:
        L = _potrf(K + jitter * eye)
        if L is not None:
            return L, jitter
        jitter *= 10.0
    raise SurrogateError(
        f"covariance matrix of size {K.shape[0]} is not positive definite even with jitter "
        f"{JITTER_MAX:g} x its mean diagonal; fix the noise to a larger value or remove duplicate points"
    )


def _cho_inverse(L: np.ndarray) -> np.ndarray:
    """``K^-1`` from the lower Cholesky factor of K (LAPACK potri: 2n^3/3 flops against
    2n^3 for ``cho_solve(L, I)``)."""
    P, info = _POTRI(L, lower=1)  # lower triangle of K^-1; the upper one is L's (zero)
    if info != 0:
        raise SurrogateError(f"inverting the covariance from its Cholesky factor failed (potri info {info})")
    full = P + P.T
    full.flat[:: P.shape[0] + 1] *= 0.5
    return full


def unpack_theta(theta: np.ndarray, d: int) -> tuple[np.ndarray, float, float, float]:
    """``(l, sigma_a^2, nu, m)`` from ``theta``."""
    return np.exp(theta[:d]), float(np.exp(theta[d])), float(np.exp(theta[d + 1])), float(theta[d + 2])


def block_log_likelihood(
    kernel: Kernel, theta: np.ndarray, X: np.ndarray, z: np.ndarray, grad: bool = False
) -> tuple[float, np.ndarray | None, np.ndarray, np.ndarray, float]:
    """``(log p(z | X, theta), gradient or None, L, alpha, jitter)`` of one block (eq. 2.16)."""
    n, d = X.shape
    ls, amp, nu, m = unpack_theta(theta, d)
    K0, contract = kernel.gram(X, ls)
    K = amp * K0
    K.flat[:: n + 1] += nu
    L, jitter = cholesky_jitter(K)
    r = z - m
    alpha, _ = _POTRS(L, r, lower=1)
    mll = -0.5 * float(r @ alpha) - float(np.log(L.diagonal()).sum()) - 0.5 * n * _LOG_2PI
    if not grad:
        return mll, None, L, alpha, jitter
    W = np.outer(alpha, alpha) - _cho_inverse(L)  # R&W eq. 5.9
    g = np.empty(d + 3)
    g[:d] = 0.5 * amp * contract(W)  # dK/dlog l_k = amp dk/dlog l_k
    g[d] = 0.5 * amp * float((W * K0).sum())  # dK/dlog amp = amp K0
    g[d + 1] = 0.5 * nu * float(W.trace())  # dK/dlog nu = nu I
    g[d + 2] = float(alpha.sum())  # d/dm of -1/2 r^T K^-1 r
    return mll, g, L, alpha, jitter


def masked_log_likelihood(
    kernel: Kernel, theta: np.ndarray, X: np.ndarray, z: np.ndarray, same: np.ndarray, grad: bool = False
) -> tuple[float, np.ndarray | None] | None:
    """The summed ``block_log_likelihood`` of every block at once: ``K`` is the whole gram
    matrix times ``same`` (``same_ij``: rows i and j lie in one block), which is the
    conditional kernel's block-diagonal covariance (thesis eq. 5.10), and ``W`` of eq. 5.9
    is masked the same way, so value and gradient are the sums over the blocks (the
    Cholesky factor and ``K^-1`` of a block-diagonal matrix are block-diagonal, with exact
    zeros). One factorization of the n rows costs less than one call per block while n is
    small. None when ``K`` needs jitter: the caller then factors block by block, each
    block with its own jitter."""
    n, d = X.shape
    ls, amp, nu, m = unpack_theta(theta, d)
    K0, contract = kernel.gram(X, ls)
    K0 *= same
    K = amp * K0
    K.flat[:: n + 1] += nu
    L = _potrf(K)
    if L is None:
        return None
    r = z - m
    alpha, _ = _POTRS(L, r, lower=1)
    mll = -0.5 * float(r @ alpha) - float(np.log(L.diagonal()).sum()) - 0.5 * n * _LOG_2PI
    if not grad:
        return mll, None
    W = np.outer(alpha, alpha)
    W *= same
    W -= _cho_inverse(L)
    g = np.empty(d + 3)
    g[:d] = 0.5 * amp * contract(W)
    g[d] = 0.5 * amp * float((W * K0).sum())
    g[d + 1] = 0.5 * nu * float(W.trace())
    g[d + 2] = float(alpha.sum())
    return mll, g
