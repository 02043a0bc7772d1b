"""MetaSearchCV: scikit-learn's estimator checks, agreement with cross_val_score and
GridSearchCV, runs recorded in the knowledge base, warm starts, ensembles, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import loguniform, norm, randint
from sklearn.datasets import make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, ShuffleSplit, StratifiedKFold, cross_val_score
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from metabo.integrations.sklearn import MetaSearchCV
from metabo.kb.store import KnowledgeBase
from metabo.space.algorithms import default_cash_space

CV = StratifiedKFold(3, shuffle=True, random_state=0)
TREE_SPACE = {"max_depth": randint(1, 8), "min_samples_leaf": randint(1, 10)}


def data(seed: int = 0, n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=n, n_features=6, n_informative=4, n_classes=3, random_state=seed)


def tree_search(**kw: object) -> MetaSearchCV:
    kw = {"n_iter": 5, "cv": CV, "random_state": 0, **kw}
    return MetaSearchCV(DecisionTreeClassifier(random_state=0), TREE_SPACE, **kw)  # type: ignore[arg-type]


@pytest.mark.slow
@parametrize_with_checks([
    MetaSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": randint(1, 6)}, n_iter=2, cv=2,
                 random_state=0),
    MetaSearchCV(None, default_cash_space(["decision_tree", "gaussian_nb"]), n_iter=2, cv=2, random_state=0),
])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_cv_results_agree_with_cross_val_score():
    X, y = data()
    search = tree_search(ensemble=None).fit(X, y)  # RandomizedSearchCV's refit: the best candidate
    res = search.cv_results_
    assert search.n_splits_ == 3 and len(res["params"]) == 5
    for i, params in enumerate(res["params"]):
        scores = cross_val_score(DecisionTreeClassifier(random_state=0).set_params(**params), X, y, cv=CV)
        np.testing.assert_allclose([res[f"split{k}_test_score"][i] for k in range(3)], scores)
        assert res["mean_test_score"][i] == pytest.approx(scores.mean())
        assert res["param_max_depth"][i] == params["max_depth"]
    assert search.best_score_ == res["mean_test_score"].max() == res["mean_test_score"][search.best_index_]
    assert res["rank_test_score"][search.best_index_] == 1
    assert search.best_estimator_.get_params()["max_depth"] == search.best_params_["max_depth"]
    assert search.score(X, y) == pytest.approx(search.best_estimator_.score(X, y))
    for key in ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time", "std_test_score"):
        assert res[key].shape == (5,)


def test_same_scores_as_grid_search_on_the_same_candidates():
    X, y = data(1)
    search = tree_search(strategy="random", n_iter=6, scoring="balanced_accuracy").fit(X, y)
    grid = [{k: [v] for k, v in p.items()} for p in search.cv_results_["params"]]
    reference = GridSearchCV(DecisionTreeClassifier(random_state=0), grid, cv=CV, scoring="balanced_accuracy").fit(X, y)
    assert reference.cv_results_["params"] == search.cv_results_["params"]
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "split0_test_score", "split2_test_score"):
        np.testing.assert_allclose(search.cv_results_[key], reference.cv_results_[key])
    assert search.best_params_ == reference.best_params_


def test_determinism_under_random_state():
    X, y = data()
    a, b, c = (tree_search(random_state=s).fit(X, y) for s in (3, 3, 4))
    assert a.cv_results_["params"] == b.cv_results_["params"] != c.cv_results_["params"]
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])


def test_non_scalar_choices_and_failed_candidates_are_recorded(tmp_path):
    X, y = data()
    path = tmp_path / "kb.duckdb"
    space = {"max_depth": [None, 2], "criterion": ["gini", "no-such-criterion"]}
    search = MetaSearchCV(DecisionTreeClassifier(random_state=0), space, kb=path, strategy="random", n_iter=6,
                          cv=CV, random_state=1)
    with pytest.warns(UserWarning, match="4 configurations, fewer than n_iter=6"), \
            pytest.warns(FitFailedWarning, match="2 of 4 candidates failed"):
        search.fit(X, y)
    res = search.cv_results_
    assert {p["max_depth"] for p in res["params"]} <= {None, 2}
    failed = [p["criterion"] == "no-such-criterion" for p in res["params"]]
    assert any(failed) and not all(failed)
    assert np.isnan(res["mean_test_score"][failed]).all()
    with KnowledgeBase(path) as kb:
        runs = kb.query("SELECT status, value FROM runs WHERE source = ? ORDER BY created_at",
                        [f"session:{search.session_id_}"])
    assert (runs["status"] == "crash").tolist() == failed


def test_trials_recorded_in_the_knowledge_base(tmp_path):
    X, y = data()
    path = tmp_path / "kb.duckdb"
    search = tree_search(kb=path, strategy="random", dataset_name="toy").fit(X, y)
    with KnowledgeBase(path) as kb:
        runs = kb.query("SELECT r.value, c.params FROM runs r JOIN configurations c USING (config_id) "
                        "WHERE r.source = ? AND r.metric = 'error_rate'", [f"session:{search.session_id_}"])
        session = kb.query("SELECT status, dataset_id FROM sessions WHERE session_id = ?", [search.session_id_])
        n_meta = kb.query("SELECT count(*) AS n FROM meta_features WHERE dataset_id = ?", [search.dataset_id_])
    assert len(runs) == search.n_iter
    assert session["status"].item() == "done" and session["dataset_id"].item() == search.dataset_id_
    assert n_meta["n"].item() > 0
    expected = sorted(1 - search.cv_results_["mean_test_score"])
    np.testing.assert_allclose(sorted(runs["value"]), expected)


@pytest.mark.slow
def test_warm_start_begins_with_the_nearest_tasks_best_configurations(tmp_path):
    """A tiny knowledge base built by two searches; a knn warm start on a third dataset
    first evaluates those searches' best configurations (auto-sklearn's design)."""
    path = tmp_path / "kb.duckdb"
    space = {"C": loguniform(1e-3, 1e2)}
    bests = []
    for seed in (1, 2):
        X, y = data(seed)
        past = MetaSearchCV(LogisticRegression(), space, kb=path, strategy="random", n_iter=4, cv=CV,
                            scoring="neg_log_loss", random_state=seed).fit(X, y)
        bests.append(past.best_params_["C"])
    X, y = data(3)
    kw = {"kb": path, "n_iter": 2, "cv": CV, "scoring": "neg_log_loss", "random_state": 0}
    warm = MetaSearchCV(LogisticRegression(), space, strategy="knn", **kw).fit(X, y)
    cold = MetaSearchCV(LogisticRegression(), space, strategy="gp", **kw).fit(X, y)
    first = [p["C"] for p in warm.cv_results_["params"]]
    assert sorted(first) == pytest.approx(sorted(bests))
    assert cold.cv_results_["params"][0]["C"] not in first


@pytest.mark.slow
def test_a_users_estimator_reads_and_adds_to_the_runs_of_its_registered_algorithm(tmp_path):
    """LogisticRegression is the project's ``logistic_regression``: a knn warm start reads
    the runs ``tune`` stored for it on other tasks (it raised "no other task with runs
    ... ['LogisticRegression']" when the class name was the algorithm) and the search's
    own runs are stored under that name, so later tunes transfer them."""
    from metabo.space.algorithms import default_cash_space
    from metabo.tuning.tune import tune

    path = tmp_path / "kb.duckdb"
    space = default_cash_space().subset(["logistic_regression"])
    with KnowledgeBase(path) as kb:
        for seed in (1, 2):
            X, y = data(seed, n=80 + 60 * seed)  # sizes differ, so the meta-features do
            frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]).assign(y=y)
            tune(frame, target="y", kb=kb, space=space, strategy="random", budget=3, seed=seed, refit=False)
        stored = kb.query("SELECT DISTINCT algorithm FROM configurations")["algorithm"].tolist()
    assert stored == ["logistic_regression"]
    X, y = data(3)
    search = MetaSearchCV(LogisticRegression(), {"C": loguniform(1e-3, 1e2)}, kb=path, strategy="knn", n_iter=2,
                          cv=CV, random_state=0).fit(X, y)
    with KnowledgeBase(path) as kb:
        mine = kb.query("SELECT DISTINCT c.algorithm FROM runs r JOIN configurations c USING (config_id) "
                        "WHERE r.source = ?", [f"session:{search.session_id_}"])["algorithm"].tolist()
    assert mine == ["logistic_regression"]


def test_ensemble_weights_and_soft_vote():
    X, y = data()
    search = tree_search(n_iter=8, ensemble=5, ensemble_guard=False).fit(X, y)
    weights = search.ensemble_weights_
    assert search.ensemble_combine_ == "average" and not hasattr(search, "ensemble_decision_")
    assert set(weights) <= set(range(8)) and sum(weights.values()) == pytest.approx(1.0)
    members = [DecisionTreeClassifier(random_state=0).set_params(**search.cv_results_["params"][i]).fit(X, y)
               for i in weights]
    vote = sum(w * m.predict_proba(X) for w, m in zip(weights.values(), members))
    np.testing.assert_allclose(search.predict_proba(X), vote)
    np.testing.assert_array_equal(search.predict(X), search.classes_[vote.argmax(axis=1)])


def test_ensemble_is_the_bagged_selection_of_tune_ensemble():
    """The same out-of-fold probabilities give MetaSearchCV's ensemble and PostHocSelection's."""
    from metabo.ensembles.selection import select_from

    X, y = data()
    search = tree_search(n_iter=8, ensemble=5, ensemble_guard=False).fit(X, y)
    oof = {}
    for i, params in enumerate(search.cv_results_["params"]):
        P = np.zeros((len(y), 3))
        for train, test in CV.split(X, y):
            tree = DecisionTreeClassifier(random_state=0).set_params(**params)
            P[test] = tree.fit(X[train], y[train]).predict_proba(X[test])
        oof[i] = P
    expected = select_from(oof, y, max_size=5, n_bags=20, fraction=0.5, seed=0)
    assert search.ensemble_weights_ == pytest.approx(expected)


def test_ensemble_guard_keeps_the_single_best_when_an_ensemble_cannot_gain():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)  # one split is the whole tree, at every depth: all candidates agree
    search = MetaSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3, 4]}, n_iter=4, cv=CV,
                          ensemble=5, random_state=0).fit(X, y)
    decision = search.ensemble_decision_
    assert decision.kept == "single" and decision.gain == 0.0
    assert search.ensemble_weights_ == {search.best_index_: 1.0}
    single = DecisionTreeClassifier(random_state=0, max_depth=search.best_params_["max_depth"]).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), single.predict(X))
    # the single best kept: the estimator itself, as without an ensemble
    assert isinstance(search.best_estimator_, DecisionTreeClassifier)
    assert search.best_estimator_.max_depth == search.best_params_["max_depth"]


def test_the_default_ensemble_is_the_library_choice_of_tune():
    """ensemble='auto' (default) selects with the size tune uses, on the same library: the
    guard's decision equals OutOfFoldLibrary.choose on the candidates' out-of-fold
    probabilities, and the note says what was kept."""
    from sklearn.model_selection import cross_val_predict

    from metabo.ensembles.library import ENSEMBLE_SIZE, OutOfFoldLibrary

    X, y = data(n=150)
    search = tree_search(n_iter=6).fit(X, y)
    library = OutOfFoldLibrary(y, len(np.unique(y)), ensemble_size=ENSEMBLE_SIZE, seed=0)
    for i, params in enumerate(search.cv_results_["params"]):
        tree = DecisionTreeClassifier(random_state=0).set_params(**params)
        library.add(i, 1 - search.cv_results_["mean_test_score"][i],
                    cross_val_predict(tree, X, y, cv=CV, method="predict_proba"))
    expected = library.choose(search.best_index_)
    assert expected is not None and search.ensemble_decision_.kept == expected.kept
    assert search.ensemble_weights_ == pytest.approx(expected.weights)
    assert search.ensemble_note_ == expected.decision.summary


@pytest.mark.parametrize(("estimator", "cv", "why"), [
    (DecisionTreeClassifier(random_state=0), ShuffleSplit(3, test_size=0.3, random_state=0), "do not partition"),
    (LinearSVC(), CV, "LinearSVC has no predict_proba"),
])
def test_the_default_ensemble_steps_aside_when_it_cannot_be_formed(estimator, cv, why):
    """'auto' does not refuse what an explicit size refuses: no ensemble, and the note says why."""
    X, y = data()
    space = TREE_SPACE if isinstance(estimator, DecisionTreeClassifier) else {"C": [0.1, 1.0, 10.0]}
    search = MetaSearchCV(estimator, space, n_iter=3, cv=cv, random_state=0).fit(X, y)
    assert why in search.ensemble_note_ and not hasattr(search, "ensemble_weights_")
    assert type(search.best_estimator_) is type(estimator)
    with pytest.raises(ValueError, match="ensemble"):
        MetaSearchCV(estimator, space, n_iter=3, cv=cv, ensemble=5, random_state=0).fit(X, y)


def test_cash_search_with_nominal_columns_and_an_ensemble():
    X, y = data(n=90)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)])
    frame["colour"] = pd.Categorical(np.where(y == 0, "red", "blue"))
    frame.loc[::7, "x0"] = np.nan
    space = default_cash_space(["decision_tree", "gaussian_nb", "knn"])
    search = MetaSearchCV(search_space=space, n_iter=5, cv=CV, ensemble=3, random_state=0).fit(frame, y)
    assert set(search.cv_results_["param_algorithm"]) <= set(space.algorithms)
    assert all(p["algorithm"] in space.algorithms for p in search.cv_results_["params"])
    assert sum(search.ensemble_weights_.values()) == pytest.approx(1.0)
    assert search.predict_proba(frame).shape == (90, 3)
    assert search.score(frame, y) > 0.5


@pytest.mark.parametrize(("kw", "match"), [
    ({"strategy": "no-such-strategy"}, "unknown strategy"),
    ({"n_iter": -1}, "n_iter must be a positive integer"),
    ({"search_space": {"max_depth": "deep"}}, "expected a list of values"),
    ({"search_space": {"max_depth": []}}, "no choices"),
    ({"search_space": {"max_depth": norm()}}, "scipy.stats.norm is not supported"),
    ({"search_space": None}, "must be a non-empty dict"),
    ({"ensemble": 0}, "ensemble must be 'auto', None or a positive integer"),
    ({"ensemble": "yes"}, "ensemble must be 'auto', None or a positive integer"),
    ({"scoring": ["accuracy", "f1_macro"]}, "one scorer"),
])
def test_bad_input_raises_before_anything_is_stored(tmp_path, kw, match):
    path = tmp_path / "kb.duckdb"
    kw = {"kb": path, "strategy": "random", **kw}
    search = MetaSearchCV(DecisionTreeClassifier(), kw.pop("search_space", TREE_SPACE), **kw)
    with pytest.raises(ValueError, match=match):
        search.fit(*data())
    assert not path.exists()


def test_warm_strategy_needs_a_knowledge_base():
    with pytest.raises(ValueError, match="pass kb"):
        MetaSearchCV(DecisionTreeClassifier(), TREE_SPACE, strategy="rlgp").fit(*data())
