"""More boosting rounds for a large table's final model (metabo.tuning.rounds): the rounds
admitted beyond the searched range, the validation values read in one pass against models fitted with
that many rounds, the time that ends the fit, and tune's use of them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from metabo.exceptions import InvalidConfigurationError
from metabo.optimizer.history import TrialRecord
from metabo.space.algorithms import build_estimator, get_algorithm, normalize_params
from metabo.space.algorithms.spec import MAX_ROUNDS
from metabo.tuning.rounds import Rounds, lowest_read, more_rounds, round_counts, rounds_name

LIGHTGBM = {"num_leaves": 8, "learning_rate": 0.3, "n_estimators": 10, "min_child_samples": 20,
            "subsample": 1.0, "colsample_bytree": 1.0, "reg_lambda": 1e-10}
XGBOOST = {"n_estimators": 10, "max_depth": 3, "learning_rate": 0.3, "subsample": 1.0, "colsample_bytree": 1.0,
           "min_child_weight": 1.0, "reg_lambda": 1.0}
CATBOOST = {"iterations": 10, "depth": 4, "learning_rate": 0.3, "l2_leaf_reg": 3.0, "bagging_temperature": 1.0}
HISTOGRAM = {"learning_rate": 0.1, "max_iter": 10, "max_leaf_nodes": 8, "min_samples_leaf": 20,
             "l2_regularization": 1e-10}
BOOSTERS = [("lightgbm", LIGHTGBM), ("xgboost", XGBOOST), ("catboost", CATBOOST),
            ("hist_gradient_boosting", HISTOGRAM)]


def test_the_rounds_may_pass_the_searched_range_up_to_max_rounds_and_nothing_else_may():
    assert rounds_name("lightgbm") == "n_estimators" and rounds_name("catboost") == "iterations"
    assert rounds_name("hist_gradient_boosting") == "max_iter"
    assert rounds_name("random_forest") is None and get_algorithm("random_forest").rounds is None
    assert normalize_params(get_algorithm("lightgbm"), {**LIGHTGBM, "n_estimators": 1200})["n_estimators"] == 1200
    most = build_estimator("xgboost", {**XGBOOST, "n_estimators": MAX_ROUNDS}, seed=0)
    assert most.estimator.n_estimators == MAX_ROUNDS
    for bad in ({**LIGHTGBM, "n_estimators": MAX_ROUNDS + 1}, {**LIGHTGBM, "n_estimators": 1200, "num_leaves": 500},
                {**LIGHTGBM, "n_estimators": 2.5e3}):
        with pytest.raises(InvalidConfigurationError):
            build_estimator("lightgbm", bad, seed=0)
    with pytest.raises(InvalidConfigurationError):  # a forest's trees are searched, not read
        build_estimator("random_forest", {"n_estimators": 1000}, seed=0)


def test_round_counts_run_geometrically_from_the_own_to_the_cap():
    counts = round_counts(10, 1000, points=5)
    assert counts == sorted(set(counts)) and counts[0] == 10 and counts[-1] == 1000
    assert counts == [10, 32, 100, 316, 1000]
    assert round_counts(7, 8) == [7, 8]


def _setup(n_classes):
    from metabo.tuning.session import prepare

    X, y = make_classification(n_samples=3000, n_features=8, n_informative=5, n_classes=n_classes, flip_y=0.05,
                               random_state=0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(8)]).assign(target=y)
    return prepare(frame, kb=None, target="target", meta_features=False, seed=0)


@pytest.fixture(scope="module")
def setup():
    return _setup(3)


@pytest.fixture(scope="module")
def binary():
    return _setup(2)


def _record(algorithm, params):
    return TrialRecord(0, algorithm, params, "c0", state="complete", value=0.1, status="ok", fit_seconds=0.1)


def _validation_error(setup, algorithm, params):
    """The error rate of ``params`` fitted on each split's training rows, on their validation
    rows together (each fold's out-of-fold predictions): the reference."""
    from dataclasses import replace

    from metabo.ensembles.model import EnsembleModel
    from metabo.evaluation.protocols import class_codes

    wrong = rows = 0
    for split in replace(setup.protocol, max_train=None).splits(setup.data, 0):
        model = EnsembleModel([(algorithm, params)], seed=0).fit_dataset(setup.data, split.train_idx)
        wrong += int(np.sum(model.predict_codes(setup.data.X.iloc[split.valid_idx])
                            != class_codes(setup.data)[split.valid_idx]))
        rows += len(split.valid_idx)
    return wrong / rows


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize(("algorithm", "params"), BOOSTERS)
def test_the_values_read_are_those_of_models_fitted_with_that_many_rounds(setup, binary, classes, algorithm, params):
    """The validation error at the configuration's own rounds and at the best count, read in
    one pass over each fold's fit of 200 rounds (the raw scores range by range, their bias
    taken off once), equal those of models fitted with exactly that many rounds on each fold
    (the 3,000 rows are cross-validated: every selection row has its out-of-fold value), for
    two classes (log-odds) and three (softmax)."""
    if (algorithm, classes) == ("catboost", 2):
        pytest.skip("CatBoost's two-class fits take 1 Newton step per leaf up to about 100 iterations and 10 from "
                    "200 (leaf_estimation_iterations): the first 10 rounds of a fit of 200 are not a fit of 10")
    setup = binary if classes == 2 else setup
    rounds = more_rounds(_record(algorithm, params), setup, seed=0, metric="error_rate", seconds=600.0, cap=200)
    assert isinstance(rounds, Rounds) and rounds.own == 10 and 10 <= rounds.best <= 200
    assert rounds.folds == setup.folds == 5 and len(rounds.probabilities) == 2400
    assert rounds.made == 200 and 0 < rounds.fitting <= rounds.seconds
    assert rounds.own_value == pytest.approx(_validation_error(setup, algorithm, params))
    assert rounds.best_value == pytest.approx(_validation_error(setup, algorithm, {**params, rounds.name: rounds.best}))
    assert rounds.best_value <= rounds.own_value
    assert rounds.params(params)[rounds.name] == (rounds.best if rounds.gained else 10)


@pytest.mark.parametrize(("algorithm", "params"), BOOSTERS)
def test_a_fit_given_no_time_ends_with_no_more_rounds(setup, algorithm, params):
    """The fit ends after the time it is given, keeping the rounds made: given none, it makes
    one round (the libraries' callbacks) or its own (scikit-learn's, in chunks from its own),
    not more than the configuration's own, so no rounds are read."""
    assert more_rounds(_record(algorithm, params), setup, seed=0, metric="error_rate", seconds=0.0) is None
    assert more_rounds(_record("random_forest", {"n_estimators": 10}), setup, seed=0, metric="error_rate",
                       seconds=60.0) is None


@pytest.mark.slow
def test_tune_gives_a_large_tables_booster_the_rounds_its_validation_rows_choose():
    """Under a time budget on 20,400 rows (halving), a LightGBM model's rounds are read on the
    hold-out's 12,240 training rows; the model has the rounds chosen when they gained, its
    own otherwise, and the summary says which."""
    from metabo.optimizer import tune
    from metabo.space.algorithms import default_cash_space

    X, y = make_classification(n_samples=20_400, n_features=6, n_informative=4, random_state=0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(target=y)
    result = tune(frame, target="target", time_budget=20, space=default_cash_space(["lightgbm"]), seed=0,
                  ensemble="none")
    rounds = result.rounds
    assert rounds is not None and rounds.rows == 12_240 and rounds.own == result.best.params["n_estimators"]
    (_, params), = result.model.members_
    assert params["n_estimators"] == (rounds.best if rounds.gained else rounds.own)
    assert rounds.gained == (rounds.best_value < rounds.own_value and rounds.best > rounds.own)


@pytest.mark.slow
def test_tune_reads_a_cross_validated_boosters_rounds_on_every_fold(caplog):
    """Under a time budget on 2,000 rows (5-fold cross-validation, no halving), a booster
    model's rounds are read on the five folds, their out-of-fold probabilities stand for its
    trial in the ensemble's library (every selection row), the search resumes in the time
    their share did not spend, and the model has the rounds kept."""
    import logging
    import re

    from metabo.optimizer import tune
    from metabo.space.algorithms import default_cash_space

    X, y = make_classification(n_samples=2000, n_features=6, n_informative=4, random_state=0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(target=y)
    with caplog.at_level(logging.INFO, logger="metabo.tuning.tune"):
        result = tune(frame, target="target", time_budget=15, space=default_cash_space(["lightgbm"]), seed=0)
    assert not result.rungs and result.cv == 5
    resumed = [int(m.group(1)) for m in re.finditer(r"boosting rounds read after (\d+) trials", caplog.text)]
    assert resumed and len(result.history.completed) > resumed[0]
    rounds = result.rounds
    assert rounds is not None and rounds.folds == 5 and len(rounds.probabilities) == 1600
    assert "other rows" not in (result.ensemble_note or "")

    def others(params):
        return {k: v for k, v in params.items() if k != "n_estimators"}

    # the model's member of the best configuration (alone, or in the ensemble) has the rounds kept
    member, = [p for _, p in result.model.members_ if others(p) == others(result.best.params)]
    assert member["n_estimators"] == (rounds.best if rounds.gained else rounds.own)


def test_the_model_is_the_read_trial_of_lowest_value_with_its_rounds():
    """A search resumed after trial 3's rounds were read (.127 with 570 rounds) promoted trial 7,
    whose rounds read .128: trial 3 stays the model. A best whose rounds were not read (or gave
    none) is not compared with the reads, whose rows its own value was not measured on."""
    def read(best_value):
        return Rounds("n_estimators", 200, 570, 0.13, best_value, rows=1000, seconds=2.0, made=600, fitting=1.5,
                      probabilities=np.zeros((1, 2)))

    reads = {3: read(0.127), 7: read(0.128), 9: None}
    assert lowest_read(reads, 7) == 3 and lowest_read(reads, 3) == 3
    assert lowest_read(reads, 9) == 9 and lowest_read(reads, 12) == 12
    assert lowest_read({3: read(0.127), 7: read(0.127)}, 7) == 3  # a tie: the earlier trial
    fit = read(0.127).fit_seconds(4000)  # 1.5 s x 570 / 600 rounds x 4,000 / 1,000 rows
    assert fit == pytest.approx(1.5 * 570 / 600 * 4)
