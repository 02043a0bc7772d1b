"""Model files are data, not code (issue 33): every algorithm of the default space round-trips
through a skops file with identical predictions and names no type outside
``TRUSTED_TYPES``; a pickle, whatever its name, is refused before anything in it runs unless
the caller trusts it; a skops file naming another type is refused, naming it, before
anything is built; a path that cannot take the model is refused before any work."""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.datasets import make_classification

from metabo.cli.main import main
from metabo.ensembles.model import TRUSTED_TYPES, EnsembleModel, check_model_path
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space()


@pytest.fixture(scope="module")
def tiny() -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """60 training and 30 new rows: 4 numbers (one missing value) and a nominal column, 3 classes."""
    X, y = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=0)
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    X["kind"] = pd.Categorical(np.array(["u", "v", "w"])[np.arange(90) % 3])
    X.iloc[2, 0] = np.nan
    y = pd.Series(np.array(["lo", "mid", "hi"])[y])
    return X[:60], y[:60], X[60:]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    """A home of the test's own: the signed copies of checked model files go there."""
    monkeypatch.setenv("METABO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _round_trip(model: EnsembleModel, path: Path, X_new: pd.DataFrame) -> EnsembleModel:
    """Saved, then loaded twice: through skops (another home, whose cache is empty) and
    from the signed copy the save kept (this home): both predict as the model does."""
    model.save(path)
    assert set(sio.get_untrusted_types(file=path)) <= TRUSTED_TYPES
    home = os.environ["METABO_HOME"]
    os.environ["METABO_HOME"] = home + "-other"
    try:
        loaded = EnsembleModel.load(path)
    finally:
        os.environ["METABO_HOME"] = home
    for each in (loaded, EnsembleModel.load(path)):
        np.testing.assert_array_equal(each.predict_proba(X_new), model.predict_proba(X_new))
        np.testing.assert_array_equal(each.predict(X_new), model.predict(X_new))
        assert each.configurations == model.configurations and list(each.classes_) == list(model.classes_)
    return each


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", SPACE.algorithms)
def test_every_algorithm_round_trips_through_skops(algorithm, tiny, tmp_path):
    X, y, X_new = tiny
    _, params = SPACE.default_configuration(algorithm)
    small = {k: 10 for k in ("n_estimators", "max_iter") if k in params}  # fewer trees: seconds, same types
    try:
        SPACE.validate(algorithm, params | small)
        params = params | small
    except InvalidConfigurationError:  # a constant of the space
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = EnsembleModel([(algorithm, params)]).fit(X, y)
    _round_trip(model, tmp_path / "m.skops", X_new)


def test_an_ensemble_and_a_wide_knn_round_trip(tiny, tmp_path):
    X, y, X_new = tiny
    members = [SPACE.default_configuration(a) for a in ("lightgbm", "svm_rbf", "random_forest", "knn", "mlp")]
    _round_trip(EnsembleModel(members, weights=[3, 1, 1, 1, 2], combine="vote").fit(X, y),
                tmp_path / "ens.skops", X_new)
    rng = np.random.default_rng(0)  # 30 columns: scikit-learn's neighbours pick a ball tree
    wide = pd.DataFrame(rng.normal(size=(80, 30)), columns=[f"x{i}" for i in range(30)])
    knn = EnsembleModel([("knn", {"n_neighbors": 3, "weights": "distance", "p": 1})]).fit(wide, wide["x0"] > 0)
    _round_trip(knn, tmp_path / "knn.skops", wide)


def test_a_model_with_a_capped_identifier_column_round_trips(tmp_path):
    """One-hot's shared column of rare categories (more levels than MAX_ONE_HOT_LEVELS) is
    saved and loaded with the model: rare and unseen identifiers predict as before."""
    from metabo.evaluation.preprocessing import MAX_ONE_HOT_LEVELS

    rng = np.random.default_rng(1)
    n = 400
    who = np.array([f"id{i}" for i in rng.integers(0, 3 * MAX_ONE_HOT_LEVELS, size=n)])
    X = pd.DataFrame({"x": rng.normal(size=n), "who": pd.Categorical(who)})
    y = pd.Series(np.where(X["x"] + rng.normal(size=n) > 0, "yes", "no"))
    assert X["who"].nunique() > 2 * MAX_ONE_HOT_LEVELS
    model = EnsembleModel([SPACE.default_configuration("logistic_regression")]).fit(X, y)
    X_new = pd.DataFrame({"x": [0.1, -0.3, 2.0], "who": pd.Categorical(["id0", "never-seen", who[0]])})
    _round_trip(model, tmp_path / "ids.skops", X_new)


class _Payload:
    """Unpickling this creates the file ``marker``: a stand-in for any code a pickle can run."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.fixture
def crafted(tmp_path) -> tuple[Path, Path]:
    """A pickle whose loading creates ``marker``, saved under a model's name."""
    marker = tmp_path / "payload-ran"
    path = tmp_path / "model.joblib"
    path.write_bytes(pickle.dumps(_Payload(str(marker))))
    return path, marker


def test_a_crafted_pickle_is_refused_before_its_payload_runs(crafted, tmp_path, capsys):
    path, marker = crafted
    disguised = tmp_path / "model.skops"  # the name does not make it a skops file
    disguised.write_bytes(path.read_bytes())
    for candidate in (path, disguised):
        with pytest.raises(InputDataError, match="--trusted"):
            EnsembleModel.load(candidate)
        (tmp_path / "new.csv").write_text("a,b\n1,2\n")
        assert main(["predict", str(candidate), str(tmp_path / "new.csv")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and "runs code when it is loaded" in err
    assert not marker.exists()
    # the payload is real: trusting the file runs it (then it is no metabo model)
    with pytest.raises(InputDataError, match="not a metabo ensemble"):
        EnsembleModel.load(path, trusted=True)
    assert marker.exists()


class _Planted:
    """A type outside the allow-list; building it from a file would create ``marker``."""

    def __init__(self, marker: str = "") -> None:
        self.marker = marker

    def __getstate__(self):
        return {"marker": self.marker}

    def __setstate__(self, state):
        Path(state["marker"]).touch()
        self.__dict__.update(state)


def test_a_skops_file_naming_another_type_is_refused_naming_it(tiny, tmp_path, capsys):
    X, y, X_new = tiny
    model = EnsembleModel([SPACE.default_configuration("gaussian_nb")]).fit(X, y)
    marker = tmp_path / "built"
    model.pipelines_.append(_Planted(str(marker)))
    path = tmp_path / "planted.skops"
    sio.dump({"format": "metabo-ensemble", "version": 1, "pipelines": model.pipelines_}, path)
    name = f"{_Planted.__module__}._Planted"
    with pytest.raises(InputDataError, match=f"holds {name}, a type metabo does not trust"):
        EnsembleModel.load(path)
    with pytest.raises(InputDataError, match=name):  # save refuses to write a file load would refuse
        model.save(tmp_path / "again.skops")
    assert not (tmp_path / "again.skops").exists()
    (tmp_path / "new.csv").write_text("a,b\n1,2\n")
    assert main(["predict", str(path), str(tmp_path / "new.csv")]) == 2
    assert name in capsys.readouterr().err
    assert not marker.exists()


def test_joblib_only_when_trusted(tiny, tmp_path, capsys):
    X, y, X_new = tiny
    model = EnsembleModel([SPACE.default_configuration("lda")]).fit(X, y)
    with pytest.raises(InputDataError, match="runs code when it is loaded"):
        model.save(tmp_path / "m.joblib")
    assert list(tmp_path.iterdir()) == []
    model.save(path := tmp_path / "m.joblib", trusted=True)
    with pytest.raises(InputDataError, match="trusted"):
        EnsembleModel.load(path)
    np.testing.assert_array_equal(EnsembleModel.load(path, trusted=True).predict_proba(X_new),
                                  model.predict_proba(X_new))
    X_new.to_csv(data := tmp_path / "new.csv", index=False)
    assert main(["predict", str(path), str(data), "--trusted"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == list(model.predict(X_new))


def test_a_path_that_cannot_take_the_model_is_refused(tmp_path):
    with pytest.raises(InputDataError, match="no folder"):
        check_model_path(tmp_path / "nodir" / "m.skops")
    with pytest.raises(InputDataError, match="is a folder"):
        check_model_path(tmp_path)
    assert check_model_path(tmp_path / "m.skops") == tmp_path / "m.skops"
    assert check_model_path(str(tmp_path / "m.pkl"), trusted=True) == tmp_path / "m.pkl"
    assert os.listdir(tmp_path) == []
