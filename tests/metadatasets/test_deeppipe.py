"""PMF and Tensor-OBOE: decoding checked against entries read by hand from the real files.

The fixtures under tests/fixtures/metadatasets/deeppipe are cut from the real
``deeppipe-api==0.1.1`` files by scripts/cut_deeppipe_fixtures.py (their ``_cut_from``
key lists the real pipeline and dataset indices kept). The expected literals below were
read from the real files, not from the fixtures.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.metadatasets import get_source, source_class
from metabo.metadatasets.deeppipe import DATA_DIR, PMF, TensorOBOE, enumerate_pipelines
from metabo.metadatasets.ingest import ingest_metadataset, state_key
from metabo.metadatasets.json_stream import JsonObjectFile
from metabo.testing.killed import ingest_killed_midway

FIXTURE = Path(__file__).parents[1] / "fixtures" / "metadatasets" / "deeppipe"


def _cut(name: str) -> dict:
    return json.loads((FIXTURE / DATA_DIR / name).read_text())["_cut_from"]


# ------------------------------------------------------------------------------ PMF
def test_pmf_datasets_carry_their_openml_ids() -> None:
    ds = PMF(FIXTURE).datasets()
    # real file: original_dataset_id starts ['1562', '970', '450', ...]
    assert ds["original_id"].tolist() == ["1562", "970", "450"]
    assert ds["openml_id"].tolist() == [1562, 970, 450]


def test_pmf_pipeline_decodes_to_its_two_blocks() -> None:
    src = PMF(FIXTURE)
    assert _cut(PMF.filename)["pipelines"][0] == 0
    algo, params = src.decode(0)
    # real file, pipelines[0] = [1.0, 0.0, 0.6666666666666666, 0.0, 0.0, 1.0, 0.25, 1.0,
    # 0.42997651068731707, 0.0, 0.5, 0.0, 1.0, 0.0, ...], list_for_selector[0] = [0, 0],
    # algorithm_domain = [0, 3, 5, 14, ...]: preprocessor block [0, 3), estimator [5, 14)
    assert algo == "pmf:estimator-0"
    assert params == {
        "preprocessor": 0,
        "x_preprocessor": [1.0, 0.0, 0.6666666666666666],
        "x_estimator": [1.0, 0.25, 1.0, 0.42997651068731707, 0.0, 0.5, 0.0, 1.0, 0.0],
    }
    # real file, list_for_selector[1] = [0, 1]: estimator block 1 = [14, 24)
    algo, params = src.decode(1)
    assert algo == "pmf:estimator-1" and len(params["x_estimator"]) == 10
    assert params["x_estimator"][:3] == [1.0, 0.0, 0.35000000000000003]


def test_pmf_runs_are_the_observed_cells_with_hand_read_values() -> None:
    src = PMF(FIXTURE, rows_per_chunk=2)
    runs = pd.concat([c.runs for c in src.run_chunks()], ignore_index=True)
    cut = _cut(PMF.filename)["pipelines"]
    first = runs[runs["dataset"] == "1562"].set_index("configuration")["value"]
    # real file, error[0] = [nan, nan, 0.857142857, 0.0, 0.857142857, nan, 0.0, nan, 0.857142857, ...]
    real_index = {str(k): cut[k] for k in range(len(cut))}
    by_real = {real_index[c]: v for c, v in first.items()}
    assert (by_real[2], by_real[3], by_real[8]) == (0.857142857, 0.0, 0.857142857)
    assert not {0, 1, 5, 7} & set(by_real)  # NaN in the real row: not run, no run stored
    assert src.n_chunks() == 2 and runs["value"].between(0, 1).all()


def test_pmf_check_rejects_a_pipeline_that_differs_outside_its_blocks(tmp_path: Path) -> None:
    data = json.loads((FIXTURE / DATA_DIR / PMF.filename).read_text())
    data["pipelines"][0][30] = 0.5  # column 30 is outside blocks [0, 3) and [5, 14)
    _write(tmp_path, PMF.filename, data)
    with pytest.raises(InputDataError, match="differ outside their blocks"):
        PMF(tmp_path).configurations()


# ------------------------------------------------------------------------------ Tensor-OBOE
def test_enumeration_follows_the_step_and_hyperparameter_order() -> None:
    space = json.loads((FIXTURE / DATA_DIR / "classification.json").read_text())
    pipes = enumerate_pipelines(space)
    assert len(pipes) == 4 * 2 * 2 * 1 * (4 + 1)
    assert pipes[0] == {
        "imputer": "SimpleImputer", "imputer:strategy": "mean", "encoder": None, "standardizer": None,
        "dim_reducer": None, "estimator": "KNN", "estimator:n_neighbors": 1, "estimator:p": 1,
    }
    assert pipes[1]["estimator:p"] == 2 and pipes[2]["estimator:n_neighbors"] == 3
    gnb = {k: v for k, v in pipes[0].items() if not k.startswith("estimator")} | {"estimator": "GNB"}
    assert pipes[4] == gnb  # GNB has no hyperparameters
    assert pipes[5]["encoder"] is None and pipes[5]["standardizer"] == "StandardScaler"


def test_tensor_oboe_decoding_matches_the_vectors_of_the_real_file() -> None:
    src = TensorOBOE(FIXTURE)
    src.check()
    configs = src.configurations()
    cut = _cut(TensorOBOE.filename)["pipelines"]
    assert cut[:4] == [0, 1, 2, 3]
    # real file: pipelines[0] has 1.0 at column 1 (imputer 'mean', one-hot over the sorted
    # strategies), 0.06666666666666667 = 1/15 and 0.5 = 1/2 at columns 30, 31 (KNN block);
    # pipelines[2] has 0.2 = 3/15 at column 30
    knn = [json.loads(p) for p in configs["params"][:4]]  # stored as the project's points
    assert [(p["n_neighbors"], p["p"]) for p in knn] == [(1, 1), (1, 2), (3, 1), (3, 2)]
    assert {p["imputer"] for p in knn} == {"mean"}
    vec = src.vectors
    assert vec[0, 1] == 1.0 and vec[0, 30] == pytest.approx(1 / 15) and vec[0, 31] == 0.5
    assert vec[2, 30] == pytest.approx(3 / 15)
    assert set(configs["algorithm"]) == {"pipeline_knn", "pipeline_gaussian_nb"}


def test_tensor_oboe_runs_hold_hand_read_errors() -> None:
    src = TensorOBOE(FIXTURE)
    runs = next(src.run_chunks()).runs
    row0 = runs[runs["dataset"] == "0"].set_index("configuration")["value"]
    # real file, error[0][:4] = [0.359619140625, 0.412109375, 0.297119140625, 0.259033203125]
    assert row0.loc[["0", "1", "2", "3"]].tolist() == [0.359619140625, 0.412109375, 0.297119140625, 0.259033203125]
    assert src.datasets()["openml_id"].isna().all()  # the file gives no OpenML ids


def test_tensor_oboe_check_catches_a_wrong_enumeration(tmp_path: Path) -> None:
    data = json.loads((FIXTURE / DATA_DIR / TensorOBOE.filename).read_text())
    space = json.loads((FIXTURE / DATA_DIR / "classification.json").read_text())
    space["estimator"]["algorithms"] = ["GNB", "KNN"]  # swapped order: selectors disagree
    _write(tmp_path, TensorOBOE.filename, data)
    (tmp_path / DATA_DIR / "classification.json").write_text(json.dumps(space))
    with pytest.raises(InputDataError, match="enumeration"):
        TensorOBOE(tmp_path).configurations()


# ------------------------------------------------------------------------------ JSON streaming
def _write(root: Path, name: str, data: dict | str) -> Path:
    path = root / DATA_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    if name != "classification.json" and (FIXTURE / DATA_DIR / "classification.json").is_file():
        target = root / DATA_DIR / "classification.json"
        if not target.exists():
            target.write_text((FIXTURE / DATA_DIR / "classification.json").read_text())
    return path


def test_json_rows_equal_a_full_parse(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    obj = {"s": "a [tricky] \"string\" {", "rows": [[1.0, float("nan"), -2.5e-3], [], [3]], "n": 7,
           "d": {"k": [1, [2]]}}
    path.write_text(json.dumps(obj))
    with JsonObjectFile(path) as f:
        assert f.keys() == ["s", "rows", "n", "d"]
        assert f.load("s") == obj["s"] and f.load("n") == 7 and f.load("d") == obj["d"]
        rows = list(f.iter_rows("rows"))
        assert [i for i, _ in rows] == [0, 1, 2] and f.count_rows("rows") == 3
        assert rows[0][1][0] == 1.0 and math.isnan(rows[0][1][1]) and rows[2][1].tolist() == [3.0]
        assert [i for i, _ in f.iter_rows("rows", 2)] == [2]


@pytest.mark.parametrize("text", ['{"rows": [[1, 2], [3, ', '["not", "an object"]', '{"rows": [[1, "x"]]}', ""])
def test_corrupt_json_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputDataError, match="bad.json"):
        with JsonObjectFile(path) as f:
            list(f.iter_rows("rows"))


# ------------------------------------------------------------------------------ ingestion
def _run_ids(kb: KnowledgeBase) -> set[str]:
    return set(kb.query("SELECT run_id FROM runs")["run_id"])


def test_ingestion_is_idempotent_and_keeps_provenance(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = ingest_metadataset(kb, PMF(FIXTURE))
        n_obs = sum(int(np.isfinite(r).sum()) for _, r in PMF(FIXTURE).file.iter_rows("error"))
        assert report.runs_added == report.runs_seen == n_obs
        again = ingest_metadataset(kb, PMF(FIXTURE))
        assert again.runs_added == 0 and again.runs_seen == 0  # complete: not read again
        forced = ingest_metadataset(kb, PMF(FIXTURE), force=True)
        assert forced.runs_seen == n_obs and forced.runs_added == 0
        assert kb.query("SELECT count(*) AS n FROM runs")["n"][0] == n_obs
        ids = kb.query("SELECT * FROM source_ids WHERE source = 'pmf' AND kind = 'dataset' ORDER BY original_id")
        assert ids["local_id"].tolist() == ["openml-1562", "openml-450", "openml-970"]
        assert kb.query("SELECT DISTINCT metric, source FROM runs").values.tolist() == [["balanced_error_rate", "pmf"]]
        # a run maps back to the real pipeline through source_ids
        row = kb.query(
            """SELECT r.value, s.original_id FROM runs r JOIN source_ids s
               ON s.kind = 'configuration' AND s.source = 'pmf' AND s.local_id = r.config_id
               WHERE r.dataset_id = 'openml-1562' ORDER BY s.original_id::INT LIMIT 1""")
        assert row["value"][0] == 0.857142857  # fixture column 2 = real pipeline 2


def test_a_dataset_of_two_sources_is_one_dataset(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        kb.register_dataset(name="kc1", source="openml", openml_id=1562, n_instances=2109)
        report = ingest_metadataset(kb, PMF(FIXTURE))
        assert report.joined_datasets == 1
        assert kb.query("SELECT count(*) AS n FROM datasets WHERE openml_id = 1562")["n"][0] == 1
        assert kb.query("SELECT count(*) AS n FROM runs WHERE dataset_id = 'openml-1562'")["n"][0] > 0


def test_stopping_half_way_then_resuming_equals_one_run(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "whole.duckdb") as kb:
        ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1))
        whole = _run_ids(kb)
    with KnowledgeBase(tmp_path / "parts.duckdb") as kb:
        first = ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1), max_chunks=1)
        assert first.chunks_read == 1 and kb.get_state(state_key("tensor-oboe"))["next_chunk"] == 1
        rest = ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1))
        assert rest.first_chunk == 1 and rest.chunks_read == 2
        assert _run_ids(kb) == whole


def test_a_corrupt_chunk_stores_nothing_of_it(tmp_path: Path) -> None:
    data = json.loads((FIXTURE / DATA_DIR / TensorOBOE.filename).read_text())
    data["error"][1][0] = 1.5  # outside [0, 1]
    root = tmp_path / "src"
    _write(root, TensorOBOE.filename, data)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        with pytest.raises(InputDataError, match="row 1"):
            ingest_metadataset(kb, TensorOBOE(root, rows_per_chunk=1))
        assert set(kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"]) == {"tensor-oboe-0"}
        assert kb.get_state(state_key("tensor-oboe"))["next_chunk"] == 1


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_killed_ingestion_then_rerun_completes_it(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "whole.duckdb") as kb:
        ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1))
        whole = _run_ids(kb)
    path = tmp_path / "killed.duckdb"
    ingest_killed_midway("metabo.metadatasets.deeppipe:TensorOBOE", FIXTURE, path, tmp_path)
    with KnowledgeBase(path) as kb:
        partial = _run_ids(kb)
        assert partial < whole  # killed half way
        ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1))
        assert _run_ids(kb) == whole


def test_sources_are_registered_by_name(tmp_path: Path) -> None:
    assert source_class("pmf") is PMF and source_class("tensor-oboe") is TensorOBOE
    with pytest.raises(InputDataError, match="unknown meta-dataset"):
        source_class("nope")
    src = get_source("tensor-oboe", FIXTURE, fetch=False)
    assert isinstance(src, TensorOBOE) and src.n_datasets == 3
    with pytest.raises(InputDataError, match="missing"):
        PMF(tmp_path).datasets()


def test_a_cursor_saved_under_other_chunking_restarts_from_zero(tmp_path: Path, caplog) -> None:
    with KnowledgeBase(tmp_path / "whole.duckdb") as kb:
        ingest_metadataset(kb, TensorOBOE(FIXTURE))
        whole = _run_ids(kb)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=1), max_chunks=2)
        assert kb.get_state(state_key("tensor-oboe"))["chunking"] == "rows=1"
        report = ingest_metadataset(kb, TensorOBOE(FIXTURE, rows_per_chunk=2))
        assert report.first_chunk == 0 and "starting from chunk 0" in caplog.text
        assert _run_ids(kb) == whole
        assert report.runs_seen == len(whole) and report.runs_added < len(whole)  # re-read, stored once


def test_ingested_tensor_oboe_runs_are_knowledge_of_the_pipeline_spaces(tmp_path: Path) -> None:
    """After ingestion every stored pipeline is a column of the warm start's regret matrix
    over the pipeline spaces, and the portfolio's first pick is a stored pipeline."""
    from metabo.kb.past import PastRuns
    from metabo.optimizer.history import History
    from metabo.space.algorithms import pipeline_cash_space
    from metabo.strategies.portfolio import PortfolioWarmStart, RegretMatrix

    src = TensorOBOE(FIXTURE)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        ingest_metadataset(kb, src)
        past = PastRuns.from_kb(kb, metric="balanced_error_rate")
    space = pipeline_cash_space()
    m = RegretMatrix.from_past(past, space)
    assert len(m.ids) == len(src.configurations()) and len(m.tasks) == src.n_datasets
    assert {a for a, _ in m.configs} == {"pipeline_knn", "pipeline_gaussian_nb"}
    first = PortfolioWarmStart(past, n_portfolio=1, n_design=1).suggest(History(), space, np.random.default_rng(0))
    assert first in [space.normalize(a, p) for a, p in m.configs]
