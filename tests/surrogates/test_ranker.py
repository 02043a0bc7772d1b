"""The rank-SVM: separable pairs ordered perfectly, pairs only within groups, invariance to
a monotone rescaling of one group's values, the seeded pair and centre draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from metabo.exceptions import InputDataError
from metabo.surrogates.ranker import RankSVM


def data(seed: int = 0, n_groups: int = 4, n: int = 30):
    """Groups sharing one latent order ``2 z0 - z1``, each on its own scale and offset."""
    rng = np.random.default_rng(seed)
    Z = rng.random((n_groups * n, 3))
    score = 2 * Z[:, 0] - Z[:, 1]
    groups = np.repeat(np.arange(n_groups), n)
    values = score * (1 + groups) + 10 * groups
    return Z, values, groups


def test_separable_pairs_are_ordered_perfectly():
    Z, values, groups = data()
    r = RankSVM(C=1000.0, max_pairs_per_group=None, seed=0).fit(Z, values, groups)
    better, worse = r.pairs(values, groups, np.random.default_rng(0))
    assert len(better) == r.n_pairs_ == 4 * 30 * 29 // 2  # every within-group pair, no other
    assert r.centres_.shape == (120, 3)  # every point a centre: the exact kernel expansion
    f = r.predict(Z)
    assert np.all(f[worse] > f[better])
    assert r.converged_


def test_the_latent_order_carries_over_to_an_unseen_group():
    Z, values, groups = data(2, n_groups=5)
    train = groups < 4
    r = RankSVM(seed=0).fit(Z[train], values[train], groups[train])
    tau = kendalltau(r.predict(Z[~train]), values[~train]).statistic
    assert tau > 0.85


def test_pairs_stay_within_groups_and_the_latent_function_ignores_monotone_rescaling():
    Z, values, groups = data(1)
    r1 = RankSVM(max_pairs_per_group=100, n_components=50, seed=3).fit(Z, values, groups)
    warped = values.copy()
    warped[groups == 2] = np.exp(5 * warped[groups == 2]) - 7  # one task's errors, increasing map
    r2 = RankSVM(max_pairs_per_group=100, n_components=50, seed=3).fit(Z, warped, groups)
    np.testing.assert_array_equal(r1.predict(Z), r2.predict(Z))
    b, w = r1.pairs(values, groups, np.random.default_rng(0))
    assert len(b) == 4 * 100
    assert np.all(groups[b] == groups[w]) and np.all(values[b] < values[w])


def test_ties_give_no_pair_and_the_draws_are_seeded():
    values = np.array([1.0, 1.0, 2.0, 0.5, 0.5])
    groups = np.array([0, 0, 0, 1, 1])
    b, w = RankSVM().pairs(values, groups, np.random.default_rng(0))
    assert sorted(zip(b.tolist(), w.tolist())) == [(0, 2), (1, 2)]
    Z, v, g = data(4)
    a = RankSVM(max_pairs_per_group=50, n_components=20, seed=7).fit(Z, v, g)
    same = RankSVM(max_pairs_per_group=50, n_components=20, seed=7).fit(Z, v, g)
    other = RankSVM(max_pairs_per_group=50, n_components=20, seed=8).fit(Z, v, g)
    np.testing.assert_array_equal(a.predict(Z), same.predict(Z))
    assert not np.array_equal(a.predict(Z), other.predict(Z))


def test_anchors_are_always_centres_and_duplicates_are_dropped():
    Z, values, groups = data(5)
    Z[1] = Z[0]  # a duplicate row
    anchors = groups == 3
    r = RankSVM(n_components=40, seed=0).fit(Z, values, groups, anchors=anchors)
    assert len(r.centres_) == 40
    centres = {tuple(c) for c in r.centres_}
    assert all(tuple(z) in centres for z in Z[anchors])
    assert len(centres) == 40
    r = RankSVM(n_components=200, seed=0).fit(Z, values, groups)
    assert len(r.centres_) == 119  # every distinct row


def test_bad_input():
    Z, values, groups = data()
    with pytest.raises(InputDataError):
        RankSVM().fit(Z[:5], values, groups)
    with pytest.raises(InputDataError, match="no preference pair"):
        RankSVM().fit(Z[:3], np.ones(3), np.arange(3))
    with pytest.raises(InputDataError, match="finite"):
        RankSVM().fit(Z, np.where(groups == 0, np.nan, values), groups)
    with pytest.raises(InputDataError, match="anchors"):
        RankSVM().fit(Z, values, groups, anchors=np.ones(3, dtype=bool))
    with pytest.raises(InputDataError, match="fit the ranker"):
        RankSVM().predict(Z)
    with pytest.raises(InputDataError):
        RankSVM(C=0.0)
    with pytest.raises(InputDataError):
        RankSVM(gamma="auto")
