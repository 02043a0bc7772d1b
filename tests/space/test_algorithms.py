"""Algorithm specs: Table 5.1 ranges, estimators that build, fit and give probabilities."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from metabo.exceptions import InvalidConfigurationError, UnknownAlgorithmError
from metabo.space import Categorical, Constant, Float, Integer
from metabo.space.algorithms import (
    ALGORITHMS,
    AlgorithmSpec,
    DecisionProbaClassifier,
    build_estimator,
    get_algorithm,
)

NAMES = list(ALGORITHMS)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """60 rows, 5 float features, 3 classes."""
    X, y = make_classification(60, 5, n_informative=3, n_redundant=1, n_classes=3, random_state=0)
    return X, y


def fit_quietly(estimator, X, y):
    """Fit single-threaded (OpenMP in hist_gradient_boosting slows down 100x on a busy
    machine otherwise), without the warnings that are the evaluator's to handle."""
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


def test_registry_is_read_only_and_complete():
    assert NAMES == [
        "knn", "svm_rbf", "linear_svm", "decision_tree", "random_forest", "adaboost", "gaussian_nb", "lda", "qda",
        "logistic_regression", "extra_trees", "hist_gradient_boosting", "lightgbm", "mlp",
        "full_decision_tree", "full_random_forest", "full_extra_trees", "gradient_boosting", "kernel_svm",
        "ovr_logistic_regression", "sgd_mlp", "perceptron", "xgboost", "catboost",
    ]  # fmt: skip
    with pytest.raises(TypeError):
        ALGORITHMS["new"] = ALGORITHMS["knn"]  # type: ignore[index]
    for name, spec in ALGORITHMS.items():
        assert isinstance(spec, AlgorithmSpec) and spec.name == name == spec.space.name
        assert spec.encoding in ("onehot", "ordinal") and callable(spec.build)


def test_get_algorithm_names_the_valid_ones():
    assert get_algorithm("knn") is ALGORITHMS["knn"]
    with pytest.raises(UnknownAlgorithmError, match=r"'xgb'.*'knn'.*'mlp'"):
        get_algorithm("xgb")
    with pytest.raises(KeyError):
        build_estimator("xgb", {}, seed=0)


@pytest.mark.parametrize("name", ["xgboost", "catboost"])
def test_the_boosters_see_codes_and_give_the_labels_back(name):
    """XGBoost needs labels 0..K-1: a training part whose classes are 2 and 5 (a fold that
    misses class 0, say) still fits, predicts its own labels, and one class predicts itself."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, 5, 2)
    model = build_estimator(name, ALGORITHMS[name].space.default_configuration(), seed=0).fit(X, y)
    assert list(model.classes_) == [2, 5] and model.predict_proba(X).shape == (60, 2)
    assert np.mean(model.predict(X) == y) > 0.9
    one = build_estimator(name, ALGORITHMS[name].space.default_configuration(), seed=0).fit(X, np.full(60, "a"))
    assert list(one.predict(X[:3])) == ["a"] * 3 and one.predict_proba(X[:3]).tolist() == [[1.0]] * 3


@pytest.mark.parametrize("name, params", [
    ("xgboost", {"n_estimators": 10, "max_depth": 1, "learning_rate": 0.01, "min_child_weight": 0.01,
                 "reg_lambda": 1e-3}),
    ("catboost", {"iterations": 10, "depth": 2, "learning_rate": 0.01}),
])
def test_the_boosters_split_on_the_categories_they_are_told_of(name, params):
    """Eight categories, the class 1 for codes {0, 3, 5, 6}: not a threshold on the code.
    Told the column is nominal (``categorical``), a depth-1 XGBoost tree partitions the
    categories and CatBoost's target statistics order them, so a few small steps fit the
    training rows exactly; read as a number, the same steps keep to about one threshold and
    cannot. A category unseen in training (the encoder's -1) is predicted without error."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 8, size=400)
    X = np.column_stack([codes.astype(float), rng.normal(size=400)])
    y = np.isin(codes, [0, 3, 5, 6]).astype(int)
    space = ALGORITHMS[name].space
    config = {**space.default_configuration(), **params}
    native = build_estimator(name, config, seed=0).set_params(categorical=(0,)).fit(X, y)
    as_numbers = build_estimator(name, config, seed=0).fit(X, y)
    assert np.mean(native.predict(X) == y) == 1.0
    assert np.mean(as_numbers.predict(X) == y) < 0.95
    unseen = np.array([[-1.0, 0.0], [3.0, 0.0]])
    assert native.predict_proba(unseen).shape == (2, 2) and native.predict(unseen)[1] == 1


def test_only_the_native_encoding_tells_the_estimator_its_nominal_columns():
    from metabo.data.dataset import Dataset
    from metabo.evaluation.preprocessing import PreprocessingSpec, make_preprocessor, nominal_positions, tell_nominal

    frame = pd.DataFrame({"colour": ["r", "g", "b", "r"] * 5, "x": np.arange(20.0), "size": ["s", "l"] * 10,
                          "y": [0, 1] * 10})
    data = Dataset.from_frame(frame, target="y", name="mixed", source="test")
    assert nominal_positions(data) == (1, 2)  # the numeric column first, then the nominal ones in order
    out = make_preprocessor(PreprocessingSpec(encoding="native"), data).fit_transform(data.X)
    assert out.shape == (20, 3) and set(out[:, 1]) == {0.0, 1.0, 2.0} and set(out[:, 2]) == {0.0, 1.0}
    model = build_estimator("xgboost", ALGORITHMS["xgboost"].space.default_configuration(), seed=0)
    assert tell_nominal(PreprocessingSpec(encoding="ordinal"), data, model).categorical == ()
    assert tell_nominal(PreprocessingSpec(encoding="native"), data, model).categorical == (1, 2)


@pytest.mark.parametrize(
    ("algorithm", "hp"),
    [
        ("knn", Integer("n_neighbors", 1, 30, default=5)),
        ("svm_rbf", Float("C", 1e-5, 1e5, log=True, default=1.0)),
        ("svm_rbf", Float("gamma", 1e-5, 1e5, log=True, default=1.0)),
        ("linear_svm", Float("C", 1e-5, 1e5, log=True, default=1.0)),
        ("decision_tree", Integer("max_depth", 1, 10, default=10)),
        ("decision_tree", Integer("min_samples_split", 2, 100, default=2)),
        ("decision_tree", Integer("min_samples_leaf", 2, 100, default=2)),
        ("random_forest", Integer("n_estimators", 1, 30, default=30)),
        ("random_forest", Integer("max_depth", 1, 10, default=10)),
        ("random_forest", Integer("min_samples_split", 2, 100, default=2)),
        ("random_forest", Integer("min_samples_leaf", 2, 100, default=2)),
        ("adaboost", Integer("n_estimators", 1, 100, default=30)),  # widened for OBOE's grid
        ("qda", Float("reg_param", 1e-3, 1.0, log=True, default=1e-3)),
        ("gaussian_nb", Constant("var_smoothing", 1e-9)),
        ("lda", Constant("solver", "svd")),
    ],
)
def test_table_5_1_ranges(algorithm, hp):
    assert ALGORITHMS[algorithm].space[hp.name] == hp


def test_dimensions():
    dims = {name: len(spec.space) for name, spec in ALGORITHMS.items()}
    assert dims == {
        "knn": 3, "svm_rbf": 2, "linear_svm": 1, "decision_tree": 4, "random_forest": 5, "adaboost": 2,
        "gaussian_nb": 1, "lda": 1, "qda": 1, "logistic_regression": 1, "extra_trees": 5,
        "hist_gradient_boosting": 5, "lightgbm": 7, "mlp": 3, "full_decision_tree": 1, "full_random_forest": 3,
        "full_extra_trees": 3, "gradient_boosting": 4, "kernel_svm": 5, "ovr_logistic_regression": 2, "sgd_mlp": 3,
        "perceptron": 1, "xgboost": 7, "catboost": 5,
    }  # fmt: skip


@pytest.mark.slow
@FAST
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**32 - 1))
def test_sampled_configs_validate_round_trip_build_fit_and_predict(data, name, seed):
    X, y = data
    spec = ALGORITHMS[name]
    params = spec.space.sample(seed)[0]
    spec.space.validate(params)
    decoded = spec.space.decode(spec.space.encode(params))
    assert list(decoded) == list(params)
    for k, v in params.items():
        assert type(decoded[k]) is type(v)
        assert math.isclose(decoded[k], v, rel_tol=1e-9) if isinstance(v, float) else decoded[k] == v
    estimator = fit_quietly(build_estimator(name, params, seed=seed % 1000), X, y)
    assert estimator.predict(X).shape == (60,)
    proba = estimator.predict_proba(X)
    assert proba.shape == (60, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    assert list(estimator.classes_) == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_default_configuration_builds_seeded_single_threaded_estimators(data, name):
    X, y = data
    params = ALGORITHMS[name].space.default_configuration()
    a = build_estimator(name, params, seed=3)
    b = build_estimator(name, params, seed=3)
    flat = a.get_params(deep=True)
    # LogisticRegression's n_jobs is deprecated (scikit-learn 1.8) and unused by lbfgs: left unset.
    assert all(v == 1 for k, v in flat.items() if k.endswith("n_jobs") and not k.startswith("estimator__")
               and name != "logistic_regression")
    if any(k.endswith("random_state") for k in flat):
        assert all(v == 3 for k, v in flat.items() if k.endswith("random_state"))
    fit_quietly(a, X, y)
    fit_quietly(b, X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    clone(a)  # scikit-learn compatible


@pytest.mark.parametrize("name", [n for n, s in ALGORITHMS.items() if s.handles_missing])
def test_handles_missing_means_nan_is_accepted(data, name):
    X, y = data
    X = X.copy()
    X[::4, 0] = np.nan
    params = ALGORITHMS[name].space.default_configuration()
    estimator = fit_quietly(build_estimator(name, params, seed=0), X, y)
    assert estimator.predict_proba(X).shape == (60, 3)


def test_build_validates_first():
    with pytest.raises(InvalidConfigurationError, match="'C'"):
        build_estimator("svm_rbf", {"C": 1e6, "gamma": 1.0}, seed=0)
    with pytest.raises(InvalidConfigurationError, match="'kernel'"):
        build_estimator("svm_rbf", {"C": 1.0, "gamma": 1.0, "kernel": "poly"}, seed=0)
    with pytest.raises(InvalidConfigurationError, match="'n_neighbors'"):
        build_estimator("knn", {"weights": "uniform", "p": 2}, seed=0)


def test_parameters_reach_the_estimator():
    est = build_estimator("mlp", {"n_units": 32, "alpha": 1e-3, "learning_rate_init": 1e-2}, seed=0)
    assert est.hidden_layer_sizes == (32,) and est.alpha == 1e-3 and est.max_iter == 200
    svm = build_estimator("svm_rbf", {"C": 2.0, "gamma": 0.5}, seed=0)
    assert isinstance(svm, DecisionProbaClassifier)
    assert svm.estimator.C == 2.0 and svm.estimator.gamma == 0.5 and svm.estimator.kernel == "rbf"
    lgbm = build_estimator("lightgbm", ALGORITHMS["lightgbm"].space.default_configuration(), seed=0)
    assert lgbm.subsample_freq == 1 and lgbm.num_leaves == 31


def test_decision_proba_binary_and_multiclass(data):
    X, y = data
    for labels in (y % 2, y):
        est = fit_quietly(build_estimator("linear_svm", {"C": 1.0}, seed=0), X, labels)
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)], est.predict(X))


def test_spaces_use_only_supported_types():
    for spec in ALGORITHMS.values():
        for hp in spec.space:
            assert isinstance(hp, (Float, Integer, Categorical, Constant))


def test_native_and_ordinal_share_one_prepared_split_and_unknown_encodings_are_refused():
    """The memo of a split's preprocessing (evaluate.prepared_split) is keyed by the columns
    made (preprocessing.encoder_kind): native's are ordinal's, so both reuse one entry."""
    from metabo.data.dataset import Dataset
    from metabo.evaluation.evaluate import prepared_split
    from metabo.evaluation.preprocessing import PreprocessingSpec, encoder_kind
    from metabo.evaluation.protocols import Holdout
    from metabo.exceptions import InputDataError

    frame = pd.DataFrame({"colour": ["r", "g", "b", "r"] * 5, "x": np.arange(20.0), "y": [0, 1] * 10})
    data = Dataset.from_frame(frame, target="y", name="mixed", source="test")
    split = Holdout().splits(data, 0)[0]
    native = prepared_split(PreprocessingSpec(encoding="native"), data, split)
    assert prepared_split(PreprocessingSpec(encoding="ordinal"), data, split) is native
    onehot = prepared_split(PreprocessingSpec(encoding="onehot"), data, split)
    assert onehot is not native and onehot.train.shape[1] == 4 and native.train.shape[1] == 2
    assert [encoder_kind(PreprocessingSpec(encoding=e)) for e in ("onehot", "ordinal", "native")] == [
        "onehot", "ordinal", "ordinal"]
    with pytest.raises(InputDataError, match="unknown encoding"):
        encoder_kind(PreprocessingSpec(encoding="binary"))  # type: ignore[arg-type]


@pytest.mark.parametrize("algorithm", ["svm_rbf", "kernel_svm"])
def test_the_kernel_svms_solver_stops_at_its_iteration_cap(algorithm, monkeypatch):
    """A large C on overlapping classes needs many SMO iterations (svm_rbf's: about 190,000
    here; scikit-learn's default -1 is no bound): with a cap the fit stops there, warns,
    and still predicts probabilities."""
    from sklearn.exceptions import ConvergenceWarning

    from metabo.space.algorithms import table51

    X, y = make_classification(n_samples=300, n_features=4, flip_y=0.3, random_state=0)
    config = {"C": 1e4, "gamma": 1.0} if algorithm == "svm_rbf" else {
        "C": 1e2, "kernel": "rbf", "coef0": 0.0, "gamma": "auto", "degree": 3}
    uncapped = build_estimator(algorithm, config, seed=0).fit(X, y)
    assert uncapped.estimator_.max_iter == table51.SVC_MAX_ITER >= uncapped.estimator_.n_iter_[0] > 100
    monkeypatch.setattr(table51, "SVC_MAX_ITER", 50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capped = build_estimator(algorithm, config, seed=0).fit(X, y)
    assert capped.estimator_.n_iter_[0] == 50
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    proba = capped.predict_proba(X)
    assert proba.shape == (300, 2) and np.allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_fast_learning_lightgbm_fits_a_many_class_table(seed):
    """LightGBM's Newton steps on near-pure leaves are bounded (LIGHTGBM_MAX_DELTA_STEP):
    at learning rate 0.5 on the ten digits, unbounded fits ended with training errors of
    .35-.67 (a diverged fit, found as a .39 test error on satimage); bounded, every row fits."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    params = {**ALGORITHMS["lightgbm"].space.default_configuration(), "learning_rate": 0.5, "n_estimators": 100,
              "num_leaves": 8, "min_child_samples": 5, "subsample": 0.8}
    model = build_estimator("lightgbm", params, seed=seed).fit(X, y)
    assert np.mean(model.predict(X) != y) < 0.01
