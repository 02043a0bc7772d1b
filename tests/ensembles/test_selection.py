"""Ensemble selection never ends above the loss it optimizes at any earlier step; diversity
is 0 for a model with itself and lies in [0, 1]."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.ensembles import diversity, diversity_matrix, ensemble_selection
from metabo.evaluation.metrics import get_metric
from metabo.exceptions import InputDataError


def _library(seed: int, H: int = 8, n: int = 40, K: int = 3):
    rng = np.random.default_rng(seed)
    y = rng.integers(K, size=n)
    logits = rng.normal(size=(H, n, K)) + 1.5 * np.eye(K)[y][None] * rng.random((H, 1, 1))
    P = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    return P, y


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["error_rate", "log_loss", "balanced_error_rate"]),
       st.integers(1, 5))
def test_selection_never_ends_above_an_earlier_step(seed, metric, n_init):
    P, y = _library(seed)
    sel = ensemble_selection(P, y, metric=metric, max_size=15, n_init=n_init)
    loss = get_metric(metric)
    assert sel.loss == pytest.approx(loss(y, sel.predict_proba(P)))
    assert sel.loss <= min(sel.trajectory) + 1e-12
    assert sel.loss <= min(loss(y, p) for p in P) + 1e-12  # never worse than the best single model
    assert sum(sel.weights.values()) == pytest.approx(1.0)
    assert len(sel.order) == 15 and sel.members == sel.order[: len(sel.members)]


def test_selection_adds_a_complementary_model():
    y = np.array([0, 0, 1, 1])
    good_a = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.6, 0.4]])  # wrong on the last row
    good_b = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.4, 0.6]])  # wrong on the third row
    fixes = np.array([[0.6, 0.4], [0.6, 0.4], [0.2, 0.8], [0.2, 0.8]])  # right everywhere, less sure
    sel = ensemble_selection(np.stack([good_a, good_b, fixes]), y, metric="log_loss", max_size=6, n_init=1)
    assert 2 in sel.members or sel.loss < min(get_metric("log_loss")(y, p) for p in (good_a, good_b))


def test_diversity_properties():
    P, _ = _library(3)
    D = diversity_matrix(P)
    assert np.allclose(np.diag(D), 0) and np.allclose(D, D.T)
    assert np.all((D >= 0) & (D <= 1))
    assert D[1, 4] == pytest.approx(diversity(P[1], P[4]))
    one_hot = np.eye(3)[[0, 1, 2]]
    assert diversity(one_hot, np.eye(3)[[1, 2, 0]]) == pytest.approx(1.0)  # the largest: disjoint one-hots
    with pytest.raises(InputDataError):
        diversity(P[0], P[0][:, :2])
    with pytest.raises(InputDataError):
        ensemble_selection(P[:, :5], np.zeros(4))


def test_vectorized_error_rate_matches_the_metric():
    from metabo.evaluation.metrics import error_rate

    rng = np.random.default_rng(5)
    y = rng.integers(3, size=40)
    P = rng.dirichlet(np.ones(3), size=(12, 40))
    chosen = ensemble_selection(P, y, metric="error_rate", max_size=15)
    by_hand = [error_rate(y, P[list(chosen.order[: k + 1])].mean(axis=0)) for k in range(len(chosen.order))]
    np.testing.assert_allclose(chosen.trajectory, by_hand)
