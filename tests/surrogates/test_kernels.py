"""Kernels: values against scikit-learn, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process.kernels import RBF, Matern

from metabo.exceptions import InputDataError
from metabo.surrogates import KERNELS, Laplace, Matern12, Matern52, get_kernel
from metabo.surrogates.kernels import SquaredExponential


def points(seed: int, n: int, d: int) -> np.ndarray:
    X = np.random.default_rng(seed).uniform(size=(n, d))
    X[-1] = X[0]  # a duplicate: r = 0 off the diagonal
    return X


@pytest.mark.parametrize("d", [1, 3, 6])
def test_matern_values_match_sklearn(d: int) -> None:
    A, B = points(0, 12, d), points(1, 7, d)
    ls = np.linspace(0.3, 1.5, d)
    assert_allclose(Matern52()(A, B, ls), Matern(ls, nu=2.5)(A, B), rtol=1e-12)
    assert_allclose(Matern12()(A, B, ls), Matern(ls, nu=0.5)(A, B), rtol=1e-12)
    assert_allclose(SquaredExponential()(A, B, ls), RBF(ls)(A, B), rtol=1e-12)


def test_laplace_is_a_product_of_one_dimensional_exponential_kernels() -> None:
    A, B = points(2, 10, 4), points(3, 6, 4)
    ls = np.array([0.2, 0.7, 1.0, 3.0])
    expected = np.prod([Matern(ls[k], nu=0.5)(A[:, [k]], B[:, [k]]) for k in range(4)], axis=0)
    assert_allclose(Laplace()(A, B, ls), expected, rtol=1e-12)


@pytest.mark.parametrize("kernel", [Matern52(), Matern12(), Laplace(), SquaredExponential()])
def test_gradient_tensor_and_contraction(kernel) -> None:
    X = points(4, 9, 3)
    ls = np.array([0.3, 0.8, 1.7])
    tensor = kernel.gradient(X, ls)
    for k in range(3):
        h = np.zeros(3)
        h[k] = 1e-6
        fd = (kernel(X, X, ls * np.exp(h)) - kernel(X, X, ls * np.exp(-h))) / 2e-6
        assert_allclose(tensor[:, :, k], fd, atol=1e-7)
    M = np.random.default_rng(0).standard_normal((9, 9))
    M = M + M.T
    expected = np.einsum("ij,ijk->k", M, tensor)
    K = kernel(X, X, ls)
    assert_allclose(kernel.grad_contract(X, ls, K, M), expected, rtol=1e-10, atol=1e-10)
    K2, contract = kernel.gram(X, ls)
    assert_allclose(K2, K, rtol=1e-14)
    assert_allclose(contract(M), expected, rtol=1e-10, atol=1e-10)
    assert_allclose(np.diag(K), kernel.diag(X))


def test_registry() -> None:
    assert isinstance(get_kernel("laplace"), Laplace)
    assert get_kernel(KERNELS["matern52"]) is KERNELS["matern52"]
    with pytest.raises(InputDataError, match="unknown kernel"):
        get_kernel("rbf")
    with pytest.raises(TypeError):
        KERNELS["x"] = Matern52()  # type: ignore[index]
