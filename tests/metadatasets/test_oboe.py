"""OBOE's error matrix: parsing and ingestion checked against entries read by hand from the real files.

The fixture under tests/fixtures/metadatasets/oboe is cut from the real ``oboe==0.2.0``
files (its README lists the lines and fields kept). The expected literals below were read
from the real files (``awk -F,`` on the data lines), not from the fixture.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.metadatasets import get_source, source_class
from metabo.metadatasets.ingest import ingest_metadataset, state_key
from metabo.metadatasets.oboe import DATA_DIR, OBOE, enumerate_settings, to_project
from metabo.space.algorithms import get_algorithm
from metabo.testing.killed import ingest_killed_midway

FIXTURE = Path(__file__).parents[1] / "fixtures" / "metadatasets" / "oboe"
N_COLUMNS = 13
GNB = "{'algorithm': 'GNB', 'hyperparameters': {}}"
AB = "{'algorithm': 'AB', 'hyperparameters': {'n_estimators': 50, 'learning_rate': 1}}"
KNN = "{'algorithm': 'KNN', 'hyperparameters': {'n_neighbors': 5, 'p': 2}}"
GBT = "{'algorithm': 'GBT', 'hyperparameters': {'learning_rate': 0.1, 'max_depth': 3, 'max_features': None}}"
PERCEPTRON = "{'algorithm': 'Perceptron', 'hyperparameters': {}}"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    shutil.copytree(FIXTURE, root)
    return root


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / DATA_DIR / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# ------------------------------------------------------------------------------ parsing
def test_datasets_are_openml_ids_with_their_instances() -> None:
    ds = OBOE(FIXTURE).datasets()
    # real error_matrix.csv lines 2, 4, 70, 419 start 00003, 00011, 00018, 41005;
    # real dataset_sizes.csv: "3,3196,74", "11,625,5", "18,2000,7", "41005,3660,72"
    assert ds["original_id"].tolist() == ["3", "11", "18", "41005"]
    assert ds["openml_id"].tolist() == [3, 11, 18, 41005]
    assert ds["name"].tolist() == ["openml-3", "openml-11", "openml-18", "openml-41005"]
    assert ds["n_instances"].tolist() == [3196, 625, 2000, 3660]
    assert ds["n_features"].isna().all()  # the file's width counts one-hot columns and the label


def test_configurations_are_the_project_points_the_headers_map_to() -> None:
    configs = OBOE(FIXTURE).configurations().set_index("original_id")
    assert len(configs) == N_COLUMNS
    assert configs.loc[GBT, "algorithm"] == "gradient_boosting"
    assert json.loads(configs.loc[GBT, "params"]) == {
        "n_estimators": 100, "learning_rate": 0.1, "max_depth": 3, "max_features": "all"}
    assert configs.loc[AB, "algorithm"] == "adaboost"
    assert json.loads(configs.loc[AB, "params"]) == {"n_estimators": 50, "learning_rate": 1.0}
    assert json.loads(configs.loc[GNB, "params"]) == {"var_smoothing": 1e-9}
    assert json.loads(configs.loc[KNN, "params"]) == {"n_neighbors": 5, "weights": "uniform", "p": 2}
    dt = configs[configs["algorithm"] == "full_decision_tree"]["params"].map(json.loads).tolist()
    assert dt == [{"min_samples_split": 1e-05}]
    names = [a.name for a in OBOE(FIXTURE).algorithms()]
    assert names == ["adaboost", "full_decision_tree", "full_extra_trees", "gradient_boosting", "gaussian_nb", "knn",
                     "ovr_logistic_regression", "mlp", "perceptron", "full_random_forest", "kernel_svm",
                     "linear_svm"]


@pytest.mark.slow
def test_every_one_of_the_219_settings_is_a_point_that_builds_and_fits() -> None:
    """The mapping's coverage: all of OBOE's grid, each fitted on a small 3-class problem."""
    import warnings

    import numpy as np
    from sklearn.datasets import make_classification

    from metabo.space.algorithms import build_estimator

    grid = json.loads((FIXTURE / DATA_DIR / "classification.json").read_text())
    X, y = make_classification(n_samples=90, n_features=6, n_informative=4, n_classes=3, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    points = set()
    for setting in enumerate_settings(grid):
        algorithm, params = to_project(setting)
        assert params == get_algorithm(algorithm).space.normalize(params)
        points.add(json.dumps([algorithm, params], sort_keys=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings of sgd and saga on 90 rows
            model = build_estimator(algorithm, params, seed=0).fit(X, y)
        proba = model.predict_proba(X)
        assert proba.shape == (90, 3) and np.allclose(proba.sum(axis=1), 1.0), setting
        assert set(model.predict(X)) <= {0, 1, 2}
    assert len(points) == 219 - 16  # Logit's saga and liblinear columns are one model


def test_the_mapping_keeps_what_oboe_fitted() -> None:
    assert to_project({"algorithm": "MLP", "hyperparameters": {
        "learning_rate_init": 0.01, "learning_rate": "adaptive", "solver": "sgd", "alpha": 0.0001}}) == (
        "sgd_mlp", {"n_units": 100, "alpha": 0.0001, "learning_rate_init": 0.01})
    assert to_project({"algorithm": "MLP", "hyperparameters": {
        "learning_rate_init": 0.01, "learning_rate": "adaptive", "solver": "adam", "alpha": 0.0001}})[0] == "mlp"
    assert to_project({"algorithm": "kSVM", "hyperparameters": {"C": 2, "kernel": "poly", "coef0": 10}}) == (
        "kernel_svm", {"C": 2.0, "kernel": "poly", "coef0": 10.0, "gamma": "auto", "degree": 3})
    for solver in ("liblinear", "saga"):
        assert to_project({"algorithm": "Logit", "hyperparameters": {"C": 0.5, "solver": solver, "penalty": "l1"}}) == (
            "ovr_logistic_regression", {"C": 0.5, "penalty": "l1"})
    with pytest.raises(InputDataError, match="not a point of 'knn'"):
        to_project({"algorithm": "KNN", "hyperparameters": {"n_neighbors": 99, "p": 2}})
    with pytest.raises(InputDataError, match="known algorithm"):
        to_project({"algorithm": "QDA", "hyperparameters": {}})


def test_the_grid_enumerates_the_219_real_headers_in_order() -> None:
    grid = json.loads((FIXTURE / DATA_DIR / "classification.json").read_text())  # the real file, unchanged
    settings = enumerate_settings(grid)
    assert len(settings) == 219
    assert Counter(s["algorithm"] for s in settings) == {
        "kSVM": 36, "Logit": 32, "ExtraTrees": 30, "RF": 30, "GBT": 28, "KNN": 16, "DT": 14, "MLP": 12,
        "AB": 10, "lSVM": 9, "GNB": 1, "Perceptron": 1,
    }
    # real header: fields 2 and 220 (the first and the last column)
    assert str(settings[0]) == AB
    assert str(settings[-1]) == "{'algorithm': 'lSVM', 'hyperparameters': {'C': 16}}"
    OBOE(FIXTURE).check()  # the fixture's 13 headers are settings, in the grid's order


def test_runs_hold_hand_read_errors_and_seconds() -> None:
    src = OBOE(FIXTURE, rows_per_chunk=3)
    assert src.n_chunks() == 2
    runs = pd.concat([c.runs for c in src.run_chunks()], ignore_index=True)
    assert len(runs) == 4 * N_COLUMNS
    cell = runs.set_index(["dataset", "configuration"])
    # real error_matrix.csv: line 4 field 84, line 70 fields 2 and 90, line 419 field 145
    assert cell.loc[("11", GNB), "value"] == 0.2026917961702112
    assert cell.loc[("18", AB), "value"] == 0.4158333333333333
    assert cell.loc[("18", KNN), "value"] == 0.15805555555555556
    assert cell.loc[("41005", PERCEPTRON), "value"] == 0.07460945494235624
    # real runtime_matrix.csv: line 2 fields 2 and 72, line 4 field 84
    assert cell.loc[("3", AB), "fit_seconds"] == 1.4482564926147459
    assert cell.loc[("3", GBT), "fit_seconds"] == 4.281311511993408
    assert cell.loc[("11", GNB), "fit_seconds"] == 0.010930538177490234


def test_a_header_outside_the_grid_or_out_of_order_is_rejected(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    for name in ("error_matrix.csv", "runtime_matrix.csv"):
        _edit(root, name, "'n_neighbors': 5, 'p': 2", "'n_neighbors': 6, 'p': 2")
    with pytest.raises(InputDataError, match="not in the grid"):
        OBOE(root).configurations()
    root = _copy(tmp_path / "b")
    grid = json.loads((root / DATA_DIR / "classification.json").read_text())
    grid["hyperparameters"]["KNN"] = {"p": [1, 2], "n_neighbors": [1, 3, 5, 7, 9, 11, 13, 15]}  # keys swapped
    (root / DATA_DIR / "classification.json").write_text(json.dumps(grid))
    with pytest.raises(InputDataError, match="not in the grid"):
        OBOE(root).check()


def test_unreadable_files_are_clear_errors(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _edit(root, "runtime_matrix.csv", "0.010930538177490234", "fast")
    with pytest.raises(InputDataError, match=r"row 00011, column .*GNB.* 'fast', not a number"):
        _ = OBOE(root).runtimes
    with pytest.raises(InputDataError, match="missing; fetch"):
        OBOE(tmp_path / "nowhere").datasets()
    root = _copy(tmp_path / "b")
    _edit(root, "error_matrix.csv", "{'algorithm': 'GNB'", "{'algorithm': 'QDA'")
    with pytest.raises(InputDataError, match="known algorithm"):
        OBOE(root).configurations()


# ------------------------------------------------------------------------------ ingestion
def _run_ids(kb: KnowledgeBase) -> set[str]:
    return set(kb.query("SELECT run_id FROM runs")["run_id"])


def test_ingestion_is_idempotent_and_keeps_provenance(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = ingest_metadataset(kb, OBOE(FIXTURE))
        assert (report.datasets, report.configurations) == (4, N_COLUMNS)
        assert report.runs_added == report.runs_seen == 4 * N_COLUMNS
        again = ingest_metadataset(kb, OBOE(FIXTURE))
        assert again.runs_added == 0 and again.runs_seen == 0  # complete: not read again
        forced = ingest_metadataset(kb, OBOE(FIXTURE), force=True)
        assert forced.runs_seen == 4 * N_COLUMNS and forced.runs_added == 0
        counts = kb.query("SELECT count(*) AS n, count(fit_seconds) AS timed FROM runs")
        assert counts.values.tolist() == [[4 * N_COLUMNS, 4 * N_COLUMNS]]
        assert kb.query("SELECT DISTINCT metric, source FROM runs").values.tolist() == [
            ["ovr_balanced_error_rate", "oboe"]]
        assert kb.query("SELECT n_instances FROM datasets WHERE dataset_id = 'openml-18'")["n_instances"][0] == 2000
        # a run maps back to the real column through source_ids
        row = kb.query(
            """SELECT r.value, r.fit_seconds FROM runs r JOIN source_ids s
               ON s.kind = 'configuration' AND s.source = 'oboe' AND s.local_id = r.config_id
               WHERE r.dataset_id = 'openml-11' AND s.original_id = ?""", [GNB])
        assert row.values.tolist() == [[0.2026917961702112, 0.010930538177490234]]


def test_a_dataset_of_two_sources_is_one_dataset(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        kb.register_dataset(name="balance-scale", source="openml", openml_id=11, n_features=4)
        report = ingest_metadataset(kb, OBOE(FIXTURE))
        assert report.joined_datasets == 1
        stored = kb.query("SELECT * FROM datasets WHERE openml_id = 11")
        assert len(stored) == 1 and stored["n_instances"][0] == 625 and stored["n_features"][0] == 4
        assert kb.query("SELECT count(*) AS n FROM runs WHERE dataset_id = 'openml-11'")["n"][0] == N_COLUMNS


def test_stopping_half_way_then_resuming_equals_one_run(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "whole.duckdb") as kb:
        ingest_metadataset(kb, OBOE(FIXTURE, rows_per_chunk=1))
        whole = _run_ids(kb)
    with KnowledgeBase(tmp_path / "parts.duckdb") as kb:
        first = ingest_metadataset(kb, OBOE(FIXTURE, rows_per_chunk=1), max_chunks=1)
        assert first.chunks_read == 1 and kb.get_state(state_key("oboe"))["next_chunk"] == 1
        rest = ingest_metadataset(kb, OBOE(FIXTURE, rows_per_chunk=1))
        assert rest.first_chunk == 1 and rest.chunks_read == 3
        assert _run_ids(kb) == whole


def test_a_bad_chunk_stores_nothing_of_it_and_keeps_the_chunks_before(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _edit(root, "error_matrix.csv", "0.4158333333333333", "1.4158333333333333")  # dataset 18: third row
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        with pytest.raises(InputDataError, match=r"dataset 18 \(chunk 2\).*outside \[0, 1\]"):
            ingest_metadataset(kb, OBOE(root, rows_per_chunk=1))
        assert set(kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"]) == {"openml-3", "openml-11"}
        assert kb.get_state(state_key("oboe"))["next_chunk"] == 2
        _edit(root, "error_matrix.csv", "1.4158333333333333", "0.4158333333333333")  # repaired
        rest = ingest_metadataset(kb, OBOE(root, rows_per_chunk=1))
        assert rest.first_chunk == 2 and rest.runs_added == 2 * N_COLUMNS
        assert kb.query("SELECT count(*) AS n FROM runs")["n"][0] == 4 * N_COLUMNS


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_killed_ingestion_then_rerun_completes_it(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "whole.duckdb") as kb:
        ingest_metadataset(kb, OBOE(FIXTURE, rows_per_chunk=1))
        whole = _run_ids(kb)
    path = tmp_path / "killed.duckdb"
    ingest_killed_midway("metabo.metadatasets.oboe:OBOE", FIXTURE, path, tmp_path)
    with KnowledgeBase(path) as kb:
        partial = _run_ids(kb)
        assert 0 < len(partial) < len(whole) and partial < whole  # killed half way, what was stored stays
        ingest_metadataset(kb, OBOE(FIXTURE, rows_per_chunk=1))
        assert _run_ids(kb) == whole


def test_the_source_is_registered_by_name() -> None:
    assert source_class("oboe") is OBOE
    src = get_source("oboe", FIXTURE, fetch=False)
    assert isinstance(src, OBOE) and src.n_chunks() == 1
    assert OBOE.artifact.requirement == "oboe==0.2.0"
