"""The column model (metabo.strategies.column_model): normal scores, the conditional
Gaussian against a dense reference, its invariance to the target's scale, and the picks it
makes inside the portfolio warm start."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from metabo.strategies.column_model import SHRINKAGE, column_posterior, normal_scores
from metabo.strategies.portfolio import PortfolioWarmStart
from metabo.testing.problems import (
    TWO_ALGORITHM_CONFIGS,
    history_of,
    matrix_column,
    recorded_past,
    two_algorithm_problem,
)

A1, A2, B1, B2 = TWO_ALGORITHM_CONFIGS


def test_normal_scores_are_rank_quantiles_per_row_and_keep_missing_entries():
    Q = np.array([[0.3, 0.0, 1.0, np.nan], [5.0, 6.0, 7.0, 8.0]])
    F = normal_scores(Q)
    assert F[0, :3] == pytest.approx(norm.ppf([1.5 / 3, 0.5 / 3, 2.5 / 3]))
    assert np.isnan(F[0, 3])
    assert F[1] == pytest.approx(norm.ppf((np.arange(4) + 0.5) / 4))
    # a monotone change of a row's values leaves its scores alone
    assert normal_scores(np.exp(3 * Q)) == pytest.approx(F, nan_ok=True)


def _dense_reference(F, w, o, f_o, shrinkage):
    """Gaussian conditioning written out on the full covariance matrix."""
    mu = w @ F
    C = (F - mu).T @ np.diag(w) @ (F - mu)
    K = C + shrinkage * np.mean(np.diag(C)) * np.eye(len(mu))
    Koo = K[np.ix_(o, o)]
    mean = mu + K[:, o] @ np.linalg.solve(Koo, f_o - mu[o])
    var = np.diag(K - K[:, o] @ np.linalg.solve(Koo, K[o, :]))
    return mean, var


def test_posterior_agrees_with_dense_gaussian_conditioning():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(7, 9))
    w = rng.random(7)
    w /= w.sum()
    o = np.array([4, 1, 7])
    f_o = np.array([-1.0, 0.3, 0.8])
    mu = w @ F
    values = 0.2 + 0.05 * f_o  # a link the least-squares fit cannot recover exactly: compare after it
    mean, var, best = column_posterior(F, w, o, values)
    b, a = np.polyfit(mu[o], values, 1)
    ref_mean, ref_var = _dense_reference(F, w, o, (values - a) / b, SHRINKAGE)
    assert mean == pytest.approx(ref_mean, rel=1e-6, abs=1e-8)
    assert var == pytest.approx(ref_var, rel=1e-6, abs=1e-8)
    assert best == pytest.approx(((values - a) / b).min())


def test_posterior_does_not_depend_on_the_targets_scale():
    rng = np.random.default_rng(1)
    F = normal_scores(rng.random((6, 8)))
    w = np.full(6, 1 / 6)
    o, v = np.array([0, 3, 5]), np.array([0.31, 0.12, 0.2])
    m1, s1, b1 = column_posterior(F, w, o, v)
    m2, s2, b2 = column_posterior(F, w, o, 7.0 + 40.0 * v)  # another metric's units, same order
    assert m1 == pytest.approx(m2) and s1 == pytest.approx(s2) and b1 == pytest.approx(b2)


def test_a_column_every_past_task_ranks_like_the_targets_best_gets_its_low_mean():
    # columns 0 and 1 move together across tasks, columns 2 and 3 against them
    F = np.array([[-1.0, -0.9, 1.0, 0.9], [1.0, 0.9, -1.0, -0.9], [-0.5, -0.6, 0.5, 0.4], [0.6, 0.5, -0.6, -0.5]])
    w = np.full(4, 0.25)
    # the target: column 0 good, column 2 bad -> column 1 predicted good, column 3 bad
    mean, var, _ = column_posterior(F, w, np.array([0, 2]), np.array([0.05, 0.30]))
    assert mean[1] < mean[3]
    assert np.all(var[[1, 3]] < var.max() + 1e-12) and np.all(var > 0)


def test_after_two_results_the_warm_start_picks_what_goes_with_the_targets_best():
    space, _ = two_algorithm_problem()
    # a(u=.2) and b(v=.1) rise and fall together over the past tasks; a(u=.8) and b(v=.5) too
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.15], "t1": [0.5, 0.1, 0.15, 0.6],
                          "t2": [0.2, 0.4, 0.45, 0.25], "t3": [0.45, 0.2, 0.25, 0.5]})
    told = [(A1, 0.05), (A2, 0.40)]  # the target is like t0 and t2: A1 good
    by_model = PortfolioWarmStart(past, n_spread=2, seed=0)
    by_gain = PortfolioWarmStart(past, n_spread=10, seed=0)
    rng = np.random.default_rng(0)
    pick = by_model.suggest(history_of(space, told), space, rng)
    assert pick == space.normalize(*B2)
    m, _ = by_model.matrix(space)
    assert matrix_column(m.ids, space, pick) == matrix_column(m.ids, space, B2)
    # the static portfolio (no results) is the gain's whatever n_spread
    assert by_gain.portfolio(space) == by_model.portfolio(space)


def test_fewer_than_two_results_fall_back_to_the_portfolio_gain():
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.15], "t1": [0.5, 0.1, 0.15, 0.6]})
    a = PortfolioWarmStart(past, n_spread=0, seed=0)
    b = PortfolioWarmStart(past, n_spread=10, seed=0)
    rng = np.random.default_rng(0)
    h = history_of(space, [(A1, 0.2)])
    assert a.suggest(h, space, rng) == b.suggest(h, space, np.random.default_rng(0))
