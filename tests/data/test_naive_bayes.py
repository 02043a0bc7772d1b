"""Weka's naive Bayes (MixedNaiveBayes): hand-computed probabilities on a tiny table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from metabo.data.meta_features.naive_bayes import MixedNaiveBayes
from metabo.exceptions import InputDataError

# column 0 nominal with 3 declared values, column 1 numeric
M = np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 3.0], [np.nan, 5.0]])
Y = np.array(["n", "n", "p", "p"])


def test_log_joint_by_hand() -> None:
    model = MixedNaiveBayes(n_levels=(3, 0)).fit(M, Y)
    # prior (2 + 1) / (4 + 2) for both classes
    # nominal, Laplace: class n saw 0, 0 -> p(0 | n) = 3 / 5; class p saw 1 -> p(0 | p) = 1 / 4
    # numeric: delta = (5 - 1) / 3 = 4/3; rounded values 4/3, 8/3 | 8/3, 16/3
    # class n: mean 2, population sd 2/3; class p: mean 4, sd 4/3; r(2) = 8/3
    d = 4 / 3
    mass_n = norm.cdf((8 / 3 - 2 + d / 2) / (2 / 3)) - norm.cdf((8 / 3 - 2 - d / 2) / (2 / 3))
    mass_p = norm.cdf((8 / 3 - 4 + d / 2) / (4 / 3)) - norm.cdf((8 / 3 - 4 - d / 2) / (4 / 3))
    expected = [math.log(0.5 * 3 / 5 * mass_n), math.log(0.5 * 1 / 4 * mass_p)]
    joint = model.predict_log_joint(np.array([[0.0, 2.0]]))
    np.testing.assert_allclose(joint[0], expected, rtol=1e-12)


def test_missing_values_are_left_out() -> None:
    model = MixedNaiveBayes(n_levels=(3, 0)).fit(M, Y)
    only_numeric = model.predict_log_joint(np.array([[np.nan, 2.0]]))
    with_nominal = model.predict_log_joint(np.array([[0.0, 2.0]]))
    np.testing.assert_allclose(with_nominal - only_numeric, [[math.log(3 / 5), math.log(1 / 4)]])
    # the missing nominal value of the last training row is not counted:
    # p(2 | p) = (0 + 1) / (1 + 3), not (0 + 1) / (2 + 3)
    a = model.predict_log_joint(np.array([[2.0, np.nan]]))
    np.testing.assert_allclose(a[0], [math.log(0.5 / 5), math.log(0.5 / 4)])


def test_constant_attribute_gets_the_default_precision() -> None:
    M1 = np.array([[7.0], [7.0], [7.0], [7.0]])
    model = MixedNaiveBayes(n_levels=(0,)).fit(M1, Y)
    delta, mu, sigma = model.normals_[0]
    assert delta == 0.01
    np.testing.assert_allclose(mu, [7.0, 7.0])
    np.testing.assert_allclose(sigma, [0.01 / 6, 0.01 / 6])  # no spread: delta / 6
    assert list(model.predict(np.array([[7.0], [100.0]]))) == ["n", "n"]  # ties: first class


def test_separable_data_is_learned() -> None:
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, 50), rng.normal(10, 1, 50)]
    c = np.r_[np.zeros(50), np.ones(50)]
    y = np.r_[["a"] * 50, ["b"] * 50]
    model = MixedNaiveBayes(n_levels=(0, 2)).fit(np.column_stack([x, c]), y)
    assert (model.predict(np.column_stack([x, c])) == y).all()


def test_wrong_width_is_refused() -> None:
    with pytest.raises(InputDataError, match="2 columns"):
        MixedNaiveBayes(n_levels=(3, 0)).fit(np.zeros((4, 3)), Y)
