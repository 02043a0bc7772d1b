"""LCDB reader: decoding against the real files, chunking, ingestion, corrupt input.

The fixture (tests/fixtures/metadatasets/lcdb, see its README) holds verbatim lines of
lcdb-0.1.0's files; "accuracy line 2" below means line 2 of the real
``lcdb-0.1.0/lcdb/database-accuracy.csv`` (header = line 1).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.metadatasets import source_class
from metabo.metadatasets.ingest import ingest_metadataset, state_key
from metabo.metadatasets.lcdb import CHUNK_BYTES, LCDB, PACKAGE_DIR

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "metadatasets" / "lcdb"
ACCURACY = "database-accuracy.csv"


#: Parts of at most 3000 bytes (1000 per file): one chunk per fixture dataset.
PER_DATASET = 3000


def all_runs(source: LCDB, start: int = 0) -> pd.DataFrame:
    """The runs of chunks ``start, ...``, id columns as plain strings."""
    frames = [c.runs.astype({"dataset": str, "configuration": str, "metric": str})
              for c in source.run_chunks(start)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_of(runs: pd.DataFrame, dataset: str, learner: str, fidelity: float, fold: int,
           repeat: int) -> dict[str, float]:
    """metric -> value of one curve point."""
    sel = runs[(runs["dataset"] == dataset) & (runs["configuration"] == learner)
               & (runs["fidelity"] == fidelity) & (runs["fold"] == fold) & (runs["repeat"] == repeat)]
    assert not sel["metric"].duplicated().any()
    return dict(zip(sel["metric"].astype(str), sel["value"], strict=True))


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A writable copy of the fixture."""
    root = tmp_path / "lcdb"
    shutil.copytree(FIXTURE, root)
    return root


def edit(root: Path, filename: str, old: str, new: str) -> None:
    path = root / PACKAGE_DIR / filename
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


# ------------------------------------------------------------------------------ header


def test_registered_under_its_name() -> None:
    assert source_class("lcdb") is LCDB
    assert LCDB.artifact.sha256 == "450ea69b249866298653f718d66a825e3d19a4024dd4ff140b89f2e04d4777ae"
    pattern = re.compile(LCDB.artifact.members)
    for name in ("datasets.csv", "database-accuracy.csv", "database-logloss.csv", "database-auc.csv"):
        assert pattern.fullmatch(f"{PACKAGE_DIR}/{name}")
    assert not pattern.fullmatch(f"{PACKAGE_DIR}/lcdb.py")


def test_datasets() -> None:
    ds = LCDB(FIXTURE).datasets().set_index("original_id")
    assert list(ds.index) == ["6", "44", "299"]  # ids with curves; 3 (datasets.csv line 2) has none
    # datasets.csv line 19: 44,spambase,... NumberOfClasses 2, NumberOfFeatures 58, NumberOfInstances 4601
    assert ds.loc["44"].to_dict() == {"name": "spambase", "openml_id": 44, "n_instances": 4601,
                                      "n_features": 57, "n_classes": 2}
    # datasets.csv line 3: 6,letter,... 26 classes, 17 features (target included), 20000 rows
    letter = ds.loc["6", ["name", "n_instances", "n_features", "n_classes"]].tolist()
    assert letter == ["letter", 20000, 16, 26]
    # 299 has curves but no line in datasets.csv
    assert ds.loc["299", "name"] == "openml-299" and ds.loc["299", "openml_id"] == 299
    assert ds.loc["299", ["n_instances", "n_features", "n_classes"]].isna().all()


def test_meta_features() -> None:
    mf = LCDB(FIXTURE).meta_features()
    assert set(mf["original_id"]) == {"6", "44"}
    spambase = mf[mf["original_id"] == "44"].set_index("name")["value"]
    # datasets.csv line 19 (44, spambase): 64 columns of qualities, 14 of them empty
    assert len(spambase) == 50
    assert spambase["NumberOfInstances"] == 4601
    assert spambase["MajorityClassSize"] == 2788.0
    assert spambase["NaiveBayesErrRate"] == 0.2023473158009128
    assert spambase["NumberOfFeaturesAfterBinarization"] == 57
    assert "MaxAttributeEntropy" not in spambase.index  # empty in the file
    assert mf["value"].notna().all()


def test_algorithms_and_configurations() -> None:
    source = LCDB(FIXTURE)
    algos = {a.name: a for a in source.algorithms()}
    assert len(algos) == 20
    assert "lcdb:sklearn.tree.DecisionTreeClassifier" in algos
    assert "default" in algos["lcdb:SVC_linear"].description
    configs = source.configurations().set_index("original_id")
    assert len(configs) == 20 and set(configs["algorithm"]) == set(algos)
    # lcdb/computelc.py: SVC_linear is LinearSVC, SVC_rbf is SVC(kernel="rbf")
    assert configs.loc["SVC_linear", "params"] == {"estimator": "sklearn.svm.LinearSVC"}
    assert configs.loc["SVC_rbf", "params"] == {"estimator": "sklearn.svm.SVC", "kernel": "rbf"}
    tree = "sklearn.tree.DecisionTreeClassifier"
    assert configs.loc[tree, "algorithm"] == f"lcdb:{tree}"


# ------------------------------------------------------------------------------ runs


def test_decoding_of_one_curve_point() -> None:
    runs = all_runs(LCDB(FIXTURE))
    # accuracy line 2:  44,SVC_linear,16,461,0,0,0.0024,0.875,0.7440000000000001,0.7072
    # logloss line 2:   44,SVC_linear,16,461,0,0,0.0024,4.3173,8.8433,10.1144
    # auc line 2:       44,SVC_linear,16,461,0,0,0.0024,0.9231,0.6985,0.6606
    point = run_of(runs, "44", "SVC_linear", 16.0, fold=0, repeat=0)
    assert point == {
        "error_rate": 0.256, "test_error_rate": 0.2928, "train_error_rate": 0.125,
        "log_loss": 8.8433, "test_log_loss": 10.1144, "train_log_loss": 4.3173,
        "one_minus_auc": 0.3015, "test_one_minus_auc": 0.3394, "train_one_minus_auc": 0.0769,
    }
    # accuracy line 130: 44,SVC_linear,16,461,1,3,0.001,0.8125,0.6836,0.6443 (outer seed 1 -> fold)
    point = run_of(runs, "44", "SVC_linear", 16.0, fold=1, repeat=3)
    errors = [point[m] for m in ("error_rate", "test_error_rate", "train_error_rate")]
    assert errors == [0.3164, 0.3557, 0.1875]
    # accuracy line 1747228: 6,sklearn.tree.DecisionTreeClassifier,45,2000,0,0,0.0008,1.0,0.2056,0.2045
    point = run_of(runs, "6", "sklearn.tree.DecisionTreeClassifier", 45.0, fold=0, repeat=0)
    assert point["error_rate"] == 0.7944 and point["train_error_rate"] == 0.0
    assert not any("auc" in m for m in point)  # 26 classes: no AUC rows
    sel = runs[(runs["dataset"] == "44") & (runs["configuration"] == "SVC_linear")
               & (runs["fidelity"] == 16.0) & (runs["fold"] == 0)]
    assert set(sel["fit_seconds"]) == {0.0024}


def test_runs_columns_and_counts() -> None:
    runs = all_runs(LCDB(FIXTURE))
    columns = {"dataset", "configuration", "value", "metric", "fidelity", "fold", "repeat", "fit_seconds"}
    assert columns <= set(runs)
    assert np.isfinite(runs["value"]).all() and "status" not in runs  # every stored run is ok
    # 36 accuracy and 36 logloss lines x 3 splits; auc: 12 lines of 44 x 3 (those of 299 are empty)
    assert len(runs) == 36 * 3 * 2 + 12 * 3
    assert set(runs["fidelity"]) == {16.0, 23.0, 32.0, 45.0}
    assert set(runs.loc[runs["dataset"] == "299", "metric"].astype(str)) == {
        "error_rate", "test_error_rate", "train_error_rate", "log_loss", "test_log_loss", "train_log_loss"}
    errors = runs[runs["metric"].astype(str).str.endswith("error_rate")]["value"]
    assert errors.between(0, 1).all()


@pytest.mark.parametrize("chunk_bytes", [CHUNK_BYTES, PER_DATASET, 1200])
def test_chunks_are_deterministic(chunk_bytes: int) -> None:
    source = LCDB(FIXTURE, chunk_bytes=chunk_bytes)
    chunks = [c.runs.astype({"dataset": str, "configuration": str, "metric": str})
              for c in source.run_chunks()]
    assert len(chunks) == source.n_chunks()
    assert [c.index for c in source.run_chunks()] == list(range(source.n_chunks()))
    expected_chunks = {CHUNK_BYTES: 1, PER_DATASET: 3}  # all packed together / one per dataset
    if chunk_bytes in expected_chunks:
        assert source.n_chunks() == expected_chunks[chunk_bytes]
    else:
        assert source.n_chunks() > 3  # datasets split into parts
    if chunk_bytes == PER_DATASET:
        assert [set(c["dataset"]) for c in chunks] == [{"6"}, {"44"}, {"299"}]  # ids ascending
    full = pd.concat(chunks, ignore_index=True)
    n = source.n_chunks()
    for k in sorted({1, n // 2, n}):
        tail = all_runs(LCDB(FIXTURE, chunk_bytes=chunk_bytes), start=k)
        expected = full.iloc[sum(len(c) for c in chunks[:k]):].reset_index(drop=True)
        if len(expected):
            pd.testing.assert_frame_equal(tail, expected)
        else:
            assert tail.empty
    # the same runs whatever the chunk size
    reference = all_runs(LCDB(FIXTURE, chunk_bytes=PER_DATASET))
    key = list(reference.columns)
    pd.testing.assert_frame_equal(full.sort_values(key).reset_index(drop=True),
                                  reference.sort_values(key).reset_index(drop=True))


def test_parts_shorter_than_a_line() -> None:
    source = LCDB(FIXTURE, chunk_bytes=240)  # 80 bytes per file and part: some hold no line start
    runs = all_runs(source)
    reference = all_runs(LCDB(FIXTURE))
    key = list(reference.columns)
    pd.testing.assert_frame_equal(runs.sort_values(key).reset_index(drop=True),
                                  reference.sort_values(key).reset_index(drop=True))


# ------------------------------------------------------------------------------ ingestion


def count_runs(kb: KnowledgeBase) -> int:
    return kb.connection.execute("SELECT count(*) FROM runs WHERE source = 'lcdb'").fetchone()[0]


def test_ingest_is_idempotent(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    report = ingest_metadataset(kb, LCDB(FIXTURE))
    assert report.runs_added == count_runs(kb) == 36 * 3 * 2 + 12 * 3
    assert report.datasets == 3 and report.configurations == 20
    assert kb.get_dataset("openml-44")["name"] == "spambase"
    row = kb.connection.execute(
        "SELECT r.value, r.fit_seconds FROM runs r JOIN source_ids s ON s.local_id = r.config_id "
        "WHERE s.source = 'lcdb' AND s.kind = 'configuration' AND s.original_id = 'SVC_linear' "
        "AND r.dataset_id = 'openml-44' AND r.metric = 'test_error_rate' AND r.fidelity = 16 "
        "AND r.fold = 0 AND r.repeat = 0"
    ).fetchall()
    assert row == [(0.2928, 0.0024)]  # accuracy line 2
    mf = kb.connection.execute(
        "SELECT value FROM meta_features WHERE dataset_id = 'openml-44' AND name = 'NumberOfInstances'"
    ).fetchone()
    assert mf == (4601.0,)
    again = ingest_metadataset(kb, LCDB(FIXTURE))
    assert again.runs_added == 0
    forced = ingest_metadataset(kb, LCDB(FIXTURE), force=True)
    assert forced.runs_seen == count_runs(kb) and forced.runs_added == 0
    kb.close()


def test_interrupted_ingestion_resumes(tmp_path: Path) -> None:
    one = KnowledgeBase(tmp_path / "one.duckdb")
    ingest_metadataset(one, LCDB(FIXTURE, chunk_bytes=PER_DATASET))
    total = count_runs(one)

    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    first = ingest_metadataset(kb, LCDB(FIXTURE, chunk_bytes=PER_DATASET), max_chunks=1)
    assert first.chunks_read == 1 and 0 < count_runs(kb) < total
    assert kb.get_state(state_key("lcdb"))["next_chunk"] == 1
    rest = ingest_metadataset(kb, LCDB(FIXTURE, chunk_bytes=PER_DATASET))
    assert rest.first_chunk == 1
    assert count_runs(kb) == total
    ids = "SELECT run_id, value FROM runs ORDER BY run_id"
    assert kb.connection.execute(ids).fetchall() == one.connection.execute(ids).fetchall()
    one.close()
    kb.close()


# ------------------------------------------------------------------------------ corrupt input


def test_garbled_value_names_file_and_line(copy: Path, tmp_path: Path) -> None:
    # the 2nd line of openmlid 44 in the fixture (line 3 of the fixture file)
    edit(copy, ACCURACY, "44,SVC_linear,23,461,0,0,0.0014,0.9565,0.7222,0.6876",
         "44,SVC_linear,23,461,0,0,0.0014,0.9565,0.72x2,0.6876")
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    source = LCDB(copy, chunk_bytes=PER_DATASET)
    assert source.n_chunks() == 3
    with pytest.raises(InputDataError, match=r"database-accuracy\.csv: line 3\b"):
        ingest_metadataset(kb, source)
    # chunk 0 (openmlid 6) is stored, chunk 1 (44) is not, and the cursor waits at 1
    stored = kb.connection.execute("SELECT DISTINCT dataset_id FROM runs").fetchall()
    assert stored == [("openml-6",)]
    assert kb.get_state(state_key("lcdb"))["next_chunk"] == 1
    kb.close()


LINE_27 = "6,SVC_linear,23,2000,0,0,0.0053,1.0,0.1939,0.1975"  # line 27 of the fixture file


@pytest.mark.parametrize(
    ("new", "message"),
    [
        ("6,SVC_linear,23,2000,0,0,0.0053,1.0,0.1939", r"line 27: 9 fields instead of 10"),
        ("6,SVC_lineal,23,2000,0,0,0.0053,1.0,0.1939,0.1975", r"line 27: empty or unknown learner"),
        ("6,SVC_linear,23,2000,0,0,0.0053,1.0,1.1939,0.1975", r"line 27: score_valid outside"),
        ("6,SVC_linear,2.5,2000,0,0,0.0053,1.0,0.1939,0.1975", r"line 27: unreadable values"),
        ("6,SVC_linear,23,2000,0,-1,0.0053,1.0,0.1939,0.1975", r"line 27: negative size_test or seed"),
    ],
)
def test_bad_lines_raise(copy: Path, new: str, message: str) -> None:
    edit(copy, ACCURACY, LINE_27, new)
    source = LCDB(copy)
    with pytest.raises(InputDataError, match=r"database-accuracy\.csv: " + message):
        all_runs(source)


def test_truncated_file(copy: Path) -> None:
    path = copy / PACKAGE_DIR / ACCURACY
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])  # the last line (37) loses its end
    source = LCDB(copy, chunk_bytes=PER_DATASET)
    assert source.n_chunks() == 3
    # openmlid 6 is the file's last block and the first chunk (ids ascending)
    with pytest.raises(InputDataError, match=r"database-accuracy\.csv: line 37: the file is truncated"):
        next(source.run_chunks(0))
    assert set(all_runs(source, start=1)["dataset"].astype(str)) == {"44", "299"}


def test_file_not_grouped_by_dataset(copy: Path) -> None:
    path = copy / PACKAGE_DIR / ACCURACY
    lines = path.read_text().splitlines(keepends=True)
    moved = lines[:]
    moved.append(moved.pop(14))  # a line of 299 after the block of 6: found when locating blocks
    path.write_text("".join(moved))
    with pytest.raises(InputDataError, match=r"openmlid 299 are not contiguous \(lines 14 and 37\)"):
        LCDB(copy).n_chunks()
    moved = lines[:]
    moved.append(moved.pop(1))  # a line of 44 last: the ends agree, so only parsing sees it
    path.write_text("".join(moved))
    with pytest.raises(InputDataError, match=r"line 13: openmlid is not 44: the file is not grouped"):
        all_runs(LCDB(copy))


def test_missing_file(copy: Path) -> None:
    (copy / PACKAGE_DIR / "database-auc.csv").unlink()
    with pytest.raises(InputDataError, match=r"database-auc\.csv is missing"):
        LCDB(copy).n_chunks()


def test_bad_header(copy: Path) -> None:
    edit(copy, ACCURACY, "openmlid,learner,", "openml_id,learner,")
    with pytest.raises(InputDataError, match=r"database-accuracy\.csv: line 1"):
        LCDB(copy).datasets()
