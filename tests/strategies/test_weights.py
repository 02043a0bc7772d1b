"""Ranking weights (RGPE / RLGP): counts in closed form, leave-one-out, arg max, dilution."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.exceptions import InputDataError
from metabo.strategies.weights import (
    argmax_weights,
    dilution_keep,
    ensemble_weights,
    landmark_counts,
    loo_counts,
    loo_samples,
    n_pairs,
    proportional_weights,
)
from metabo.surrogates.gp import GaussianProcess

Y = np.array([0.3, 0.1, 0.5, 0.2, 0.4])


def test_counts_of_a_copy_a_reversal_and_a_constant():
    P = n_pairs(Y)
    assert P == 10  # 5 distinct values: C(5, 2) pairs, each counted once
    samples = np.stack([Y[None, :], -Y[None, :], np.zeros((1, 5)), 2 * Y[None, :] + 7])  # (4, 1, 5)
    np.testing.assert_array_equal(landmark_counts(samples, Y)[:, 0], [P, 0, 0, P])
    # one swapped neighbour pair (0.2 <-> 0.3) costs exactly one pair
    swapped = Y.copy()
    swapped[[0, 3]] = swapped[[3, 0]]
    assert landmark_counts(swapped[None, None, :], Y)[0, 0] == P - 1
    assert n_pairs(np.array([1.0, 1.0, 2.0])) == 2  # ties in y are no pair


def test_loo_counts_use_each_left_out_models_own_prediction():
    n = len(Y)
    perfect = np.broadcast_to(Y, (3, n, n)).copy()  # every f_{-i} equals y
    np.testing.assert_array_equal(loo_counts(perfect, Y), [10, 10, 10])
    wrong = perfect.copy()
    i = int(np.argmax(Y))  # the worst point predicted best by its own left-out model
    wrong[:, i, i] = -1.0
    np.testing.assert_array_equal(loo_counts(wrong, Y), [6, 6, 6])  # its 4 pairs lost


def test_loo_samples_condition_on_all_but_one_point():
    rng = np.random.default_rng(0)
    X = rng.random((6, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    gp = GaussianProcess(seed=0).fit(X, y)
    h = gp.hyperparameters_

    def fit_sample(keep, rows, seed):
        return GaussianProcess().fit(X[keep], y[keep], hyperparameters=h).sample(X[rows], 4, seed)

    samples = loo_samples(fit_sample, len(y), 4, seed=1)
    assert samples.shape == (4, 6, 6)
    np.testing.assert_array_equal(samples, loo_samples(fit_sample, len(y), 4, seed=1))  # seeded
    # at the kept points the left-out model interpolates (little noise), at x_i it predicts
    i = 2
    mean_i, var_i = GaussianProcess().fit(np.delete(X, i, 0), np.delete(y, i), hyperparameters=h).predict(X)
    assert np.all(np.abs(samples[:, i, :] - mean_i) <= 6 * np.sqrt(var_i) + 1e-9)


def test_argmax_weights_and_ties():
    counts = np.array([[10, 10, 9, 10], [0, 0, 0, 0], [10, 9, 9, 8]], dtype=float)
    np.testing.assert_allclose(argmax_weights(counts, target=2), [0.5, 0.0, 0.5])  # ties 0 and 1 go to the target
    w = argmax_weights(counts, seed=0)
    assert w.sum() == pytest.approx(1.0) and w[1] == 0.0 and w[0] >= 0.5
    np.testing.assert_allclose(argmax_weights(np.zeros((3, 4)), target=2), [0, 0, 1])  # nothing to rank yet
    np.testing.assert_allclose(proportional_weights(counts), counts.mean(1) / counts.mean(1).sum())


def test_dilution_discards_base_models_worse_than_the_target_at_its_95th_percentile():
    P = 10
    target = np.array([8, 9, 9, 10, 7], dtype=float)  # losses 2, 1, 1, 0, 3 -> 95th pct 2.8
    base = np.array([[9, 9, 9, 9, 9], [5, 6, 5, 7, 5]], dtype=float)  # median losses 1 and 5
    np.testing.assert_array_equal(dilution_keep(base, target, P), [True, False])
    w = ensemble_weights(base, target, P, dilution=True)
    assert w[1] == 0.0 and w.sum() == pytest.approx(1.0)
    w_all = ensemble_weights(base, None, P)
    assert w_all.shape == (2,) and w_all[0] == 1.0


def test_bad_shapes_are_refused():
    with pytest.raises(InputDataError):
        landmark_counts(np.zeros((2, 5)), Y)
    with pytest.raises(InputDataError):
        loo_counts(np.zeros((2, 4, 4)), Y)
    with pytest.raises(InputDataError):
        ensemble_weights(np.zeros(3), None, 1)
    with pytest.raises(InputDataError):
        ensemble_weights(np.zeros((1, 3)), np.zeros(3), 1, weighting="softmax")
    with pytest.raises(InputDataError):
        n_pairs(np.array([1.0, np.nan]))
