"""tune's successive halving on a large table: the search on the first rung's rows, its best
trials again on more, the selection the best of the largest rung, the model on every row."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from metabo.optimizer import tune
from metabo.optimizer.halving import winner
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space(["decision_tree", "gaussian_nb"])


@pytest.fixture(scope="module")
def large() -> pd.DataFrame:
    """20,400 rows: the default 60/20/20 hold-out trains on 12,240, three rungs (2,000, 6,000, all)."""
    X, y = make_classification(n_samples=20_400, n_features=6, n_informative=4, random_state=0)
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(target=y)


@pytest.mark.slow
def test_a_large_table_is_searched_on_the_first_rung_and_decided_on_a_larger_one(large):
    result = tune(large, target="target", budget=7, space=SPACE, strategy="random", seed=0)
    assert [r.rows for r in result.rungs] == [2000, 6000]
    assert len(result.rungs[0].values) == 7
    ranked = sorted(result.rungs[0].values, key=lambda k: (result.rungs[0].values[k], k))
    leaders = {result.history[k].algorithm: k for k in reversed(ranked)}  # each algorithm's best
    # the search's best ceil(7 / 3) = 3 go on, and the best trial of each algorithm
    assert sorted(result.rungs[1].values) == sorted(set(ranked[:3]) | set(leaders.values()))
    assert result.best.number == winner(result.rungs)
    assert result.model is not None and result.model_rows == "all"
    assert result.refit_test_error is not None and result.refit_test_error < 0.3


def test_halving_none_and_small_tables_search_on_every_training_row(large):
    off = tune(large, target="target", budget=3, space=SPACE, strategy="random", seed=0, halving="none")
    small = tune(large.head(5000), target="target", budget=3, space=SPACE, strategy="random", seed=0)
    assert off.rungs == [] and small.rungs == []
    with pytest.raises(ValueError, match="halving must be"):
        tune(large, target="target", budget=3, space=SPACE, halving="yes")


@pytest.mark.slow
def test_the_search_runs_on_the_first_rung_rows(large, tmp_path):
    from metabo.kb import KnowledgeBase

    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        result = tune(large, target="target", budget=4, space=SPACE, strategy="random", seed=0, kb=kb,
                      meta_features=False)
        fidelity = kb.query("SELECT DISTINCT fidelity FROM runs WHERE source = ?",
                            [f"session:{result.session_id}"])["fidelity"].tolist()
    assert fidelity == [2000]  # the promotions are not stored as the session's runs
    assert np.isfinite([v for r in result.rungs for v in r.values.values()]).all()


@pytest.mark.slow
def test_the_rungs_trials_predict_a_capped_sample_of_the_held_out_rows(large, tmp_path, monkeypatch):
    """On a large table a trial's predictions are capped (Holdout.max_eval = EVAL_ROWS): the
    stored predictions have at most that many rows, the runs say so in their protocol, and
    the final model still trains on every row and is scored on the capped test rows."""
    import importlib

    from metabo.kb import KnowledgeBase

    monkeypatch.setattr(importlib.import_module("metabo.tuning.session"), "EVAL_ROWS", 1500)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        result = tune(large, target="target", budget=4, space=SPACE, strategy="random", seed=0, kb=kb,
                      meta_features=False)
        source = [f"session:{result.session_id}"]
        protocols = kb.query("SELECT DISTINCT protocol FROM runs WHERE source = ?", source)["protocol"].tolist()
        rows = kb.query("SELECT p.split, max(p.n_rows) AS n FROM predictions p JOIN runs r USING (run_id) "
                        "WHERE r.source = ? GROUP BY p.split ORDER BY p.split", source)
    assert protocols == ["Holdout(train=0.6, valid=0.2, test=0.2, stratified=True, max_train=2000, max_eval=1500)"]
    assert not rows.empty and (rows["n"] == 1500).all(), rows  # 4,080 held out for each, 1,500 predicted
    assert [r.rows for r in result.rungs] == [2000, 6000]
    assert result.model_rows == "all" and result.refit_test_error is not None


def _records(values_and_fits):
    from metabo.optimizer.history import History, TrialRecord

    history = History()
    for i, (algorithm, value, fit) in enumerate(values_and_fits):
        history.add(TrialRecord(i, algorithm, {}, f"c{i}", state="complete", value=value, status="ok",
                                fit_seconds=fit, predict_seconds=0.0))
    return history


def test_the_model_is_the_best_trial_whose_final_fit_fits_in_the_time_left():
    from metabo.tuning.final import best_that_fits

    # a kernel SVM best on the first rung whose final fit needs minutes, two cheaper trials behind it
    history = _records([("lightgbm", 0.30, 1.0), ("kernel_svm", 0.20, 200.0), ("catboost", 0.25, 8.0)])

    def seconds(r):
        return r.fit_seconds

    assert best_that_fits(history, seconds, 300.0).algorithm == "kernel_svm"  # time for it: the best
    assert best_that_fits(history, seconds, 10.0).algorithm == "catboost"
    assert best_that_fits(history, seconds, 5.0).algorithm == "lightgbm"
    assert best_that_fits(history, seconds, 0.5).algorithm == "lightgbm"  # none fits: the quickest fit
    assert best_that_fits(_records([]), seconds, 10.0) is None
    assert best_that_fits(history, seconds, 300.0, exclude={1}).algorithm == "catboost"  # settled: not a candidate


def test_the_promotions_reserve_counts_only_trials_whose_final_fit_would_fit():
    from metabo.tuning.final import HALVING_SHARE, _halving_reserve, first_promoted

    history = _records([("lightgbm", 0.30, 1.0), ("kernel_svm", 0.20, 3.0), ("catboost", 0.25, 2.0)])
    sizes = (2000, 6000, 18000, 40000)
    # the first promotion is the best ceil(3 / 3) = 1 and each algorithm's best, so all three on 6,000
    # rows (x3); the next rung would hold ceil(3 / 3) = 1 trial, which decides nothing: not reserved
    assert _halving_reserve(first_promoted(history, sizes), sizes, 1000.0) == pytest.approx((1 + 3 + 2) * 3)
    # the SVM is not promotable: lightgbm and catboost on 6,000 rows
    assert _halving_reserve(first_promoted(history, sizes, lambda r: r.algorithm != "kernel_svm"), sizes, 1000.0) == \
        pytest.approx((1 + 2) * 3)
    # capped
    assert _halving_reserve(first_promoted(history, sizes), sizes, 10.0) == pytest.approx(HALVING_SHARE * 10.0)
    # the trials themselves (the guard's library after the promotions is at most these)
    assert [r.number for r in first_promoted(history, sizes)] == [1, 2, 0]
    assert [r.number for r in first_promoted(history, sizes, lambda r: r.algorithm != "kernel_svm")] == [2, 0]
    assert first_promoted(history, (2000, 6000)) == []  # two rungs: no halving


def test_after_promotions_the_reserve_drops_the_settled_trials_and_the_promotions_made():
    """SearchReserve by hand, without a library (no guard) and without the fit on every row:
    the best trial whose fit fits and the first promotion's fits. Once a round of promotions
    has settled the kernel SVM and promoted the three trials, the model's candidate is the
    catboost and no promotion is reserved again: the search that stopped for them resumes."""
    from types import SimpleNamespace

    from metabo.optimizer.budget import TimeBudget, final_fit_seconds
    from metabo.tuning.final import FitGrowth, _halving_reserve, first_promoted
    from metabo.tuning.reserve import GuardAnswers, SearchReserve

    history = _records([("lightgbm", 0.30, 1.0), ("kernel_svm", 0.20, 3.0), ("catboost", 0.25, 2.0)])
    sizes = (2000, 6000, 18000, 40000)
    setup = SimpleNamespace(rungs=sizes, data=SimpleNamespace(n_instances=50000))
    reserve = SearchReserve(SimpleNamespace(history=history), setup, TimeBudget(1000.0), GuardAnswers(None),
                            FitGrowth(2000), refit_rows=40000, final_rows="train+valid")
    kw = {"train_rows": 2000, "final_rows": 40000}
    assert reserve.scored_fit(history[1]) == pytest.approx(final_fit_seconds(history[1], **kw))
    # the boosters among the promotions reserve the last rung's share for the model's rounds:
    # a quarter of the 1,000 s (four rungs), the model's fit included
    share = 1000.0 / len(sizes)
    assert final_fit_seconds(history[1], **kw) < share
    assert reserve() == pytest.approx(share + _halving_reserve(first_promoted(history, sizes), sizes, 1000.0))
    assert reserve.parts["more rounds"] == pytest.approx(share - final_fit_seconds(history[1], **kw))
    reserve.settled, reserve.known = {0, 1}, {(0, 6000): 0.3, (1, 6000): 0.2, (2, 6000): 0.2}
    assert reserve() == pytest.approx(share)
    reserve.known = {(1, 6000): 0.2, (0, 18000): 0.3}  # the SVM's promotion made, lightgbm's and catboost's not
    assert reserve() == pytest.approx(share + (1 + 2) * 3)
    svm_only = _records([("kernel_svm", 0.2, 3.0), ("random_forest", 0.3, 1.0)])  # no booster: no share
    alone = SearchReserve(SimpleNamespace(history=svm_only), setup, TimeBudget(1000.0), GuardAnswers(None),
                          FitGrowth(2000), refit_rows=40000, final_rows="train+valid")
    alone()
    assert "more rounds" not in alone.parts
    assert SearchReserve(SimpleNamespace(history=history), setup, TimeBudget(1.0), GuardAnswers(None),
                         FitGrowth(2000), refit_rows=40000, final_rows="train+valid",
                         writing=True).written == pytest.approx(1.1)


def test_a_read_trials_fits_are_reserved_with_the_rounds_kept_and_settled_boosters_keep_no_share():
    """SearchReserve by hand after a round of promotions that settled the lightgbm and the SVM:
    once the catboost model's rounds are read (4,000 kept of the 5,000 made on 2 folds of
    10,000 rows in 50 s of fitting), its fit on the 40,000 training + validation rows is
    reserved as 2 (the margin) x 50 x 4,000 / 5,000 x 40,000 / 20,000 = 160 s, more than its
    own 200 rounds' predicted fit, and no share is kept for rounds: the search resumes in the rest."""
    from types import SimpleNamespace

    import numpy as np

    from metabo.optimizer.budget import TimeBudget, final_fit_seconds
    from metabo.tuning.final import FitGrowth
    from metabo.tuning.reserve import GuardAnswers, SearchReserve
    from metabo.tuning.rounds import Rounds

    history = _records([("lightgbm", 0.30, 1.0), ("kernel_svm", 0.20, 3.0), ("catboost", 0.25, 2.0)])
    sizes = (2000, 6000, 18000, 40000)
    setup = SimpleNamespace(rungs=sizes, data=SimpleNamespace(n_instances=50000))
    own = final_fit_seconds(history[2], train_rows=2000, final_rows=40000)
    assert own < 160.0

    def reserve(rounds):
        made = SearchReserve(SimpleNamespace(history=history), setup, TimeBudget(1000.0), GuardAnswers(None),
                             FitGrowth(2000), refit_rows=40000, final_rows="train+valid", settled={0, 1},
                             known={(0, 6000): 0.3, (1, 6000): 0.2, (2, 6000): 0.2}, read={2: rounds})
        return made, made()

    def read(best, best_value):
        return Rounds("iterations", 200, best, 0.25, best_value, rows=10000, seconds=60.0, made=5000, fitting=50.0,
                      probabilities=np.zeros((1, 2)), folds=2)

    gained, seconds = reserve(read(4000, 0.20))
    assert gained.model.number == 2 and seconds == pytest.approx(160.0) and "more rounds" not in gained.parts
    kept_own, seconds = reserve(read(4000, 0.26))  # no gain: its own 200 rounds, 2 x 50 x 0.04 x 2 = 8 s < own
    assert seconds == pytest.approx(own) and "more rounds" not in kept_own.parts
    unread, seconds = reserve(None)  # read, and nothing given (no time for more rounds): no share either
    assert seconds == pytest.approx(own) and "more rounds" not in unread.parts


def test_promotions_already_made_are_not_evaluated_again(large, monkeypatch):
    """_promote with ``known``: a round of promotions after a resumed search takes the values
    of the trials promoted before instead of evaluating them again."""
    import importlib
    from types import SimpleNamespace

    from metabo.tuning.final import _promote
    from metabo.tuning.session import prepare

    final = importlib.import_module("metabo.tuning.final")

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a known promotion was evaluated again")

    monkeypatch.setattr(final, "run_task", no_evaluation)
    setup = prepare(large, kb=None, target="target", halving="auto", meta_features=False)
    assert setup.rungs == (2000, 6000, 12240)
    history = _records([("decision_tree", 0.30, 1.0), ("gaussian_nb", 0.20, 1.0), ("decision_tree", 0.25, 1.0)])
    known = {(0, 6000): 0.21, (1, 6000): 0.19, (2, 6000): 0.18}
    rungs, grown = _promote(SimpleNamespace(history=history, metric="error_rate"), setup, seed=0, clock=None,
                            time_limit=None, default_limit=None, memory_limit_mb=None, known=known)
    # the best ceil(3 / 3) = 1 and each algorithm's best: trials 1 and 2, at their known values
    assert [r.rows for r in rungs] == [2000, 6000] and rungs[1].values == {1: 0.19, 2: 0.18}
    assert winner(rungs) == 2 and grown == {} and len(known) == 3


def test_a_trial_never_promoted_grows_at_the_exponent_its_algorithm_showed():
    """FitGrowth.measure by hand: a kernel SVM promoted from 1 s on 1,000 rows to 16 s on
    4,000 grew as rows^2; another SVM never promoted (0.5 s on 1,000 rows) is predicted at
    2 x 0.5 x 8^2 = 64 s on 8,000 rows, where the recorded (here linear) prediction says 8;
    an algorithm no promotion measured keeps its prediction. A resumed search may end with
    such a trial as the model, and libsvm's fit cannot be stopped at the deadline."""
    from metabo.optimizer.budget import FINAL_FIT_MARGIN, final_fit_seconds
    from metabo.tuning.final import FitGrowth

    history = _records([("kernel_svm", 0.2, 1.0), ("lightgbm", 0.3, 1.0), ("kernel_svm", 0.25, 0.5)])
    kw = {"train_rows": 1000, "final_rows": 8000}
    unmeasured = FitGrowth(1000)
    assert unmeasured.seconds(history[2], 8000) == pytest.approx(final_fit_seconds(history[2], **kw))
    growth = FitGrowth(1000)
    growth.measure(history, {0: (4000, 16.0)})
    growth.measure(history, {1: (4000, 2.0)})  # lightgbm grew slower than linear: counted as linear
    assert growth.grown == {0: (4000, 16.0), 1: (4000, 2.0)}
    assert growth.exponents == pytest.approx({"kernel_svm": 2.0, "lightgbm": 1.0})
    assert growth.seconds(history[2], 8000) == pytest.approx(FINAL_FIT_MARGIN * 32.0)
    growth.measure(history, {})
    assert growth.exponents == pytest.approx({"kernel_svm": 2.0, "lightgbm": 1.0})


def test_a_fit_measured_on_more_rows_predicts_the_final_fit_at_the_tables_own_exponent():
    """FitGrowth.seconds by hand: a fit of 1 s on 1,000 rows and 16 s on 4,000 grows as
    rows^2 on this table, so on 8,000 rows it takes 16 * 2^2 = 64 s, reserved twice
    (FINAL_FIT_MARGIN); the recorded (here linear) prediction is kept when it is larger,
    growth slower than linear counts as linear, and a trial never promoted keeps it."""
    from metabo.optimizer.budget import FINAL_FIT_MARGIN, final_fit_seconds
    from metabo.tuning.final import FitGrowth

    history = _records([("kernel_svm", 0.2, 1.0), ("lightgbm", 0.3, 1.0), ("catboost", 0.4, 1.0)])
    svm, gbm, cat = history[0], history[1], history[2]
    kw = {"train_rows": 1000, "final_rows": 8000}
    linear = final_fit_seconds(svm, **kw)
    assert linear == pytest.approx(FINAL_FIT_MARGIN * 8.0)
    grown = {0: (4000, 16.0), 1: (4000, 2.0)}
    growth = FitGrowth(1000, grown=grown)  # measured, without the exponents of the trials never promoted
    assert growth.seconds(svm, 8000) == pytest.approx(FINAL_FIT_MARGIN * 64.0)
    # 2 s on 4,000 rows: slower than linear from 1 s on 1,000, grown linearly: 4 s, below the recorded 8 s
    assert growth.seconds(gbm, 8000) == pytest.approx(linear)
    assert growth.seconds(cat, 8000) == pytest.approx(final_fit_seconds(cat, **kw))
    assert growth.seconds(None, 8000) == 0.0
    # a trial of five fits (cross-validation) made 5 s in all: 1 s a fit, as above
    five = _records([("kernel_svm", 0.2, 5.0)])
    assert FitGrowth(1000, fits=5, grown=grown).seconds(five[0], 8000) == pytest.approx(FINAL_FIT_MARGIN * 64.0)


def test_rows_that_fit_is_the_most_rows_whose_fit_fits_at_the_worst_growth():
    """A trial that fitted 1,000 rows in 1 s: on r rows its fit is predicted at r^3 (WORST_GROWTH),
    reserved twice (FINAL_FIT_MARGIN), above the linear prediction: 16 s hold 2,000 rows, 54 s
    3,000; all 40,000 when there is time; the trial's own 1,000 when even those do not fit."""
    from metabo.tuning.final import WORST_GROWTH, FitGrowth, rows_that_fit

    assert WORST_GROWTH == 3.0
    (record,) = _records([("kernel_svm", 0.2, 1.0)]).completed
    kw = {"refit_rows": 40_000}
    assert rows_that_fit(record, FitGrowth(1000), 16.0, **kw) == 2000
    assert rows_that_fit(record, FitGrowth(1000), 54.0, **kw) == 3000
    assert rows_that_fit(record, FitGrowth(1000), 2 * 40.0 ** 3, **kw) == 40_000
    assert rows_that_fit(record, FitGrowth(1000), 1.0, **kw) == 1000
    assert rows_that_fit(record, FitGrowth(1000), 32.0, factor=2.0, **kw) == 2000  # a write as long after each fit
    # a measured growth faster than cubic (4 s on 1,500 rows: exponent 3.4) predicts more
    assert rows_that_fit(record, FitGrowth(1000, grown={0: (1500, 4.0)}), 16.0, **kw) < 2000
    # one slower than cubic is the prediction, not the worst growth: 4.5 s on 3,000 rows is an
    # exponent e = log 4.5 / log 3, so 36 s hold 3,000 (36 / (2 x 4.5))^(1 / e) rows, where the
    # cubic growth from the first fit would hold 2,620
    e = math.log(4.5) / math.log(3.0)
    expected = math.floor(3000 * (36.0 / (2 * 4.5)) ** (1 / e))
    assert abs(rows_that_fit(record, FitGrowth(1000, grown={0: (3000, 4.5)}), 36.0, **kw) - expected) <= 1
    assert rows_that_fit(record, FitGrowth(1000), 36.0, **kw) == math.floor(1000 * 18.0 ** (1 / 3))


def test_the_rungs_validation_rows_are_the_searchs():
    """A promotion predicts the rows the search's trials predicted (only the training rows
    grow), so its probabilities make a library of the same selection rows."""
    import dataclasses

    from metabo.tuning.session import load_setup

    X, y = make_classification(n_samples=30_000, n_features=4, weights=[0.8], random_state=1)
    setup, _ = load_setup(pd.DataFrame(X).assign(target=y), target="target", halving="auto", seed=2)
    assert len(setup.rungs) == 3
    first = setup.protocol.splits(setup.data, 2)[0]
    grown = dataclasses.replace(setup.protocol, max_train=setup.rungs[1]).splits(setup.data, 2)[0]
    assert len(first.train_idx) == setup.rungs[0] and len(grown.train_idx) == setup.rungs[1]
    np.testing.assert_array_equal(first.valid_idx, grown.valid_idx)
    np.testing.assert_array_equal(first.test_idx, grown.test_idx)


@pytest.mark.slow
def test_the_ensemble_is_chosen_among_the_trials_of_the_largest_rung(large):
    result = tune(large, target="target", budget=7, space=SPACE, strategy="random", seed=0)
    promoted = {k for k, v in result.rungs[1].values.items() if np.isfinite(v)}
    assert result.ensemble is not None and result.ensemble.models == len(promoted) >= 2
    assert set(result.ensemble.weights) <= promoted and result.best.number in promoted


def test_without_halving_a_booster_model_keeps_the_rounds_share_of_the_budget():
    """SearchReserve by hand on a table without rungs: a booster model keeps ROUNDS_SHARE of
    the budget for its rounds, its fit included, until they are read; a model that is not a booster keeps none,
    even with a booster behind it (no promotions can make it the model)."""
    from types import SimpleNamespace

    from metabo.optimizer.budget import TimeBudget, final_fit_seconds
    from metabo.tuning.final import FitGrowth
    from metabo.tuning.reserve import ROUNDS_SHARE, GuardAnswers, SearchReserve

    setup = SimpleNamespace(rungs=(), data=SimpleNamespace(n_instances=5000))

    def reserve(history):
        return SearchReserve(SimpleNamespace(history=history), setup, TimeBudget(90.0), GuardAnswers(None),
                             FitGrowth(3000), refit_rows=4000, final_rows="train+valid")

    booster = reserve(_records([("lightgbm", 0.20, 1.5), ("random_forest", 0.30, 1.0)]))
    fit = final_fit_seconds(booster.opt.history[0], train_rows=3000, final_rows=4000)
    assert booster() == pytest.approx(ROUNDS_SHARE * 90.0) and fit < ROUNDS_SHARE * 90.0
    assert booster.parts["more rounds"] == pytest.approx(ROUNDS_SHARE * 90.0 - fit)
    booster.read = {0: None}  # read, no rounds given: the search resumes with only its fit kept
    assert booster() == pytest.approx(fit) and "more rounds" not in booster.parts
    forest = reserve(_records([("lightgbm", 0.30, 1.5), ("random_forest", 0.20, 1.0)]))
    assert forest() == pytest.approx(final_fit_seconds(forest.opt.history[1], train_rows=3000, final_rows=4000))
    assert "more rounds" not in forest.parts


def test_the_members_reserve_counts_their_fits_on_every_row():
    """SearchReserve by hand with a library of three models and a long search: the
    runners-up's fits are reserved (members_reserve), each with its fit on every row when
    the model gets one: 1 + 5,000 / 4,000 = 2.25 times those of ``final_rows="train+valid"``
    (members_reserve is linear in the fits while the search has run longer than they take)."""
    from types import SimpleNamespace

    from metabo.ensembles.library import OutOfFoldLibrary
    from metabo.optimizer.budget import TimeBudget
    from metabo.tuning.final import FitGrowth
    from metabo.tuning.reserve import GuardAnswers, SearchReserve

    history = _records([("random_forest", 0.20, 2.0), ("extra_trees", 0.25, 1.0), ("random_forest", 0.30, 3.0)])
    setup = SimpleNamespace(rungs=(), data=SimpleNamespace(n_instances=5000))
    y = np.arange(300) % 2
    library = OutOfFoldLibrary(y, 2, seed=0)
    rng = np.random.default_rng(0)
    for k in range(3):
        p = rng.uniform(0.2, 0.8, len(y))
        library.add(k, history[k].value, np.column_stack([1 - p, p]))
    members = {}
    for rows in ("train+valid", "all"):
        reserve = SearchReserve(SimpleNamespace(history=history), setup,
                                TimeBudget(1000.0, start=time.monotonic() - 500.0), GuardAnswers(library),
                                FitGrowth(3000), refit_rows=4000, final_rows=rows)  # type: ignore[arg-type]
        reserve()
        members[rows] = reserve.parts["members"]
    assert members["train+valid"] > 0
    assert members["all"] == pytest.approx(2.25 * members["train+valid"])
