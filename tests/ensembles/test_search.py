"""tune_ensemble(): real searches on small datasets. The reported errors are the final
ensemble's, recomputed by hand from the kept probabilities (weighted vote or average);
the weights are a distribution over successful trials; the diversity is DivBO's eq. 3
over the distinct members; a seed fixes everything; the knowledge base holds every
trained model with its predictions; the refitted model is the ensemble found; ESMBO with
one replicate on the whole validation set is the base strategy's SMBO and its arg min."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from metabo.data.loaders import load_dataset
from metabo.ensembles import EnsembleModel, tune_ensemble
from metabo.ensembles.search import combined_error
from metabo.evaluation.protocols import Holdout, RefitOnTrainValid, class_codes
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id
from metabo.kb.predictions import get_predictions
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space(["gaussian_nb", "lda", "knn", "decision_tree", "logistic_regression"])
OPTIONS = {"posthoc": {}, "esmbo": {}, "eo": {"ensemble_size": 3}, "divbo": {"n_init": 3}}
HOLDOUT = {"cv": None, "guard": False}  # the searches' own protocol: one validation part, their own final ensemble


@pytest.fixture(scope="module")
def cancer():
    return load_dataset("sklearn:breast_cancer")


@pytest.fixture(scope="module")
def wine():
    return load_dataset("sklearn:wine")


@pytest.fixture(scope="module")
def results(cancer, wine):
    """One search per method: breast cancer (2 classes) and wine (3 classes)."""
    return {(method, name): tune_ensemble(data, method=method, budget=8, space=SPACE, seed=1, **HOLDOUT, **options)
            for method, options in OPTIONS.items() for name, data in (("cancer", cancer), ("wine", wine))}


def by_hand(weights: dict[int, float], probas: dict[int, np.ndarray], y: np.ndarray, combine: str,
            n_classes: int) -> float:
    """The ensemble's error rate without the library: each member votes its arg max class
    with its weight (ties: the lowest class), or the weighted probabilities' arg max."""
    if combine == "vote":
        counts = np.zeros((len(y), n_classes))
        for k, w in weights.items():
            counts[np.arange(len(y)), probas[k].argmax(axis=1)] += w
        top = counts.max(axis=1, keepdims=True)
        predicted = np.array([np.flatnonzero(row >= t - 1e-12)[0] for row, t in zip(counts, top[:, 0])])
    else:
        assert combine == "average"
        P = np.zeros_like(probas[next(iter(weights))], dtype=float)
        for k, w in weights.items():
            P += w * probas[k]
        predicted = P.argmax(axis=1)
    return float(np.mean(predicted != y))


def div_by_hand(probas: list[np.ndarray]) -> float:
    """Mean over distinct pairs of sqrt(2)/2 * the mean row-wise L2 distance (DivBO eq. 3)."""
    pairs = [np.sqrt(2) / 2 * np.mean(np.sqrt(((p - q) ** 2).sum(axis=1))) for p, q in combinations(probas, 2)]
    return float(np.mean(pairs)) if pairs else 0.0


@pytest.mark.slow
@pytest.mark.parametrize("method", list(OPTIONS))
@pytest.mark.parametrize("name", ["cancer", "wine"])
def test_errors_weights_and_diversity_are_those_of_the_final_ensemble(results, method, name):
    r = results[(method, name)]
    assert r.method == method and r.metric == "error_rate" and r.n_classes == (2 if name == "cancer" else 3)
    assert r.combine == ("vote" if method in ("esmbo", "eo") else "average")
    ok = {t.number for t in r.history.completed if t.ok}
    assert len(r.history.completed) == 8 and ok
    # every successful trial's predictions kept, on the validation and the test rows
    assert set(r.valid_probas) == set(r.test_probas) == ok
    assert all(P.shape == (len(r.y_valid), r.n_classes) for P in r.valid_probas.values())
    assert all(P.shape == (len(r.y_test), r.n_classes) for P in r.test_probas.values())
    # the weights: a distribution over successful trials
    assert r.weights and set(r.weights) <= ok
    assert all(w > 0 for w in r.weights.values()) and sum(r.weights.values()) == pytest.approx(1.0)
    if method == "eo":
        # at most 3 slots, uniform over their distinct members
        assert len(r.weights) <= 3 and all(w == pytest.approx(1 / len(r.weights)) for w in r.weights.values())
    # the errors: the ensemble's, recomputed without the library
    for probas, y, reported in ((r.valid_probas, r.y_valid, r.valid_error), (r.test_probas, r.y_test, r.test_error)):
        assert reported == pytest.approx(by_hand(r.weights, probas, y, r.combine, r.n_classes), abs=1e-12)
        assert reported == combined_error(r.weights, probas, y, combine=r.combine, metric="error_rate",
                                          n_classes=r.n_classes)
    # a trial's own validation error is its stored value
    for number in ok:
        assert r.history[number].value == pytest.approx(float(np.mean(r.valid_probas[number].argmax(1) != r.y_valid)))
    assert r.best.number == r.history.best().number
    assert r.diversity == pytest.approx(div_by_hand([r.valid_probas[k] for k in r.weights]), abs=1e-12)
    assert 0.0 <= r.diversity <= 1.0
    assert [(a, p, w) for a, p, w in r.members] == [
        (r.history[k].algorithm, dict(r.history[k].params), w) for k, w in r.weights.items()]
    assert r.model is None and r.refit_test_error is None


@pytest.mark.slow
def test_divbo_builds_a_diverse_ensemble_beyond_its_random_start(results):
    r = results[("divbo", "wine")]
    assert len(r.weights) >= 2 and r.diversity > 0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["esmbo", "divbo", "eo"])
def test_same_seed_same_search(wine, method):
    a, b = (tune_ensemble(wine, method=method, budget=7, space=SPACE, seed=3, **OPTIONS[method]) for _ in range(2))
    assert a.weights == b.weights
    assert [(t.algorithm, t.params) for t in a.history] == [(t.algorithm, t.params) for t in b.history]
    assert a.valid_error == b.valid_error and a.test_error == b.test_error


def test_every_trained_model_is_stored_with_its_predictions(tmp_path, cancer):
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        r = tune_ensemble(cancer, method="esmbo", budget=6, space=SPACE, kb=kb, seed=2, session_id="ens",
                          meta_features=False, **HOLDOUT)
        assert r.session_id == "ens" and r.dataset_id is not None
        runs = kb.query("SELECT run_id, config_id, status, value FROM runs "
                        "WHERE source = 'session:ens' AND metric = 'error_rate'")
        ok = [t for t in r.history.completed if t.ok]
        assert len(runs) == len(r.history.completed) == 6
        assert set(runs["config_id"]) == {t.config_id for t in r.history.completed}
        for t in ok:
            row = runs[runs["config_id"] == t.config_id].iloc[0]
            assert row["status"] == "ok" and row["value"] == pytest.approx(t.value)
            valid = get_predictions(kb, row["run_id"], split="valid")
            test = get_predictions(kb, row["run_id"], split="test")
            # stored as float32: exactly the kept probabilities rounded to float32
            np.testing.assert_array_equal(valid, r.valid_probas[t.number].astype(np.float32))
            np.testing.assert_array_equal(test, r.test_probas[t.number].astype(np.float32))
        status = kb.query("SELECT status FROM sessions WHERE session_id = 'ens'")["status"].iloc[0]
        assert status == "done"

        with pytest.raises(InputDataError, match="exists"):  # an ensemble search is not resumed
            tune_ensemble(cancer, method="esmbo", budget=8, space=SPACE, kb=kb, seed=2, session_id="ens",
                          meta_features=False)
        n = kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:ens' AND metric = 'error_rate'")
        assert n["n"].iloc[0] == 6


def test_refit_gives_the_ensemble_found_trained_on_training_and_validation(wine):
    r = tune_ensemble(wine, method="posthoc", budget=6, space=SPACE, seed=4, refit=True, **HOLDOUT)
    assert isinstance(r.model, EnsembleModel) and r.model.combine == r.combine
    merged: dict[str, list] = {}  # identical configurations are one member of the model
    for algorithm, params, weight in r.members:
        key = config_id(algorithm, params)
        merged[key] = [algorithm, params, merged[key][2] + weight] if key in merged else [algorithm, params, weight]
    configurations = r.model.configurations
    assert [(c["algorithm"], c["params"]) for c in configurations] == [(a, p) for a, p, _ in merged.values()]
    assert [c["weight"] for c in configurations] == pytest.approx([w for _, _, w in merged.values()])
    assert r.refit_test_error is not None and 0.0 <= r.refit_test_error <= 1.0
    # the refitted model's error on the common test rows
    split = RefitOnTrainValid(Holdout(0.6, 0.2, 0.2)).splits(wine, 4)[0]
    assert np.array_equal(np.sort(split.test_idx), np.sort(Holdout(0.6, 0.2, 0.2).splits(wine, 4)[0].test_idx))
    codes = r.model.predict_codes(wine.X.iloc[split.test_idx])
    assert r.refit_test_error == pytest.approx(float(np.mean(codes != class_codes(wine)[split.test_idx])))
    np.testing.assert_allclose(r.model.predict_proba(wine.X).sum(axis=1), 1.0)


def test_bad_input(tmp_path, wine):
    with pytest.raises(InputDataError, match="unknown ensemble method"):
        tune_ensemble(wine, method="bagging", budget=5, space=SPACE)
    with pytest.raises(InputDataError, match="budget"):
        tune_ensemble(wine, method="posthoc", budget=0, space=SPACE)
    with pytest.raises(InputDataError, match="budget"):
        tune_ensemble(wine, method="posthoc", budget=True, space=SPACE)
    with pytest.raises(InputDataError, match="knowledge base"):
        tune_ensemble(wine, method="esmbo", budget=5, space=SPACE, strategy="rlgp")
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        tune_ensemble(wine, method="posthoc", budget=2, space=SPACE, kb=kb, session_id="taken", meta_features=False)
        with pytest.raises(InputDataError, match="taken"):
            tune_ensemble(wine, method="divbo", budget=4, space=SPACE, kb=kb, session_id="taken",
                          meta_features=False)


@pytest.mark.slow
def test_esmbo_with_one_replicate_on_the_validation_set_is_smbo_and_its_arg_min(cancer):
    r = tune_ensemble(cancer, method="esmbo", budget=8, space=SPACE, strategy="gp", seed=5, n_replicates=1,
                      bootstrap=False, combine="average", **HOLDOUT)
    ok = [t for t in r.history.completed if t.ok]
    best = min(ok, key=lambda t: (t.value, t.number))  # lowest validation error, the earliest among ties
    assert r.weights == {best.number: 1.0}
    assert r.best.number == best.number and r.diversity == 0.0
    assert r.valid_error == pytest.approx(best.value) and r.test_error == pytest.approx(best.test_value)
    # the base GP-BO saw the same values as plain SMBO: the same trials in the same order
    smbo = tune(cancer, budget=8, space=SPACE, strategy="gp", seed=5, cv=None)
    assert [(t.algorithm, t.params) for t in r.history] == [(t.algorithm, t.params) for t in smbo.history]


def test_options_of_another_search_and_a_shared_instance_are_refused():
    from metabo.ensembles.search import make_search
    from metabo.strategies import GPBO
    from metabo.tuning.ensemble import base_factory

    y = np.array([0, 1, 0, 1])
    with pytest.raises(InputDataError, match="loss"):
        make_search("esmbo", lambda s: GPBO(seed=s), y, 2, budget=4, seed=0, loss="c_bound")
    with pytest.raises(InputDataError, match="n_replicates"):
        make_search("divbo", lambda s: GPBO(seed=s), y, 2, budget=4, seed=0, n_replicates=2)
    factory = base_factory(GPBO(seed=0), None, None, None, metric="error_rate")
    with pytest.raises(InputDataError, match="several replicates"):
        make_search("esmbo", factory, y, 2, budget=4, seed=0, n_replicates=2)


@pytest.fixture(scope="module")
def cross_validated(wine):
    """A post-hoc search on 3-fold cross-validation with the guard, and ESMBO's."""
    return {m: tune_ensemble(wine, method=m, budget=6, space=SPACE, seed=2, cv=3, refit=True, **OPTIONS[m])
            for m in ("posthoc", "esmbo")}


@pytest.mark.parametrize("method", ["posthoc", "esmbo"])
def test_cross_validated_search_selects_on_out_of_fold_predictions(wine, cross_validated, method):
    """Every non-test row is a selection row once; a trial's selection probabilities are its
    fold models' predictions on their own validation folds, its test probabilities their
    mean; the deployed model is the kept ensemble refitted on the 80% and scored on the 20%."""
    from metabo.evaluation.evaluate import evaluate
    from metabo.evaluation.protocols import KFold

    r = cross_validated[method]
    protocol = KFold(3, test=0.2)
    splits = protocol.splits(wine, 2)
    test = splits[0].test_idx
    rows = np.concatenate([s.valid_idx for s in splits])
    assert r.cv == 3 and len(rows) == len(set(rows)) == wine.n_instances - len(test)
    codes = class_codes(wine)
    np.testing.assert_array_equal(r.y_valid, codes[rows])
    np.testing.assert_array_equal(r.y_test, codes[test])
    np.testing.assert_array_equal(r.test_idx, test)
    t = next(t for t in r.history.completed if t.ok)
    folds = evaluate(t.algorithm, t.params, wine, protocol=protocol, seed=2)
    np.testing.assert_allclose(r.valid_probas[t.number], np.concatenate([e.valid_proba for e in folds]))
    np.testing.assert_allclose(r.test_probas[t.number], np.mean([e.test_proba for e in folds], axis=0))
    assert t.value == pytest.approx(np.mean([e.valid["error_rate"] for e in folds]))
    # the guard decided, and the result is what it kept
    g = r.guard
    assert g is not None and r.weights == g.weights and r.combine == g.combine
    if g.kept == "single":
        assert len(r.weights) == 1
    else:
        assert r.weights == r.search_weights and g.gain > g.se
    assert r.valid_error == combined_error(r.weights, r.valid_probas, r.y_valid, combine=r.combine,
                                           metric="error_rate", n_classes=r.n_classes)
    # the deployed model: refitted on every non-test row, scored on the test rows
    assert r.refit_test_error == pytest.approx(float(np.mean(r.model.predict_codes(wine.X.iloc[test]) != codes[test])))
