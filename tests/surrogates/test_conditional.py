"""ConditionalGP against the dense computation with a kernel zeroed across groups."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from metabo.exceptions import InputDataError
from metabo.space import Float, SearchSpace
from metabo.space.cash import CASHSpace
from metabo.surrogates import (
    ConditionalGP,
    GaussianProcess,
    GPHyperparameters,
    cash_groups,
    get_kernel,
    groups_from_active,
    impute_inactive,
)


def data(seed: int, n: int, d: int, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    g = rng.integers(n_groups, size=n)
    y = np.sin(5 * X[:, 0]) + g + 0.1 * rng.standard_normal(n)
    return X, y, g


def dense(gp: ConditionalGP, X: np.ndarray, y: np.ndarray, g: np.ndarray, Z: np.ndarray, gz: np.ndarray):
    """Mean, variance (y's units) and mll (standardized) with K_ij = 0 across groups."""
    h = gp.hyperparameters_
    k = get_kernel(gp.kernel)
    K = h.amplitude * k(X, X, h.lengthscales) * (g[:, None] == g[None, :]) + h.noise * np.eye(len(y))
    Ks = h.amplitude * k(X, Z, h.lengthscales) * (g[:, None] == gz[None, :])
    Kinv = np.linalg.inv(K)
    mean = h.mean + Ks.T @ Kinv @ (y - h.mean)
    var = h.amplitude - np.einsum("ij,ik,kj->j", Ks, Kinv, Ks)
    s = gp.y_scale_
    r = (y - h.mean) / s
    Kz = K / s**2
    mll = -0.5 * r @ np.linalg.solve(Kz, r) - 0.5 * np.linalg.slogdet(Kz)[1] - 0.5 * len(y) * np.log(2 * np.pi)
    return mean, var, mll


@pytest.mark.parametrize("kernel", ["matern52", "laplace"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_dense_computation(kernel: str, seed: int) -> None:
    X, y, g = data(seed, 45, 3, 3)
    gp = ConditionalGP(kernel, seed=0).fit(X, y, g)
    Z = np.random.default_rng(seed + 10).uniform(size=(30, 3))
    gz = np.random.default_rng(seed + 11).integers(4, size=30)  # group 3 has no data
    mean, var = gp.predict(Z, gz)
    d_mean, d_var, d_mll = dense(gp, X, y, g, Z, gz)
    assert_allclose(mean, d_mean, rtol=1e-7, atol=1e-10)
    assert_allclose(var, d_var, rtol=1e-7, atol=1e-10)
    assert gp.log_marginal_likelihood() == pytest.approx(d_mll, rel=1e-9)
    assert_allclose(mean[gz == 3], gp.mean_)  # the prior where a group has no data
    assert_allclose(var[gz == 3], gp.amplitude_)
    assert gp.block_sizes_ == {int(k): int(np.sum(g == k)) for k in np.unique(g)}


def test_one_group_is_the_dense_gp() -> None:
    X, y, _ = data(3, 30, 2, 1)
    a = ConditionalGP(seed=0).fit(X, y)
    b = GaussianProcess(seed=0).fit(X, y)
    assert_allclose(a.theta_, b.theta_)
    Z = np.random.default_rng(0).uniform(size=(10, 2))
    assert_allclose(a.predict(Z), b.predict(Z))


def test_gradient_is_the_sum_over_blocks() -> None:
    X, y, g = data(4, 40, 2, 4)
    gp = ConditionalGP().fit(X, y, g, hyperparameters=GPHyperparameters(np.ones(2), 1.0, 0.05, 1.0))
    theta = np.r_[-0.5, 0.2, 0.1, -3.0, 0.3]
    value, grad = gp.log_posterior(theta, grad=True)
    fd = np.array([(gp.log_posterior(theta + e) - gp.log_posterior(theta - e)) / 2e-6 for e in 1e-6 * np.eye(5)])
    assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)
    assert gp.log_marginal_likelihood() == pytest.approx(
        sum(_block_mll(gp, X[g == k], y[g == k]) for k in range(4)), rel=1e-10)


@pytest.mark.parametrize("kernel", ["matern52", "laplace"])
def test_one_masked_factorization_equals_block_by_block(kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``JOINT_MAX_ROWS`` the likelihood is one masked n x n factorization; value
    and gradient equal the sum over the blocks computed one by one."""
    from metabo.surrogates import gp as gp_module

    X, y, g = data(6, 60, 4, 7)
    gp = ConditionalGP(kernel).fit(X, y, g, hyperparameters=GPHyperparameters(np.full(4, 0.7), 1.3, 0.02, 0.5))
    theta = gp.theta_ + np.random.default_rng(0).normal(scale=0.3, size=gp.theta_.size)
    joint = gp.log_posterior(theta, grad=True)
    monkeypatch.setattr(gp_module, "JOINT_MAX_ROWS", 0)
    gp._joint_cache = None
    blockwise = gp.log_posterior(theta, grad=True)
    assert joint[0] == pytest.approx(blockwise[0], rel=1e-12)
    assert_allclose(joint[1], blockwise[1], rtol=1e-9, atol=1e-12)


def _block_mll(gp: ConditionalGP, X: np.ndarray, y: np.ndarray) -> float:
    """A block's mll in the conditional GP's standardization."""
    z = (y - gp.y_shift_) / gp.y_scale_
    h = gp.hyperparameters_
    s2 = gp.y_scale_**2
    K = h.amplitude / s2 * get_kernel(gp.kernel)(X, X, h.lengthscales) + h.noise / s2 * np.eye(len(y))
    r = z - (h.mean - gp.y_shift_) / gp.y_scale_
    return float(-0.5 * r @ np.linalg.solve(K, r) - 0.5 * np.linalg.slogdet(K)[1] - 0.5 * len(y) * np.log(2 * np.pi))


def test_add_extends_only_its_block_and_matches_a_fresh_fit() -> None:
    X, y, g = data(5, 50, 3, 3)
    gp = ConditionalGP(seed=0).fit(X[:40], y[:40], g[:40])
    before = {k: b.L.copy() for k, b in gp._posteriors[0].blocks.items()}
    for x, v, k in zip(X[40:], y[40:], g[40:]):
        gp.add(x, v, k)
    gp.add(np.full(3, 0.5), 0.0, 7)  # a new group
    for k, L in before.items():
        if k not in g[40:]:
            assert gp._posteriors[0].blocks[k].L is not None and np.array_equal(gp._posteriors[0].blocks[k].L, L)
    X2, y2, g2 = np.vstack([X, np.full((1, 3), 0.5)]), np.append(y, 0.0), np.append(g, 7)
    fresh = ConditionalGP().fit(X2, y2, g2, hyperparameters=gp.hyperparameters_)
    Z = np.random.default_rng(0).uniform(size=(20, 3))
    gz = np.random.default_rng(1).integers(3, size=20)
    gz[:3] = 7
    for a, b in zip(gp.predict(Z, gz), fresh.predict(Z, gz)):
        assert_allclose(a, b, rtol=1e-8, atol=1e-12)


def test_samples_are_independent_across_groups() -> None:
    X, y, g = data(6, 30, 2, 2)
    gp = ConditionalGP(seed=0).fit(X, y, g)
    Z = np.array([[0.2, 0.2], [0.2, 0.2], [0.8, 0.8]])
    gz = np.array([0, 1, 0])
    s = gp.sample(Z, 20000, seed=0, groups=gz)
    mean, var = gp.predict(Z, gz)
    assert_allclose(s.mean(axis=0), mean, atol=0.05 * np.sqrt(var.max()))
    assert_allclose(s.var(axis=0), var, rtol=0.05)
    assert abs(np.corrcoef(s[:, 0], s[:, 1])[0, 1]) < 0.03


def test_impute_and_groups() -> None:
    X = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    active = np.array([[True, False, True], [True, True, False]])
    assert_allclose(impute_inactive(X, active), [[0.1, 0.5, 0.3], [0.4, 0.5, 0.5]])
    assert_allclose(impute_inactive(X, active, value=[0, 1, 2]), [[0.1, 1, 0.3], [0.4, 0.5, 2]])
    with pytest.raises(InputDataError):
        impute_inactive(X, active[:, :2])
    masks = np.array([[1, 0, 1], [1, 1, 0], [1, 0, 1], [0, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(groups_from_active(masks), [0, 1, 0, 2])


def test_cash_encoding_groups_and_imputation() -> None:
    space = CASHSpace({"a": SearchSpace("a", [Float("x", 0.0, 1.0, default=0.5)]),
                       "b": SearchSpace("b", [Float("u", 0.0, 1.0, default=0.25), Float("v", 0.0, 1.0)])})
    configs = space.sample(0, 20)
    X = space.encode_many(configs)
    groups = cash_groups(len(space), X)
    np.testing.assert_array_equal(groups, [space.algorithms.index(a) for a, _ in configs])
    active = np.array([space.active_mask(a, p) for a, p in configs])
    defaults = space.encode_many([space.default_configuration("a"), space.default_configuration("b")])
    # the encoding already imputes each inactive block with its default's encoding
    assert_allclose(impute_inactive(X, active, defaults[0]), X)
    assert_allclose(impute_inactive(X, active, defaults[1]), X)
    assert len(np.unique(groups_from_active(active))) == 2
