"""tune(): real evaluations on iris, recorded through the evaluation path, resumable."""

from __future__ import annotations

import pytest

from metabo.data.loaders import load_dataset
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space


@pytest.fixture(scope="module")
def iris():
    return load_dataset("sklearn:iris")


def test_tune_reshuffled_records_every_metric_and_resumes(kb_path, iris):
    space = default_cash_space(["knn", "decision_tree"])
    seen = []
    with KnowledgeBase(kb_path) as kb:
        result = tune(iris, budget=3, space=space, strategy="random", kb=kb, seed=4, reshuffle=True,
                      session_id="t", meta_features=False, progress=seen.append)
        assert [r.number for r in seen] == [0, 1, 2]
        assert result.best.config_id in {r.config_id for r in result.history}
        assert 0 <= result.validation_error <= 1 and result.test_error is not None
        runs = kb.query("SELECT config_id, metric, repeat, split_seed, fidelity, source FROM runs")
        assert set(runs["source"]) == {"session:t"}
        assert {"error_rate", "test_error_rate", "log_loss", "test_log_loss"} <= set(runs["metric"])
        primary = runs[runs["metric"] == "error_rate"].sort_values("repeat")
        assert primary["repeat"].tolist() == [0, 1, 2]  # a new split per trial (thesis 3.2.1)
        assert set(primary["split_seed"]) == {4} and (primary["fidelity"] == 90).all()
        assert kb.stats()["predictions"] == 6  # valid and test probabilities of each trial
        status = kb.query("SELECT status FROM sessions WHERE session_id = 't'")["status"].iloc[0]
        assert status == "done"

        more = tune(iris, budget=4, space=space, strategy="random", kb=kb, seed=4, reshuffle=True,
                    session_id="t", meta_features=False)
        assert len(more.history.completed) == 4
        assert [r.config_id for r in more.history][:3] == [r.config_id for r in result.history]
        assert kb.query("SELECT count(*) AS n FROM runs WHERE metric = 'error_rate'")["n"].iloc[0] == 4


def test_tune_without_store_and_posterior_mean(iris):
    space = default_cash_space(["knn"])
    result = tune(iris, budget=4, space=space, strategy="random", seed=0, select="posterior_mean")
    assert result.session_id.startswith("random-") and result.dataset_id is None
    assert result.algorithm == "knn" and result.select == "posterior_mean"
    with pytest.raises(InputDataError, match="budget"):
        tune(iris, budget=0, space=space)


def test_refit_scores_the_selected_configuration_trained_on_training_and_validation(iris):
    from metabo.evaluation import evaluate
    from metabo.evaluation.protocols import KFold, RefitOnTrainValid

    space = default_cash_space(["knn", "lda"])
    result = tune(iris, budget=3, space=space, strategy="random", seed=2, refit=True)
    assert result.cv == 5  # iris is small: cross-validated, the refit on all 80% of the non-test rows
    expected = evaluate(result.algorithm, result.params, iris, protocol=RefitOnTrainValid(KFold(5, test=0.2)),
                        seed=2, keep_predictions=False)[0].test["error_rate"]
    assert result.refit_test_error == pytest.approx(expected)
    assert result.model is not None and result.model.configurations[0]["algorithm"] == result.algorithm
    bare = tune(iris, budget=3, space=space, strategy="random", seed=2, refit=False)
    assert bare.refit_test_error is None and bare.model is None


def test_a_cross_validated_trial_is_the_mean_of_its_folds_and_resumes_only_under_its_protocol(kb_path, iris):
    import numpy as np

    from metabo.evaluation import evaluate
    from metabo.evaluation.protocols import KFold

    space = default_cash_space(["knn", "decision_tree"])
    with KnowledgeBase(kb_path) as kb:
        result = tune(iris, budget=3, space=space, strategy="random", kb=kb, seed=1, cv=3, session_id="cv",
                      meta_features=False)
        runs = kb.query("SELECT config_id, fold, value FROM runs WHERE source = 'session:cv' AND metric = 'error_rate'")
        assert result.cv == 3 and len(runs) == 3 * 3
        for record in result.history.completed:
            folds = runs[runs["config_id"] == record.config_id]
            assert sorted(folds["fold"]) == [0, 1, 2]
            assert record.value == pytest.approx(folds["value"].mean())
        # the same value as evaluating the configuration on the protocol directly
        best = result.best
        evaluations = evaluate(best.algorithm, best.params, iris, protocol=KFold(3, test=0.2), seed=1)
        assert best.value == pytest.approx(np.mean([e.valid["error_rate"] for e in evaluations]))
        assert best.test_value == pytest.approx(np.mean([e.test["error_rate"] for e in evaluations]))
        # resumed under another protocol: refused, nothing lost; under its own, continued
        with pytest.raises(InputDataError, match="KFold"):
            tune(iris, budget=4, space=space, strategy="random", kb=kb, seed=1, cv=None, session_id="cv",
                 meta_features=False)
        assert kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:cv'")["n"].item() > 0
        more = tune(iris, budget=4, space=space, strategy="random", kb=kb, seed=1, cv=3, session_id="cv",
                    meta_features=False)
        assert len(more.history.completed) == 4


def test_cv_and_an_explicit_protocol_are_not_given_together(iris):
    from metabo.evaluation.protocols import Holdout

    space = default_cash_space(["knn"])
    with pytest.raises(InputDataError, match="cv"):
        tune(iris, budget=1, space=space, strategy="random", protocol=Holdout(), cv=3)
    with pytest.raises(InputDataError, match="cv"):
        tune(iris, budget=1, space=space, strategy="random", reshuffle=True, cv=3)
    with pytest.raises(InputDataError, match="cv"):
        tune(iris, budget=1, space=space, strategy="random", cv=1)
    held = tune(iris, budget=1, space=space, strategy="random", cv=None)
    assert held.cv is None and held.history.completed[0].ok
