"""tune() with a time budget, the model it returns, DataFrames and --max-train."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_iris

import metabo.space.algorithms as algorithms
from metabo.data.dataset import Dataset
from metabo.ensembles.model import EnsembleModel
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.optimizer.budget import FINAL_FIT_MARGIN, TimeBudget, final_fit_seconds
from metabo.optimizer.history import TrialRecord
from metabo.space.algorithms import default_cash_space


class _Sleepy(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        time.sleep(120)
        return self


@pytest.fixture
def iris_frame() -> pd.DataFrame:
    frame = load_iris(as_frame=True).frame
    frame["target"] = frame["target"].map({0: "setosa", 1: "versicolor", 2: "virginica"})
    return frame


def test_time_budget_arithmetic():
    clock = TimeBudget(10.0, start=time.monotonic() - 4.0)
    assert 5.9 < clock.left() <= 6.0
    assert clock.trial_limit() == pytest.approx(clock.left(), abs=0.05)
    assert clock.trial_limit(reserve=2.0) == pytest.approx(clock.left() - 2.0, abs=0.05)
    assert clock.trial_limit(reserve=5.8) is None  # less than MIN_TRIAL_SECONDS would be left
    # capped: a tenth of the 10 s budget (TRIAL_SHARE), never less than MIN_TRIAL_SECONDS
    assert clock.trial_limit(capped=True) == pytest.approx(1.0)
    assert clock.trial_limit(reserve=5.3, capped=True) == pytest.approx(0.7, abs=0.05)
    assert TimeBudget(2.0).trial_limit(capped=True) == pytest.approx(0.5)
    assert clock.trial_limit(reserve=5.8, capped=True) is None
    for bad in (0, -1.0, float("nan"), True):
        with pytest.raises(InputDataError, match="time_budget"):
            TimeBudget(bad)
    best = TrialRecord(0, "knn", {}, "c", fit_seconds=0.5, predict_seconds=0.1)
    assert final_fit_seconds(best, train_rows=60, final_rows=80) == pytest.approx(
        FINAL_FIT_MARGIN * 0.5 * 80 / 60 + 0.1)
    assert final_fit_seconds(None, train_rows=60, final_rows=80) == 0.0
    # a 5-fold trial's seconds are its five fits together: the final fit is one of them, scaled
    assert final_fit_seconds(best, train_rows=64, final_rows=80, fits=5) == pytest.approx(
        (FINAL_FIT_MARGIN * 0.5 * 80 / 64 + 0.1) / 5)
    # the preprocessing is done again on the final rows: its seconds are reserved too, linear
    # in the rows whatever the estimator's scaling
    wide = TrialRecord(0, "knn", {}, "c", fit_seconds=0.5, predict_seconds=0.1, prepare_seconds=2.0)
    assert final_fit_seconds(wide, train_rows=64, final_rows=80, fits=5, scaling=lambda a, n, m: 3.0) == (
        pytest.approx((FINAL_FIT_MARGIN * (0.5 * 3.0 + 2.0 * 80 / 64) + 0.1) / 5))


def test_a_trials_preprocessing_seconds_reach_its_record():
    from metabo.data.loaders import load_dataset
    from metabo.evaluation.evaluate import evaluate
    from metabo.evaluation.protocols import KFold
    from metabo.tuning.trials import _outcome

    data = load_dataset("sklearn:iris")
    evs = evaluate("knn", {"n_neighbors": 3, "weights": "uniform", "p": 2}, data, protocol=KFold(k=3))
    assert all(ev.ok and ev.prepare_seconds > 0 for ev in evs)
    # the rows of a split are prepared once and reused: the next trial reports the same seconds
    again = evaluate("knn", {"n_neighbors": 5, "weights": "uniform", "p": 2}, data, protocol=KFold(k=3))
    assert [ev.prepare_seconds for ev in again] == [ev.prepare_seconds for ev in evs]
    assert _outcome(evs, "error_rate")["prepare_seconds"] == pytest.approx(sum(ev.prepare_seconds for ev in evs))


@pytest.mark.slow
def test_a_slow_trial_is_cut_at_the_time_budget_and_nothing_is_lost(tmp_path, iris_frame, monkeypatch):
    """knn is made to sleep two minutes; with a 6 s budget each of its trials is killed and
    recorded as a timeout (after the first success at a tenth of the budget, TRIAL_SHARE,
    and the search goes on), the fast trials are kept, and the model is the best fast one.
    Iris is cross-validated (5 folds): the killed fold's trial has no time left for its
    other folds, which are recorded as timeouts without running."""
    real = algorithms.build_estimator

    def slow_knn(algorithm, params, *, seed):
        return _Sleepy() if algorithm == "knn" else real(algorithm, params, seed=seed)

    monkeypatch.setattr(algorithms, "build_estimator", slow_knn)
    space = default_cash_space(["knn", "lda", "gaussian_nb"])
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        start = time.monotonic()
        result = tune(iris_frame, target="target", time_budget=6.0, space=space, strategy="random", kb=kb,
                      seed=3, meta_features=False)
        took = time.monotonic() - start
        done = result.history.completed
        stored = kb.query("SELECT status, count(*) AS n FROM runs WHERE metric = 'error_rate' GROUP BY status")
    assert took < 60  # the two-minute fit was not waited for
    timeouts = [r for r in done if r.status == "timeout"]
    assert timeouts and all(r.algorithm == "knn" for r in timeouts)
    assert all(r.ok for r in done if r.algorithm != "knn") and sum(r.ok for r in done) >= 2
    assert result.cv == 5
    assert dict(zip(stored["status"], stored["n"])) == {"ok": 5 * sum(r.ok for r in done), "timeout": 5 * len(timeouts)}
    assert result.best.ok and result.algorithm != "knn" and result.model is not None


def test_a_time_budget_alone_runs_trials_until_it_is_spent(iris_frame):
    space = default_cash_space(["lda", "gaussian_nb", "decision_tree"])
    # hold-out trials (cv=None): a few tenths of a second each, so several fit in 3 s on a busy machine
    result = tune(iris_frame, target="target", time_budget=3.0, space=space, strategy="random", seed=0, cv=None)
    done = result.history.completed
    assert len(done) >= 3 and all(r.ok for r in done[:-1])
    assert done[-1].status in ("ok", "timeout")  # the last may be cut where the budget ends
    ends = [result.trial_end_seconds[r.number] for r in result.history.completed]
    assert ends == sorted(ends) and result.time_to_first_model == ends[0]
    assert result.model is not None and result.total_seconds >= ends[-1]
    with pytest.raises(InputDataError, match="budget"):
        tune(iris_frame, target="target", space=space)


def test_the_saved_model_reloads_and_predicts_identically(tmp_path, iris_frame):
    space = default_cash_space(["knn", "logistic_regression"])
    result = tune(iris_frame, target="target", budget=3, space=space, strategy="random", seed=1,
                  final_rows="train+valid")
    model = result.model
    X = iris_frame.drop(columns="target")
    assert set(model.classes_) == {"setosa", "versicolor", "virginica"}  # the labels as given
    path = tmp_path / "m.skops"
    model.save(path)
    again = EnsembleModel.load(path)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))
    # the model's test error is that of its predictions on the test rows of the split
    from metabo.evaluation.protocols import Holdout

    data = Dataset.from_frame(iris_frame, "target", name="iris", source="dataframe")
    test = Holdout(0.6, 0.2, 0.2).splits(data, 1)[0].test_idx
    wrong = np.mean(model.predict(X.iloc[test]) != iris_frame["target"].to_numpy()[test])
    assert result.refit_test_error == pytest.approx(wrong)


def test_the_model_returned_by_default_is_fitted_on_every_row(iris_frame):
    """final_rows="all": the returned model is the selection fitted on all 150 rows (the
    same predictions as an EnsembleModel fitted on them), while refit_test_error is the
    fit on training + validation rows scored on the test part, as with train+valid."""
    space = default_cash_space(["knn", "logistic_regression"])
    kw = {"target": "target", "budget": 3, "space": space, "strategy": "random", "seed": 1}
    full, scored = tune(iris_frame, **kw), tune(iris_frame, **kw, final_rows="train+valid")
    assert full.refit_test_error == scored.refit_test_error and full.params == scored.params
    X = iris_frame.drop(columns="target")
    data = Dataset.from_frame(iris_frame, "target", name="iris", source="dataframe")
    everything = EnsembleModel([(full.algorithm, full.params)], seed=1).fit_dataset(data)
    np.testing.assert_array_equal(full.model.predict_proba(X), everything.predict_proba(X))
    assert not np.array_equal(full.model.predict_proba(X), scored.model.predict_proba(X))
    assert (full.model_rows, scored.model_rows) == ("all", "train+valid")
    with pytest.raises(InputDataError, match="final_rows"):
        tune(iris_frame, **kw, final_rows="some")


def test_a_fit_on_every_row_cut_by_the_budget_keeps_the_scored_fit(iris_frame, monkeypatch):
    """When the time budget runs out during the fit on every row, the model returned is the
    scored fit on training + validation rows (said in ``model_rows``), not None: a user who
    asked for a model within the budget gets one."""
    import importlib

    from metabo.exceptions import TimeBudgetExceeded

    def cut(*args, **kwargs):
        raise TimeBudgetExceeded("the time budget of 30 s ran out")

    space = default_cash_space(["knn", "logistic_regression"])
    kw = {"target": "target", "budget": 3, "space": space, "strategy": "random", "seed": 1}
    scored = tune(iris_frame, **kw, final_rows="train+valid")
    # the module, not the function metabo.optimizer exports under its name
    monkeypatch.setattr(importlib.import_module("metabo.tuning.tune"), "fit_on_every_row", cut)
    kept = tune(iris_frame, **kw)
    assert kept.model_rows == "train+valid" and kept.refit_test_error == scored.refit_test_error
    X = iris_frame.drop(columns="target")
    np.testing.assert_array_equal(kept.model.predict_proba(X), scored.model.predict_proba(X))


def test_a_dataframe_and_its_csv_give_the_same_session(tmp_path, iris_frame):
    space = default_cash_space(["knn", "decision_tree"])
    csv = tmp_path / "iris.csv"
    iris_frame.to_csv(csv, index=False)
    from_frame = tune(iris_frame, target="target", budget=4, space=space, strategy="gp", seed=0)
    from_csv = tune(str(csv), target="target", budget=4, space=space, strategy="gp", seed=0)
    assert [r.config_id for r in from_frame.history] == [r.config_id for r in from_csv.history]
    assert [r.value for r in from_frame.history] == [r.value for r in from_csv.history]
    assert from_frame.refit_test_error == from_csv.refit_test_error
    with pytest.raises(InputDataError, match="target"):
        tune(iris_frame, budget=1, space=space)


@pytest.mark.slow
def test_max_train_subsamples_the_search_and_the_model_trains_on_every_row(tmp_path, iris_frame):
    space = default_cash_space(["knn"])
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        result = tune(iris_frame, target="target", budget=2, space=space, strategy="random", kb=kb, seed=0,
                      max_train=40, meta_features=False)
        fidelity = set(kb.query("SELECT DISTINCT fidelity FROM runs")["fidelity"])
    assert fidelity == {40.0}
    assert result.model.pipelines_[0][-1].n_samples_fit_ == 150  # every row, unsampled
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        scored = tune(iris_frame, target="target", budget=2, space=space, strategy="random", kb=kb, seed=0,
                      max_train=40, meta_features=False, final_rows="train+valid", session_id="scored")
    assert scored.model.pipelines_[0][-1].n_samples_fit_ == 120  # 60% + 20% of 150, unsampled


class _SlowToAsk:
    """Random search whose every suggestion takes ``seconds`` (as a GP's ask on many
    observations, or a warm start's first one, can)."""

    name = "slow-random"

    def __init__(self, seconds: float) -> None:
        from metabo.strategies.random import RandomSearch

        self.seconds, self.inner = seconds, RandomSearch()

    def suggest(self, history, space, rng):
        time.sleep(self.seconds)
        return self.inner.suggest(history, space, rng)


@pytest.mark.slow
def test_the_search_leaves_time_for_its_own_asking_and_the_final_model(iris_frame):
    """A trial's limit is what is left after the reserve and the search's own seconds around
    the batch before: with a strategy that takes 1.5 s to ask, the last trial is not started
    where only its ask would fit, so the search ends before the budget and the final model
    is fitted within it (before, the ask ran into the budget and the model was cut)."""
    space = default_cash_space(["decision_tree", "knn"])
    for seed in (0, 1):
        result = tune(iris_frame, target="target", time_budget=6.0, space=space, strategy=_SlowToAsk(1.5),
                      seed=seed, cv=None, opening=False)
        ends = [result.trial_end_seconds[r.number] for r in result.history.completed]
        assert len(ends) >= 1 and max(ends) < 6.0, ends
        assert result.model is not None and result.total_seconds < 6.0 + 0.5, result.total_seconds


def test_the_deadline_ends_a_library_that_turns_its_alarm_into_an_error_of_its_own():
    """CatBoost checks for signals while it trains and raises KeyboardInterrupt for the
    deadline's alarm (seen: `metabo tune` exiting 130, "interrupted", with no model). Under
    the deadline that is the budget's end; without an alarm, an error is the library's."""
    from metabo.exceptions import TimeBudgetExceeded
    from metabo.optimizer.budget import deadline

    def catboost_like(seconds: float, error: type[BaseException]) -> None:
        try:
            time.sleep(seconds)  # the alarm's handler raises here, as in catboost's signal check
        except BaseException as e:
            raise error("training interrupted") from e

    started = time.monotonic()
    for error in (KeyboardInterrupt, RuntimeError):
        with pytest.raises(TimeBudgetExceeded, match="ran out"):
            with deadline(TimeBudget(0.2), grace=0.0):
                catboost_like(5.0, error)
    assert time.monotonic() - started < 3.0
    with pytest.raises(KeyboardInterrupt):  # no alarm: the interrupt is the user's
        with deadline(TimeBudget(30.0)):
            raise KeyboardInterrupt
    with pytest.raises(ValueError):
        with deadline(TimeBudget(30.0)):
            raise ValueError("a failure of the work itself")


def _slow_guard(monkeypatch, *, seconds_per_model: float) -> None:
    """Make the ensemble guard take ``seconds_per_model`` per model of its library."""
    from metabo.ensembles.library import OutOfFoldLibrary

    real = OutOfFoldLibrary.choose

    def slow_choose(self, single):
        time.sleep(seconds_per_model * len(self))
        return real(self, single)

    monkeypatch.setattr(OutOfFoldLibrary, "choose", slow_choose)


@pytest.mark.slow
def test_a_slow_ensemble_guard_is_not_asked_where_it_would_run_past_the_budget(iris_frame, monkeypatch):
    """The reserve asks the ensemble guard whether to keep time for an ensemble's members
    when they would stop the search, near the budget's end; on a large library its
    selections took seconds there and ran past the budget (penbased at 120 s: no model).
    With a guard whose seconds grow with the library, the search still ends in time and the
    model is fitted within the budget."""
    _slow_guard(monkeypatch, seconds_per_model=0.15)
    space = default_cash_space(["decision_tree", "knn"])
    result = tune(iris_frame, target="target", time_budget=8.0, space=space, strategy="random", seed=0,
                  opening=False)
    assert len(result.history.completed) >= 5
    assert result.model is not None and result.total_seconds < 8.0 + 0.5, result.total_seconds


@pytest.mark.slow
def test_the_search_leaves_time_for_the_guards_answer_after_it(iris_frame, monkeypatch):
    """The guard's answer after the search is reserved like the final fits: with a guard
    whose seconds grow with the library, a search under a time budget ends in time for it
    (before, the search spent the budget and `tune` said "no time was left to choose an
    ensemble" on 93 of 96 runs of reports/automl-v10), and within the budget."""
    _slow_guard(monkeypatch, seconds_per_model=0.02)
    space = default_cash_space(["decision_tree", "knn"])
    result = tune(iris_frame, target="target", time_budget=8.0, space=space, strategy="random", seed=0,
                  opening=False)
    assert len(result.history.completed) >= 5
    assert result.ensemble is not None, result.ensemble_note
    assert result.model is not None and result.total_seconds < 8.0 + 0.5, result.total_seconds


@pytest.mark.slow
@pytest.mark.parametrize("opening", [True, False])
def test_a_budget_spent_while_storing_the_data_ends_with_the_opening_model(tmp_path, iris_frame, monkeypatch,
                                                                          opening):
    """When storing the data (fingerprint, meta-features) leaves less than a trial needs, a
    search that opened with a model ends with it (no search trial, the opening's
    configuration refitted) instead of an error; without the opening it is refused with a
    clear error, and nothing is stored."""
    import importlib

    module = importlib.import_module("metabo.tuning.tune")
    original = module.store_setup

    def slow_store(setup, stored, kb, *, clock=None, **kw):
        out = original(setup, stored, kb, clock=clock, **kw)
        time.sleep(max(clock.left() - 0.5 * clock.min_trial, 0.0))  # the budget is spent
        return out

    monkeypatch.setattr(module, "store_setup", slow_store)
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    kw = {"target": "target", "time_budget": 6.0, "space": default_cash_space(["lightgbm", "knn"]),
          "strategy": "random", "seed": 0, "kb": kb, "opening": opening}
    if not opening:
        with pytest.raises(InputDataError, match="less than a trial needs"):
            tune(iris_frame, **kw)
        assert kb.query("SELECT count(*) AS n FROM datasets")["n"].iloc[0] == 0
        return
    result = tune(iris_frame, **kw)
    assert len(result.history) == 1 and result.best.number == 0 and result.best.algorithm == "lightgbm"
    assert result.model is not None
    X = iris_frame.drop(columns="target")
    assert np.mean(result.model.predict(X) == iris_frame["target"].to_numpy()) > 0.8


@pytest.mark.parametrize("diverges", ["none", "model", "member"])
def test_a_fit_on_every_row_that_diverges_keeps_the_scored_fit(monkeypatch, caplog, diverges):
    """The fit on every row is checked against the scored fit on rows it was trained on: one
    that does far worse there (a diverged boosting, simulated here by members that predict
    one class) is dropped with a warning and the scored fit kept, also when only a member of
    little weight diverged and the ensemble's error hides it; a sound one is returned."""
    from metabo.data.loaders import load_dataset
    from metabo.ensembles.model import EnsembleModel
    from metabo.tuning.final import fit_on_every_row
    from metabo.tuning.session import prepare

    setup = prepare(load_dataset("sklearn:iris"), kb=None, seed=0)
    train_rows, _, _ = setup.split_rows(0)
    members = [("knn", {"n_neighbors": 5, "weights": "uniform", "p": 2}), ("lda", {"solver": "svd"})]
    scored = EnsembleModel(members, [0.8, 0.2], seed=0).fit_dataset(setup.data, rows=np.arange(train_rows))
    original_fit, original_probas = EnsembleModel.fit_dataset, EnsembleModel.member_probabilities

    def fit_dataset(self, dataset, rows=None):
        fitted = original_fit(self, dataset, rows)
        fitted.every_row = rows is None
        return fitted

    def member_probabilities(self, X):
        P = original_probas(self, X)
        if getattr(self, "every_row", False) and diverges != "none":  # the every-row fit
            gone = slice(None) if diverges == "model" else slice(1, 2)  # every member, or lda (weight 0.2)
            P[gone] = np.eye(P.shape[2])[0]
        return P

    monkeypatch.setattr(EnsembleModel, "fit_dataset", fit_dataset)
    monkeypatch.setattr(EnsembleModel, "member_probabilities", member_probabilities)
    with caplog.at_level("WARNING", logger="metabo.tuning.final"):
        deployed = fit_on_every_row(scored, setup)
    if diverges == "model":
        assert deployed is None
        assert "the fit on every row diverged (error rate 0.667 on 150 of its own rows" in caplog.text
    elif diverges == "member":
        assert deployed is None
        assert "member 1 (lda) of the fit on every row diverged" in caplog.text
        assert "the fit on every row diverged (error rate" not in caplog.text  # the ensemble's own error hid it
    else:
        assert deployed is not None and deployed is not scored and not caplog.text
        assert deployed.members_ == scored.members_


def test_a_budget_less_seconds_ends_that_much_earlier():
    clock = TimeBudget(10.0, start=time.monotonic() - 4.0)
    short = clock.less(3.0)
    assert short.start == clock.start and short.seconds == 7.0
    assert short.left() == pytest.approx(clock.left() - 3.0, abs=0.05)
    assert clock.less(50.0).left() < 0 and clock.less(-1.0).seconds == 10.0  # spent; never longer


def test_the_model_writer_writes_a_model_once_and_prices_others_by_its_members(tmp_path, monkeypatch):
    """ModelWriter: the first write measures the cost per member beyond WRITE_PER_FIT of its
    fit; a model of m members fitting in f seconds is predicted to take WRITE_MARGIN x (m x
    that cost + WRITE_PER_FIT x f); the model written last is not written again."""
    from metabo.tuning.final import WRITE_MARGIN, WRITE_PER_FIT, ModelWriter

    calls = []
    monkeypatch.setattr(EnsembleModel, "save", lambda self, path, trusted=False: (calls.append(path),
                                                                                  time.sleep(0.4)))
    writer = ModelWriter(tmp_path / "m.skops")
    assert writer.predict(10.0, 3) == 0.0  # nothing measured yet
    pair, other = EnsembleModel([("knn", {}), ("lda", {})]), EnsembleModel([("lda", {})])
    writer.first(pair, 2.0)  # 0.4 s for two members that fit in 2 s: 0.1 s each beyond the fits' share
    assert writer.per_member == pytest.approx((0.4 - WRITE_PER_FIT * 2.0) / 2, abs=0.03)
    assert writer.written is pair
    assert writer.predict(10.0, 3) == pytest.approx(WRITE_MARGIN * (3 * writer.per_member + WRITE_PER_FIT * 10.0))
    assert writer.write(pair) == 0.0 and len(calls) == 1  # written already
    assert writer.write(other) >= 0.4 and len(calls) == 2 and writer.written is other
    assert writer.seconds == pytest.approx(0.8, abs=0.1)
    slow_fit = ModelWriter(tmp_path / "t.skops")
    slow_fit.first(other, 10.0)  # a write shorter than the fit's share: no cost per member
    assert slow_fit.per_member == 0.0


def test_tune_writes_the_model_it_returns(tmp_path, iris_frame):
    """``save_model``: the file tune writes is the model it returns (same predictions), also
    under a time budget, where the selection is written first and the final model replaces
    it; a path that cannot be written, or no refit, is refused before anything runs."""
    space = default_cash_space(["knn", "logistic_regression"])
    X = iris_frame.drop(columns="target")
    for i, kw in enumerate(({"budget": 3}, {"time_budget": 6.0, "opening": False})):
        path = tmp_path / f"m{i}.skops"
        result = tune(iris_frame, target="target", space=space, strategy="random", seed=1, save_model=path, **kw)
        assert result.model_path == path and result.write_seconds > 0
        np.testing.assert_array_equal(EnsembleModel.load(path).predict_proba(X), result.model.predict_proba(X))
    with pytest.raises(InputDataError, match="refit=True"):
        tune(iris_frame, target="target", budget=1, space=space, save_model=tmp_path / "x.skops", refit=False)
    with pytest.raises(InputDataError, match="no folder"):
        tune(iris_frame, target="target", budget=1, space=space, save_model=tmp_path / "nodir" / "x.skops")
