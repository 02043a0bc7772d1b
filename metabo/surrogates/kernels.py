"""Stationary ARD kernels of unit amplitude and their gradients w.r.t. log-lengthscales.

Notation: ``A`` (n, d) and ``B`` (m, d) inputs, ``l`` (d,) lengthscales, ``D_k = (a_k -
b_k)^2 / l_k^2`` (squared scaled difference on dimension k), ``r = sqrt(sum_k D_k)``
(scaled Euclidean distance), ``r1 = sum_k |a_k - b_k| / l_k`` (scaled L1 distance).

- Matern 5/2 (Snoek et al. 2012; thesis 5.5 "Matern52 ... with ARD"):
  ``k = (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)``,
  ``dk/dlog l_k = (5/3) (1 + sqrt5 r) exp(-sqrt5 r) D_k``.
- Matern 1/2, the exponential kernel: ``k = exp(-r)``, ``dk/dlog l_k = exp(-r) D_k / r``.
- Laplace (thesis 5.4.2, eq. 5.15 with one lengthscale per dimension): ``k = exp(-r1)``,
  a product of 1-d exponential kernels, the limit of the Mondrian kernel;
  ``dk/dlog l_k = exp(-r1) |a_k - b_k| / l_k``.
- Squared exponential (SE-ARD, Rasmussen & Williams eq. 5.1; the GP of SCoT, Bardenet et
  al. 2013 sec. 3.3): ``k = exp(-r^2 / 2)``, ``dk/dlog l_k = k D_k``.

The amplitude ``sigma_a^2`` multiplies these (thesis eq. 2.15); :mod:`metabo.surrogates.gp`
applies it. ``grad_contract(X, l, K, M)`` returns ``g_k = sum_ij M_ij dK_ij/dlog l_k``
(what the marginal-likelihood gradient needs) in O(n^2 d) without the (n, n, d) tensor;
``gradient(X, l)`` returns the tensor itself (for tests and small problems).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
from scipy.spatial.distance import cdist

from metabo.exceptions import InputDataError

_SQRT5 = np.sqrt(5.0)


class Kernel(ABC):
    """A unit-amplitude stationary ARD kernel ``k(a, b; l)``."""

    name: str = ""

    @abstractmethod
    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, m) matrix ``k(A_i, B_j)``."""

    @abstractmethod
    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``g_k = sum_ij M_ij dK_ij / dlog l_k`` for symmetric ``M`` (n, n); ``K = k(X, X)``."""

    @abstractmethod
    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, n, d) tensor ``dk(X_i, X_j) / dlog l_k``."""

    def gram(self, X: np.ndarray, lengthscales: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """``K = k(X, X)`` and ``M -> grad_contract(X, l, K, M)`` (sharing the distances)."""
        K = self(X, X, lengthscales)
        return K, lambda M: self.grad_contract(X, lengthscales, K, M)

    def diag(self, A: np.ndarray) -> np.ndarray:
        """``k(a, a) = 1`` for every row (stationary, unit amplitude)."""
        return np.ones(A.shape[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _sq_contract(G: np.ndarray, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """``sum_ij G_ij (x_ik - x_jk)^2 / l_k^2`` for every k, symmetric ``G``, in O(n^2 d):
    ``2 sum_i (G 1)_i a_ik^2 - 2 a_k^T G a_k`` with ``a = (X - mean) / l`` (centred
    against cancellation)."""
    A = (X - X.mean(axis=0)) / lengthscales
    return 2.0 * (G.sum(axis=1) @ (A * A) - (A * (G @ A)).sum(axis=0))


class Matern52(Kernel):
    """Matern 5/2 with ARD lengthscales."""

    name = "matern52"

    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        s = cdist(A / lengthscales, B / lengthscales, "sqeuclidean")
        np.sqrt(s, out=s)
        s *= _SQRT5
        K = s * s
        K *= 1.0 / 3.0
        K += s
        K += 1.0
        np.negative(s, out=s)
        np.exp(s, out=s)
        K *= s
        return K  # (1 + s + s^2 / 3) exp(-s), in place

    @staticmethod
    def _g(X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        s = _SQRT5 * np.sqrt(cdist(X / lengthscales, X / lengthscales, "sqeuclidean"))
        return (5.0 / 3.0) * (1.0 + s) * np.exp(-s)

    def gram(self, X: np.ndarray, lengthscales: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """``K = k(X, X)`` and ``M -> grad_contract(X, l, K, M)``, sharing the distances."""
        s = cdist(X / lengthscales, X / lengthscales, "sqeuclidean")
        np.sqrt(s, out=s)
        s *= _SQRT5
        e = np.exp(-s)
        K = s * s
        K *= 1.0 / 3.0
        K += s
        K += 1.0
        K *= e

        def contract(M: np.ndarray) -> np.ndarray:
            G = s + 1.0
            G *= e
            G *= M
            return (5.0 / 3.0) * _sq_contract(G, X, lengthscales)

        return K, contract

    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``g_k = sum_ij M_ij dK_ij / dlog l_k`` for symmetric ``M`` (n, n); ``K = k(X, X)``."""
        return _sq_contract(M * self._g(X, lengthscales), X, lengthscales)

    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, n, d) tensor ``dk(X_i, X_j) / dlog l_k``."""
        D = ((X[:, None, :] - X[None, :, :]) / lengthscales) ** 2
        return self._g(X, lengthscales)[:, :, None] * D


class Matern12(Kernel):
    """Matern 1/2 (exponential) with ARD lengthscales, on the scaled Euclidean distance."""

    name = "matern12"

    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        return np.exp(-np.sqrt(cdist(A / lengthscales, B / lengthscales, "sqeuclidean")))

    @staticmethod
    def _g(X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray) -> np.ndarray:
        r = np.sqrt(cdist(X / lengthscales, X / lengthscales, "sqeuclidean"))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r > 0.0, K / r, 0.0)  # D_k = 0 wherever r = 0

    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``g_k = sum_ij M_ij dK_ij / dlog l_k`` for symmetric ``M`` (n, n); ``K = k(X, X)``."""
        return _sq_contract(M * self._g(X, lengthscales, K), X, lengthscales)

    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, n, d) tensor ``dk(X_i, X_j) / dlog l_k``."""
        D = ((X[:, None, :] - X[None, :, :]) / lengthscales) ** 2
        return self._g(X, lengthscales, self(X, X, lengthscales))[:, :, None] * D


class Laplace(Kernel):
    """Laplace kernel ``exp(-sum_k |a_k - b_k| / l_k)`` (thesis eq. 5.15, ARD)."""

    name = "laplace"

    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        return np.exp(-cdist(A / lengthscales, B / lengthscales, "cityblock"))

    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``g_k = sum_ij M_ij dK_ij / dlog l_k`` for symmetric ``M`` (n, n); ``K = k(X, X)``."""
        G = M * K
        A = X / lengthscales
        return np.array([np.sum(G * np.abs(A[:, k, None] - A[None, :, k])) for k in range(X.shape[1])])

    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, n, d) tensor ``dk(X_i, X_j) / dlog l_k``."""
        A = X / lengthscales
        return self(X, X, lengthscales)[:, :, None] * np.abs(A[:, None, :] - A[None, :, :])


class SquaredExponential(Kernel):
    """Squared exponential ``exp(-r^2 / 2)`` with ARD lengthscales (SE-ARD)."""

    name = "se"

    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        K = cdist(A / lengthscales, B / lengthscales, "sqeuclidean")
        K *= -0.5
        return np.exp(K, out=K)

    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``g_k = sum_ij M_ij dK_ij / dlog l_k`` for symmetric ``M`` (n, n); ``K = k(X, X)``."""
        return _sq_contract(M * K, X, lengthscales)

    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        """The (n, n, d) tensor ``dk(X_i, X_j) / dlog l_k``."""
        D = ((X[:, None, :] - X[None, :, :]) / lengthscales) ** 2
        return self(X, X, lengthscales)[:, :, None] * D


#: The kernels by name (read-only).
KERNELS: Mapping[str, Kernel] = MappingProxyType(
    {"matern52": Matern52(), "matern12": Matern12(), "exponential": Matern12(), "laplace": Laplace(),
     "se": SquaredExponential()}
)


def get_kernel(kernel: str | Kernel) -> Kernel:
    """A :class:`Kernel` from its name (``matern52``, ``matern12``/``exponential``, ``laplace``, ``se``)."""
    if isinstance(kernel, Kernel):
        return kernel
    try:
        return KERNELS[kernel]
    except (KeyError, TypeError):
        raise InputDataError(f"unknown kernel {kernel!r}; choose one of {sorted(KERNELS)}") from None
