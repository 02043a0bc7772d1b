"""Studies over HTTP (TestClient): create, ask, tell, best, history; what is stored;
a restart keeps pending trials pending and tellable; concurrent workers get distinct
configurations and lose no tell."""

from __future__ import annotations

import base64
import io
import json
import threading

import numpy as np
import pytest
from sklearn.datasets import load_iris

from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id
from metabo.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space
from metabo.strategies import make_strategy

ALGS = ["knn", "decision_tree"]


def _ask_tell(client, study, value):
    t = client.post(f"/studies/{study}/ask")
    assert t.status_code == 200, t.text
    trial = t.json()
    r = client.post(f"/studies/{study}/trials/{trial['number']}/tell", json={"value": value})
    assert r.status_code == 200, r.text
    return trial, r.json()


def test_ask_returns_the_local_optimizers_configurations_and_tell_stores_each_run(client, study, kb_path):
    local = Optimizer(default_cash_space(ALGS), make_strategy("random", seed=3), seed=3)
    for i in range(4):
        trial, told = _ask_tell(client, study, 0.5 - 0.1 * i)
        expected = local.ask()
        local.tell(expected, 0.5 - 0.1 * i)
        assert (trial["number"], trial["algorithm"], trial["params"]) == (i, expected.algorithm, dict(expected.params))
        assert trial["config_id"] == config_id(trial["algorithm"], trial["params"])
        assert told["state"] == "complete" and told["value"] == pytest.approx(0.5 - 0.1 * i)
    best = client.get(f"/studies/{study}/best").json()
    assert best["number"] == 3 and best["value"] == pytest.approx(0.2)
    history = client.get(f"/studies/{study}/history").json()["trials"]
    assert [t["number"] for t in history] == [0, 1, 2, 3] and all(t["state"] == "complete" for t in history)
    info = client.get(f"/studies/{study}").json()
    assert info == {"study_id": study, "dataset_id": "service-toy", "strategy": "random", "strategy_note": "",
                    "seed": 3,
                    "metric": "error_rate", "algorithms": ALGS, "status": "running", "n_trials": 4,
                    "n_complete": 4, "n_pending": 0}
    with client.app.state.manager.store.locked() as kb:
        runs = kb.query("SELECT config_id, value, status FROM runs WHERE source = 'session:s' ORDER BY value")
    assert runs["config_id"].tolist() == [t["config_id"] for t in reversed(history)]
    assert runs["value"].tolist() == pytest.approx([0.2, 0.3, 0.4, 0.5])


def test_tell_stores_timings_failures_and_validation_predictions_with_the_run(client, study):
    manager = client.app.state.manager
    a = client.post(f"/studies/{study}/ask").json()
    b = client.post(f"/studies/{study}/ask").json()
    proba = [[0.25, 0.75], [0.5, 0.5], [1.0, 0.0]]
    r = client.post(f"/studies/{study}/trials/{a['number']}/tell",
                    json={"value": 0.125, "fit_seconds": 1.5, "predict_seconds": 0.25, "test_value": 0.2,
                          "message": "fine", "predictions": proba})
    assert r.status_code == 200, r.text
    r = client.post(f"/studies/{study}/trials/{b['number']}/tell", json={"status": "timeout", "fit_seconds": 9.0})
    assert r.status_code == 200 and r.json()["value"] is None and r.json()["status"] == "timeout"
    with manager.store.locked() as kb:
        runs = kb.query("SELECT run_id, config_id, metric, value, status, fit_seconds, predict_seconds, message "
                        "FROM runs WHERE source = 'session:s' ORDER BY metric, status")
        ok = runs[(runs["status"] == "ok") & (runs["metric"] == "error_rate")].iloc[0]
        stored = kb.get_predictions(ok["run_id"])
    assert ok["config_id"] == a["config_id"] and ok["value"] == 0.125 and ok["fit_seconds"] == 1.5
    assert ok["predict_seconds"] == 0.25 and ok["message"] == "fine"
    assert set(runs["metric"]) == {"error_rate", "test_error_rate"}
    assert runs[runs["status"] == "timeout"]["fit_seconds"].tolist() == [9.0]
    np.testing.assert_array_equal(stored, np.asarray(proba, dtype=np.float32))
    # labels (one column) are stored too
    c = client.post(f"/studies/{study}/ask").json()
    assert client.post(f"/studies/{study}/trials/{c['number']}/tell",
                       json={"value": 0.3, "predictions": [0, 1, 1, 2]}).status_code == 200


def _noisy(y, seed, flip):
    """Probabilities calling the true class with confidence 0.7, wrong on a share ``flip``."""
    wrong = np.random.default_rng(seed).random(len(y)) < flip
    p1 = np.where((y == 1) ^ wrong, 0.7, 0.3)
    return np.column_stack([1 - p1, p1])


def test_the_ensemble_of_a_study_is_tunes_choice_on_its_stored_predictions(client, study):
    """POST /studies/{id}/ensemble: the library's choice (tune's) over the told predictions
    with the labels given; trials without predictions, of another row count, or failed, are
    not in it; class indices count as one-hot probabilities; nothing is stored."""
    from metabo.ensembles.library import OutOfFoldLibrary

    y = np.tile([0, 1], 60)
    probas = {}
    for k in range(6):
        t = client.post(f"/studies/{study}/ask").json()
        P = _noisy(y, 10 + k, 0.3)
        value = float(np.mean(P.argmax(1) != y))
        probas[t["number"]] = (value, P)
        assert client.post(f"/studies/{study}/trials/{t['number']}/tell",
                           json={"value": value, "predictions": P.tolist()}).status_code == 200
    extra = [client.post(f"/studies/{study}/ask").json()["number"] for _ in range(4)]
    client.post(f"/studies/{study}/trials/{extra[0]}/tell", json={"value": 0.9})  # no predictions
    client.post(f"/studies/{study}/trials/{extra[1]}/tell", json={"value": 0.9, "predictions": [0, 1, 1]})
    client.post(f"/studies/{study}/trials/{extra[2]}/tell", json={"status": "crash"})
    labels = np.where(np.arange(len(y)) % 3 == 0, 1 - y, y)  # class indices: wrong on a third of the rows
    r = client.post(f"/studies/{study}/trials/{extra[3]}/tell",
                    json={"value": float(np.mean(labels != y)), "predictions": labels.tolist()})
    assert r.status_code == 200, r.text
    probas[extra[3]] = (float(np.mean(labels != y)), np.eye(2)[labels])
    r = client.post(f"/studies/{study}/ensemble", json={"labels": y.tolist(), "ensemble_size": 20, "seed": 4})
    assert r.status_code == 200, r.text
    out = r.json()
    reference = OutOfFoldLibrary(y, 2, ensemble_size=20, seed=4)
    for number, (value, P) in sorted(probas.items()):
        reference.add(number, value, P)
    best = min(probas, key=lambda k: (probas[k][0], k))
    expected = reference.choose(best)
    assert (out["models"], out["left_out"]) == (7, [extra[1]]), out
    assert (out["kept"], out["combine"]) == (expected.kept, expected.combine) and out["kept"] == "ensemble"
    assert {m["number"]: m["weight"] for m in out["members"]} == pytest.approx(expected.weights)
    assert out["gain"] == pytest.approx(expected.decision.gain) and out["note"] == expected.decision.summary
    assert client.get(f"/studies/{study}").json()["n_trials"] == 10  # asked nothing, stored nothing


def test_the_ensemble_of_a_study_refuses_what_it_cannot_use(client, study):
    r = client.post(f"/studies/{study}/ensemble", json={"labels": [0, 1, 1]})
    assert r.status_code == 404 and "no successful trial" in r.json()["detail"]
    t = client.post(f"/studies/{study}/ask").json()
    client.post(f"/studies/{study}/trials/{t['number']}/tell", json={"value": 0.2, "predictions": [0, 1, 0]})
    out = client.post(f"/studies/{study}/ensemble", json={"labels": [0, 1, 1]}).json()
    assert out["kept"] == "single" and out["members"] == [{"number": t["number"], "weight": 1.0}]
    assert "nothing to ensemble" in out["note"]
    u = client.post(f"/studies/{study}/ask").json()  # a class the labels do not have: left out
    client.post(f"/studies/{study}/trials/{u['number']}/tell", json={"value": 0.3, "predictions": [0, 1, 2]})
    out = client.post(f"/studies/{study}/ensemble", json={"labels": [0, 1, 1]}).json()
    assert (out["kept"], out["models"], out["left_out"]) == ("single", 1, [u["number"]])
    for body in ({"labels": [0, 1.5]}, {"labels": [-1, 0]}, {"labels": []}, {"labels": [0, 1], "ensemble_size": 0}):
        assert client.post(f"/studies/{study}/ensemble", json=body).status_code == 422, body
    assert client.post("/studies/nosuch/ensemble", json={"labels": [0, 1]}).status_code == 404


def test_best_by_posterior_mean_and_no_best_before_a_success(client, study):
    assert client.get(f"/studies/{study}/best").status_code == 404
    t = client.post(f"/studies/{study}/ask").json()
    client.post(f"/studies/{study}/trials/{t['number']}/tell", json={"status": "crash"})
    r = client.get(f"/studies/{study}/best")
    assert r.status_code == 404 and "no successful trial" in r.json()["detail"]
    values = [0.4, 0.1, 0.3]
    told = [_ask_tell(client, study, v)[0] for v in values]
    best = client.get(f"/studies/{study}/best", params={"select": "posterior_mean"}).json()
    assert best["config_id"] in {t["config_id"] for t in told} and best["status"] == "ok"
    assert client.get(f"/studies/{study}/best", params={"select": "median"}).status_code == 422


def test_a_restart_keeps_pending_trials_pending_and_tellable(kb_path, serve_app, snap):
    with serve_app(kb_path) as c1:
        c1.post("/studies", json={"study_id": "r", "dataset_id": "service-toy", "strategy": "random",
                                  "space": {"algorithms": ALGS}})
        t0, t1, t2 = (c1.post("/studies/r/ask").json() for _ in range(3))
        c1.post(f"/studies/r/trials/{t0['number']}/tell", json={"value": 0.3})
    with serve_app(kb_path) as c2:  # a new process would see the same store
        before = snap(c2)
        info = c2.get("/studies/r").json()
        assert (info["n_trials"], info["n_complete"], info["n_pending"]) == (3, 1, 2)
        assert snap(c2)["ingest_state"] == before["ingest_state"]  # resuming writes no trial
        t3 = c2.post("/studies/r/ask").json()
        assert t3["number"] == 3  # the pending trials 1 and 2 are not handed out again
        assert t3["config_id"] not in {t0["config_id"], t1["config_id"], t2["config_id"]}
        assert c2.post(f"/studies/r/trials/{t2['number']}/tell", json={"value": 0.1}).status_code == 200
        assert c2.post(f"/studies/r/trials/{t1['number']}/tell", json={"status": "crash"}).status_code == 200
        assert c2.post(f"/studies/r/trials/{t0['number']}/tell", json={"value": 0.3}).status_code == 409
        states = [(t["number"], t["state"]) for t in c2.get("/studies/r/history").json()["trials"]]
    assert states == [(0, "complete"), (1, "complete"), (2, "complete"), (3, "pending")]
    with KnowledgeBase(kb_path, read_only=True) as kb:
        n = kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:r'")["n"].item()
    assert n == 3


def test_a_finished_study_stays_finished_across_a_restart_until_asked_again(kb_path, serve_app):
    with serve_app(kb_path) as c1:
        c1.post("/studies", json={"study_id": "f", "dataset_id": "service-toy", "strategy": "random",
                                  "space": {"algorithms": ALGS}})
        t0 = c1.post("/studies/f/ask").json()
        c1.post(f"/studies/f/trials/{t0['number']}/tell", json={"value": 0.2})
        assert c1.post("/studies/f/finish").json()["status"] == "done"
    with serve_app(kb_path) as c2:
        assert c2.get("/studies/f").json()["status"] == "done"  # resuming it to read does not reopen it
        assert [s["status"] for s in c2.get("/studies").json() if s["study_id"] == "f"] == ["done"]
        c2.post("/studies/f/ask")
        assert c2.get("/studies/f").json()["status"] == "running"
    with KnowledgeBase(kb_path, read_only=True) as kb:
        assert kb.query("SELECT status FROM sessions WHERE session_id = 'f'")["status"].item() == "running"


@pytest.mark.parametrize("strategy, workers, per_worker", [("random", 6, 8), ("gp", 3, 4)])
def test_concurrent_workers_get_distinct_configurations_and_lose_no_tell(client, strategy, workers, per_worker):
    r = client.post("/studies", json={"study_id": "c", "dataset_id": "service-toy", "strategy": strategy,
                                      "space": {"algorithms": ALGS}})
    assert r.status_code == 201, r.text
    told: list[tuple[int, str, float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        try:
            for i in range(per_worker):
                t = client.post("/studies/c/ask").json()
                value = (worker * 1000 + i) / 1e5
                assert client.post(f"/studies/c/trials/{t['number']}/tell", json={"value": value}).status_code == 200
                with lock:
                    told.append((t["number"], t["config_id"], value))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    n = workers * per_worker
    history = client.get("/studies/c/history").json()["trials"]
    assert len(history) == n and all(t["state"] == "complete" for t in history)
    assert len({t["config_id"] for t in history}) == n  # no configuration handed out twice
    assert {(t["number"], t["config_id"], t["value"]) for t in history} == set(told)  # every tell, as told
    with client.app.state.manager.store.locked() as kb:
        runs = kb.query("SELECT count(*) AS n, count(DISTINCT config_id) AS d FROM runs WHERE source = 'session:c'")
    assert runs["n"].item() == n and runs["d"].item() == n


def test_a_study_on_uploaded_data_computes_and_stores_its_meta_features(client):
    frame = load_iris(as_frame=True).frame
    for fmt in ("csv", "parquet"):
        buffer = io.BytesIO()
        frame.to_csv(buffer, index=False) if fmt == "csv" else frame.to_parquet(buffer)
        body = {"study_id": f"u-{fmt}", "strategy": "random", "space": {"algorithms": ["lda"]},
                "upload": {"name": "iris", "format": fmt, "target": "target", "landmarkers": False,
                           "content_base64": base64.b64encode(buffer.getvalue()).decode()}}
        r = client.post("/studies", json=body)
        assert r.status_code == 201, r.text
        ids = {r.json()["dataset_id"]}
    assert ids == {"file-iris"}  # the same content maps onto the same dataset
    with client.app.state.manager.store.locked() as kb:
        mf = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'file-iris'")
        row = kb.get_dataset("file-iris")
    values = dict(zip(mf["name"], mf["value"], strict=True))
    assert values["NumberOfInstances"] == 150 and values["NumberOfClasses"] == 3
    assert (row["n_instances"], row["n_classes"]) == (150, 3)


def test_a_study_from_meta_features_and_from_a_configspace(client):
    cash = default_cash_space(["lda", "knn"])
    r = client.post("/studies", json={"dataset": {"name": "mine", "meta_features": {"ClassEntropy": 1.0,
                                                                                    "NumberOfFeatures": None}},
                                      "space": {"configspace": json.loads(cash.to_json())}, "strategy": "random"})
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["study_id"].startswith("study-") and info["dataset_id"] == "service-mine"
    assert info["algorithms"] == ["lda", "knn"]
    one = default_cash_space(["knn"])["knn"]  # one algorithm's space, not a CASH one
    r = client.post("/studies", json={"dataset_id": "service-mine", "strategy": "random",
                                      "space": {"configspace": json.loads(one.to_json())}})
    assert r.status_code == 201 and r.json()["algorithms"] == ["knn"]
    trial = client.post(f"/studies/{r.json()['study_id']}/ask").json()
    assert set(trial["params"]) <= {"n_neighbors", "weights", "p"}
    with client.app.state.manager.store.locked() as kb:
        mf = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'service-mine' ORDER BY name")
    assert mf["name"].tolist() == ["ClassEntropy", "NumberOfFeatures"] and np.isnan(mf["value"].iloc[1])
    listed = client.get("/studies").json()
    assert {s["study_id"] for s in listed} == {info["study_id"], r.json()["study_id"]}


def test_a_warm_started_study_begins_with_the_nearest_tasks_best_configurations(shipped, serve_app):
    with KnowledgeBase(shipped) as kb:
        meta = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'openml-1510'")  # wdbc
    meta_features = {n: (None if v != v else v) for n, v in zip(meta["name"], meta["value"], strict=True)}
    with serve_app(shipped) as c:
        expected = c.post("/knowledge/suggestions", json={"meta_features": meta_features, "k": 3}).json()
        r = c.post("/studies", json={"dataset": {"name": "new", "meta_features": meta_features}, "strategy": "knn"})
        assert r.status_code == 201, r.text
        asked = [c.post(f"/studies/{r.json()['study_id']}/ask").json() for _ in range(len(expected))]
    assert [(t["algorithm"], t["params"]) for t in asked] == [(e["algorithm"], e["params"]) for e in expected]


def test_a_study_by_default_uses_the_default_warm_start_and_says_why(shipped, serve_app):
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies.portfolio import PortfolioWarmStart

    with KnowledgeBase(shipped) as kb:
        meta = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'openml-1510'")  # wdbc
        past = PastRuns.from_kb(kb)
    meta_features = {n: (None if v != v else v) for n, v in zip(meta["name"], meta["value"], strict=True)}
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    first = PortfolioWarmStart(past, {k: v for k, v in meta_features.items() if v is not None}).portfolio(space, 1)
    with serve_app(shipped) as c:
        r = c.post("/studies", json={"dataset": {"name": "new", "meta_features": meta_features},
                                     "space": {"algorithms": list(space.algorithms)}})
        assert r.status_code == 201, r.text
        info = r.json()
        asked = c.post(f"/studies/{info['study_id']}/ask").json()
    assert info["strategy"] == "warm" and info["strategy_note"].startswith("warm start (warm): ")
    assert (asked["algorithm"], asked["params"]) == (first[0][0], first[0][1])


def test_a_dataset_sent_again_with_its_meta_features_is_the_stored_one(client):
    """The same name and the same meta-features map onto the stored dataset (other
    meta-features under that name are a 409: tests/service/test_bad_requests.py)."""
    from tests.service.conftest import TOY_META

    r = client.post("/studies", json={"dataset": {"name": "toy", "meta_features": TOY_META}, "strategy": "random"})
    assert r.status_code == 201, r.text
    assert r.json()["dataset_id"] == "service-toy"


def test_an_integer_field_takes_a_json_number_without_a_fraction(client):
    """JSON Schema's integer: ``3.0`` is one (and is stored as 3); ``3.5`` and ``"3"`` are not."""
    r = client.post("/studies", json={"study_id": "i", "dataset_id": "service-toy", "strategy": "random",
                                      "seed": 3.0, "space": {"algorithms": ["knn"]}})
    assert r.status_code == 201 and r.json()["seed"] == 3 and isinstance(r.json()["seed"], int)
    run = {"dataset_id": "service-toy", "algorithm": "knn", "params": {"n_neighbors": 5, "weights": "uniform", "p": 2},
           "value": 0.25, "fold": 1.0, "split_seed": 7.0}
    assert client.post("/runs", json={"runs": [run]}).json() == {"received": 1, "inserted": 1}
    with client.app.state.manager.store.locked() as kb:
        stored = kb.connection.execute("SELECT fold, split_seed FROM runs WHERE source = 'service'").fetchall()
    assert stored == [(1, 7)]
    for bad in (3.5, "3", True):
        r = client.post("/studies", json={"dataset_id": "service-toy", "strategy": "random", "seed": bad})
        assert r.status_code == 422 and "seed" in r.json()["detail"], (bad, r.text)
