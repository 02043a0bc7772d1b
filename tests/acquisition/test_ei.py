"""Expected improvement (minimization) and its stable log form against closed forms,
numerical integration and the tail asymptote."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from metabo.acquisition import expected_improvement, log_expected_improvement
from metabo.acquisition.ei import log_h
from metabo.exceptions import InputDataError


def ei_quad(mean: float, var: float, best: float, xi: float = 0.0) -> float:
    """E[max(best - xi - f, 0)], f ~ N(mean, var), by quadrature (thesis eq. 2.9)."""
    sd = math.sqrt(var)
    target = best - xi
    lo = min(mean - 12 * sd, target - 1.0)
    value, _ = integrate.quad(
        lambda f: (target - f) * stats.norm.pdf(f, mean, sd), lo, target, epsabs=1e-14, epsrel=1e-12
    )
    return value


def log_h_series(z: float) -> float:
    """log h(z) for z << 0 from h(z) = phi(z)/z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6 + ...)."""
    t = 1.0 / (z * z)
    return stats.norm.logpdf(z) - 2 * math.log(-z) + math.log1p(-3 * t + 15 * t**2 - 105 * t**3 + 945 * t**4)


def test_botorch_closed_form():
    # BoTorch's check (mean -0.5, variance 1, best 0 for maximization) mirrored to minimization.
    assert float(expected_improvement(0.5, 1.0, 0.0)) == pytest.approx(0.19780, abs=1e-5)
    assert float(expected_improvement(-0.5, 1.0, 0.0)) == pytest.approx(0.5 * 0.691462 + 0.352065, abs=1e-5)


@pytest.mark.parametrize(
    ("mean", "var", "best", "xi"),
    [(0.0, 1.0, 0.0, 0.0), (0.3, 0.04, 0.1, 0.0), (-2.0, 4.0, 1.0, 0.0), (1.0, 0.25, 0.5, 0.1),
     (5.0, 1.0, 0.0, 0.0), (0.0, 1e-4, 0.03, 0.01), (10.0, 2.0, 0.0, 0.0)],
)
def test_ei_matches_quadrature(mean, var, best, xi):
    expected = ei_quad(mean, var, best, xi)
    assert float(expected_improvement(mean, var, best, xi)) == pytest.approx(expected, rel=1e-8, abs=1e-300)
    assert float(log_expected_improvement(mean, var, best, xi)) == pytest.approx(math.log(expected), rel=1e-8)


def test_vectorized_and_broadcast():
    mean = np.array([0.0, 0.5, 1.0, 30.0])
    var = np.array([1.0, 0.5, 2.0, 1.0])
    out = expected_improvement(mean, var, 0.2)
    assert out.shape == (4,)
    for m, v, o in zip(mean, var, out):
        assert o == pytest.approx(ei_quad(m, v, 0.2), rel=1e-8, abs=1e-300)
    assert log_expected_improvement(mean[:, None], var[None, :], 0.0).shape == (4, 4)


def test_log_ei_equals_log_ei_where_representable():
    z = np.linspace(-6.0, 8.0, 400)  # below -6 the direct reference itself cancels
    mean, var, best = -z * 0.7, 0.49, 0.0  # sigma 0.7, z = (best - mean)/sigma
    ei = 0.7 * (z * stats.norm.cdf(z) + stats.norm.pdf(z))
    np.testing.assert_allclose(log_expected_improvement(mean, var, best), np.log(ei), rtol=1e-10)
    np.testing.assert_allclose(expected_improvement(mean, var, best), ei, rtol=1e-10)


def log_h_mpmath(z: float) -> float:
    import mpmath  # in the test extra: the reference these tests compare against
    with mpmath.workdps(80):
        z_ = mpmath.mpf(z)
        h = z_ * mpmath.ncdf(z_) + mpmath.npdf(z_)
        return float(mpmath.log(h))


@pytest.mark.parametrize("z", [-1.5, -5.0, -20.0, -40.0, -49.9, -50.1, -100.0, -1000.0, -1e5, -1e9])
def test_log_h_against_mpmath(z):
    assert float(log_h(np.array([z]))[0]) == pytest.approx(log_h_mpmath(z), rel=1e-13, abs=1e-12)


@pytest.mark.parametrize("z", [-40.0, -100.0, -1000.0, -1e5, -1e9])
def test_log_h_tail_asymptote(z):
    value = float(log_h(np.array([z]))[0])
    assert math.isfinite(value)
    assert value == pytest.approx(log_h_series(z), rel=1e-13, abs=1e-10)
    # The leading asymptote log phi(z) - 2 log|z| (the gap is log(1 - 3/z^2 + ...)),
    # checked where the subtraction of two ~z^2/2 numbers still resolves 3/z^2.
    if abs(z) <= 1000:
        gap = value - (stats.norm.logpdf(z) - 2 * math.log(-z))
        assert gap == pytest.approx(-3 / z**2, rel=1e-2, abs=1e-300)
    # EI itself underflows there; the log form still ranks.
    assert float(expected_improvement(-z, 1.0, 0.0)) == 0.0
    assert float(log_expected_improvement(-z, 1.0, 0.0)) == pytest.approx(value, rel=1e-12)


def test_log_ei_finite_and_strictly_increasing_far_in_the_tail():
    z = np.concatenate([np.linspace(-1000.0, -1.0, 5000), np.linspace(-1.0, 50.0, 500)[1:]])
    out = log_expected_improvement(-z, 1.0, 0.0)
    assert np.all(np.isfinite(out))
    assert np.all(np.diff(out) > 0)
    # Continuous across the branch points (z = -1 and the asymptotic switch).
    for z0 in (-1.0, -50.0):
        left, right = log_h(np.array([np.nextafter(z0, -np.inf), z0, np.nextafter(z0, np.inf)]))[[0, 2]]
        assert left == pytest.approx(right, rel=1e-9)


def test_zero_variance_limit():
    best = 0.0
    for mean in (-2.0, -0.1, 0.3):
        limit = max(best - mean, 0.0)
        for var in (1e-4, 1e-8, 1e-16, 1e-30, 1e-300):
            ei = float(expected_improvement(mean, var, best))
            assert ei == pytest.approx(limit, rel=1e-14, abs=5 * math.sqrt(var))
        assert float(expected_improvement(mean, 0.0, best)) == limit
    assert float(log_expected_improvement(-2.0, 0.0, 0.0)) == pytest.approx(math.log(2.0))
    assert float(log_expected_improvement(0.3, 0.0, 0.0)) == -math.inf
    assert float(log_expected_improvement(0.0, 0.0, 0.0)) == -math.inf
    assert float(log_expected_improvement(-1.0, 1e-320, 0.0)) == pytest.approx(0.0)
    assert float(log_expected_improvement(0.0, -1e-18, -1.0)) == -math.inf  # round-off variance


def test_xi_shifts_best():
    shifted = float(expected_improvement(0.2, 0.3, 0.6))
    assert float(expected_improvement(0.2, 0.3, 1.0, xi=0.4)) == pytest.approx(shifted)


def test_nan_input_raises():
    with pytest.raises(InputDataError, match="NaN"):
        log_expected_improvement(np.array([0.0, np.nan]), 1.0, 0.0)
