"""EnsembleModel: one member is that member's pipeline, repeats are weights, the vote is a
hand-computed weighted majority, save/load round trips, a refit on train + validation
scores as evaluate() does."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB

import metabo.ensembles.model as model_module
from metabo.data.loaders import load_dataset
from metabo.ensembles.model import EnsembleModel, refit_test_error
from metabo.evaluation.evaluate import evaluate
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.preprocessing import PreprocessingSpec
from metabo.evaluation.protocols import Holdout, RefitOnTrainValid, class_codes
from metabo.exceptions import (
    EvaluationError,
    InputDataError,
    InvalidConfigurationError,
    UnknownAlgorithmError,
)
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space(["gaussian_nb", "decision_tree", "knn", "random_forest", "lda"])
NB, TREE, KNN, FOREST, LDA = (SPACE.default_configuration(a) for a in SPACE.algorithms)


@pytest.fixture(scope="module")
def noisy():
    """Three noisy classes ("a", "b", "c"), 200 training and 100 test rows: members disagree."""
    X, y = make_classification(n_samples=300, n_features=6, n_informative=3, n_classes=3, flip_y=0.2,
                               random_state=0)
    X = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    y = pd.Series(np.array(["a", "b", "c"])[y])
    return X[:200], y[:200], X[200:]


@pytest.fixture(scope="module")
def iris():
    return load_dataset("sklearn:iris")


def test_one_member_is_that_members_model(noisy):
    X, y, X_test = noisy
    model = EnsembleModel([NB]).fit(X, y)
    reference = GaussianNB(**NB[1]).fit(X.to_numpy(), y.to_numpy())  # no missing values: no preprocessing
    np.testing.assert_allclose(model.predict_proba(X_test), reference.predict_proba(X_test.to_numpy()), rtol=1e-10)
    np.testing.assert_array_equal(model.predict(X_test), reference.predict(X_test.to_numpy()))
    assert list(model.classes_) == ["a", "b", "c"]
    assert model.configurations == [{"algorithm": NB[0], "params": NB[1], "weight": 1.0}]


def test_weights_are_repeats(noisy):
    X, y, X_test = noisy
    weighted = EnsembleModel([NB, KNN], weights=[2, 1]).fit(X, y)
    repeated = EnsembleModel([NB, NB, KNN]).fit(X, y)
    np.testing.assert_allclose(weighted.predict_proba(X_test), repeated.predict_proba(X_test), rtol=1e-12)
    assert len(repeated.pipelines_) == 2  # the repeated configuration is fitted once
    for c, d in zip(weighted.configurations, repeated.configurations):
        assert (c["algorithm"], c["params"]) == (d["algorithm"], d["params"])
        assert c["weight"] == pytest.approx(d["weight"])
    assert [c["weight"] for c in repeated.configurations] == pytest.approx([2 / 3, 1 / 3])


def test_average_is_the_weighted_mean_and_its_argmax(noisy):
    X, y, X_test = noisy
    w = [0.5, 0.3, 0.2]
    model = EnsembleModel([NB, TREE, KNN], weights=w).fit(X, y)
    single = [EnsembleModel([m]).fit(X, y).predict_proba(X_test) for m in (NB, TREE, KNN)]
    P = model.predict_proba(X_test)
    np.testing.assert_allclose(P, sum(wj * Pj for wj, Pj in zip(w, single)), rtol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(X_test), model.classes_[P.argmax(axis=1)])


@pytest.mark.parametrize("weights", [None, [0.5, 0.3, 0.2]])
def test_vote_is_the_weighted_majority(noisy, weights):
    X, y, X_test = noisy
    members = [NB, TREE, KNN]
    model = EnsembleModel(members, weights=weights, combine="vote").fit(X, y)
    labels = [EnsembleModel([m]).fit(X, y).predict(X_test) for m in members]
    w = [1.0, 1.0, 1.0] if weights is None else weights
    expected = []
    for row in zip(*labels):
        tally: Counter[str] = Counter()
        for label, wj in zip(row, w):
            tally[label] += wj
        best = max(tally.values())
        expected.append(min(c for c in tally if tally[c] == best))  # ties: the lowest class
    disagree = sum(len(set(row)) > 1 for row in zip(*labels))
    assert disagree >= 10 and sum(len(set(row)) == 3 for row in zip(*labels)) >= 1  # ties are exercised
    np.testing.assert_array_equal(model.predict(X_test), expected)
    avg = EnsembleModel(members, weights=weights).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X_test), avg.predict_proba(X_test))


def test_save_load_round_trip(noisy, tmp_path: Path):
    X, y, X_test = noisy
    model = EnsembleModel([NB, TREE, TREE], combine="vote", seed=3).fit(X, y)
    path = tmp_path / "ens.skops"
    model.save(path)
    loaded = EnsembleModel.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(loaded.predict(X_test), model.predict(X_test))
    assert loaded.configurations == model.configurations
    assert (loaded.combine, loaded.seed) == ("vote", 3)


def test_load_refuses_bad_files(tmp_path: Path):
    import skops.io as sio

    corrupt = tmp_path / "corrupt.joblib"
    corrupt.write_bytes(np.random.default_rng(0).bytes(2048))
    with pytest.raises(InputDataError, match="trusted"):  # not a skops file: never unpickled untrusted
        EnsembleModel.load(corrupt)
    with pytest.raises(InputDataError, match="not a readable"):
        EnsembleModel.load(corrupt, trusted=True)
    broken_zip = tmp_path / "broken.skops"
    broken_zip.write_bytes(b"PK\x03\x04" + np.random.default_rng(1).bytes(2048))
    with pytest.raises(InputDataError, match="not a readable"):
        EnsembleModel.load(broken_zip)
    foreign = tmp_path / "foreign.joblib"
    joblib.dump({"format": "something-else"}, foreign)
    with pytest.raises(InputDataError, match="not a metabo ensemble"):
        EnsembleModel.load(foreign, trusted=True)
    sio.dump({"format": "something-else"}, foreign_skops := tmp_path / "foreign.skops")
    with pytest.raises(InputDataError, match="not a metabo ensemble"):
        EnsembleModel.load(foreign_skops)
    with pytest.raises(InputDataError, match="no ensemble file"):
        EnsembleModel.load(tmp_path / "missing.joblib")


@pytest.mark.parametrize("name", ["ens.skops", "ens.joblib"])
def test_a_failed_save_keeps_the_old_file(noisy, tmp_path: Path, monkeypatch, name):
    """A full disk (the bytes written, the flush to disk refused) raises one
    :class:`OutputFileError` line; the old file stays whole and no temporary is left."""
    import errno

    from metabo.exceptions import OutputFileError

    X, y, X_test = noisy
    model = EnsembleModel([NB]).fit(X, y)
    path = tmp_path / name
    model.save(path, trusted=True)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model_module.os, "fsync", full)
    with pytest.raises(OutputFileError, match="No space left on device") as caught:
        EnsembleModel([KNN]).fit(X, y).save(path, trusted=True)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left
    loaded = EnsembleModel.load(path, trusted=True)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))


def test_seed_reproduces_and_varies(noisy):
    X, y, X_test = noisy
    P1 = EnsembleModel([FOREST, TREE], seed=7).fit(X, y).predict_proba(X_test)
    P2 = EnsembleModel([FOREST, TREE], seed=7).fit(X, y).predict_proba(X_test)
    P3 = EnsembleModel([FOREST, TREE], seed=8).fit(X, y).predict_proba(X_test)
    np.testing.assert_array_equal(P1, P2)
    assert not np.array_equal(P1, P3)


def test_errors(noisy, monkeypatch):
    X, y, _ = noisy
    with pytest.raises(UnknownAlgorithmError, match="no_such_algorithm"):
        EnsembleModel([NB, ("no_such_algorithm", {})]).fit(X, y)
    with pytest.raises(InvalidConfigurationError):
        EnsembleModel([("knn", {"n_neighbors": -3})]).fit(X, y)
    with pytest.raises(InputDataError, match="at least one member"):
        EnsembleModel().fit(X, y)
    for bad in ([1.0, -1.0], [0.0, 0.0], [1.0, np.nan], [1.0, np.inf], [1.0]):
        with pytest.raises(InputDataError):
            EnsembleModel([NB, KNN], weights=bad).fit(X, y)
    with pytest.raises(InputDataError, match="combine"):
        EnsembleModel([NB], combine="median").fit(X, y)

    class Broken(GaussianNB):
        def fit(self, X, y):
            raise ArithmeticError("boom")

    monkeypatch.setattr(model_module, "registry_factory",
                        lambda a, p, seed: (PreprocessingSpec(), Broken() if a == "knn" else GaussianNB()))
    with pytest.raises(EvaluationError, match=r"member 1 \(knn .*boom"):
        EnsembleModel([NB, KNN]).fit(X, y)


def test_plain_arrays_and_sklearn_clone():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int) + 1
    model = clone(EnsembleModel([NB, LDA], weights=[1, 3])).fit(X, y)
    assert list(model.classes_) == [1, 2]
    assert set(model.predict(X)) <= {1, 2} and model.score(X, y) > 0.8
    with pytest.raises(InputDataError, match="lacks the columns"):
        model.predict_proba(pd.DataFrame(X, columns=["a", "b", "c"]))


def test_refit_test_error_matches_evaluate(iris):
    protocol = Holdout(train=0.5, valid=0.25, test=0.25)
    model, error = refit_test_error([TREE, NB, KNN], None, "average", iris, protocol, seed=4)
    split = RefitOnTrainValid(protocol).splits(iris, 4)[0]
    assert 0.0 <= error <= 1.0
    codes = class_codes(iris)[split.test_idx]
    P = model.predict_proba(iris.X.iloc[split.test_idx])
    assert error == get_metric("error_rate")(codes, P)
    y_test = iris.y.to_numpy()[split.test_idx]
    assert error == pytest.approx(np.mean(model.predict(iris.X.iloc[split.test_idx]) != y_test), abs=1e-12)
    assert set(split.train_idx) | set(split.test_idx) == set(range(iris.n_instances))  # trained on train + valid

    # a vote ensemble is scored by its vote
    voter, vote_error = refit_test_error([TREE, NB, KNN], [1, 1, 3], "vote", iris, protocol, seed=4)
    assert vote_error == pytest.approx(np.mean(voter.predict(iris.X.iloc[split.test_idx]) != y_test), abs=1e-12)

    # one member: the ensemble is evaluate()'s refit of that configuration
    single, single_error = refit_test_error([TREE], None, "average", iris, protocol, seed=4, metric="log_loss")
    (ev,) = evaluate(*TREE, iris, protocol=RefitOnTrainValid(protocol), seed=4, metrics=["log_loss"])
    np.testing.assert_array_equal(single.predict_proba(iris.X.iloc[split.test_idx]), ev.test_proba)
    assert single_error == pytest.approx(ev.test["log_loss"], rel=1e-12)


def test_labels_come_back_as_the_caller_gave_them(tmp_path: Path):
    """An integer target is compared as text in the search (a CSV and a DataFrame agree)
    but the fitted model predicts integers, also after a save/load round trip."""
    from metabo.data.dataset import Dataset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5]) * 5  # 0, 5, 10: text order "0" < "10" < "5"
    data = Dataset.from_frame(pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "t": y}), "t", name="ints", source="test")
    assert list(data.y.cat.categories) == ["0", "10", "5"] and data.label_values == {"0": 0, "5": 5, "10": 10}
    model = EnsembleModel([NB]).fit_dataset(data)
    assert model.classes_.tolist() == [0, 10, 5] and model.classes_.dtype.kind == "i"
    predicted = model.predict(data.X)
    assert predicted.dtype.kind == "i" and np.mean(predicted == y) > 0.8
    np.testing.assert_array_equal(predicted, model.classes_[model.predict_proba(data.X).argmax(axis=1)])
    model.save(tmp_path / "m.skops")
    np.testing.assert_array_equal(EnsembleModel.load(tmp_path / "m.skops").predict(data.X), predicted)
    text = Dataset.from_frame(pd.DataFrame({"a": X[:, 0], "t": y.astype(str)}), "t", name="txt", source="test")
    assert text.label_values == {} and EnsembleModel([NB]).fit_dataset(text).classes_.tolist() == ["0", "10", "5"]


def test_the_fitted_kinds_name_the_columns_taken_by_position(tmp_path: Path):
    """The preprocessing takes its columns by position; the kinds it fitted are read back
    by name (the frame's order, not the position's), also after a save/load round trip,
    and a batch with its columns in another order predicts the same."""
    from metabo.data.dataset import Dataset
    from metabo.ensembles.model import fitted_kinds

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"z": rng.normal(size=80), "code": rng.choice(["u", "v"], size=80),
                          "a": rng.normal(size=80)})
    frame["t"] = np.where(frame["z"] + (frame["code"] == "u") > 0.5, "p", "n")
    data = Dataset.from_frame(frame, "t", name="kinds", source="test")
    model = EnsembleModel([TREE, NB]).fit_dataset(data)
    assert fitted_kinds(model) == {"z": "numeric", "a": "numeric", "code": "nominal"}
    model.save(tmp_path / "m.skops")
    loaded = EnsembleModel.load(tmp_path / "m.skops")
    assert fitted_kinds(loaded) == fitted_kinds(model)
    np.testing.assert_array_equal(loaded.predict_proba(data.X[["a", "code", "z"]]), model.predict_proba(data.X))


def test_as_fitted_kinds_converts_only_the_columns_of_another_kind():
    import numpy as np
    import pandas as pd

    from metabo.ensembles.model import as_fitted_kinds

    frame = pd.DataFrame({"n": [1.0, 2.0], "t": ["3", "?"], "c": [1.0, 2.0]})
    out = as_fitted_kinds(frame, {"n": "numeric", "t": "numeric", "c": "nominal", "absent": "numeric"})
    assert out["n"].tolist() == [1.0, 2.0]
    assert out["t"].dtype == np.float64 and out["t"].iloc[0] == 3.0 and np.isnan(out["t"].iloc[1])
    assert isinstance(out["c"].dtype, pd.CategoricalDtype) and out["c"].astype(str).tolist() == ["1", "2"]
    assert frame["t"].tolist() == ["3", "?"]  # the input is not changed


def test_refit_on_at_most_max_rows_keeps_every_class_and_the_seed(iris):
    """``max_rows``: the fit sees a stratified subsample of that many training + validation
    rows (every class kept), the same rows under the same seed, and is scored on the same
    test rows."""
    protocol = Holdout(train=0.5, valid=0.25, test=0.25)
    split = RefitOnTrainValid(protocol).splits(iris, 4)[0]
    model, error = refit_test_error([KNN], None, "average", iris, protocol, seed=4, max_rows=30)
    estimator = model.pipelines_[0][-1]
    assert estimator.n_samples_fit_ == 30
    assert len(estimator.classes_) == 3  # every class
    again, again_error = refit_test_error([KNN], None, "average", iris, protocol, seed=4, max_rows=30)
    test = iris.X.iloc[split.test_idx]
    np.testing.assert_array_equal(model.predict_proba(test), again.predict_proba(test))
    codes = class_codes(iris)[split.test_idx]
    assert error == again_error == get_metric("error_rate")(codes, model.predict_proba(test))
    whole, _ = refit_test_error([KNN], None, "average", iris, protocol, seed=4, max_rows=10_000)  # more than there are
    assert whole.pipelines_[0][-1].n_samples_fit_ == len(iris.y) - len(split.test_idx)


def test_a_reused_member_is_the_fit_it_stands_for():
    """``fit_dataset(reuse=)``: the member the given model holds keeps its fitted pipeline
    (not fitted again), and the ensemble predicts what a fresh fit of every member does."""
    data = load_dataset("sklearn:breast_cancer")
    rows = np.arange(0, data.n_instances, 2)
    a, b = FOREST, TREE
    single = EnsembleModel([a], None, "average", 3).fit_dataset(data, rows)
    reused = EnsembleModel([a, b], [0.6, 0.4], "average", 3).fit_dataset(data, rows, reuse=single)
    fresh = EnsembleModel([a, b], [0.6, 0.4], "average", 3).fit_dataset(data, rows)
    assert reused.pipelines_[0] is single.pipelines_[0] and fresh.pipelines_[0] is not single.pipelines_[0]
    X = data.X.iloc[1::2]
    np.testing.assert_allclose(reused.predict_proba(X), fresh.predict_proba(X))
    with pytest.raises(InputDataError, match="seed"):
        EnsembleModel([a, b], None, "average", 4).fit_dataset(data, rows, reuse=single)
