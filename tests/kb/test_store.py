"""The store: schema, migrations, datasets, configurations, runs, predictions, sessions."""

from __future__ import annotations

import hashlib
import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.data.dataset import Dataset
from metabo.exceptions import (
    InputDataError,
    KnowledgeBaseError,
    SchemaVersionError,
    UnknownAlgorithmError,
    UnknownDatasetError,
)
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import canonical_json, config_id
from metabo.kb.schema import MIGRATIONS, SCHEMA_VERSION


def _frame(seed: int = 0, n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.choice(["x", "y"], size=n), "t": rng.choice(["p", "q"], size=n)}
    )


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as store:
        store.add_algorithms(["knn", "svm_rbf"])
        ds = Dataset.from_frame(_frame(), "t", name="toy", source="test")
        store.add_dataset(ds, {"NumberOfInstances": 30.0})
        yield store


def _runs(n: int, dataset_id: str = "test-toy", seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "dataset_id": dataset_id,
            "algorithm": "knn",
            "params": [json.dumps({"n_neighbors": int(k)}) for k in rng.integers(1, 50, n)],
            "metric": "error_rate",
            "value": rng.random(n),
            "fold": rng.integers(0, 5, n),
            "source": "test",
        }
    )


def test_fresh_store_is_at_latest_schema(kb):
    assert kb.schema_version() == SCHEMA_VERSION
    versions = [r[0] for r in kb.connection.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
    assert versions == [m.version for m in MIGRATIONS]


def test_migration_from_version_1_keeps_runs_and_their_ids(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, "
                "applied_at TIMESTAMP NOT NULL)")
    for stmt in MIGRATIONS[0].statements:
        con.execute(stmt)
    con.execute("INSERT INTO schema_migrations VALUES (1, 'initial schema', now())")
    con.close()
    # A store at version 1 is migrated on open; a run written before and after agrees on its id.
    with KnowledgeBase(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert "fidelity" in store.query("DESCRIBE runs")["column_name"].tolist()


def _store_at(path, version: int) -> duckdb.DuckDBPyConnection:
    """A connection to a new store at schema ``version`` (the migrations up to it applied)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, "
                "applied_at TIMESTAMP NOT NULL)")
    for m in MIGRATIONS[:version]:
        for stmt in m.statements:
            con.execute(stmt)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [m.version, m.description])
    return con


def test_migration_to_version_4_fills_runs_algorithm_and_optimize_keeps_every_run(tmp_path):
    path = tmp_path / "v3.duckdb"
    con = _store_at(path, 3)
    con.execute("INSERT INTO datasets (dataset_id, name, source, created_at) VALUES ('d1', 'd1', 't', now())")
    con.execute("INSERT INTO algorithms VALUES ('knn', '', '', now()), ('svm', '', '', now())")
    con.execute("INSERT INTO configurations VALUES ('c1', 'knn', '{}', now()), ('c2', 'svm', '{}', now())")
    for i, cid in enumerate(["c2", "c1", "c2"]):
        con.execute(
            "INSERT INTO runs (run_id, dataset_id, config_id, metric, value, fold, repeat, status, source, created_at)"
            " VALUES (?, 'd1', ?, 'error_rate', ?, ?, 0, 'ok', 't', now())", [f"r{i}", cid, 0.1 * i, i])
    con.close()
    with KnowledgeBase(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        runs = store.query("SELECT run_id, algorithm, value FROM runs")
        assert dict(zip(runs["run_id"], runs["algorithm"])) == {"r0": "svm", "r1": "knn", "r2": "svm"}
        assert runs["run_id"].tolist() == ["r1", "r0", "r2"]  # ordered by algorithm
        before = store.query("SELECT * FROM runs ORDER BY run_id")
        store.optimize()
        assert store.query("SELECT * FROM runs ORDER BY run_id").equals(before)
        assert store.query(
            "SELECT count(*) AS n FROM duckdb_constraints() WHERE table_name = 'runs' AND constraint_type = 'NOT NULL'"
        )["n"][0] >= 8
        store.add_runs([{"dataset_id": "d1", "config_id": "c1", "metric": "error_rate", "value": 0.5,
                         "fold": 7, "source": "t"}])
        assert store.query("SELECT algorithm FROM runs WHERE fold = 7")["algorithm"][0] == "knn"


def test_migration_to_version_6_says_how_every_run_was_measured(tmp_path):
    path = tmp_path / "v5.duckdb"
    con = _store_at(path, 5)
    con.execute("INSERT INTO datasets (dataset_id, name, source, created_at) VALUES ('d1', 'd1', 't', now())")
    con.execute("INSERT INTO algorithms VALUES ('knn', '', '', now())")
    con.execute("INSERT INTO configurations VALUES ('c1', 'knn', '{}', now())")
    con.execute("INSERT INTO sessions (session_id, strategy, settings, created_at, updated_at) VALUES "
                "('s1', 'gp', '{\"protocol\": \"KFold(k=5, stratified=True, test=0.2, max_train=None)\"}', "
                "now(), now()),"
                "('s2', 'gp', '{}', now(), now())")
    for i, source in enumerate(["session:s1", "session:s2", "oboe", "openml:123"]):
        con.execute(
            "INSERT INTO runs (run_id, dataset_id, config_id, metric, value, fold, repeat, status, source, created_at,"
            " algorithm) VALUES (?, 'd1', 'c1', 'error_rate', 0.1, 0, 0, 'ok', ?, now(), 'knn')", [f"r{i}", source])
    con.close()
    with KnowledgeBase(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        got = dict(store.connection.execute("SELECT run_id, protocol FROM runs").fetchall())
        assert got == {"r0": "KFold(k=5, stratified=True, test=0.2, max_train=None)", "r1": "session",
                       "r2": "oboe", "r3": "openml"}


def test_a_run_stored_without_a_protocol_gets_its_sessions_or_its_sources(kb):
    ds_id = "test-toy"
    kb.add_session("s1", strategy="gp", settings={"protocol": "Holdout(train=0.6)"})
    base = {"dataset_id": ds_id, "algorithm": "knn", "params": {"n_neighbors": 3}, "metric": "error_rate",
            "value": 0.2}
    kb.add_runs([{**base, "source": "session:s1"}, {**base, "source": "openml:9", "fold": 1},
                 {**base, "source": "session:s1", "fold": 2, "protocol": "KFold(k=3)"}])
    got = kb.query("SELECT fold, protocol FROM runs ORDER BY fold")["protocol"].tolist()
    assert got == ["Holdout(train=0.6)", "openml", "KFold(k=3)"]
    assert kb.stats()["runs_by_protocol"] == {p: {"runs": 1, "datasets": 1} for p in got}
    kb.add_runs([{**base, "source": "openml:9", "fold": 3, "protocol": 7}])  # not text: stored as text
    assert kb.query("SELECT protocol FROM runs WHERE fold = 3")["protocol"].tolist() == ["7"]


def test_a_run_of_a_build_measuring_each_dataset_its_own_way_gets_its_datasets_protocol(kb):
    kb.add_session("b1", strategy="build", settings={"protocol": "Holdout(train=0.6)",
                                                     "protocols": {"test-toy": "KFold(k=5)"}})
    kb.add_runs([{"dataset_id": "test-toy", "algorithm": "knn", "params": {"n_neighbors": 3},
                  "metric": "error_rate", "value": 0.2, "source": "session:b1"}])
    assert kb.query("SELECT protocol FROM runs")["protocol"].tolist() == ["KFold(k=5)"]


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.duckdb"
    KnowledgeBase(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_migrations VALUES (99, 'future', now())")
    con.close()
    with pytest.raises(SchemaVersionError):
        KnowledgeBase(path)


def test_corrupt_file_gives_clear_error(tmp_path):
    path = tmp_path / "corrupt.duckdb"
    path.write_bytes(b"this is not a duckdb file" * 200)
    with pytest.raises(KnowledgeBaseError, match="cannot open knowledge base"):
        KnowledgeBase(path)


def test_same_content_from_two_sources_is_one_dataset(kb):
    frame = _frame()
    shuffled = frame.sample(frac=1.0, random_state=3).rename(columns={"a": "A1", "b": "A2"})
    other = Dataset.from_frame(shuffled, "t", name="toy-copy", source="keel")
    assert kb.add_dataset(other) == "test-toy"
    assert kb.stats()["datasets"] == 1


def test_other_content_under_a_taken_name_is_a_dataset_of_its_own(kb):
    """Two tables both called ``toy`` (two files named train.csv): the second is stored
    apart, named by its fingerprint, and the first one's meta-features stay as they were."""
    first = kb.get_dataset("test-toy")
    before = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'test-toy' ORDER BY name")
    frame = _frame().assign(a=lambda f: f["a"] * 2.0)
    other = Dataset.from_frame(frame, "t", name="toy", source="test")
    new = kb.add_dataset(other, {"NumberOfInstances": 999.0})
    assert new == f"test-toy-{other.fingerprint[:8]}" != "test-toy"
    assert kb.add_dataset(other) == new  # and found again by its content
    assert kb.get_dataset("test-toy")["fingerprint"] == first["fingerprint"]
    pd.testing.assert_frame_equal(
        kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'test-toy' ORDER BY name"), before)
    assert kb.stats()["datasets"] == 2


def test_openml_id_joins_descriptions(kb):
    a = kb.register_dataset(name="anneal", source="openml", openml_id=2, n_instances=898)
    b = kb.register_dataset(name="anneal", source="pmf", openml_id=2, n_features=39)
    assert a == b == "openml-2"
    row = kb.get_dataset("openml-2")
    assert (row["n_instances"], row["n_features"]) == (898, 39)
    assert kb.resolve_dataset(2) == kb.resolve_dataset("openml:2") == "openml-2"


def test_unknown_dataset_and_algorithm_change_nothing(kb):
    before = kb.stats()
    bad = _runs(5)
    bad.loc[3, "dataset_id"] = "nope"
    with pytest.raises(UnknownDatasetError, match="nope"):
        kb.add_runs(bad)
    bad = _runs(5)
    bad.loc[2, "algorithm"] = "mystery"
    with pytest.raises(UnknownAlgorithmError, match="mystery"):
        kb.add_runs(bad)
    assert kb.stats() == before
    with pytest.raises(UnknownDatasetError):
        kb.get_dataset("nope")


def test_nan_value_is_refused_for_ok_runs_and_nothing_is_stored(kb):
    before = kb.stats()
    bad = _runs(10)
    bad.loc[7, "value"] = np.nan
    with pytest.raises(InputDataError, match="finite value"):
        kb.add_runs(bad)
    assert kb.stats() == before
    # A crash without a value is fine and keeps its message.
    rid = kb.add_run(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": 3}, metric="error_rate",
                     status="crash", message="ValueError: boom", source="s")
    row = kb.query("SELECT value, status, message FROM runs WHERE run_id = ?", [rid]).iloc[0]
    assert np.isnan(row["value"]) and row["status"] == "crash" and row["message"] == "ValueError: boom"


def test_config_that_is_not_json_changes_nothing(kb):
    before = kb.stats()
    bad = _runs(4)
    bad.loc[1, "params"] = "{n_neighbors: 3"
    with pytest.raises(InputDataError, match="not valid JSON"):
        kb.add_runs(bad)
    bad.loc[1, "params"] = "[1, 2]"
    with pytest.raises(InputDataError, match="JSON object"):
        kb.add_runs(bad)
    assert kb.stats() == before


def test_bad_status_and_negative_times(kb):
    bad = _runs(3)
    bad["status"] = ["ok", "exploded", "ok"]
    with pytest.raises(InputDataError, match="status"):
        kb.add_runs(bad)
    bad = _runs(3)
    bad["fit_seconds"] = [1.0, -2.0, 0.5]
    with pytest.raises(InputDataError, match="fit_seconds"):
        kb.add_runs(bad)


def test_ingest_twice_is_once(kb):
    batch = _runs(200)
    n1 = kb.add_runs(batch)
    counts = kb.stats()
    n2 = kb.add_runs(batch)
    assert n2 == 0
    assert kb.stats() == counts
    # duplicates inside one batch are stored once too
    expected = batch.drop_duplicates(["params", "fold"]).shape[0]
    assert n1 == expected == counts["runs"]


def test_run_identity_includes_fold_seed_source_and_fidelity(kb):
    base = dict(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": 1}, metric="error_rate", value=0.2,
                source="s")
    ids = {
        kb.add_run(**base),
        kb.add_run(**{**base, "fold": 1}),
        kb.add_run(**{**base, "split_seed": 7}),
        kb.add_run(**{**base, "source": "t"}),
        kb.add_run(**{**base, "fidelity": 100.0}),
        kb.add_run(**{**base, "metric": "log_loss"}),
    }
    assert len(ids) == 6
    assert kb.add_run(**base) in ids


def test_failed_batch_inside_transaction_rolls_back_everything(kb):
    before = kb.stats()
    with pytest.raises(InputDataError):
        with kb.transaction():
            kb.add_runs(_runs(50, seed=1))
            kb.add_runs(_runs(5).assign(value=np.nan))
    assert kb.stats() == before


@settings(max_examples=40, deadline=None)
@given(
    params=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                  st.booleans(), st.none(), st.text(max_size=10)),
        max_size=6,
    )
)
def test_canonical_json_round_trip_and_order_invariance(params):
    text = canonical_json(params)
    assert json.loads(text) == params
    reordered = dict(reversed(list(params.items())))
    assert canonical_json(reordered) == text
    assert config_id("knn", reordered) == config_id("knn", text)
    reference = json.dumps({"algorithm": "knn", "params": params}, sort_keys=True, separators=(",", ":"))
    assert config_id("knn", params) == hashlib.sha256(reference.encode()).hexdigest()[:16]


def test_canonical_rejects_non_finite_and_objects():
    with pytest.raises(InputDataError, match="finite"):
        canonical_json({"C": float("inf")})
    with pytest.raises(InputDataError, match="type"):
        canonical_json({"C": object()})
    assert config_id("knn", {"k": np.int64(3)}) == config_id("knn", {"k": 3})
    assert config_id("knn", {"k": 3}) != config_id("knn", {"k": 3.0})
    assert config_id("knn", {"k": 3}) != config_id("svm_rbf", {"k": 3})


def test_predictions_round_trip(kb):
    rid = kb.add_run(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": 3}, metric="error_rate", value=0.1,
                     source="s")
    proba = np.random.default_rng(0).dirichlet(np.ones(3), size=40)
    kb.add_predictions(rid, proba)
    back = kb.get_predictions(rid)
    np.testing.assert_array_equal(back, proba.astype(np.float32))
    with pytest.raises(InputDataError, match="unknown run"):
        kb.add_predictions("nope", proba)
    with pytest.raises(InputDataError, match="NaN"):
        kb.add_predictions(rid, np.full((3, 2), np.nan))


def test_many_predictions_replace_together_or_not_at_all(kb):
    from metabo.kb.predictions import add_many_predictions

    ids = [kb.add_run(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": k}, metric="error_rate",
                      value=0.1, source="s") for k in (1, 2)]
    rng = np.random.default_rng(1)
    a, b, c = (rng.dirichlet(np.ones(2), size=5) for _ in range(3))
    kb.add_predictions(ids[0], a)
    add_many_predictions(kb, [(ids[0], "valid", b), (ids[1], "test", a), (ids[1], "test", c)], dataset_id="test-toy")
    np.testing.assert_array_equal(kb.get_predictions(ids[0]), b.astype(np.float32))  # replaced
    np.testing.assert_array_equal(kb.get_predictions(ids[1], split="test"), c.astype(np.float32))  # the last wins
    with pytest.raises(InputDataError, match="unknown run id 'nope'"):
        add_many_predictions(kb, [(ids[0], "valid", c), ("nope", "valid", c)])
    with pytest.raises(InputDataError, match="of dataset 'other'"):  # a run of another dataset is not found
        add_many_predictions(kb, [(ids[0], "valid", c)], dataset_id="other")
    np.testing.assert_array_equal(kb.get_predictions(ids[0]), b.astype(np.float32))  # nothing of either stored
    assert kb.query("SELECT count(*) AS n FROM predictions")["n"].iloc[0] == 2


def test_meta_features_nan_is_null_and_replace(kb):
    kb.add_meta_features("test-toy", {"ClassEntropy": float("nan"), "NumberOfInstances": 31})
    mf = kb.query("SELECT name, value FROM meta_features WHERE dataset_id = 'test-toy' ORDER BY name")
    assert mf.set_index("name")["value"].isna()["ClassEntropy"]
    assert mf.set_index("name")["value"]["NumberOfInstances"] == 31
    with pytest.raises(InputDataError):
        kb.add_meta_features("test-toy", {"x": "abc"})


def test_sessions_and_state(kb):
    kb.add_session("s1", strategy="random", dataset_id="test-toy", settings={"budget": 10})
    assert kb.add_session("s1", strategy="random") == "s1"
    kb.set_session_status("s1", "done")
    assert kb.query("SELECT status FROM sessions").iloc[0, 0] == "done"
    assert kb.get_state("cursor", 0) == 0
    kb.set_state("cursor", {"offset": 5})
    assert kb.get_state("cursor") == {"offset": 5}


def test_stats_counts_runs_by_status(kb):
    kb.add_runs(_runs(10))
    kb.add_run(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": 99}, metric="error_rate",
               status="timeout", source="s")
    s = kb.stats()
    assert s["runs_by_status"] == {"ok": s["runs"] - 1, "crash": 0, "timeout": 1, "memout": 0}
    assert s["datasets"] == 1 and s["algorithms"] == 2


def test_split_seed_accepts_missing_and_refuses_text(kb):
    batch = _runs(3)
    batch["split_seed"] = [None, 7, 2**40]
    assert kb.add_runs(batch) == 3
    seeds = kb.query("SELECT split_seed FROM runs ORDER BY split_seed NULLS FIRST")["split_seed"].tolist()
    assert pd.isna(seeds[0]) and seeds[1:] == [7, 2**40]
    batch["split_seed"] = ["seven", 1, 2]
    with pytest.raises(InputDataError, match="split_seed"):
        kb.add_runs(batch)


def test_status_by_algorithm_counts_evaluations_once(kb):
    rows = []
    for k, status in ((1, "ok"), (2, "ok"), (3, "crash"), (4, "timeout")):
        for metric in ("error_rate", "test_error_rate"):
            rows.append(dict(dataset_id="test-toy", algorithm="knn", params={"n_neighbors": k}, metric=metric,
                             value=0.1 if status == "ok" else np.nan, status=status, source="s"))
    kb.add_runs(rows)
    table = kb.status_by_algorithm().set_index("algorithm")
    assert table.loc["knn", ["ok", "crash", "timeout", "memout"]].tolist() == [2, 1, 1, 0]
    assert table.loc["knn", "failed_fraction"] == 0.5


def test_a_dataset_flag_is_set_replaced_and_lifted_alone(kb):
    kb.set_dataset_flag("test-toy", "openml_qualities", ["OpenML error 363"])
    kb.set_dataset_flag("test-toy", "other", ["x"])
    kb.set_dataset_flag("test-toy", "openml_qualities", ["OpenML error 364"])
    assert kb.get_dataset("test-toy")["flags"] == {"openml_qualities": ["OpenML error 364"], "other": ["x"]}
    kb.set_dataset_flag("test-toy", "openml_qualities", None)
    assert kb.get_dataset("test-toy")["flags"] == {"other": ["x"]}
    with pytest.raises(UnknownDatasetError):
        kb.set_dataset_flag("nope", "other", None)
