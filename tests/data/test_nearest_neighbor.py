"""Weka's 1-NN (WekaNearestNeighbor): normalized distances, missing values, tie votes."""

from __future__ import annotations

import numpy as np

from metabo.data.meta_features.nearest_neighbor import WekaNearestNeighbor


def predict(n_levels, train, y, test):
    model = WekaNearestNeighbor(n_levels=n_levels).fit(np.array(train, float), np.array(y))
    return list(model.predict(np.array(test, float)))


def test_numeric_differences_are_range_normalized() -> None:
    # x spans [0, 1000]: the query 400 is 0.4 from row 1 and 0.6 from row 2, while the
    # nominal column differs from row 1 by 1: d^2 = 0.16 + 1 = 1.16 against 0.36 + 0
    assert predict((0, 2), [[0, 0], [1000, 1]], ["p", "q"], [[400, 1]]) == ["q"]


def test_missing_values_follow_weka() -> None:
    train = [[0.0], [1.0], [0.4]]
    # a missing query value is max(u, 1 - u) from each present one: 1, 1, 0.6
    assert predict((0,), train, ["a", "b", "c"], [[np.nan]]) == ["c"]
    # nominal: missing differs from everything (1), so the exact match wins
    assert predict((0, 3), [[0.5, 0], [0.5, 1]], ["a", "b"], [[0.5, 1]]) == ["b"]
    assert predict((0, 3), [[0.5, np.nan], [0.5, 1]], ["a", "b"], [[0.5, np.nan]]) == ["a"]  # tie: 1, 1


def test_tied_neighbours_vote_and_the_first_class_wins_a_tie() -> None:
    train = [[1.0, 0], [1.0, 0], [1.0, 0], [5.0, 1]]
    assert predict((0, 2), train, ["p", "q", "q", "p"], [[1.0, 0]]) == ["q"]  # 2 votes to 1
    assert predict((0, 2), train[:2], ["q", "p"], [[1.0, 0]]) == ["p"]  # 1 to 1: first class


def test_blocks_give_the_same_predictions(monkeypatch) -> None:
    import metabo.data.meta_features.nearest_neighbor as nn

    rng = np.random.default_rng(1)
    M = np.column_stack([rng.normal(size=60), rng.integers(0, 3, 60)]).astype(float)
    M[rng.random(60) < 0.1, 0] = np.nan
    y = rng.choice(["a", "b"], 60)
    whole = predict((0, 3), M[:40], y[:40], M[40:])
    monkeypatch.setattr(nn, "BLOCK_ROWS", 7)
    assert predict((0, 3), M[:40], y[:40], M[40:]) == whole


def weka_difference(a: float, b: float, levels: int, lo: float, hi: float) -> float:
    """Weka's ``NormalizableDistance.difference``, one attribute, written out."""
    if levels > 0:
        return 1.0 if np.isnan(a) or np.isnan(b) or a != b else 0.0

    def u(v: float) -> float:
        return 0.0 if hi == lo else (v - lo) / (hi - lo)

    if np.isnan(a) and np.isnan(b):
        return 1.0
    if np.isnan(a) or np.isnan(b):
        v = u(b if np.isnan(a) else a)
        return max(v, 1.0 - v)
    return u(a) - u(b)


def test_squared_distances_match_weka_difference_by_difference() -> None:
    from metabo.data.meta_features.nearest_neighbor import _Encoded

    rng = np.random.default_rng(2)
    levels = (0, 3, 0, 2, 0)
    M = np.column_stack([
        rng.normal(size=30), rng.integers(0, 3, 30), rng.exponential(size=30),
        rng.integers(0, 2, 30), np.full(30, 4.0),
    ]).astype(float)
    M[rng.random(M.shape) < 0.15] = np.nan
    lo, hi = np.nanmin(M[:, [0, 2, 4]], axis=0), np.nanmax(M[:, [0, 2, 4]], axis=0)
    got = _Encoded(M[:12], levels, lo, hi).squared_distances(_Encoded(M[12:], levels, lo, hi))
    bounds = dict(zip([0, 2, 4], zip(lo, hi)))
    want = np.array([[
        sum(weka_difference(a[j], b[j], levels[j], *bounds.get(j, (0.0, 0.0))) ** 2
            for j in range(len(levels)))
        for b in M[12:]] for a in M[:12]])
    np.testing.assert_allclose(got, want, atol=1e-12)
