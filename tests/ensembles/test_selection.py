"""Ensemble selection never ends above the loss it optimizes at any earlier step; diversity
is 0 for a model with itself and lies in [0, 1]; bagged selection is the mean of seeded
bags' selections and caps a lucky model's weight; the guard keeps the single best where
an ensemble gains nothing out of sample, and the ensemble where it does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.ensembles import PostHocSelection, diversity, diversity_matrix, ensemble_selection
from metabo.ensembles.guard import guarded_ensemble
from metabo.ensembles.selection import bagged_selection
from metabo.evaluation.metrics import error_rate, get_metric
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


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 3, 6, 26]), st.integers(2, 12), st.booleans())
def test_scoring_only_the_rows_a_member_can_change_is_exact(seed, K, H, coarse):
    """The error rates of every addition, the settled rows counted once and their leads
    carried as bounds from step to step, equal scoring every row, at every step of a
    selection; ``coarse`` probabilities (multiples of 1/4) make ties between classes, which
    the first maximum breaks alike either way."""
    from metabo.ensembles.selection import _SettledRows
    from metabo.evaluation.metrics import library_losses

    rng = np.random.default_rng(seed)
    n = 60
    y = rng.integers(K, size=n)
    P = rng.dirichlet(np.ones(K) * 0.4, size=(H, n))
    P = 0.5 * P + 0.5 * np.eye(K)[np.where(rng.random((H, n)) < 0.7, y[None], rng.integers(K, size=(H, n)))]
    if coarse:
        P = np.round(P * 4) / 4
    total = P[0].copy()
    settled = _SettledRows(P, y, total)
    opened = []
    for size in range(2, 30):
        fast = settled.error_rates(total, size)
        every_row = library_losses("error_rate", get_metric("error_rate"), y, (total[None] + P) / size)
        np.testing.assert_array_equal(fast, every_row)
        opened.append(np.count_nonzero(settled.lead <= settled._margin(size)))
        h = int(np.argmin(every_row))
        total += P[h]
        settled.added(h, total, size)
    assert opened[-1] < n  # rows do settle: the shortcut is taken


def test_a_library_of_one_model_selects_it():
    P, y = _library(2, H=1)
    chosen = ensemble_selection(P, y, max_size=7)
    assert chosen.weights == {0: 1.0} and chosen.loss == pytest.approx(error_rate(y, P[0]))
    assert len(chosen.trajectory) == len(chosen.order) == 7


def test_bagged_selection_is_the_mean_of_selections_on_seeded_bags():
    """Caruana et al. 2006 sec. 2.3: each bag a seeded half of the library, the weights the
    mean of the bags' selections; one bag of the whole library is the plain selection."""
    P, y = _library(5, H=10)
    w = bagged_selection(P, y, n_bags=7, fraction=0.5, seed=3, max_size=10)
    assert sum(w.values()) == pytest.approx(1.0) and w == bagged_selection(P, y, n_bags=7, fraction=0.5, seed=3,
                                                                           max_size=10)
    rng = np.random.default_rng(3)
    expected: dict[int, float] = {}
    for _ in range(7):
        bag = np.sort(rng.choice(10, size=5, replace=False))
        for h, v in ensemble_selection(P[bag], y, max_size=10).weights.items():
            expected[int(bag[h])] = expected.get(int(bag[h]), 0.0) + v / 7
    assert w == pytest.approx(expected)
    assert bagged_selection(P, y, n_bags=1, fraction=1.0, max_size=10) == pytest.approx(
        ensemble_selection(P, y, max_size=10).weights)
    with pytest.raises(InputDataError):
        bagged_selection(P, y, n_bags=0)


def test_bagging_caps_the_weight_of_one_lucky_model():
    """A model that alone fits the selection rows wins every plain selection outright; in
    the bagged one it weighs at most the share of bags that hold it."""
    P, y = _library(8, H=12)
    lucky = np.eye(3)[y] * 0.98 + 0.01 / 1.5  # right on every selection row
    P = np.concatenate([P, lucky[None]])
    assert ensemble_selection(P, y, max_size=10, n_init=1).weights == {12: 1.0}
    w = bagged_selection(P, y, n_bags=20, fraction=0.5, seed=0, max_size=10, n_init=1)
    assert 0.2 < w[12] < 0.8 and len(w) > 1


def _search(P, y, combine="average"):
    """A post-hoc search holding the library ``P`` as trials 0..H-1."""

    class Fixed(PostHocSelection):
        pass

    s = Fixed(None, y, n_bags=0, ensemble_size=10)  # type: ignore[arg-type]
    for k, p in enumerate(P):
        s.observe(k, p)
    s.combine = combine
    return s


def test_guard_keeps_the_single_best_when_the_others_add_nothing():
    """Copies of one model plus noisy models: no ensemble beats the best out of sample."""
    rng = np.random.default_rng(0)
    y = rng.integers(2, size=300)
    good = np.where(rng.random(300) < 0.85, y, 1 - y)  # 85% right
    best = np.eye(2)[good] * 0.8 + 0.1
    noise = [np.eye(2)[rng.integers(2, size=300)] * 0.8 + 0.1 for _ in range(5)]
    d = guarded_ensemble(_search(np.stack([noise[0], best, *noise[1:]]), y), seed=0)
    assert d.kept == "single" and d.weights == {1: 1.0}
    assert d.gain <= d.se


def test_guard_keeps_an_ensemble_of_independent_experts():
    """Five models each right on 70% of rows, their errors independent: their average is
    right far more often (the majority of 5 at 70%: 84%), which the guard sees out of
    sample; averaged probabilities and the vote agree here, the search's rule is kept."""
    rng = np.random.default_rng(1)
    y = rng.integers(2, size=400)
    P = np.stack([np.eye(2)[np.where(rng.random(400) < 0.7, y, 1 - y)] * 0.6 + 0.2 for _ in range(5)])
    d = guarded_ensemble(_search(P, y, "vote"), seed=0)
    assert d.kept == "ensemble" and len(d.weights) >= 3 and d.gain > d.se > 0
    assert d.combine == "vote"
    assert d.losses["vote"] < d.losses["single"] - 0.05
    with pytest.raises(InputDataError):
        guarded_ensemble(_search(P, y), n_folds=1)
