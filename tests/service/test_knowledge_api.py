"""Knowledge queries over HTTP equal the library's answers on the same store, and bulk
ingestion stores a batch whole, idempotently."""

from __future__ import annotations

import pytest

from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.kb.queries import mean_ranks, nearest_tasks
from metabo.kb.transfer import greedy_portfolio
from metabo.space.algorithms import default_cash_space
from metabo.strategies.knn import warm_start_suggestions


@pytest.fixture
def wdbc(shipped):
    """The shipped store and the meta-features of its wdbc task (null where undefined)."""
    with KnowledgeBase(shipped) as kb:
        frame = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'openml-1510'")
    return shipped, {n: (None if v != v else float(v)) for n, v in zip(frame["name"], frame["value"], strict=True)}


@pytest.mark.slow
def test_suggestions_and_nearest_tasks_are_the_librarys(wdbc, serve_app):
    path, meta = wdbc
    finite = {k: v for k, v in meta.items() if v is not None}
    with KnowledgeBase(path) as kb:
        space = default_cash_space(["knn", "lda"])
        past = PastRuns.from_kb(kb, algorithms=list(space.algorithms)).without(["openml-1510"])
        expected = warm_start_suggestions(past, finite, space, k=4)
        near = nearest_tasks(kb, finite, k=3, exclude=["openml-1510"])
    with serve_app(path) as c:
        got = c.post("/knowledge/suggestions", json={"meta_features": meta, "k": 4, "algorithms": ["knn", "lda"],
                                                     "exclude": ["openml-1510"]}).json()
        nearest = c.post("/knowledge/nearest", json={"meta_features": meta, "k": 3, "exclude": ["openml-1510"]}).json()
    assert [(g["algorithm"], g["params"], g["from_task"]) for g in got] == \
        [(e["algorithm"], e["params"], e["from_task"]) for e in expected]
    assert [g["distance"] for g in got] == pytest.approx([e["distance"] for e in expected])
    assert all(g["task_name"] for g in got) and {g["algorithm"] for g in got} <= {"knn", "lda"}
    assert [n["dataset_id"] for n in nearest] == near["dataset_id"].tolist()
    assert [n["distance"] for n in nearest] == pytest.approx(near["distance"].tolist())
    assert "openml-1510" not in {n["dataset_id"] for n in nearest}


def test_ranks_are_the_mean_ranks_and_greedy_portfolio(shipped, serve_app):
    with KnowledgeBase(shipped) as kb:
        ranked = mean_ranks(kb, "knn", min_tasks=2).head(4)
        portfolio = greedy_portfolio(kb, "knn", 3)
    with serve_app(shipped) as c:
        got = c.get("/knowledge/ranks/knn", params={"top": 4, "k": 3, "min_tasks": 2}).json()
    assert [r["config_id"] for r in got["mean_ranks"]] == ranked["config_id"].tolist()
    assert [r["mean_rank"] for r in got["mean_ranks"]] == pytest.approx(ranked["mean_rank"].tolist())
    assert [r["params"] for r in got["mean_ranks"]] == ranked["params"].tolist()
    assert [p["config_id"] for p in got["portfolio"]] == portfolio["config_id"].tolist()
    assert [p["mean_regret"] for p in got["portfolio"]] == pytest.approx(portfolio["mean_regret"].tolist())


def test_ingest_stores_a_batch_normalized_whole_and_once(client, snap):
    run = {"dataset_id": "service-toy", "algorithm": "knn", "params": {"n_neighbors": 5, "weights": "distance", "p": 1},
           "value": 0.2, "fold": 1, "fit_seconds": 0.5}
    runs = [run, {**run, "fold": 2, "value": 0.3}, {**run, "algorithm": "lda", "params": {"solver": "svd"},
                                                   "status": "crash", "value": None, "message": "boom"}]
    r = client.post("/runs", json={"runs": runs, "source": "bench:upload-1"})
    assert r.status_code == 200, r.text
    assert r.json() == {"received": 3, "inserted": 3}
    with client.app.state.manager.store.locked() as kb:
        stored = kb.query("SELECT algorithm, fold, value, status, message, fit_seconds FROM runs "
                          "WHERE source = 'bench:upload-1' ORDER BY algorithm, fold")
    assert stored["algorithm"].tolist() == ["knn", "knn", "lda"] and stored["fold"].tolist() == [1, 2, 1]
    assert stored["value"].tolist()[:2] == [0.2, 0.3] and stored["status"].tolist()[2] == "crash"
    before = snap(client)
    assert (client.post("/runs", json={"runs": runs, "source": "bench:upload-1"}).json()
            == {"received": 3, "inserted": 0})
    assert snap(client) == before
