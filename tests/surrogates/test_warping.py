"""Output warping: monotone, fitted on a prefix, standardized, identity where undefined."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import skew, yeojohnson

from metabo.exceptions import InputDataError
from metabo.surrogates.warping import WarpingCache, warp

VALUES = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=40)


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_warping_is_increasing(values):
    y = np.array(values)
    z = warp(y)
    assert np.all(np.isfinite(z))
    order = np.argsort(y, kind="stable")
    dy, dz = np.diff(y[order]), np.diff(z[order])
    assert np.all(dz >= 0) and np.all(dz[dy == 0] == 0)
    assert z[np.argmin(y)] == z.min()  # the incumbent stays the incumbent


def test_warping_is_strict_at_ordinary_spreads():
    y = np.random.default_rng(3).lognormal(0.0, 2.0, 200)
    z = warp(y)
    order = np.argsort(y)
    assert np.all(np.diff(z[order]) > 0)


def test_agrees_with_scipy_yeojohnson_on_the_standardized_values():
    rng = np.random.default_rng(0)
    y = rng.lognormal(0.0, 1.5, 60)
    u = (y - y.mean()) / y.std()
    expected, _ = yeojohnson(u)
    expected = (expected - expected.mean()) / expected.std()
    np.testing.assert_allclose(warp(y), expected, rtol=1e-4, atol=1e-4)
    assert abs(skew(warp(y))) < 0.25 * abs(skew(y))


def test_the_transform_is_fitted_on_the_prefix_only():
    rng = np.random.default_rng(1)
    y = rng.lognormal(0.0, 1.0, 30)
    z = warp(y, 20)
    np.testing.assert_array_equal(warp(np.r_[y[:20], rng.normal(size=5)], 20)[:20], z[:20])
    np.testing.assert_allclose(z[:20], warp(y[:20]), rtol=1e-12, atol=1e-12)


def test_too_few_or_constant_values_are_left_alone_and_none_is_identity():
    np.testing.assert_array_equal(warp(np.array([3.0, 1.0])), [3.0, 1.0])
    np.testing.assert_array_equal(warp(np.array([2.0, 2.0, 2.0, 5.0]), 3), [2.0, 2.0, 2.0, 5.0])
    y = np.array([1.0, 100.0, 3.0, 4.0])
    assert warp(y, kind="none") is not None and np.array_equal(warp(y, kind="none"), y)


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan, 2.0]), np.array([[1.0, 2.0, 3.0]])])
def test_bad_values_are_refused(bad):
    with pytest.raises(InputDataError):
        warp(bad)
    with pytest.raises(InputDataError):
        warp(np.array([1.0, 2.0, 3.0]), kind="box-cox")
    with pytest.raises(InputDataError):
        warp(np.array([1.0, 2.0, 3.0]), 4)


def test_cached_warping_equals_warp_and_refits_when_the_prefix_changes() -> None:
    rng = np.random.default_rng(0)
    y = rng.lognormal(size=40)
    cache = WarpingCache()
    for n, m in [(20, 20), (25, 20), (30, 30), (31, 30), (40, 30)]:
        assert np.array_equal(cache(y[:n], m), warp(y[:n], m))
    other = y.copy()
    other[0] += 1.0  # same length, another prefix: refitted
    assert np.array_equal(cache(other, 30), warp(other, 30))
