"""OpenML ingestion end to end: the real ``openml`` client against the fake server."""

from __future__ import annotations

import json

import openml
import pytest

from metabo.exceptions import FetchError, InputDataError, OpenMLResponseError
from metabo.ingest.openml import (
    decode_value,
    map_flow,
    split_flow_name,
    state_key,
)
from metabo.ingest.openml_client import openml_config
from metabo.kb import KnowledgeBase
from metabo.testing.openml_server import (
    FakeOpenMLServer,
    FakeRun,
    FakeTask,
)

N_RUNS = 10  # add_example_content: 5 setups x 2 tasks


def _counts(kb: KnowledgeBase) -> dict:
    stats = kb.stats()
    return {k: stats[k] for k in ("datasets", "meta_features", "algorithms", "configurations",
                                  "runs", "ingest_state")}


def _offsets(server: FakeOpenMLServer) -> list[int]:
    return [int(r.filters["offset"]) for r in server.requested("evaluation/list")]


def _config(kb: KnowledgeBase, run_source: str) -> tuple[str, dict]:
    cid = kb.query("SELECT config_id FROM runs WHERE source = ?", [run_source]).iloc[0, 0]
    return kb.get_configuration(cid)


# ---------------------------------------------------------------------- idempotence, resume
def test_ingest_twice_stores_once_and_refetches_nothing(ingest, kb, server, snapshot):
    first = ingest(page_size=4)
    assert (first.runs_listed, first.runs_fetched, first.runs_new, first.pages) == (N_RUNS, N_RUNS, N_RUNS, 3)
    assert first.datasets == 2 and first.configurations == 5
    counts = _counts(kb)
    assert counts["runs"] == N_RUNS and counts["datasets"] == 2
    before = snapshot(kb)

    server.clear_log()
    second = ingest(page_size=4)
    assert snapshot(kb) == before
    assert (second.runs_listed, second.runs_fetched, second.runs_new, second.pages) == (N_RUNS, 0, 0, 0)
    # the listing again from its start, to its empty end; no setup, dataset or qualities refetched
    assert _offsets(server) == [0, 4, 8, 10]
    assert {r.endpoint.split("/")[0] for r in server.requests} == {"evaluationmeasure", "evaluation"}


def test_second_ingestion_fetches_only_new_runs(ingest, kb, server):
    ingest(page_size=4)
    for i, rid in enumerate((2000, 2001, 2002)):
        server.add_run(FakeRun(rid, 1 + i % 2, 100, {"predictive_accuracy": 0.7}))
    server.clear_log()
    report = ingest(page_size=4)
    assert (report.runs_fetched, report.runs_new) == (3, 3)
    assert _offsets(server) == [0, 4, 8, 12, 13]  # the listing ends at an empty page, not a short one
    assert not server.requested("data/")  # datasets known: qualities not fetched again
    assert kb.stats()["runs"] == N_RUNS + 3
    state = kb.get_state(state_key(server.url, "predictive_accuracy", [1, 2], []))
    assert (state["runs"], state["last_run_id"]) == (N_RUNS + 3, 2002)


def test_state_key_names_server_metric_tasks_and_flows(ingest, kb, server):
    ingest(flow_ids=(10, 50))
    key = f"openml:{server.url}:predictive_accuracy:1,2:10,50"
    assert kb.get_state(key)["runs"] == 4  # flows 10 and 50 on two tasks
    assert kb.stats()["runs"] == 4


# ---------------------------------------------------------------------- what gets stored
def test_qualities_become_meta_features_once_per_dataset(ingest, kb, server):
    ingest(page_size=2)
    mf = kb.query("SELECT name, value, source FROM meta_features WHERE dataset_id = 'openml-61'")
    stored = dict(zip(mf["name"], mf["value"], strict=True))
    assert set(mf["source"]) == {"openml"}
    assert stored == pytest.approx(server.datasets[61].qualities)
    assert stored["ClassEntropy"] == pytest.approx(0.99)
    row = kb.get_dataset("openml-61")
    assert (row["name"], row["source"], row["openml_id"]) == ("toy", "openml", 61)
    assert (row["n_instances"], row["n_features"], row["n_classes"]) == (40, 4, 2)
    # five pages touch dataset 61, its qualities are requested once
    assert len(server.requested("data/qualities/61")) == 1
    assert len(server.requested("data/qualities/62")) == 1


def test_random_forest_flow_maps_with_decoded_params(ingest, kb, server):
    ingest()
    algorithm, params = _config(kb, "openml-run:1000")
    assert algorithm == "random_forest"
    assert params == {"n_estimators": 500, "max_features": "sqrt", "min_samples_leaf": 1,
                      "max_depth": None}  # n_jobs dropped: not a hyperparameter
    run = kb.query("SELECT * FROM runs WHERE source = 'openml-run:1000'").iloc[0]
    assert (run["metric"], run["fold"], run["repeat"], run["status"]) == ("error_rate", 0, 0, "ok")
    assert run["value"] == pytest.approx(1 - server.runs[1000].evaluations["predictive_accuracy"])


def test_svc_kernel_and_pipeline_final_step(ingest, kb):
    ingest()
    assert _config(kb, "openml-run:1004") == ("svm_rbf", {"C": 2.0, "gamma": "scale", "kernel": "rbf"})
    assert _config(kb, "openml-run:1002") == ("svm_poly", {"C": 10.0, "gamma": "scale", "kernel": "poly"})


def test_unmapped_flows_are_kept_and_counted(ingest, kb):
    report = ingest()
    algorithm, params = _config(kb, "openml-run:1001")
    assert algorithm == "openml-flow:weka.J48"
    assert params == {"C": "0.1", "M": "2"}
    pipeline = ("sklearn.pipeline.Pipeline(imputer=sklearn.impute._base.SimpleImputer,"
                "model=mylib.models.FancyClassifier)")
    algorithm, params = _config(kb, "openml-run:1003")
    assert algorithm == f"openml-flow:{pipeline}"
    assert params["mylib.models.FancyClassifier(1)_alpha"] == "0.25"
    assert report.unmapped_flows == (pipeline, "weka.J48")
    assert report.unmapped_runs == 4
    assert kb.stats()["runs"] == N_RUNS  # nothing dropped
    assert "openml-flow:weka.J48" in kb.algorithms()


def test_paging_with_small_pages(ingest, kb, server):
    seen = []
    report = ingest(page_size=3, progress=seen.append)
    assert _offsets(server) == [0, 3, 6, 9, 10]
    assert [r.filters["limit"] for r in server.requested("evaluation/list")] == ["3"] * 5
    assert report.pages == 4 and kb.stats()["runs"] == N_RUNS
    assert seen == [3, 3, 3, 1]


def test_page_of_exact_size_ends_on_no_results(ingest, kb, server):
    report = ingest(page_size=5)
    assert _offsets(server) == [0, 5, 10]  # the third page is OpenML's "no results" (542)
    assert server.requested("evaluation/list")[-1].status == 412
    assert report.pages == 2


def test_max_runs_stops_and_resumes(ingest, kb, server):
    assert ingest(page_size=4, max_runs=6).runs_new == 6
    assert _offsets(server) == [0, 4]  # the second page's first 2 new runs reach max_runs
    assert kb.stats()["runs"] == 6
    assert ingest(page_size=4).runs_new == N_RUNS - 6
    assert kb.stats()["runs"] == N_RUNS


def test_other_metrics_are_made_lower_is_better(ingest, kb, server):
    ingest(metric="area_under_roc_curve")
    value = kb.query("SELECT metric, value FROM runs WHERE source = 'openml-run:1000'").iloc[0]
    assert value["metric"] == "one_minus_auc"
    assert value["value"] == pytest.approx(1 - server.runs[1000].evaluations["area_under_roc_curve"])
    with pytest.raises(InputDataError, match="lower_is_better"):
        ingest(metric="usercpu_time_millis")
    for run in server.runs.values():
        run.evaluations["usercpu_time_millis"] = 12.5
    ingest(metric="usercpu_time_millis", lower_is_better=True)
    assert set(kb.query("SELECT metric FROM runs")["metric"]) == {"one_minus_auc", "usercpu_time_millis"}


def test_evaluations_without_value_are_counted_not_stored(ingest, kb, server):
    server.runs[1000].evaluations["predictive_accuracy"] = None
    report = ingest()
    assert (report.runs_listed, report.runs_fetched, report.runs_skipped) == (N_RUNS, N_RUNS - 1, 1)
    assert kb.stats()["runs"] == N_RUNS - 1
    # not stored, so listed (and skipped) again by the next call, and stored once it has a value
    assert ingest().runs_skipped == 1
    server.runs[1000].evaluations["predictive_accuracy"] = 0.75
    assert ingest().runs_new == 1


# ---------------------------------------------------------------------- faults
def test_transient_500s_are_retried(ingest, kb, server):
    server.fail_next(2, status=500, endpoint="evaluation/list")
    report = ingest()
    assert report.runs_new == N_RUNS
    statuses = [r.status for r in server.requested("evaluation/list")]
    assert statuses == [500, 500, 200, 412]  # the last: OpenML's "no results", the end


def test_database_error_412_is_retried(ingest, kb, server):
    server.fail_next(1, status=412, code=107, endpoint="setup/list")
    assert ingest().runs_new == N_RUNS
    assert [r.status for r in server.requested("setup/list")][:2] == [412, 200]


def test_retries_exhausted_raise_and_store_nothing(ingest, kb, server, snapshot):
    before = snapshot(kb)
    server.fail_next(10, status=503, endpoint="data/qualities")
    with pytest.raises(OpenMLResponseError, match=r"data/qualities/61.*failed 3 times"):
        ingest()
    assert snapshot(kb) == before
    assert len(server.requested("data/qualities/61")) == 3


def test_server_error_other_than_transient_is_a_fetch_error(ingest, kb, server):
    server.fail_next(1, status=412, code=999, endpoint="evaluation/list")
    with pytest.raises(FetchError, match="error 999") as info:
        ingest()
    assert not isinstance(info.value, OpenMLResponseError)


@pytest.mark.parametrize("endpoint", ["evaluation/list", "setup/list", "data/qualities"])
def test_malformed_xml_names_endpoint_and_stores_nothing(ingest, kb, server, endpoint, snapshot):
    before = snapshot(kb)
    server.malform(endpoint)
    with pytest.raises(OpenMLResponseError, match=endpoint.split("/")[0]) as info:
        ingest()
    assert "malformed" in str(info.value)
    assert snapshot(kb) == before
    server.clear_faults()  # the server recovers: the next call stores everything
    assert ingest().runs_new == N_RUNS


def test_malformed_later_page_keeps_earlier_pages(ingest, kb, server):
    ingest(page_size=4, max_runs=4)
    server.malform("evaluation/list", count=1)
    with pytest.raises(OpenMLResponseError, match="offset/0"):
        ingest(page_size=4)
    assert kb.stats()["runs"] == 4
    server.clear_log()
    assert ingest(page_size=4).runs_new == N_RUNS - 4
    assert _offsets(server) == [0, 4, 8, 10]


def test_page_and_cursor_commit_together(ingest, kb, monkeypatch):
    real, calls = kb.set_state, []

    def dies_on_second_page(key, value):
        calls.append(value)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process is stopped while writing page 2
        real(key, value)

    monkeypatch.setattr(kb, "set_state", dies_on_second_page)
    with pytest.raises(KeyboardInterrupt):
        ingest(page_size=4)
    assert kb.stats()["runs"] == 4  # page 2 rolled back together with its cursor
    monkeypatch.undo()
    report = ingest(page_size=4)
    assert (report.runs_fetched, report.runs_new) == (N_RUNS - 4, N_RUNS - 4)


def test_openml_config_is_restored(ingest, server):
    before = openml.config.get_config_as_dict()
    ingest()
    server.malform("evaluation/list")
    with pytest.raises(OpenMLResponseError):
        ingest()
    assert openml.config.get_config_as_dict() == before


def test_cli_ingest_openml(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    path = tmp_path / "cli.duckdb"
    KnowledgeBase(path).close()  # --kb names an existing store
    argv = ["ingest", "openml", "--kb", str(path), "--server", server.url, "--cache-dir",
            str(openml_cache), "--task", "1", "--page-size", "2"]
    assert main(argv) == 0
    assert "runs_new=5" in capsys.readouterr().out
    with KnowledgeBase(path) as store:
        assert store.stats()["runs"] == 5


# ---------------------------------------------------------------------- flow names and values
def test_split_flow_name_handles_nesting():
    name = "sklearn.pipeline.Pipeline(ct=sklearn.compose.ColumnTransformer(num=a.B,cat=c.D),clf=e.F)"
    assert split_flow_name(name) == ("sklearn.pipeline.Pipeline", [
        ("ct", "sklearn.compose.ColumnTransformer(num=a.B,cat=c.D)"), ("clf", "e.F")])
    assert split_flow_name("weka.J48") == ("weka.J48", [])


def test_decode_value():
    assert decode_value("100") == 100
    assert decode_value('"sqrt"') == "sqrt"
    assert decode_value("null") is None
    assert decode_value("weka.classifiers.trees.J48") == "weka.classifiers.trees.J48"
    assert decode_value("NaN") == "NaN"  # not a finite JSON number: kept as text


def test_legacy_sklearn_paths_and_nested_pipelines_map():
    params = [{"flow_name": "sklearn.ensemble.forest.RandomForestClassifier", "parameter_name": "n_estimators",
               "full_name": "x", "value": "10"}]
    assert map_flow("sklearn.ensemble.forest.RandomForestClassifier(3)", params) == (
        "random_forest", {"n_estimators": 10}, True)
    inner = ("sklearn.pipeline.Pipeline(scale=sklearn.preprocessing.StandardScaler,"
             "knn=sklearn.neighbors.KNeighborsClassifier)")
    params = [{"flow_name": "sklearn.neighbors.KNeighborsClassifier", "parameter_name": "n_neighbors",
               "full_name": "y", "value": "5"}]
    assert map_flow(f"sklearn.pipeline.Pipeline(prep=a.B,model={inner})(1)", params) == (
        "knn", {"n_neighbors": 5}, True)


# ---------------------------------------------------------------------- the fake server itself
def test_fake_server_answers_the_client(server, openml_cache):
    with openml_config(server.url, openml_cache):
        task = openml.tasks.get_task(1)
        assert (task.dataset_id, task.target_name, task.class_labels) == (61, "class", ["no", "yes"])
        assert task.estimation_procedure["parameters"]["number_folds"] == "10"
        flow = openml.flows.get_flow(30)
        assert list(flow.components) == ["imputer", "svc"]
        assert json.loads(flow.components["svc"].parameters["C"]) == 1.0
        setup = openml.setups.get_setup(101)
        assert {p.parameter_name: p.value for p in setup.parameters.values()} == {"C": "0.1", "M": "2"}
        run = openml.runs.get_run(1000)
        assert run.evaluations["predictive_accuracy"] == server.runs[1000].evaluations["predictive_accuracy"]
        assert len(openml.tasks.list_tasks(output_format="dataframe")) == 2
        assert len(openml.runs.list_runs(task=[2], output_format="dataframe")) == 5
        assert len(openml.datasets.list_datasets(output_format="dataframe")) == 2
        evals = openml.evaluations.list_evaluations_setups("predictive_accuracy", tasks=[1], size=3)
        assert list(evals["run_id"]) == [1000, 1001, 1002]
    assert server.requested("evaluation/list")[-1].filters == {
        "function": "predictive_accuracy", "limit": "3", "offset": "0", "task": "1"}


def test_fake_server_tasks_can_be_added(server):
    server.add_task(FakeTask(3, 62, folds=5))
    assert 3 in server.tasks
