"""EO's ensemble losses against hand-computed values (thesis Table 4.1 among them) and the
squared-margin / margin-moments identity of eq. 4.16."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from metabo.ensembles.losses import (
    c_bound,
    margin_loss,
    margin_moments,
    margins,
    sigmoid_loss,
    sigmoid_scale,
    squared_margin_loss,
)
from metabo.exceptions import InputDataError

# Thesis Table 4.1: three samples of true class 0; h0, h1, h2 each right on one sample.
# Wrong votes go to class 1 (so two wrong members agree, as the table's l_sig needs).
Y = np.array([0, 0, 0])
E = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
H0 = np.array([[1, 0, 0]])  # h'_0: wrong on x0 only
H1 = np.array([[1, 1, 1]])  # h'_1: wrong everywhere


@pytest.mark.parametrize(("votes", "l_m", "l_m2"), [
    (E, 0.67, 0.44), (np.vstack([E, H0]), 0.58, 0.35), (np.vstack([E, H1]), 0.75, 0.56),
])
def test_margin_losses_equal_the_thesis_table(votes, l_m, l_m2):
    assert margin_loss(votes, Y) == pytest.approx(l_m, abs=0.005)
    assert squared_margin_loss(votes, Y) == pytest.approx(l_m2, abs=0.005)


def test_sigmoid_loss_on_the_table_ensemble_with_h0():
    # E + h'0: x0 has 1 vote right and 3 for class 1; x1, x2 tie 2-2 -> s(0) = 1/2
    a = sigmoid_scale(4)
    expected = np.mean([1 - 1 / (1 + math.exp(a * 0.5)), 0.5, 0.5])
    assert sigmoid_loss(np.vstack([E, H0]), Y) == pytest.approx(expected)
    assert sigmoid_loss(np.vstack([E, H0]), Y) == pytest.approx(0.67, abs=0.005)  # Table 4.1
    assert sigmoid_loss(np.vstack([E, H1]), Y) == pytest.approx(1.0, abs=0.005)


def test_c_bound_by_hand_and_its_convention():
    votes = np.array([[0, 1, 0, 1], [0, 1, 1, 1], [0, 0, 0, 1]])  # binary, y below
    y = np.array([0, 1, 0, 0])
    M = np.array([1.0, 1 / 3, 1 / 3, -1.0])
    assert margins(votes, y) == pytest.approx(M)
    mu1, mu2 = M.mean(), np.mean(M**2)
    assert c_bound(votes, y) == pytest.approx(1 - mu1**2 / mu2)
    assert c_bound(E, Y) == 1.0  # mu_1 < 0: the bound says nothing (Table 4.1 shows 1.00)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 7), st.integers(1, 30), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_squared_margin_equals_its_margin_moments_form(m, n, k, seed):
    rng = np.random.default_rng(seed)
    votes, y = rng.integers(k, size=(m, n)), rng.integers(k, size=n)
    mu1, mu2 = margin_moments(votes, y)
    assert squared_margin_loss(votes, y) == pytest.approx((1 - 2 * mu1 + mu2) / 4)  # eq. 4.16
    assert 0.0 <= c_bound(votes, y) <= 1.0


@pytest.mark.parametrize("m", [3, 7, 12])
def test_sigmoid_scale_separates_vote_counts_by_epsilon(m):
    a = sigmoid_scale(m)
    s = lambda x: 1 / (1 + math.exp(-a * x))  # noqa: E731
    assert a > 1
    assert s(1) - s(1 - 2 / m) == pytest.approx(1e-3, rel=1e-6)


def test_sigmoid_scale_of_two_members_puts_epsilon_at_the_extremes():
    a = sigmoid_scale(2)  # no root a > 1 for m = 2: s(-1, a) = epsilon instead
    assert 1 / (1 + math.exp(a)) == pytest.approx(1e-3, rel=1e-9)


@given(arrays(np.int64, (5, 9), elements=st.integers(0, 1)), arrays(np.int64, 9, elements=st.integers(0, 1)))
def test_binary_sigmoid_loss_is_eq_4_23(votes, y):
    a = 7.0
    expected = np.mean(1 - 1 / (1 + np.exp(-a * margins(votes, y))))
    assert sigmoid_loss(votes, y, a=a) == pytest.approx(expected)


def test_bad_shapes_are_refused():
    with pytest.raises(InputDataError):
        margins(np.zeros(3), np.zeros(3))
    with pytest.raises(InputDataError):
        sigmoid_scale(0)
