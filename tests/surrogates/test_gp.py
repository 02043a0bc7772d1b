"""GaussianProcess: agreement with scikit-learn, analytic gradients, add, samples, ARD."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import approx_fprime
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from metabo.exceptions import InputDataError, SurrogateError
from metabo.surrogates import GaussianProcess, GPHyperparameters, GPPriors, cholesky_jitter


def data(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = 5.0 + 3.0 * np.sin(4.0 * X @ rng.uniform(0.5, 1.5, d)) + 0.1 * rng.standard_normal(n)
    return X, y


def random_hyper(seed: int, d: int, y: np.ndarray) -> tuple[np.ndarray, float, float]:
    rng = np.random.default_rng(seed + 100)
    return rng.uniform(0.2, 2.0, d), float(rng.uniform(0.5, 2.0)), float(rng.uniform(1e-3, 1e-1))


def sklearn_gp(X: np.ndarray, y: np.ndarray, ls: np.ndarray, c: float, w: float, nu: float) -> GaussianProcessRegressor:
    kernel = ConstantKernel(c, "fixed") * Matern(ls, "fixed", nu=nu) + WhiteKernel(w, "fixed")
    return GaussianProcessRegressor(kernel, alpha=0.0, optimizer=None, normalize_y=True).fit(X, y)


@pytest.mark.parametrize("kernel,nu", [("matern52", 2.5), ("matern12", 0.5)])
@pytest.mark.parametrize("d", range(1, 7))
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_sklearn_with_same_hyperparameters(kernel: str, nu: float, d: int, seed: int) -> None:
    X, y = data(seed, 25, d)
    ls, c, w = random_hyper(seed, d, y)
    sk = sklearn_gp(X, y, ls, c, w, nu)
    s2 = y.var()  # sklearn's normalize_y: (y - mean) / std, population std as ours
    gp = GaussianProcess(kernel).fit(X, y, hyperparameters=GPHyperparameters(ls, c * s2, w * s2, y.mean()))
    Z = np.random.default_rng(seed + 7).uniform(size=(40, d))
    mean, var = gp.predict(Z)
    sk_mean, sk_std = sk.predict(Z, return_std=True)
    assert_allclose(mean, sk_mean, rtol=1e-6, atol=1e-9)
    assert_allclose(var + gp.noise_, sk_std**2, rtol=1e-6)  # sklearn's std includes the white noise
    assert gp.log_marginal_likelihood() == pytest.approx(sk.log_marginal_likelihood_value_, rel=1e-6)


def test_laplace_in_one_dimension_is_sklearn_matern12() -> None:
    X, y = data(3, 20, 1)
    sk = sklearn_gp(X, y, np.array([0.4]), 1.3, 0.01, 0.5)
    s2 = y.var()
    hyper = GPHyperparameters(np.array([0.4]), 1.3 * s2, 0.01 * s2, y.mean())
    gp = GaussianProcess("laplace").fit(X, y, hyperparameters=hyper)
    Z = np.linspace(0, 1, 31)[:, None]
    mean, var = gp.predict(Z)
    sk_mean, sk_std = sk.predict(Z, return_std=True)
    assert_allclose(mean, sk_mean, rtol=1e-6, atol=1e-9)
    assert_allclose(var + gp.noise_, sk_std**2, rtol=1e-6)


@pytest.mark.parametrize("kernel", ["matern52", "matern12", "laplace"])
@pytest.mark.parametrize("noise", [None, 0.05])
def test_mll_and_posterior_gradients_match_finite_differences(kernel: str, noise: float | None) -> None:
    X, y = data(4, 30, 3)
    gp = GaussianProcess(kernel, noise=noise).fit(X, y, hyperparameters=GPHyperparameters(np.ones(3), 1.0, 0.05, 5.0))
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = np.r_[rng.uniform(-1.5, 0.5, 3), rng.uniform(-1, 1), rng.uniform(-6, -1), rng.uniform(-0.5, 0.5)]
        for f in (gp.log_marginal_likelihood, gp.log_posterior):
            value, grad = f(theta, grad=True)
            assert value == pytest.approx(f(theta))
            fd = np.array([  # central differences
                (f(theta + e) - f(theta - e)) / 2e-6 for e in 1e-6 * np.eye(theta.size)
            ])
            assert_allclose(grad, fd, rtol=1e-5, atol=1e-5 * (1 + np.abs(fd).max()))
    # the forward-difference check of scipy, on the mll
    theta = gp.theta_
    assert_allclose(gp.log_marginal_likelihood(theta, grad=True)[1],
                    approx_fprime(theta, gp.log_marginal_likelihood, 1e-7), rtol=1e-3, atol=1e-3)


def test_priors_gradient() -> None:
    rng = np.random.default_rng(1)
    for priors in (GPPriors(), GPPriors.dimension_scaled(4), GPPriors.flat()):
        theta = np.r_[rng.normal(size=4), 0.3, -4.0, 0.2]
        _, g = priors.log_prob(theta, 4, grad=True)
        fd = approx_fprime(theta, lambda t, priors=priors: priors.log_prob(t, 4)[0], 1e-7)
        assert_allclose(g, fd, rtol=1e-4, atol=1e-5)


def test_fit_with_theta_carries_standardized_hyperparameters_to_new_targets() -> None:
    """``theta`` is in the GP's standardized units: the same GP on ``a y + b`` (a > 0) keeps
    ``theta_`` and its predictions are ``a mu + b``, ``a^2 var``; equal to ``hyperparameters``
    converted to the new targets' units."""
    X, y = data(3, 20, 3)
    gp = GaussianProcess(seed=0).fit(X, y)
    moved = GaussianProcess().fit(X, 4.0 * y + 7.0, theta=gp.theta_)
    assert_allclose(moved.theta_, gp.theta_)
    Z = np.random.default_rng(1).uniform(size=(10, 3))
    (mu, var), (mu2, var2) = gp.predict(Z), moved.predict(Z)
    assert_allclose(mu2, 4.0 * mu + 7.0, rtol=1e-10)
    assert_allclose(var2, 16.0 * var, rtol=1e-8)
    h = gp.hyperparameters_
    by_units = GaussianProcess().fit(X, 4.0 * y + 7.0, hyperparameters=GPHyperparameters(
        h.lengthscales, 16.0 * h.amplitude, 16.0 * h.noise, 4.0 * h.mean + 7.0))
    assert_allclose(by_units.theta_, moved.theta_, atol=1e-12)
    with pytest.raises(InputDataError, match="not both"):
        GaussianProcess().fit(X, y, hyperparameters=h, theta=gp.theta_)
    with pytest.raises(InputDataError, match="theta must be finite with shape"):
        GaussianProcess().fit(X, y, theta=gp.theta_[:-1])


@pytest.mark.parametrize("kernel", ["matern52", "laplace"])
def test_add_equals_fresh_fit_with_same_hyperparameters(kernel: str) -> None:
    X, y = data(5, 40, 4)
    gp = GaussianProcess(kernel, seed=0).fit(X[:30], y[:30])
    for x, v in zip(X[30:], y[30:]):
        gp.add(x, v)
    fresh = GaussianProcess(kernel).fit(X, y, hyperparameters=gp.hyperparameters_)
    Z = np.random.default_rng(0).uniform(size=(50, 4))
    for a, b in zip(gp.predict(Z), fresh.predict(Z)):
        assert_allclose(a, b, rtol=1e-8, atol=1e-12)
    assert_allclose(gp.X_, X)
    assert_allclose(gp.y_, y)


def test_refit_warm_start_improves_from_current_hyperparameters() -> None:
    X, y = data(6, 60, 3)
    gp = GaussianProcess(seed=0).fit(X[:30], y[:30])
    for x, v in zip(X[30:], y[30:]):
        gp.add(x, v)
    gp.refit(warm_start=True)
    cold = GaussianProcess(seed=0).fit(X, y)
    # one warm L-BFGS-B run reaches (about) the posterior mode of a full fit
    assert gp.log_posterior() >= cold.log_posterior() - 1e-2 * abs(cold.log_posterior())
    assert gp.refit(warm_start=False).log_posterior() == pytest.approx(cold.log_posterior(), rel=1e-8)


def test_samples_match_predict_and_are_reproducible() -> None:
    X, y = data(7, 20, 2)
    gp = GaussianProcess(seed=0).fit(X, y)
    Z = np.random.default_rng(1).uniform(size=(4, 2))
    samples = gp.sample(Z, 20000, seed=3)
    mean, var = gp.predict(Z)
    assert samples.shape == (20000, 4)
    assert_allclose(samples.mean(axis=0), mean, atol=0.05 * np.sqrt(var.max()) + 1e-9)
    assert_allclose(samples.var(axis=0), var, rtol=0.05)
    np.testing.assert_array_equal(gp.sample(Z, 5, seed=3), gp.sample(Z, 5, seed=3))
    assert not np.allclose(gp.sample(Z, 5, seed=3), gp.sample(Z, 5, seed=4))


def test_ard_gives_an_irrelevant_dimension_a_long_lengthscale() -> None:
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(40, 3))
    y = np.sin(6 * X[:, 0]) + np.cos(5 * X[:, 1]) + 0.01 * rng.standard_normal(40)  # x_2 irrelevant
    gp = GaussianProcess(seed=0).fit(X, y)
    ls = gp.lengthscales_
    assert ls[2] > 5 * max(ls[0], ls[1]), ls
    assert gp.noise_ < 0.01


def test_fit_is_deterministic_under_a_seed() -> None:
    X, y = data(9, 30, 3)
    a = GaussianProcess(seed=1).fit(X, y).theta_
    b = GaussianProcess(seed=1).fit(X, y).theta_
    np.testing.assert_array_equal(a, b)


def test_fixed_noise_is_kept() -> None:
    X, y = data(10, 30, 2)
    gp = GaussianProcess(noise=0.04).fit(X, y)
    assert gp.noise_ == pytest.approx(0.04)
    gp.add(np.array([0.5, 0.5]), 5.0).refit()
    assert gp.noise_ == pytest.approx(0.04)


def test_slice_sampling_averages_over_hyperparameter_samples() -> None:
    X, y = data(11, 20, 2)
    gp = GaussianProcess(optimizer="slice", n_samples=6, n_burn=4, seed=0).fit(X, y)
    assert gp.thetas_.shape == (6, 5)
    Z = np.random.default_rng(0).uniform(size=(10, 2))
    mean, var = gp.predict(Z)
    assert np.all(np.isfinite(mean)) and np.all(var > 0)
    again = GaussianProcess(optimizer="slice", n_samples=6, n_burn=4, seed=0).fit(X, y)
    np.testing.assert_array_equal(gp.thetas_, again.thetas_)
    # the mixture: mean of the means, variance at least the mean of the variances
    parts = [GaussianProcess().fit(X, y, hyperparameters=h) for h in _hypers(gp)]
    means = np.array([p.predict(Z)[0] for p in parts])
    assert_allclose(mean, means.mean(axis=0), rtol=1e-8)
    gp.add(np.array([0.1, 0.9]), 5.0).refit()
    assert gp.thetas_.shape == (6, 5)


def _hypers(gp: GaussianProcess) -> list[GPHyperparameters]:
    d, s, m = gp.X_.shape[1], gp.y_scale_, gp.y_shift_
    return [GPHyperparameters(np.exp(t[:d]), np.exp(t[d]) * s * s, np.exp(t[d + 1]) * s * s, m + s * t[d + 2])
            for t in gp.thetas_]


def test_duplicates_without_noise_need_jitter() -> None:
    X = np.array([[0.1, 0.2], [0.1, 0.2], [0.5, 0.5], [0.9, 0.1]])
    y = np.array([1.0, 1.0, 2.0, 0.5])
    gp = GaussianProcess(noise=0.0).fit(X, y, hyperparameters=GPHyperparameters(np.ones(2), 1.0, 0.0, 1.0))
    assert gp.jitter_ > 0
    mean, var = gp.predict(X)
    assert np.all(np.isfinite(mean)) and np.all(var >= 0)
    with pytest.raises(SurrogateError):
        cholesky_jitter(-np.eye(3))


def test_input_errors() -> None:
    with pytest.raises(SurrogateError, match="not fitted"):
        GaussianProcess().predict(np.zeros((1, 2)))
    with pytest.raises(InputDataError):
        GaussianProcess(optimizer="adam")
    with pytest.raises(InputDataError):
        GaussianProcess("rbf")
    gp = GaussianProcess().fit(*data(0, 10, 2))
    with pytest.raises(InputDataError):
        gp.predict(np.zeros((3, 3)))
    with pytest.raises(InputDataError):
        gp.fit(np.zeros((3, 2)), np.array([1.0, np.nan, 2.0]))


def test_constant_targets_and_single_point() -> None:
    gp = GaussianProcess().fit(np.array([[0.3, 0.3]]), np.array([2.0]))
    mean, var = gp.predict(np.array([[0.3, 0.3], [0.9, 0.9]]))
    assert mean[0] == pytest.approx(2.0, abs=1e-2) and var[1] > var[0]
    gp = GaussianProcess().fit(np.random.default_rng(0).uniform(size=(5, 2)), np.full(5, 3.0))
    assert_allclose(gp.predict(np.array([[0.5, 0.5]]))[0], 3.0, atol=1e-6)


def test_fit_recovers_when_some_factorizations_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    import metabo.surrogates.likelihood as gp_module

    real = gp_module.cholesky_jitter
    calls = {"n": 0}

    def flaky(K: np.ndarray) -> tuple[np.ndarray, float]:
        calls["n"] += 1
        if calls["n"] in (2, 3, 9, 30):  # steps of the first line searches fail
            raise SurrogateError("injected")
        return real(K)

    X, y = data(12, 25, 2)
    clean = GaussianProcess(seed=0).fit(X, y)
    monkeypatch.setattr(gp_module, "cholesky_jitter", flaky)
    gp = GaussianProcess(seed=0).fit(X, y)
    assert calls["n"] > 30 and np.all(np.isfinite(gp.predict(X)[0]))
    assert gp.log_posterior() == pytest.approx(clean.log_posterior(), abs=1e-3)


def test_pickle_round_trip() -> None:
    import pickle

    X, y = data(13, 20, 2)
    gp = GaussianProcess(seed=0).fit(X, y)
    clone = pickle.loads(pickle.dumps(gp))
    Z = np.random.default_rng(0).uniform(size=(5, 2))
    for a, b in zip(gp.predict(Z), clone.predict(Z)):
        assert_allclose(a, b)
