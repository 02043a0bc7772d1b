"""``metabo predict`` on the inputs a batch to predict on really is: a file read on its
own (so a column can read as another kind than at fit), in Parquet or ARFF, for an
ensemble of several members. Column order, a missing or unexpected column and a bad
model file: tests/cli/test_predict_and_sessions.py."""

from __future__ import annotations

import arff
import numpy as np
import pandas as pd
import pytest

from metabo.cli.main import main
from metabo.data.files import load_file
from metabo.ensembles.model import EnsembleModel

TREE = ("decision_tree", {"max_depth": 5, "min_samples_split": 2, "min_samples_leaf": 2, "criterion": "gini"})


@pytest.fixture
def coded(tmp_path):
    """A table whose class is set by ``code``, a column of numbers declared nominal."""
    rng = np.random.default_rng(0)
    code = rng.integers(1, 4, 120)
    table = pd.DataFrame({"code": code, "x": rng.normal(size=120), "y": np.where(code == 2, "a", "b")})
    train = tmp_path / "train.csv"
    table.to_csv(train, index=False)
    dataset = load_file(train, "y", nominal=["code"])
    assert dataset.feature_kinds == ("nominal", "numeric")
    model = EnsembleModel([TREE]).fit_dataset(dataset)
    path = tmp_path / "m.skops"
    model.save(path)
    return model, path, dataset, table


def _predict(capsys, *argv: str) -> pd.DataFrame:
    assert main(["predict", *argv]) == 0, capsys.readouterr().err
    from io import StringIO

    return pd.read_csv(StringIO(capsys.readouterr().out))


def test_a_nominal_column_of_numbers_is_matched_to_its_fitted_categories(tmp_path, coded, capsys):
    model, path, dataset, table = coded
    assert (model.predict(dataset.X) == table["y"]).all()  # the tree learned code == 2
    data = tmp_path / "new.csv"
    table.drop(columns="y").to_csv(data, index=False)  # read back, "code" is a column of numbers
    got = _predict(capsys, str(path), str(data), "--proba")
    assert list(got["prediction"]) == list(table["y"])
    np.testing.assert_allclose(got[["proba_a", "proba_b"]], model.predict_proba(dataset.X))


def test_a_batch_whose_nominal_column_holds_only_digits(tmp_path, capsys):
    table = pd.DataFrame({"c": ["1", "2", "x"] * 30, "z": np.linspace(0, 1, 90)})
    y = np.where(table["c"] == "2", "two", "other")
    model = EnsembleModel([TREE]).fit(table, y)
    model.save(path := tmp_path / "m.skops")
    batch = table[table["c"] != "x"]
    batch.to_csv(data := tmp_path / "digits.csv", index=False)
    assert pd.read_csv(data)["c"].dtype.kind == "i"  # what made "1" read as 1.0
    got = _predict(capsys, str(path), str(data))
    assert list(got["prediction"]) == list(y[table["c"] != "x"]) == list(model.predict(batch))


def test_a_word_in_a_numeric_column_is_refused_in_one_line(tmp_path, coded, capsys):
    _, path, _, table = coded
    batch = table.drop(columns="y").astype({"x": object})
    batch.loc[3, "x"] = "1,5"
    batch.loc[5, "x"] = "?"  # a missing value, as at fit
    batch.to_csv(data := tmp_path / "bad.csv", index=False)
    assert main(["predict", str(path), str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "column 'x'" in err and "'1,5'" in err and "row 4" in err


def test_parquet_and_arff_tables_predict_as_csv(tmp_path, coded, capsys):
    model, path, dataset, table = coded
    features = table.drop(columns="y")
    features.to_parquet(pq := tmp_path / "new.parquet")
    doc = {"relation": "new", "attributes": [("code", ["1", "2", "3"]), ("x", "REAL")],
           "data": [[str(c), float(x)] for c, x in zip(features["code"], features["x"])]}
    (ar := tmp_path / "new.arff").write_text(arff.dumps(doc))
    expected = list(model.predict(dataset.X))
    assert list(_predict(capsys, str(path), str(pq))["prediction"]) == expected
    assert list(_predict(capsys, str(path), str(ar))["prediction"]) == expected


def test_an_ensemble_of_several_members(tmp_path, capsys):
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    y = y.map({0: "barolo", 1: "grignolino", 2: "barbera"})
    model = EnsembleModel([TREE, ("logistic_regression", {"C": 1.0}), ("gaussian_nb", {"var_smoothing": 1e-9})],
                          weights=[2, 1, 1]).fit(X, y)
    model.save(path := tmp_path / "ens.skops")
    X.sample(frac=1.0, axis=1, random_state=0).to_csv(data := tmp_path / "wine.csv", index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(path), str(data), "--proba", "--out", str(out)]) == 0
    assert capsys.readouterr().err.strip() == f"wrote {len(X)} predictions to {out}"
    got = pd.read_csv(out)
    assert list(got.columns) == ["prediction"] + [f"proba_{c}" for c in model.classes_]
    assert list(got["prediction"]) == list(model.predict(X))
    np.testing.assert_allclose(got.iloc[:, 1:], model.predict_proba(X), atol=1e-12)
    np.testing.assert_allclose(got.iloc[:, 1:].sum(axis=1), 1.0)


def test_out_replaces_a_file_whole_and_refuses_a_missing_folder(tmp_path, coded, capsys):
    _, path, _, table = coded
    table.drop(columns="y").to_csv(data := tmp_path / "new.csv", index=False)
    out = tmp_path / "p.csv"
    out.write_text("old content that is longer than nothing\n" * 1000)
    assert main(["predict", str(path), str(data), "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == len(table)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left
    capsys.readouterr()
    assert main(["predict", str(path), str(data), "--out", str(tmp_path / "nowhere" / "p.csv")]) == 2
    assert "no folder" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


def test_the_api_reads_columns_as_at_fit_like_the_cli(coded):
    """EnsembleModel.predict on a frame read on its own (``code`` as numbers) predicts
    as on the fitted dataset: the repair lives in the model, not only in the CLI."""
    model, _, dataset, table = coded
    fresh = table.drop(columns="y")
    assert fresh["code"].dtype.kind == "i"
    assert list(model.predict(fresh)) == list(table["y"])
    np.testing.assert_allclose(model.predict_proba(fresh), model.predict_proba(dataset.X))
