"""The rank-SVM: separable pairs ordered perfectly, pairs only within groups, invariance."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.exceptions import InputDataError
from metabo.surrogates.ranker import RankSVM


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    Z = rng.random((120, 3))
    score = 2 * Z[:, 0] - Z[:, 1]  # a smooth latent order
    groups = np.repeat(np.arange(4), 30)
    values = score * (1 + groups) + 10 * groups  # each group on its own scale
    return Z, values, groups


def test_separable_pairs_are_ordered_perfectly():
    Z, values, groups = data()
    r = RankSVM(C=1000.0, max_pairs_per_group=None, seed=0).fit(Z, values, groups)
    f = r.predict(Z)
    better, worse = r.pairs(values, groups, np.random.default_rng(0))
    assert len(better) == 4 * 30 * 29 // 2
    assert np.all(f[worse] > f[better])


def test_pairs_stay_within_groups_and_the_latent_function_ignores_monotone_rescaling():
    Z, values, groups = data(1)
    r1 = RankSVM(seed=3).fit(Z, values, groups)
    warped = values.copy()
    warped[groups == 2] = np.exp(5 * warped[groups == 2]) - 7  # one task's errors, monotone
    r2 = RankSVM(seed=3).fit(Z, warped, groups)
    np.testing.assert_array_equal(r1.predict(Z), r2.predict(Z))
    b, w = r1.pairs(values, groups, np.random.default_rng(0))
    assert np.all(groups[b] == groups[w]) and np.all(values[b] < values[w])


def test_bad_input():
    Z, values, groups = data()
    with pytest.raises(InputDataError):
        RankSVM().fit(Z[:5], values, groups)
    with pytest.raises(InputDataError, match="no preference pair"):
        RankSVM().fit(Z[:3], np.ones(3), np.arange(3))
    with pytest.raises(InputDataError):
        RankSVM().predict(Z)
