"""auto-sklearn 0.15.0's meta-learning files as a MetaDataset, on a fixture cut from the real files.

The fixture keeps, of three folders of ``autosklearn/metalearning/files`` in
``auto-sklearn-0.15.0.tar.gz``, the rows of ``hill-valley``, ``letter`` and
``steel-plates-fault`` (listed twice in every runs file) and their configurations.
Line numbers in comments are those of the real files.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.metadatasets import source_class
from metabo.metadatasets.autosklearn import (
    AUTOSKLEARN_ARTIFACT,
    FILES_DIR,
    AutoSklearnMetadata,
    metric_name,
)
from metabo.metadatasets.ingest import ingest_metadataset

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "metadatasets" / "autosklearn"
ACC_DENSE = "accuracy_binary.classification_dense"
ACC_SPARSE = "accuracy_binary.classification_sparse"
AUC_DENSE = "roc_auc_binary.classification_dense"


@pytest.fixture
def source() -> AutoSklearnMetadata:
    return AutoSklearnMetadata(FIXTURE)


def test_registered_under_its_name() -> None:
    assert source_class("autosklearn") is AutoSklearnMetadata
    assert AutoSklearnMetadata.name == "autosklearn"
    assert AutoSklearnMetadata.metric == "error_rate"


def test_artifact_extracts_the_binary_classification_folders_only() -> None:
    pattern = re.compile(AUTOSKLEARN_ARTIFACT.members)
    base = "auto-sklearn-0.15.0/autosklearn/metalearning/files/"
    assert pattern.fullmatch(base + "f1_macro_binary.classification_sparse/algorithm_runs.arff")
    assert pattern.fullmatch(base + "log_loss_binary.classification_dense/configurations.csv")
    for path in (
        base + "accuracy_multiclass.classification_dense/algorithm_runs.arff",  # identical copy
        base + "r2_regression_dense/algorithm_runs.arff",
        base + "accuracy_binary.classification_dense/feature_costs.arff",
    ):
        assert pattern.fullmatch(path) is None
    # The fixture is laid out exactly as a fetch extracts the sdist.
    for path in FIXTURE.rglob("*"):
        if path.is_file() and path.name != "README.md":
            assert pattern.fullmatch(path.relative_to(FIXTURE).as_posix()), path


def test_metric_mapping() -> None:
    assert metric_name("accuracy") == "error_rate"
    assert metric_name("balanced_accuracy") == "balanced_error_rate"
    assert metric_name("log_loss") == "log_loss"
    assert metric_name("roc_auc") == "one_minus_auc"
    assert metric_name("f1_macro") == "autosklearn_f1_macro_loss"
    assert metric_name("precision") == "autosklearn_precision_loss"


def test_datasets_are_names_without_openml_ids(source: AutoSklearnMetadata) -> None:
    ds = source.datasets().set_index("original_id")
    assert list(ds.index) == ["hill-valley", "letter", "steel-plates-fault"]
    assert ds["name"].tolist() == ds.index.tolist()
    assert ds["openml_id"].isna().all()
    assert ds["n_instances"].isna().all() and ds["n_classes"].isna().all()
    # NumberOfFeatures of feature_values.arff (accuracy dense, lines 121, 146, 215)
    assert ds["n_features"].tolist() == [100, 16, 33]
    mapped = AutoSklearnMetadata(FIXTURE, openml_ids={"letter": 6}).datasets().set_index("original_id")
    assert mapped.loc["letter", "openml_id"] == 6
    assert pd.isna(mapped.loc["hill-valley", "openml_id"])


def test_meta_features_of_letter(source: AutoSklearnMetadata) -> None:
    mf = source.meta_features()
    # one value per instance and meta-feature, deduplicated over folders, under
    # ``autosklearn:``; plus the 6 exact conversions to the project's names
    assert len(mf) == 3 * (37 + 6)
    letter = mf[mf["original_id"] == "letter"].set_index("name")["value"]
    # accuracy_binary.classification_dense/feature_values.arff, line 146
    assert letter["autosklearn:ClassEntropy"] == pytest.approx(4.699283947859848, rel=1e-15)
    assert letter["autosklearn:ClassProbabilityMax"] == pytest.approx(0.04119402985074627, rel=1e-15)
    assert letter["autosklearn:KurtosisMax"] == pytest.approx(2.0606601093625043, rel=1e-15)
    assert letter["autosklearn:NumberOfInstances"] == 13400.0  # 67 % training split of OpenML's 20000
    assert letter["autosklearn:NumberOfClasses"] == 26.0
    # the split's counts are not the project's features: only the column counts convert
    assert "NumberOfInstances" not in letter.index and "ClassEntropy" not in letter.index
    assert letter["NumberOfFeatures"] == 17.0  # OpenML's count of letter (6): 16 + the target
    assert letter["NumberOfSymbolicFeatures"] == 1.0 and letter["NumberOfNumericFeatures"] == 16.0
    assert "repetition" not in set(mf["name"]) and "autosklearn:repetition" not in set(mf["name"])


def test_configurations_decoded(source: AutoSklearnMetadata) -> None:
    cfg = source.configurations().set_index("original_id")
    # configurations of kept runs only: not steel-plates-fault's (ambiguous) nor letter's roc_auc (n/a)
    assert sorted(cfg.index) == sorted([
        f"{ACC_DENSE}/9", f"{ACC_DENSE}/298", f"{ACC_SPARSE}/8", f"{ACC_SPARSE}/234", f"{AUC_DENSE}/9",
    ])
    # accuracy_binary.classification_dense/configurations.csv, line 90 (idx 298), empty entries dropped
    assert cfg.loc[f"{ACC_DENSE}/298", "algorithm"] == "autosklearn:libsvm_svc"
    assert cfg.loc[f"{ACC_DENSE}/298", "params"] == {
        "balancing:strategy": "weighting",
        "classifier:__choice__": "libsvm_svc",
        "classifier:libsvm_svc:C": 14547.641687966585,
        "classifier:libsvm_svc:gamma": 0.027760342173282767,
        "classifier:libsvm_svc:kernel": "rbf",
        "classifier:libsvm_svc:max_iter": -1,
        "classifier:libsvm_svc:shrinking": "False",
        "classifier:libsvm_svc:tol": 2.6344220036014925e-05,
        "data_preprocessor:__choice__": "feature_type",
        "data_preprocessor:feature_type:categorical_transformer:categorical_encoding:__choice__":
            "one_hot_encoding",
        "data_preprocessor:feature_type:categorical_transformer:category_coalescence:__choice__":
            "minority_coalescer",
        "data_preprocessor:feature_type:categorical_transformer:category_coalescence:"
        "minority_coalescer:minimum_fraction": 0.06462560332120959,
        "data_preprocessor:feature_type:numerical_transformer:imputation:strategy": "median",
        "data_preprocessor:feature_type:numerical_transformer:rescaling:__choice__": "none",
        "feature_preprocessor:__choice__": "no_preprocessing",
    }
    # same file, line 4 (idx 9)
    knn = cfg.loc[f"{ACC_DENSE}/9", "params"]
    assert cfg.loc[f"{ACC_DENSE}/9", "algorithm"] == "autosklearn:k_nearest_neighbors"
    assert knn["classifier:k_nearest_neighbors:n_neighbors"] == 1
    assert knn["feature_preprocessor:fast_ica:whiten"] == "False"
    assert [a.name for a in source.algorithms()] == [
        "autosklearn:k_nearest_neighbors", "autosklearn:libsvm_svc", "autosklearn:passive_aggressive",
    ]


def test_runs_decoded(source: AutoSklearnMetadata) -> None:
    chunks = list(source.run_chunks())
    assert source.n_chunks() == 3 and [c.index for c in chunks] == [0, 1, 2]
    runs = pd.concat([c.runs for c in chunks], ignore_index=True)
    got = {(r.dataset, r.configuration, r.metric): (r.value, r.status, r.repeat) for r in runs.itertuples()}
    assert got == {
        # accuracy_binary.classification_dense/algorithm_runs.arff, lines 12 and 98: already 1 - accuracy
        ("hill-valley", f"{ACC_DENSE}/9", "error_rate"): (0.0, "ok", 0),
        ("letter", f"{ACC_DENSE}/298", "error_rate"): (0.030303030303030276, "ok", 0),
        # accuracy_binary.classification_sparse/algorithm_runs.arff, lines 12 and 94
        ("hill-valley", f"{ACC_SPARSE}/8", "error_rate"): (0.15037593984962405, "ok", 0),
        ("letter", f"{ACC_SPARSE}/234", "error_rate"): (0.030303030303030276, "ok", 0),
        # roc_auc_binary.classification_dense/algorithm_runs.arff, line 12 (letter, line 98, is
        # not_applicable and dropped)
        ("hill-valley", f"{AUC_DENSE}/9", "one_minus_auc"): (0.0, "ok", 0),
    }
    # steel-plates-fault is two OpenML datasets under one name (lines 40 and 58): no runs
    assert source.ambiguous_instances == frozenset({"steel-plates-fault"})


def test_chunks_are_deterministic_and_resumable(source: AutoSklearnMetadata) -> None:
    first = [c.runs for c in source.run_chunks()]
    again = [c.runs for c in AutoSklearnMetadata(FIXTURE).run_chunks()]
    for a, b in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(a, b)
    resumed = list(source.run_chunks(1))
    assert [c.index for c in resumed] == [1, 2]
    pd.testing.assert_frame_equal(resumed[0].runs, first[1])


def test_ingest_into_a_fresh_kb_then_again(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    report = ingest_metadataset(kb, AutoSklearnMetadata(FIXTURE))
    assert (report.datasets, report.meta_features, report.configurations) == (3, 3 * (37 + 6), 5)
    # letter's dense and sparse incumbents are the same configuration with the same loss: one run
    assert (report.runs_seen, report.runs_added) == (5, 4)
    stored = kb.query("SELECT dataset_id, metric, value FROM runs ORDER BY dataset_id, metric, value")
    assert stored["dataset_id"].tolist() == ["autosklearn-hill-valley"] * 3 + ["autosklearn-letter"]
    assert stored["metric"].tolist() == ["error_rate", "error_rate", "one_minus_auc", "error_rate"]
    n_configs = kb.query("SELECT count(*) AS n FROM configurations")["n"].iloc[0]
    assert n_configs == 3  # identical configurations of several folders are stored once
    letter = kb.query("SELECT value FROM meta_features WHERE dataset_id = 'autosklearn-letter' "
                      "AND name = 'NumberOfFeatures'")
    assert letter["value"].tolist() == [17.0]  # the project's (OpenML's) count, target included

    again = ingest_metadataset(kb, AutoSklearnMetadata(FIXTURE), force=True)
    assert again.runs_seen == 5 and again.runs_added == 0
    assert ingest_metadataset(kb, AutoSklearnMetadata(FIXTURE)).runs_added == 0
    assert kb.query("SELECT count(*) AS n FROM runs")["n"].iloc[0] == 4


def _garble_arff(path: Path) -> None:
    path.write_text(path.read_text().replace("0.0,ok", "zero,ok", 1))


def _truncate_mid_row(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) - 9])


def _drop_last_row(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))


def _maximize(path: Path) -> None:
    path.write_text(path.read_text().replace("maximize: false", "maximize: true"))


@pytest.mark.parametrize(("folder", "file", "damage"), [
    (ACC_DENSE, "algorithm_runs.arff", _garble_arff),
    (ACC_SPARSE, "feature_values.arff", _truncate_mid_row),
    (AUC_DENSE, "configurations.csv", _drop_last_row),
    (AUC_DENSE, "algorithm_runs.arff", _drop_last_row),
    (ACC_SPARSE, "description.txt", _maximize),
])
def test_corrupt_file_raises_and_stores_nothing(tmp_path: Path, folder: str, file: str, damage) -> None:
    root = tmp_path / "src"
    shutil.copytree(FIXTURE, root)
    damage(root / FILES_DIR / folder / file)
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    with pytest.raises(InputDataError, match=re.escape(str(root / FILES_DIR / folder / file))):
        ingest_metadataset(kb, AutoSklearnMetadata(root))
    for table in ("datasets", "runs", "configurations", "meta_features", "source_ids"):
        assert kb.query(f"SELECT count(*) AS n FROM {table}")["n"].iloc[0] == 0, table  # noqa: S608


def test_missing_files_say_fetch(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="fetch"):
        AutoSklearnMetadata(tmp_path).datasets()
