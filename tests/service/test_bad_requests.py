"""Every kind of bad request gets a 4xx with a message and leaves the store exactly as it
was (every row of every table compared before and after)."""

from __future__ import annotations

import base64
import json

import pytest

from metabo.exceptions import InputDataError
from metabo.service.settings import ServiceSettings

BASE = "/studies/s"
GOOD_RUN = {"dataset_id": "service-toy", "algorithm": "knn", "params": {"n_neighbors": 5, "weights": "uniform", "p": 2},
            "value": 0.25}

STUDY = {"dataset_id": "service-toy", "strategy": "random"}
ONE_CLASS = b"a,b,y\n" + b"".join(b"%d,%d,x\n" % (i, i % 3) for i in range(30))
REGRESSION = b"a,b,y\n" + b"".join(b"%d,%d,%.3f\n" % (i, i % 3, i * 0.731) for i in range(30))


def _upload(content: bytes) -> dict:
    return {"name": "up", "format": "csv", "target": "y", "content_base64": base64.b64encode(content).decode()}


# (name, method, path, body: dict for JSON, bytes for a raw body, expected status, words of the message)
CASES = [
    ("malformed JSON", "POST", f"{BASE}/trials/1/tell", b'{"value": 0.1', 422, "malformed JSON"),
    ("not an object", "POST", f"{BASE}/trials/1/tell", b"[1, 2]", 422, "valid dictionary"),
    ("NaN value", "POST", f"{BASE}/trials/1/tell", b'{"value": NaN}', 422, "finite number"),
    ("infinite value", "POST", f"{BASE}/trials/1/tell", b'{"value": Infinity}', 422, "finite number"),
    ("value as a string", "POST", f"{BASE}/trials/1/tell", {"value": "0.1"}, 422, "valid number"),
    ("ok without a value", "POST", f"{BASE}/trials/1/tell", {"status": "ok"}, 422, "needs a finite value"),
    ("unknown status", "POST", f"{BASE}/trials/1/tell", {"value": 0.1, "status": "great"}, 422, "status"),
    ("unknown field", "POST", f"{BASE}/trials/1/tell", {"value": 0.1, "score": 2}, 422, "score"),
    ("negative seconds", "POST", f"{BASE}/trials/1/tell", {"value": 0.1, "fit_seconds": -1}, 422, "fit_seconds"),
    ("ragged predictions", "POST", f"{BASE}/trials/1/tell", {"value": 0.1, "predictions": [[0.5, 0.5], [1]]}, 422,
     "same number of columns"),
    ("NaN prediction", "POST", f"{BASE}/trials/1/tell", b'{"value": 0.1, "predictions": [0.1, NaN]}', 422,
     "finite number"),
    ("predictions of a crash", "POST", f"{BASE}/trials/1/tell", {"status": "crash", "predictions": [1]}, 422,
     "successful trials only"),
    ("unknown trial", "POST", f"{BASE}/trials/7/tell", {"value": 0.1}, 404, "no trial 7"),
    ("told twice", "POST", f"{BASE}/trials/0/tell", {"value": 0.1}, 409, "already told"),
    ("unknown study: ask", "POST", "/studies/nope/ask", None, 404, "unknown study"),
    ("unknown study: tell", "POST", "/studies/nope/trials/0/tell", {"value": 0.1}, 404, "unknown study"),
    ("unknown study: history", "GET", "/studies/nope/history", None, 404, "unknown study"),
    ("unknown study: finish", "POST", "/studies/nope/finish", None, 404, "unknown study"),
    ("unknown finish status", "POST", f"{BASE}/finish", {"status": "maybe"}, 422, "status"),
    ("bad study id", "POST", "/studies/..%2F/ask", None, 404, ""),
    ("study id taken", "POST", "/studies", {"study_id": "s", "dataset_id": "service-toy", "strategy": "random"}, 409,
     "exists"),
    ("no dataset", "POST", "/studies", {"strategy": "random"}, 422, "exactly one of"),
    ("two datasets", "POST", "/studies", {"dataset_id": "service-toy", "dataset": {"name": "x", "meta_features":
                                                                                     {"a": 1}}}, 422, "exactly one of"),
    ("unknown dataset", "POST", "/studies", {"dataset_id": "nope", "strategy": "random"}, 404, "unknown dataset"),
    ("unknown strategy", "POST", "/studies", {"dataset_id": "service-toy", "strategy": "magic"}, 422, "strategy"),
    ("unknown algorithm in the space", "POST", "/studies",
     {"dataset_id": "service-toy", "strategy": "random", "space": {"algorithms": ["knn", "nope"]}}, 422,
     "unknown algorithm"),
    ("a value the metric cannot take", "POST", f"{BASE}/trials/1/tell", {"value": -5}, 422,
     "not a possible error_rate"),
    ("a test value the metric cannot take", "POST", f"{BASE}/trials/1/tell", {"value": 0.2, "test_value": 3}, 422,
     "not a possible error_rate"),
    ("a maximized metric", "POST", "/studies", {"dataset_id": "service-toy", "strategy": "random",
                                                "metric": "accuracy"}, 422, "use 'error_rate'"),
    ("an unknown metric", "POST", "/studies", {"dataset_id": "service-toy", "strategy": "random",
                                               "metric": "nosuch"}, 422, "unknown metric 'nosuch'"),
    ("a taken dataset name with other meta-features", "POST", "/studies",
     {"dataset": {"name": "toy", "meta_features": {"NumberOfInstances": 999}}, "strategy": "random"}, 409,
     "name 'toy' is taken"),
    ("a run value the metric cannot take", "POST", "/runs", {"runs": [GOOD_RUN, {**GOOD_RUN, "value": 1.5}]}, 422,
     "not a possible error_rate"),
    ("a run of an unknown metric", "POST", "/runs", {"runs": [{**GOOD_RUN, "metric": "accuracy"}]}, 422,
     "use 'error_rate'"),
    ("not a ConfigSpace", "POST", "/studies",
     {"dataset_id": "service-toy", "strategy": "random", "space": {"configspace": {"hyperparameters": 3}}}, 422,
     "ConfigSpace"),
    ("nothing to warm-start from", "POST", "/studies",
     {"dataset": {"name": "fresh", "meta_features": {"NumberOfInstances": 10}}, "strategy": "knn",
      "space": {"algorithms": ["lda"]}}, 422,
     "nothing to warm-start from"),
    ("negative seed", "POST", "/studies", {"dataset_id": "service-toy", "strategy": "random", "seed": -1}, 422,
     "seed"),
    ("NaN meta-feature", "POST", "/datasets", b'{"name": "x", "meta_features": {"a": NaN}}', 422, "finite number"),
    ("only undefined meta-features", "POST", "/datasets", {"name": "x", "meta_features": {"a": None}}, 422,
     "every meta-feature is null"),
    ("bad base64", "POST", "/datasets/upload",
     {"name": "x", "format": "csv", "target": "y", "content_base64": "***"}, 422, "base64"),
    ("missing target column", "POST", "/datasets/upload",
     {"name": "x", "format": "csv", "target": "y", "content_base64": base64.b64encode(b"a,b\n1,2\n3,4\n").decode()},
     422, "the uploaded csv: no target column"),
    ("unknown hyperparameter", "POST", "/runs",
     {"runs": [GOOD_RUN, {**GOOD_RUN, "params": {**GOOD_RUN["params"], "bogus": 1}}]}, 422, "bogus"),
    ("out-of-range hyperparameter", "POST", "/runs",
     {"runs": [GOOD_RUN, {**GOOD_RUN, "params": {**GOOD_RUN["params"], "n_neighbors": -3}}]}, 422, "n_neighbors"),
    ("unknown dataset in a batch", "POST", "/runs", {"runs": [GOOD_RUN, {**GOOD_RUN, "dataset_id": "nope"}]}, 404,
     "unknown dataset"),
    ("unknown algorithm in a batch", "POST", "/runs", {"runs": [GOOD_RUN, {**GOOD_RUN, "algorithm": "nope"}]}, 422,
     "unknown algorithm"),
    ("ok run without value", "POST", "/runs", {"runs": [{**GOOD_RUN, "value": None}]}, 422, "finite value"),
    ("reserved source", "POST", "/runs", {"runs": [GOOD_RUN], "source": "session:s"}, 422, "reserved"),
    ("empty batch", "POST", "/runs", {"runs": []}, 422, "at least 1"),
    ("unknown algorithm ranks", "GET", "/knowledge/ranks/nope", None, 404, "unknown algorithm"),
    ("suggestions from an empty past", "POST", "/knowledge/suggestions", {"meta_features": {"a": 1.0}}, 422, ""),
    ("nearest with k = 0", "POST", "/knowledge/nearest", {"meta_features": {"a": 1.0}, "k": 0}, 422, "k"),
    # definitions that cannot work (issue 33)
    ("an empty configspace", "POST", "/studies", {**STUDY, "space": {"configspace": {}}}, 422, "no hyperparameter"),
    ("a configspace of unknown keys", "POST", "/studies", {**STUDY, "space": {"configspace": {"hello": 1}}}, 422,
     "'hello'"),
    ("a configspace without hyperparameters", "POST", "/studies",
     {**STUDY, "space": {"configspace": {"name": "knn", "hyperparameters": []}}}, 422, "no hyperparameter"),
    ("a study on a one-class upload", "POST", "/studies", {"strategy": "random", "upload": _upload(ONE_CLASS)}, 422,
     "one class"),
    ("a study on a regression upload", "POST", "/studies", {"strategy": "random", "upload": _upload(REGRESSION)}, 422,
     "regression"),
    ("a one-class upload", "POST", "/datasets/upload", _upload(ONE_CLASS), 422, "one class"),
    ("a regression upload", "POST", "/datasets/upload", _upload(REGRESSION), 422, "regression"),
    ("predictions that are not probabilities", "POST", f"{BASE}/trials/1/tell",
     {"value": 0.1, "predictions": [[5, 7], [1, 0]]}, 422, "in [0, 1]"),
    ("probabilities that do not sum to 1", "POST", f"{BASE}/trials/1/tell",
     {"value": 0.1, "predictions": [[0.5, 0.7], [1, 0]]}, 422, "sum to 1"),
    ("negative probabilities", "POST", f"{BASE}/trials/1/tell",
     {"value": 0.1, "predictions": [[-0.5, 1.5], [0.5, 0.5]]}, 422, "in [0, 1]"),
    ("labels that are not class indices", "POST", f"{BASE}/trials/1/tell",
     {"value": 0.1, "predictions": [0, 1.5, -1]}, 422, "class indices"),
    ("a crash with a value", "POST", f"{BASE}/trials/1/tell", {"status": "crash", "value": 0.3}, 422, "no value"),
    ("a timeout with a value", "POST", f"{BASE}/trials/1/tell", {"status": "timeout", "value": 2.05e16}, 422,
     "value"),
    ("a crash with a test value", "POST", f"{BASE}/trials/1/tell", {"status": "crash", "test_value": 0.3}, 422,
     "no value"),
    ("a run of a crash with a value", "POST", "/runs", {"runs": [{**GOOD_RUN, "status": "crash"}]}, 422, "no value"),
    ("nearest to a meta-feature of 1e308", "POST", "/knowledge/nearest",
     {"meta_features": {"NumberOfInstances": 1e308}}, 422, "meta_features"),
    ("a meta-feature of 1.7e308", "POST", "/datasets", {"name": "x", "meta_features": {"a": 1.7e308}}, 422,
     "meta_features"),
    ("a meta-feature of 1.8e308", "POST", "/datasets", b'{"name": "x", "meta_features": {"a": 1.8e308}}', 422,
     "meta_features"),
    ("a meta-feature name with a NUL byte", "POST", "/datasets", {"name": "x", "meta_features": {"a\u0000b": 1.0}},
     422, "meta_features"),
    ("a meta-feature name with a control character", "POST", "/datasets",
     {"name": "x", "meta_features": {"a\tb": 1.0}}, 422, "meta_features"),
    ("a body that is not UTF-8", "POST", f"{BASE}/trials/1/tell", b'{"value": 0.1, "message": "\xd6\xe3"}', 422,
     "UTF-8"),
]


def _send(client, method, path, body):
    if isinstance(body, bytes):
        return client.request(method, path, content=body, headers={"content-type": "application/json"})
    return client.request(method, path, json=body)


@pytest.fixture
def told_study(client, study):
    """Study ``s`` with trial 0 told and trial 1 pending."""
    t0 = client.post(f"{BASE}/ask").json()
    client.post(f"{BASE}/trials/{t0['number']}/tell", json={"value": 0.5})
    client.post(f"{BASE}/ask")
    return study


@pytest.mark.slow
@pytest.mark.parametrize("name, method, path, body, code, words", CASES, ids=[c[0] for c in CASES])
def test_a_bad_request_gets_a_4xx_with_a_message_and_changes_nothing(client, told_study, snap, name, method, path,
                                                                      body, code, words):
    before = snap(client)
    r = _send(client, method, path, body)
    assert r.status_code == code, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail and words.lower() in detail.lower()
    assert "Traceback" not in r.text
    assert snap(client) == before
    # the study still works afterwards
    assert client.get(f"{BASE}/history").json()["trials"][1]["state"] == "pending"


def test_a_study_has_at_most_max_pending_trials_open(kb_path, serve_app, snap):
    with serve_app(kb_path, max_pending=3) as c:
        c.post("/studies", json={**STUDY, "study_id": "p", "space": {"algorithms": ["knn"]}})
        numbers = [c.post("/studies/p/ask").json()["number"] for _ in range(3)]
        before = snap(c)
        r = c.post("/studies/p/ask")
        assert r.status_code == 409 and "3 pending trials" in r.json()["detail"] and "crash" in r.json()["detail"]
        assert snap(c) == before
        assert c.post(f"/studies/p/trials/{numbers[0]}/tell", json={"status": "crash"}).status_code == 200
        assert c.post("/studies/p/ask").status_code == 200  # one told: one more may be asked
        assert c.post("/studies/p/ask").status_code == 409
    with pytest.raises(InputDataError, match="max_pending"):
        ServiceSettings(max_pending=0)


def test_the_token_is_required_when_set_and_a_refusal_changes_nothing(kb_path, serve_app, snap):
    with serve_app(kb_path, token="s3cret") as c:
        body = {"study_id": "t", "dataset_id": "service-toy", "strategy": "random"}
        before = snap(c)
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            r = c.post("/studies", json=body, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer" and r.json()["detail"]
        assert c.post("/runs", json={"runs": [GOOD_RUN]}).status_code == 401
        assert snap(c) == before
        assert c.get("/health").status_code == 200  # liveness needs no token
        ok = {"Authorization": "Bearer s3cret"}
        assert c.post("/studies", json=body, headers=ok).status_code == 201
        assert c.post("/studies/t/ask").status_code == 401
        assert c.post("/studies/t/ask", headers=ok).status_code == 200


def test_with_a_token_the_schema_asks_for_it_on_every_operation_and_documents_its_401(kb_path, serve_app):
    with serve_app(kb_path, token="s3cret") as c:
        schema = c.get("/openapi.json").json()
        assert "HTTPBearer" in json.dumps(schema["components"]["securitySchemes"])
        operations = [(path, op) for path, ops in schema["paths"].items() for op in ops.values()]
        api = [(path, op) for path, op in operations if path != "/health"]
        assert len(api) >= 12 and all(op.get("security") and "401" in op["responses"] for _, op in api)
        assert c.get("/studies").status_code == 401  # GET /studies among them


def test_the_token_is_checked_before_the_body_is_read(kb_path, serve_app, snap):
    with serve_app(kb_path, token="s3cret") as c:
        before = snap(c)
        for body in (b"\xd6\xe3\xde", b'{"value": 0.1', b'{"value": 0.1, "extra": 1}'):
            r = c.post("/studies/s/trials/0/tell", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
        assert snap(c) == before


def test_a_405_names_every_method_of_the_path(client):
    r = client.request("OPTIONS", "/studies")
    assert r.status_code == 405 and set(r.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST"}
    r = client.delete("/studies/s/history")
    assert r.status_code == 405 and r.headers["allow"] == "GET"


def test_the_openapi_schema_documents_every_route(client):
    schema = client.get("/openapi.json").json()
    assert {"/studies", "/studies/{study_id}/ask", "/studies/{study_id}/trials/{number}/tell",
            "/studies/{study_id}/best",
            "/studies/{study_id}/history", "/knowledge/suggestions", "/knowledge/nearest",
            "/knowledge/ranks/{algorithm}", "/runs", "/datasets", "/datasets/upload"} <= set(schema["paths"])
    # without a token no operation asks for one, nor answers 401
    assert "securitySchemes" not in schema["components"] and "401" not in json.dumps(schema["paths"])
    page = client.get("/docs")
    assert page.status_code == 200 and "cdn" not in page.text.lower()  # offline: no CDN
    assert "/docs-assets/swagger-ui-bundle.js" in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert client.get(f"/docs-assets/{asset}").status_code == 200
