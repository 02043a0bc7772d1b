"""Transfer queries: greedy portfolios, Kendall tau-b task similarity, nearest tasks by ranking.

Also the matrix both rely on: the one-run-per-pair fast path and the aggregating path of
performance_matrix / mean_ranks agree with a pandas reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, rankdata

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb import KnowledgeBase
from metabo.kb import queries as q
from metabo.kb import transfer as tr
from metabo.kb.canonical import config_id

NAN = np.nan
# Lower is better. Normalized regrets equal the values (each task spans [0, 1]).
HAND = pd.DataFrame(
    [[0.0, 1.0, 0.5, 1.0],
     [1.0, 0.0, 0.5, 1.0],
     [0.0, 0.0, 1.0, 0.5]],
    index=["t1", "t2", "t3"], columns=["a", "b", "c", "d"],
)


def store(values: pd.DataFrame, *, folds: int = 1, algorithm: str = "knn") -> KnowledgeBase:
    """An in-memory store holding ``values`` (tasks x n_neighbors) as runs, NaN = not run."""
    kb = KnowledgeBase(":memory:")
    kb.add_algorithms([algorithm, "other"])
    for t in values.index:
        kb.register_dataset(name=str(t), source="test")
    rows = []
    for t in values.index:
        for c in values.columns:
            v = values.loc[t, c]
            if np.isnan(v):
                continue
            for fold in range(folds):  # folds average back to v
                noise = 0.0 if folds == 1 else (-0.01 if fold % 2 else 0.01) * (fold < folds - folds % 2)
                rows.append(dict(dataset_id=f"test-{t}", algorithm=algorithm, params={"n_neighbors": int(c)},
                                 metric="error_rate", value=float(v) + noise, fold=fold, source="s"))
        rows.append(dict(dataset_id=f"test-{t}", algorithm="other", params={"C": 1}, metric="error_rate",
                         value=0.0, source="s"))
    kb.add_runs(rows)
    return kb


def cid(k: int) -> str:
    return config_id("knn", {"n_neighbors": k})


# ---------------------------------------------------------------------- portfolios
def test_greedy_portfolio_by_hand_with_ties():
    # step 1: a and b both score 1/3 -> a (smaller id); step 2: b brings every task to 0;
    # step 3: c and d add nothing -> c.
    out = tr.greedy_portfolio_from_matrix(HAND, 3)
    assert out["config_id"].tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(out["mean_regret"], [1 / 3, 0.0, 0.0], atol=1e-15)
    assert out["n_tasks_covered"].tolist() == [3, 3, 3]
    # the tie goes the other way when b's id sorts first
    swapped = HAND.rename(columns={"a": "z"})
    assert tr.greedy_portfolio_from_matrix(swapped, 1)["config_id"].tolist() == ["b"]


def test_unobserved_members_contribute_nothing_uncovered_tasks_count_worst():
    # t1: a 0, c 1 (b not run); t2: b 2, c 0 (a not run): normalized regrets t1 a 0 c 1, t2 b 1 c 0.
    m = pd.DataFrame([[0.0, NAN, 1.0], [NAN, 2.0, 0.0]], index=["t1", "t2"], columns=["a", "b", "c"])
    out = tr.greedy_portfolio_from_matrix(m, 3)
    # a: (0 + 1 uncovered) / 2 = c: (1 + 0) / 2 = 0.5 < b: (1 uncovered + 1) / 2; a wins the tie
    assert out["config_id"].tolist() == ["a", "c", "b"]
    np.testing.assert_allclose(out["mean_regret"], [0.5, 0.0, 0.0])
    assert out["n_tasks_covered"].tolist() == [1, 2, 2]
    # raw regret: t2's worst regret is 2, so an uncovered t2 costs 2
    raw = tr.greedy_portfolio_from_matrix(m, 1, normalize=False)
    assert raw["config_id"].tolist() == ["c"] and raw["mean_regret"].iloc[0] == pytest.approx(0.5)


def test_normalized_portfolio_invariant_to_per_task_shift_and_scale():
    rng = np.random.default_rng(3)
    y = rng.random((12, 40))
    y[rng.random(y.shape) < 0.3] = NAN
    m = pd.DataFrame(y, index=[f"t{i:02d}" for i in range(12)], columns=[f"c{j:02d}" for j in range(40)])
    base = tr.greedy_portfolio_from_matrix(m, 6)
    moved = m.mul(rng.uniform(0.5, 20, size=12), axis=0).add(rng.uniform(-5, 5, size=12), axis=0)
    other = tr.greedy_portfolio_from_matrix(moved, 6)
    assert other["config_id"].tolist() == base["config_id"].tolist()
    np.testing.assert_allclose(other["mean_regret"], base["mean_regret"], rtol=1e-9)
    assert np.all(np.diff(base["mean_regret"]) <= 1e-15)  # adding a member never hurts


def test_greedy_portfolio_on_the_store_decodes_params():
    with store(HAND.set_axis([1, 2, 3, 4], axis=1), folds=2) as kb:
        out = tr.greedy_portfolio(kb, "knn", 2)
        first = min(cid(1), cid(2))
        assert out["config_id"].tolist() == [first, cid(2) if first == cid(1) else cid(1)]
        assert out["params"].iloc[0] == {"n_neighbors": 1 if first == cid(1) else 2}
        np.testing.assert_allclose(out["mean_regret"], [1 / 3, 0.0], atol=1e-12)
        with pytest.raises(InputDataError):
            tr.greedy_portfolio(kb, "knn", 0)
        with pytest.raises(InputDataError, match="no 'auc' runs"):
            tr.greedy_portfolio(kb, "knn", metric="auc")
        with pytest.raises(UnknownAlgorithmError):
            tr.greedy_portfolio(kb, "nope")


# ---------------------------------------------------------------------- similarity
def scipy_tau(y: np.ndarray, a: int, b: int, min_shared: int) -> float:
    ok = ~np.isnan(y[a]) & ~np.isnan(y[b])
    if ok.sum() < min_shared:
        return NAN
    return float(kendalltau(y[a, ok], y[b, ok], variant="b").statistic)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_task_similarity_agrees_with_scipy(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, size=(7, 15)).astype(float)  # small integers: many ties
    y[rng.random(y.shape) < 0.3] = NAN
    y[0, 4:] = NAN  # 4 configurations at most: below min_shared with everyone
    y[1] = 2.0  # constant: tau undefined
    m = pd.DataFrame(y, index=[f"t{i}" for i in range(7)], columns=[f"c{j:02d}" for j in range(15)])
    tau, shared = tr.task_similarity_from_matrix(m, min_shared=5)
    for a in range(7):
        for b in range(7):
            ref = scipy_tau(y, a, b, 5)
            assert shared.iloc[a, b] == int((~np.isnan(y[a]) & ~np.isnan(y[b])).sum())
            if np.isnan(ref):
                assert np.isnan(tau.iloc[a, b]), (a, b)
            else:
                assert tau.iloc[a, b] == pytest.approx(ref, abs=1e-12), (a, b)
    assert np.isnan(tau.loc["t0"]).all() and np.isnan(tau.loc["t1"]).all()


def test_sampled_pairs_estimate_tau_and_are_reproducible():
    rng = np.random.default_rng(5)
    latent = rng.normal(size=300)
    y = latent + rng.normal(scale=rng.uniform(0.1, 2, size=(6, 1)), size=(6, 300))
    y[rng.random(y.shape) < 0.2] = NAN
    m = pd.DataFrame(y, index=[f"t{i}" for i in range(6)])
    tau, _ = tr.task_similarity_from_matrix(m, max_pairs=8000, seed=1)  # 44,850 pairs: sampled
    for a in range(6):
        for b in range(6):
            assert tau.iloc[a, b] == pytest.approx(scipy_tau(y, a, b, 5), abs=0.05)
    again, _ = tr.task_similarity_from_matrix(m, max_pairs=8000, seed=1)
    pd.testing.assert_frame_equal(tau, again)


def test_task_similarity_and_pairs_on_the_store():
    rng = np.random.default_rng(7)
    y = pd.DataFrame(rng.random((5, 8)), index=[f"t{i}" for i in range(5)], columns=range(1, 9))
    y.iloc[3] = y.iloc[0] * 3 + 1  # t3 ranks exactly like t0
    with store(y) as kb:
        tau = tr.task_similarity(kb, "knn", min_shared=3)
        assert list(tau.index) == [f"test-t{i}" for i in range(5)]
        assert tau.loc["test-t0", "test-t3"] == pytest.approx(1.0)
        assert tau.loc["test-t1", "test-t2"] == pytest.approx(scipy_tau(y.to_numpy(), 1, 2, 3), abs=1e-12)
        pairs = tr.similar_task_pairs(kb, "knn", top=3, min_shared=3)
        assert pairs.iloc[0][["dataset_a", "dataset_b"]].tolist() == ["test-t0", "test-t3"]
        assert pairs["n_shared"].iloc[0] == 8 and len(pairs) == 3
        assert pairs["tau"].is_monotonic_decreasing


# ---------------------------------------------------------------------- nearest by ranking
def test_nearest_tasks_by_ranking_recovers_a_monotone_transform():
    rng = np.random.default_rng(11)
    y = pd.DataFrame(rng.random((6, 12)), index=[f"t{i}" for i in range(6)], columns=range(1, 13))
    y.iloc[2, [0, 5]] = NAN
    with store(y) as kb:
        seen = [1, 3, 4, 7, 9, 12]
        obs = {cid(k): float(np.exp(3 * y.loc["t4", k]) - 2) for k in seen}  # increasing in y
        out = tr.nearest_tasks_by_ranking(kb, "knn", obs, k=3)
        assert list(out.columns) == ["dataset_id", "tau", "n_shared"]
        assert out["dataset_id"].iloc[0] == "test-t4" and out["tau"].iloc[0] == pytest.approx(1.0)
        assert out["n_shared"].iloc[0] == 6 and len(out) == 3
        for _, row in out.iterrows():
            t = row["dataset_id"].removeprefix("test-")
            ref = kendalltau([obs[cid(k)] for k in seen if not np.isnan(y.loc[t, k])],
                             [y.loc[t, k] for k in seen if not np.isnan(y.loc[t, k])]).statistic
            assert row["tau"] == pytest.approx(ref, abs=1e-12)
        # a stored task by id: itself excluded, the same answer as its observations
        by_id = tr.nearest_tasks_by_ranking(kb, "knn", "test-t4", k=5)
        assert "test-t4" not in set(by_id["dataset_id"])
        full = {cid(k): float(y.loc["t4", k]) for k in y.columns}
        pd.testing.assert_frame_equal(by_id, tr.nearest_tasks_by_ranking(kb, "knn", full, k=5, exclude=["test-t4"]))
        # t2 lacks configuration 1: 5 shared, below min_shared=6
        assert set(tr.nearest_tasks_by_ranking(kb, "knn", obs, k=6, min_shared=6)["dataset_id"]) == {
            f"test-t{i}" for i in (0, 1, 3, 4, 5)}
        with pytest.raises(InputDataError, match="at least"):
            tr.nearest_tasks_by_ranking(kb, "knn", {cid(1): 0.1, cid(2): 0.2})
        with pytest.raises(InputDataError, match="finite"):
            tr.nearest_tasks_by_ranking(kb, "knn", {cid(1): 0.1, cid(2): NAN, cid(3): 0.3})


# ---------------------------------------------------------------------- the matrix itself
@pytest.mark.parametrize("folds", [1, 3])  # one run per pair (fast path) and aggregated folds
def test_matrix_and_mean_ranks_match_a_pandas_reference(folds):
    rng = np.random.default_rng(folds)
    y = pd.DataFrame(rng.choice([0.1, 0.2, 0.3, 0.25], size=(5, 9)), index=[f"t{i}" for i in range(5)],
                     columns=range(1, 10))
    y[rng.random(y.shape) < 0.25] = NAN
    with store(y, folds=folds) as kb:
        m = q.performance_matrix(kb, "knn")
        ref = y.dropna(how="all").rename(index=lambda t: f"test-{t}", columns=cid).dropna(axis=1, how="all")
        ref = ref.sort_index().sort_index(axis=1)
        np.testing.assert_allclose(m.to_numpy(), ref.to_numpy(), atol=1e-12)
        assert list(m.index) == list(ref.index) and list(m.columns) == list(ref.columns)
        ranks = q.mean_ranks(kb, "knn", min_tasks=1).set_index("config_id")  # every configuration
        per_task = ref.round(9).rank(axis=1, method="average")
        np.testing.assert_allclose(ranks.loc[ref.columns, "mean_rank"], per_task.mean(axis=0), rtol=1e-12)
        assert (ranks.loc[ref.columns, "n_tasks"].to_numpy() == per_task.notna().sum(axis=0).to_numpy()).all()


def test_average_ranks_match_scipy():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=(6, 11)).astype(float)
    y[rng.random(y.shape) < 0.3] = NAN
    ref = rankdata(y, axis=1, nan_policy="omit")
    np.testing.assert_array_equal(q.average_ranks(y), ref)
