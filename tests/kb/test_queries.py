"""Queries: runs, performance matrix, mean ranks (ties shared), nearest tasks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb import KnowledgeBase
from metabo.kb import queries as q
from metabo.kb.canonical import config_id

# values[task][k] for knn configurations n_neighbors = k
VALUES = {
    "t1": {1: 0.30, 2: 0.10, 3: 0.20},
    "t2": {1: 0.50, 2: 0.50, 3: 0.40},  # tie between k=1 and k=2: both rank 2.5
    "t3": {1: 0.05, 3: 0.15},  # k=2 not run here
}


@pytest.fixture
def kb():
    with KnowledgeBase(":memory:") as store:
        store.add_algorithms(["knn", "svm_rbf"])
        for t in VALUES:
            store.register_dataset(name=t, source="test")
        rows = []
        for t, vals in VALUES.items():
            for k, v in vals.items():
                for fold, noise in enumerate((-0.01, 0.01)):  # folds average back to v
                    rows.append(dict(dataset_id=f"test-{t}", algorithm="knn", params={"n_neighbors": k},
                                     metric="error_rate", value=v + noise, fold=fold, source="s"))
        rows.append(dict(dataset_id="test-t1", algorithm="svm_rbf", params={"C": 1.0}, metric="error_rate",
                         value=0.9, source="s"))
        rows.append(dict(dataset_id="test-t1", algorithm="knn", params={"n_neighbors": 9}, metric="error_rate",
                         status="crash", source="s"))
        store.add_runs(rows)
        yield store


def cid(k: int) -> str:
    return config_id("knn", {"n_neighbors": k})


def test_runs_filters(kb):
    df = q.runs(kb, dataset_id="test-t1", algorithm="knn")
    assert len(df) == 6 and set(df["status"]) == {"ok"}
    assert {p["n_neighbors"] for p in df["params"]} == {1, 2, 3}
    assert len(q.runs(kb, status=None)) == 2 * 8 + 2


def test_performance_matrix_is_mean_over_folds(kb):
    m = q.performance_matrix(kb, "knn")
    assert m.shape == (3, 3)
    for t, vals in VALUES.items():
        for k, v in vals.items():
            assert m.loc[f"test-{t}", cid(k)] == pytest.approx(v, abs=1e-12)
    assert np.isnan(m.loc["test-t3", cid(2)])
    with pytest.raises(UnknownAlgorithmError):
        q.performance_matrix(kb, "nope")


def test_mean_ranks_share_ties(kb):
    r = q.mean_ranks(kb, "knn").set_index("config_id")
    # by hand: k=1 ranks 3, 2.5, 1 -> 6.5/3; k=2 ranks 1, 2.5 -> 1.75; k=3 ranks 2, 1, 2 -> 5/3
    assert r.loc[cid(1), "mean_rank"] == pytest.approx(6.5 / 3)
    assert r.loc[cid(2), "mean_rank"] == pytest.approx(1.75)
    assert r.loc[cid(3), "mean_rank"] == pytest.approx(5 / 3)
    assert r.index[0] == cid(3)
    assert list(r["n_tasks"].loc[[cid(1), cid(2), cid(3)]]) == [3, 2, 3]
    assert len(q.mean_ranks(kb, "knn", min_tasks=3)) == 2


def test_a_configuration_seen_on_few_tasks_is_not_ranked_by_default(kb):
    """By default a configuration needs half the support of the best-supported one: one
    seen on a single task (rank 1 there) does not top configurations seen on three."""
    kb.add_runs([dict(dataset_id="test-t1", algorithm="knn", params={"n_neighbors": 40}, metric="error_rate",
                      value=0.0, source="s")])
    lonely = q.mean_ranks(kb, "knn", min_tasks=1)
    assert lonely["n_tasks"].iloc[0] == 1 and lonely["mean_rank"].iloc[0] == 1.0
    default = q.mean_ranks(kb, "knn")
    assert default["n_tasks"].min() == 2 and lonely["config_id"].iloc[0] not in set(default["config_id"])


def test_nearest_tasks_matches_hand_computation(kb):
    mf = {"test-t1": {"a": 0.0, "b": 10.0, "c": 5.0}, "test-t2": {"a": 1.0, "b": 20.0, "c": 5.0},
          "test-t3": {"a": 4.0, "b": 10.0, "c": 5.0}}
    for d, vals in mf.items():
        kb.add_meta_features(d, vals)
    target = {"a": 1.0, "b": 12.0, "c": 1.0}
    out = q.nearest_tasks(kb, target, k=3)
    table = pd.DataFrame(mf).T[["a", "b"]]  # c is constant: dropped
    z = (table - table.mean()) / table.std(ddof=0)
    tz = (pd.Series(target)[["a", "b"]] - table.mean()) / table.std(ddof=0)
    expected = np.sqrt(((z - tz) ** 2).sum(axis=1)).sort_values()
    assert list(out["dataset_id"]) == list(expected.index)
    np.testing.assert_allclose(out["distance"], expected.to_numpy(), rtol=1e-12)
    # by dataset id: itself excluded
    assert "test-t2" not in set(q.nearest_tasks(kb, "test-t2", k=5)["dataset_id"])
    with pytest.raises(InputDataError):
        q.nearest_tasks(kb, {"zzz": 1.0})


def test_restrict_to_tasks_and_decode_configurations(kb):
    r = q.mean_ranks(kb, "knn", dataset_ids=["test-t1"]).set_index("config_id")
    assert r.loc[cid(2), "mean_rank"] == 1 and r.loc[cid(1), "mean_rank"] == 3
    assert r.loc[cid(1), "params"] == {"n_neighbors": 1}
    m = q.performance_matrix(kb, "knn", dataset_ids=["test-t2", "test-t3"])
    assert list(m.index) == ["test-t2", "test-t3"]
    configs = q.configurations(kb, "knn").set_index("config_id")["params"]
    assert configs[cid(3)] == {"n_neighbors": 3} and len(configs) == 4


def test_ties_do_not_depend_on_fold_order():
    # Same fold values in another order: floating-point sums differ, the means must not.
    with KnowledgeBase(":memory:") as store:
        store.add_algorithms(["knn"])
        store.register_dataset(name="t", source="test")
        folds = {1: [0.1, 0.2, 0.3, 0.0, 0.0], 2: [0.3, 0.2, 0.1, 0.0, 0.0]}
        assert sum(folds[1]) != sum(folds[2])
        store.add_runs([dict(dataset_id="test-t", algorithm="knn", params={"n_neighbors": k}, metric="error_rate",
                             value=v, fold=i, source="s") for k, vals in folds.items() for i, v in enumerate(vals)])
        ranks = q.mean_ranks(store, "knn")
        assert ranks["mean_rank"].tolist() == [1.5, 1.5]
        m = q.performance_matrix(store, "knn")
        assert m.iloc[0, 0] == m.iloc[0, 1]


def test_fidelity_highest_by_default_or_exact():
    with KnowledgeBase(":memory:") as store:
        store.add_algorithms(["knn"])
        store.register_dataset(name="t", source="test")
        rows = [(1, 100.0, 0.5), (1, 1000.0, 0.2), (2, 100.0, 0.3), (2, None, 0.4)]
        store.add_runs([dict(dataset_id="test-t", algorithm="knn", params={"n_neighbors": k}, metric="error_rate",
                             value=v, fidelity=f, source="s") for k, f, v in rows])
        m = q.performance_matrix(store, "knn")
        assert m.loc["test-t", cid(1)] == 0.2 and m.loc["test-t", cid(2)] == 0.4  # NULL = full data
        low = q.performance_matrix(store, "knn", fidelity=100)
        assert low.loc["test-t", cid(1)] == 0.5 and low.loc["test-t", cid(2)] == 0.3
        assert q.mean_ranks(store, "knn")["config_id"].tolist() == [cid(1), cid(2)]
        assert q.mean_ranks(store, "knn", fidelity=100)["config_id"].tolist() == [cid(2), cid(1)]
