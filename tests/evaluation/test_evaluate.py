"""evaluate / to_run_rows / record with an injected factory, and the real registry."""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from metabo.data.dataset import Dataset
from metabo.evaluation.evaluate import Evaluation, evaluate, to_run_rows
from metabo.evaluation.preprocessing import (
    MAX_ONE_HOT_LEVELS,
    MISSING,
    PreprocessingSpec,
    make_pipeline,
    make_preprocessor,
)
from metabo.evaluation.protocols import Holdout, KFold, class_codes
from metabo.exceptions import DataQualityError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb import KnowledgeBase
from metabo.kb.runs import record

METRICS = ("error_rate", "balanced_error_rate", "log_loss", "one_minus_auc")


class _Boom(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        raise RuntimeError("cannot fit this")


class _Sleepy(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        time.sleep(30)
        return self


class _Hog(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.block_ = np.ones(2**27)  # 1 GiB
        return self


def toy_factory(algorithm, params, seed):
    """logreg (C > 0, max_iter), tree, hgb, and estimators that crash, hang or hog memory."""
    if algorithm == "logreg":
        unknown = set(params) - {"C", "max_iter"}
        if unknown:
            raise InvalidConfigurationError(f"logreg has no hyperparameter(s) {sorted(unknown)}")
        if params.get("C", 1.0) <= 0:
            raise InvalidConfigurationError(f"C must be > 0, got {params['C']}")
        return PreprocessingSpec(needs_scaling=True), LogisticRegression(random_state=seed, **params)
    if algorithm == "tree":
        return PreprocessingSpec(encoding="ordinal"), DecisionTreeClassifier(random_state=seed, **params)
    if algorithm == "hgb":
        spec = PreprocessingSpec(encoding="ordinal", handles_missing=True)
        return spec, HistGradientBoostingClassifier(random_state=seed, max_iter=20, **params)
    estimators = {"boom": _Boom, "sleepy": _Sleepy, "hog": _Hog}
    if algorithm not in estimators:
        raise UnknownAlgorithmError(f"unknown algorithm {algorithm!r}")
    return PreprocessingSpec(), estimators[algorithm]()


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as store:
        yield store


def _runs(kb):
    return kb.query(
        "SELECT c.algorithm, c.params, r.* FROM runs r JOIN configurations c USING (config_id) "
        "ORDER BY c.algorithm, r.metric"
    )


def test_failures_are_recorded_with_their_status_and_the_batch_goes_on(kb, mixed):
    did = kb.add_dataset(mixed)
    batch = [
        ("logreg", {"C": 1.0}), ("boom", {}), ("sleepy", {}), ("hog", {}),
        ("logreg", {"C": -1.0}), ("tree", {"max_depth": 3}),
    ]
    start = time.perf_counter()
    for algorithm, params in batch:
        evs = evaluate(algorithm, params, mixed, factory=toy_factory, time_limit=1.0, memory_limit_mb=300)
        assert len(evs) == 1
        record(kb, evs, dataset_id=did, source="session:test")
    assert time.perf_counter() - start < 8
    runs = _runs(kb)
    assert len(runs) == len(batch) * 8  # 4 metrics on valid + 4 on test
    by_config = runs.groupby(["algorithm", "params"])
    status = {k: set(g["status"]) for k, g in by_config}
    assert status[("logreg", '{"C":1.0}')] == {"ok"}
    assert status[("tree", '{"max_depth":3}')] == {"ok"}
    assert status[("boom", "{}")] == {"crash"}
    assert status[("sleepy", "{}")] == {"timeout"}
    assert status[("hog", "{}")] == {"memout"}
    assert status[("logreg", '{"C":-1.0}')] == {"crash"}
    failed = runs[runs["status"] != "ok"]
    assert failed["value"].isna().all() and failed["message"].notna().all()
    invalid = runs[runs["params"] == '{"C":-1.0}']
    assert invalid["message"].str.startswith("InvalidConfigurationError: C must be > 0").all()
    assert runs.loc[runs["algorithm"] == "boom", "message"].iloc[0] == "RuntimeError: cannot fit this"
    ok = runs[runs["status"] == "ok"]
    assert ok["value"].notna().all() and (ok["fit_seconds"] >= 0).all()
    assert set(runs["fidelity"]) == {144.0}  # 0.6 * 240 training rows
    assert set(runs["metric"]) == set(METRICS) | {f"test_{m}" for m in METRICS}


def test_predictions_are_stored_on_the_error_rate_run_and_read_back(kb, mixed):
    did = kb.add_dataset(mixed)
    (ev,) = evaluate("logreg", {"C": 0.5}, mixed, factory=toy_factory)
    assert ev.valid_proba.shape == (48, 2) and ev.test_proba.shape == (48, 2)
    assert record(kb, [ev], dataset_id=did, source="s") == 8
    stored = kb.query(
        "SELECT r.run_id, r.metric, p.split FROM predictions p JOIN runs r USING (run_id) ORDER BY p.split"
    )
    assert stored["metric"].tolist() == ["error_rate", "error_rate"]
    assert stored["split"].tolist() == ["test", "valid"]
    run_id = stored["run_id"].iloc[0]
    np.testing.assert_allclose(kb.get_predictions(run_id, split="valid"), ev.valid_proba, atol=1e-6)
    np.testing.assert_allclose(kb.get_predictions(run_id, split="test"), ev.test_proba, atol=1e-6)
    # The stored probabilities reproduce the stored error rate.
    (s,) = Holdout().splits(mixed, 0)
    err = np.mean(kb.get_predictions(run_id).argmax(1) != class_codes(mixed)[s.valid_idx])
    assert err == pytest.approx(ev.valid["error_rate"])
    # Idempotent: the same evaluation again adds no run and keeps one prediction per split.
    assert record(kb, [ev], dataset_id=did, source="s") == 0
    assert kb.query("SELECT count(*) AS n FROM predictions")["n"].iloc[0] == 2


def test_predictions_follow_the_first_metric_without_error_rate(kb, mixed):
    did = kb.add_dataset(mixed)
    evs = evaluate("logreg", {}, mixed, factory=toy_factory, metrics=("log_loss", "one_minus_auc"))
    record(kb, evs, dataset_id=did, source="s")
    stored = kb.query("SELECT DISTINCT r.metric FROM predictions p JOIN runs r USING (run_id)")
    assert stored["metric"].tolist() == ["log_loss"]


def test_without_keep_predictions_nothing_is_stored(kb, mixed):
    did = kb.add_dataset(mixed)
    (ev,) = evaluate("logreg", {}, mixed, factory=toy_factory, keep_predictions=False)
    assert ev.valid_proba is None and ev.test_proba is None and ev.ok
    record(kb, [ev], dataset_id=did, source="s")
    assert kb.query("SELECT count(*) AS n FROM predictions")["n"].iloc[0] == 0


def test_holdout_values_are_reproducible_for_a_seed(mixed):
    a = evaluate("tree", {}, mixed, factory=toy_factory, seed=3)[0]
    b = evaluate("tree", {}, mixed, factory=toy_factory, seed=3)[0]
    c = evaluate("tree", {}, mixed, factory=toy_factory, seed=4)[0]
    assert a.valid == b.valid and a.test == b.test
    np.testing.assert_array_equal(a.valid_proba, b.valid_proba)
    assert a.split_seed == 3 and c.split_seed == 4
    assert not np.array_equal(a.valid_proba, c.valid_proba)


def test_kfold_gives_one_evaluation_per_fold_and_no_test_rows(mixed):
    evs = evaluate("logreg", {}, mixed, factory=toy_factory, protocol=KFold(k=3))
    assert [e.fold for e in evs] == [0, 1, 2] and all(e.test is None for e in evs)
    rows = to_run_rows(evs, dataset_id="d", source="s")
    assert len(rows) == 12 and set(rows["metric"]) == set(METRICS)
    assert set(rows["fidelity"]) == {160.0}


def test_an_invalid_configuration_fails_every_split_without_fitting(mixed):
    evs = evaluate("logreg", {"gamma": 1}, mixed, factory=toy_factory, protocol=KFold(k=3))
    assert [e.status for e in evs] == ["crash"] * 3
    assert all("gamma" in e.message and math.isnan(e.valid["error_rate"]) for e in evs)
    assert all(math.isnan(e.fit_seconds) for e in evs)


def test_caller_mistakes_raise(mixed):
    flagged = dataclasses.replace(mixed, flags={"lost_decimals": ("a",)})
    with pytest.raises(DataQualityError):
        evaluate("logreg", {}, flagged, factory=toy_factory)
    with pytest.raises(UnknownAlgorithmError):
        evaluate("no_such_algorithm", {}, mixed, factory=toy_factory)


def test_warnings_are_captured_and_kept_in_the_message(mixed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (ev,) = evaluate("logreg", {"max_iter": 1}, mixed, factory=toy_factory)
    assert ev.ok and "ConvergenceWarning" in ev.message
    assert not caught


def test_classes_missing_from_training_get_zero_probability(three_class):
    lonely = list(three_class.y.cat.categories).index("lonely")
    evs = evaluate("tree", {}, three_class, factory=toy_factory, protocol=KFold(k=5))
    assert all(e.ok and e.valid_proba.shape[1] == 4 for e in evs)
    codes = class_codes(three_class)
    held = [e for e, s in zip(evs, KFold(k=5).splits(three_class, 0)) if lonely in codes[s.valid_idx]]
    assert len(held) == 1 and np.all(held[0].valid_proba[:, lonely] == 0.0)
    assert np.isfinite(held[0].valid["log_loss"])


def test_preprocessing_handles_missing_values_and_nominal_columns(mixed):
    assert mixed.X["a"].isna().any() and mixed.X["b"].isna().any()
    for algorithm in ("logreg", "tree", "hgb"):
        (ev,) = evaluate(algorithm, {}, mixed, factory=toy_factory)
        assert ev.ok, ev.message
        assert ev.valid["error_rate"] < 0.3


def test_preprocessing_learns_from_training_rows_only(mixed):
    (s,) = Holdout().splits(mixed, 0)
    pre = make_preprocessor(PreprocessingSpec(needs_scaling=True), mixed)
    pre.fit(mixed.X.iloc[s.train_idx])
    imputer = pre.named_transformers_["numeric"].named_steps["impute"]
    assert imputer.statistics_[0] == pytest.approx(np.nanmedian(mixed.X["a"].iloc[s.train_idx]))
    out = pre.transform(mixed.X.iloc[s.valid_idx])
    assert np.isfinite(out).all()
    encoder = pre.named_transformers_["nominal"].named_steps["encode"]
    assert MISSING in encoder.categories_[0]


def test_unseen_categories_are_ignored_or_minus_one(mixed):
    train = mixed.X.iloc[:100]
    train = train.assign(b=pd.Categorical(np.where(train["b"].isna(), "x", train["b"].astype(object))))
    new = mixed.X.iloc[:2].assign(b=pd.Categorical(["w", "w"]), a=[np.nan, 1.0])
    onehot = make_preprocessor(PreprocessingSpec(), mixed).fit(train)
    cols = [i for i, n in enumerate(onehot.get_feature_names_out()) if n.startswith("nominal__")]
    assert np.all(onehot.transform(new)[:, cols] == 0.0)
    ordinal = make_preprocessor(PreprocessingSpec(encoding="ordinal", handles_missing=True), mixed).fit(train)
    out = ordinal.transform(new)
    names = list(ordinal.get_feature_names_out())
    assert np.all(out[:, names.index("nominal__b")] == -1.0)
    assert np.isnan(out[0, names.index("numeric__a")])  # passed through for the model


def test_one_hot_of_an_identifier_like_column_is_capped_and_a_few_levels_are_not():
    rng = np.random.default_rng(0)
    n = 2_000
    ids = rng.zipf(1.3, size=n) % 500  # a few frequent identifiers, hundreds of rare ones
    frame = pd.DataFrame({"who": pd.Categorical([f"s{i}" for i in ids]),
                          "kind": pd.Categorical(rng.choice(["a", "b", "c"], size=n)),
                          "y": rng.choice(["p", "q"], size=n)})
    ds = Dataset.from_frame(frame, "y", name="ids", source="test")
    pre = make_preprocessor(PreprocessingSpec(), ds).fit(ds.X)
    names = list(pre.get_feature_names_out())
    who = [i for i, c in enumerate(names) if c.startswith("nominal__who")]
    kind = [i for i, c in enumerate(names) if c.startswith("nominal__kind")]
    assert ds.X["who"].nunique() > 3 * MAX_ONE_HOT_LEVELS and len(who) == MAX_ONE_HOT_LEVELS
    assert len(kind) == 3  # a feature of a few levels keeps one column each, as before the cap
    out = pre.transform(ds.X)
    assert np.all(out[:, who].sum(axis=1) == 1.0) and np.all(out[:, kind].sum(axis=1) == 1.0)
    # the most frequent identifier keeps its own column; a rare one and an unseen one share the last
    top = ds.X["who"].value_counts().index[0]
    rare = ds.X["who"].value_counts().index[-1]
    new = pd.DataFrame({"who": pd.Categorical([top, rare, "never-seen"]), "kind": pd.Categorical(["a"] * 3)})
    coded = pre.transform(new)[:, who]
    shared = names[who[int(np.argmax(coded[1]))]]
    assert shared.endswith("infrequent_sklearn") and np.array_equal(coded[1], coded[2])
    assert not np.array_equal(coded[0], coded[1])


def test_make_pipeline_ends_with_the_estimator(mixed):
    est = LogisticRegression()
    pipe = make_pipeline(PreprocessingSpec(), mixed, est)
    assert pipe[-1] is est and pipe.steps[0][0] == "preprocess"


def test_run_rows_leave_out_undefined_metrics_of_successful_runs():
    ev = Evaluation(
        algorithm="tree", params={}, fold=0, repeat=0, split_seed=0, fidelity=10, status="ok",
        message=None, fit_seconds=0.1, predict_seconds=0.01,
        valid={"error_rate": 0.0, "one_minus_auc": math.nan}, test=None,
    )
    rows = to_run_rows([ev], dataset_id="d", source="s")
    assert rows["metric"].tolist() == ["error_rate"]


# ---------------------------------------------------------------------- the real registry
@pytest.fixture
def registry():
    import metabo.space.algorithms as module

    return module


ALGORITHMS = (
    "knn", "svm_rbf", "linear_svm", "logistic_regression", "decision_tree", "random_forest",
    "extra_trees", "adaboost", "hist_gradient_boosting", "lightgbm", "gaussian_nb", "lda", "qda", "mlp",
    "xgboost", "catboost",
)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_registered_algorithms_evaluate_at_their_defaults(registry, algorithm, mixed):
    params = registry.get_algorithm(algorithm).space.default_configuration()
    (ev,) = evaluate(algorithm, params, mixed)
    assert ev.status == "ok", ev.message
    assert ev.valid_proba.shape == (48, 2)
    assert np.allclose(ev.valid_proba.sum(axis=1), 1.0)


def test_registry_invalid_configuration_is_a_crash(registry, mixed, kb):
    (ev,) = evaluate("knn", {"no_such_hyperparameter": 1}, mixed)
    assert ev.status == "crash" and ev.message.startswith("InvalidConfigurationError")
    did = kb.add_dataset(mixed)
    assert record(kb, [ev], dataset_id=did, source="s") == 8


def test_registry_unknown_algorithm_raises(registry, mixed):
    with pytest.raises(UnknownAlgorithmError):
        evaluate("no_such_algorithm", {}, mixed)


class _ThreadProbe(ClassifierMixin, BaseEstimator):
    """Reports, as a warning of its fit, the most threads any BLAS / OpenMP pool may use."""

    def fit(self, X, y):
        from threadpoolctl import threadpool_info

        warnings.warn(f"pool threads {max(i['num_threads'] for i in threadpool_info())}", stacklevel=2)
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), 1 / len(self.classes_))


@pytest.mark.parametrize("time_limit", [None, 30.0])  # in this process, and in a forked worker
def test_fits_run_within_the_thread_limit(mixed, time_limit):
    """evaluate sets the limit before forking (a worker inherits it; setting it in each
    worker made OpenBLAS rebuild its thread server, about 80 ms a fold)."""
    from metabo.evaluation.factories import EstimatorFactory

    evs = evaluate("probe", {}, mixed, protocol=KFold(2), time_limit=time_limit, threads=1,
                   factory=EstimatorFactory(_ThreadProbe, seed_param=None))
    assert [ev.status for ev in evs] == ["ok", "ok"]
    assert all("pool threads 1" in ev.message for ev in evs), [ev.message for ev in evs]


@pytest.mark.parametrize("numeric_only", [False, True])
@pytest.mark.parametrize("algorithm", ["logreg", "tree", pytest.param("hgb", marks=pytest.mark.slow)])
def test_preprocessing_once_per_split_gives_what_the_whole_pipeline_gives(algorithm, numeric_only, mixed):
    """evaluate fits each split's preprocessing once (kept on the dataset) and the
    estimator on its output: the probabilities equal those of the pipeline fitted whole
    (on a table of numbers alone, the split's rows go in as a float matrix)."""
    if numeric_only:
        frame = mixed.X.drop(columns="b").assign(n=np.arange(mixed.n_instances) % 5, t=mixed.y)
        mixed = Dataset.from_frame(frame, "t", name="numbers", source="test")
        assert set(mixed.feature_kinds) == {"numeric"}
    protocol = KFold(k=3, test=0.2)
    for _ in range(2):  # the second time from the dataset's memo
        evs = evaluate(algorithm, {}, mixed, factory=toy_factory, protocol=protocol, seed=3)
        for ev, split in zip(evs, protocol.splits(mixed, 3)):
            spec, est = toy_factory(algorithm, {}, 3)
            pipe = make_pipeline(spec, mixed, est).fit(mixed.X.iloc[split.train_idx],
                                                       class_codes(mixed)[split.train_idx])
            assert np.array_equal(ev.valid_proba, pipe.predict_proba(mixed.X.iloc[split.valid_idx]))
            assert np.array_equal(ev.test_proba, pipe.predict_proba(mixed.X.iloc[split.test_idx]))
    kept = [k for k in mixed.__dict__["_memo"] if k[0] == "prepared"]
    assert len(kept) == 3  # one per split for this algorithm's needs, reused the second time


def test_a_preprocessing_failure_is_a_crash_of_the_split(mixed, monkeypatch):
    import importlib

    ev_module = importlib.import_module("metabo.evaluation.evaluate")

    def broken(spec, dataset, split):
        raise ValueError("cannot encode")

    monkeypatch.setattr(ev_module, "prepared_split", broken)
    (ev,) = evaluate("logreg", {}, mixed, factory=toy_factory)
    assert ev.status == "crash" and "cannot encode" in ev.message


def test_a_pickled_dataset_leaves_its_memo_behind(mixed):
    import pickle

    evaluate("logreg", {}, mixed, factory=toy_factory)
    assert mixed.__dict__.get("_memo")
    copy = pickle.loads(pickle.dumps(mixed))
    assert "_memo" not in copy.__dict__ and copy.X.equals(mixed.X)
