"""``metabo predict`` (one prediction per row, refusing mismatched columns) and
``metabo sessions`` (interrupted sessions shown as such)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

from metabo.cli.main import main
from metabo.ensembles.model import EnsembleModel
from metabo.kb import KnowledgeBase
from metabo.kb.sessions import list_sessions
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space


@pytest.fixture
def iris_frame() -> pd.DataFrame:
    frame = load_iris(as_frame=True).frame
    frame["target"] = frame["target"].map({0: "setosa", 1: "versicolor", 2: "virginica"})
    return frame


@pytest.fixture
def saved(tmp_path, iris_frame):
    X, y = iris_frame.drop(columns="target"), iris_frame["target"]
    model = EnsembleModel([("lda", {"solver": "svd"})]).fit(X, y)
    path = tmp_path / "m.skops"
    model.save(path)
    return model, path, X


def test_predict_writes_one_prediction_per_row_in_any_column_order(tmp_path, saved, capsys):
    model, path, X = saved
    data = tmp_path / "new.csv"
    X[list(reversed(X.columns))].to_csv(data, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(path), str(data), "--out", str(out), "--proba"]) == 0
    assert "wrote 150 predictions" in capsys.readouterr().err
    got = pd.read_csv(out)
    assert len(got) == len(X) and list(got["prediction"]) == list(model.predict(X))
    P = model.predict_proba(X)
    for k, label in enumerate(model.classes_):
        np.testing.assert_allclose(got[f"proba_{label}"], P[:, k])
    assert main(["predict", str(path), str(data)]) == 0  # to standard output
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "prediction" and printed[1:] == list(model.predict(X))


def test_predict_drops_the_target_column_when_named(tmp_path, saved, iris_frame, capsys):
    model, path, X = saved
    data = tmp_path / "labelled.csv"
    iris_frame.to_csv(data, index=False)
    assert main(["predict", str(path), str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not fitted on ['target']" in err
    assert main(["predict", str(path), str(data), "--target", "target"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == list(model.predict(X))


def test_predict_refuses_missing_columns_and_bad_model_files_in_one_line(tmp_path, saved, capsys):
    _, path, X = saved
    data = tmp_path / "fewer.csv"
    X.drop(columns=["petal width (cm)"]).to_csv(data, index=False)
    assert main(["predict", str(path), str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "lacks the columns ['petal width (cm)']" in err
    junk = tmp_path / "junk.joblib"
    junk.write_bytes(b"not a model")
    assert main(["predict", str(junk), str(data)]) == 2
    assert "--trusted" in capsys.readouterr().err  # not a skops file: refused before it is read
    assert main(["predict", str(junk), str(data), "--trusted"]) == 2
    assert "not a readable metabo ensemble file" in capsys.readouterr().err


def test_sessions_lists_done_and_interrupted_sessions(tmp_path, iris_frame, capsys):
    kb_path = tmp_path / "kb.duckdb"
    space = default_cash_space(["knn", "lda"])
    with KnowledgeBase(kb_path) as kb:
        result = tune(iris_frame, target="target", budget=2, space=space, strategy="random", kb=kb, seed=0,
                      session_id="first", meta_features=False)
        kb.add_session("killed", strategy="gp", dataset_id=result.dataset_id, settings={"metric": "error_rate"})
        kb.set_state("session-owner:killed", {"host": __import__("socket").gethostname(), "pid": 2 ** 22 + 12345})
        kb.add_session("alive", strategy="gp", dataset_id=result.dataset_id)  # owned by this process
        table = list_sessions(kb).set_index("session_id")
    assert table.loc["first", "trials"] == 2 and table.loc["first", "status"] == "done"
    assert table.loc["first", "best"] == pytest.approx(result.validation_error)
    assert table.loc["first", "dataset"] == "dataframe" and table.loc["first", "strategy"] == "random"
    assert table.loc["killed", "status"] == "interrupted" and table.loc["alive", "status"] == "running"
    assert main(["sessions", "--kb", str(kb_path)]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out and "--resume" in out and "first" in out
    assert main(["sessions", "--kb", str(kb_path), "--dataset", "nothing"]) == 0
    assert "no tuning session" in capsys.readouterr().out
