"""Every trial is bounded: without a time limit, each split runs at most its default limit
(:mod:`metabo.optimizer.limits`), and one that runs past it is recorded as a timeout."""

from __future__ import annotations

import json
import time

import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

import metabo.optimizer.limits as limits
import metabo.space.algorithms as algorithms
from metabo.exceptions import MetaboError
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.optimizer.history import History, TrialRecord
from metabo.optimizer.limits import DefaultLimit, default_limit
from metabo.optimizer.optimizer import get_session
from metabo.space.algorithms import default_cash_space


class Stuck(ClassifierMixin, BaseEstimator):
    """A fit that does not end in any test's lifetime (a non-converging solver)."""

    def fit(self, X, y):
        time.sleep(600)
        return self


def _record(number: int, fit_seconds: float, status: str = "ok") -> TrialRecord:
    return TrialRecord(number, "knn", {}, f"c{number}", state="complete", value=0.1, status=status,
                       fit_seconds=fit_seconds)


def test_the_limit_is_the_floor_or_ten_times_the_slowest_expected_fit():
    limit = DefaultLimit(n_rows=1000, n_features=10, fits=2, predicted={"svm_rbf": 5.0})
    assert limit.floor == pytest.approx(limits.BASE_SECONDS + 1000 * 10 * limits.SECONDS_PER_CELL)
    assert limit("knn", History()) == pytest.approx(limit.floor)  # nothing known: the floor
    assert limit("svm_rbf", History()) == pytest.approx(50.0)  # 10 x the recorded fits' prediction
    # the session's slowest successful split (20 s over 2 splits), failed trials left out
    history = History([_record(0, 20.0), _record(1, 500.0, status="timeout")])
    assert limit("knn", history) == pytest.approx(100.0)
    # a wider table has a higher floor
    assert DefaultLimit(60, 10_000).floor > DefaultLimit(60, 10).floor


def test_the_prediction_comes_from_the_recorded_fit_seconds(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        tune("sklearn:iris", budget=2, space=default_cash_space(["knn"]), strategy="random", kb=kb, cv=None,
             meta_features=False, refit=False)
        recorded = kb.query("SELECT max(fit_seconds) AS s FROM runs WHERE status = 'ok'")["s"].iloc[0]
        limit = default_limit(kb, dataset_id="other", algorithms=["knn", "svm_rbf"], n_rows=90, n_features=4, fits=1)
        assert set(limit.predicted) == {"knn"}  # no svm_rbf runs recorded
        assert 0 < limit.predicted["knn"] <= recorded * 1.0001
        # the task's own runs are not a prediction for itself
        stored = kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"].iloc[0]
        assert default_limit(kb, dataset_id=stored, algorithms=["knn"], n_rows=90, n_features=4, fits=1).predicted == {}


def _search_alone(kb: KnowledgeBase, session_id: str) -> None:
    """``tune`` on iris with two random knn trials and no time limit; its error must say both were cut."""
    with pytest.raises(MetaboError, match="no successful trial"):
        tune("sklearn:iris", budget=2, space=default_cash_space(["knn"]), strategy="random", kb=kb, cv=None,
             meta_features=False, refit=False, session_id=session_id)


def _search_ensemble(kb: KnowledgeBase, session_id: str) -> None:
    """``tune_ensemble`` (post-hoc) on the same search; nothing to ensemble once both trials were cut."""
    from metabo.tuning.ensemble import tune_ensemble

    with pytest.raises(MetaboError):
        tune_ensemble("sklearn:iris", method="posthoc", budget=2, space=default_cash_space(["knn"]),
                      strategy="random", kb=kb, cv=None, meta_features=False, session_id=session_id)


@pytest.mark.slow
@pytest.mark.parametrize("search", [_search_alone, _search_ensemble], ids=["tune", "tune_ensemble"])
def test_a_trial_without_a_time_limit_is_killed_at_its_default_limit(search, monkeypatch, tmp_path):
    monkeypatch.setattr(limits, "BASE_SECONDS", 1.0)
    monkeypatch.setattr(algorithms, "build_estimator", lambda algorithm, params, seed: Stuck())
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        start = time.monotonic()
        search(kb, "stuck")
        assert time.monotonic() - start < 120  # generous: only that it did not sleep 600 s
        runs = kb.query("SELECT DISTINCT config_id, status, message FROM runs WHERE source = 'session:stuck'")
        assert len(runs) == 2 and set(runs["status"]) == {"timeout"}
        assert all("(limit 1.0" in m for m in runs["message"])
        settings = json.loads(get_session(kb, "stuck")["settings"])
        assert settings["time_limit"] is None and settings["default_time_limit"].startswith("per split: max(1 s")


def test_work_outside_the_trials_is_interrupted_when_the_budget_runs_out():
    from metabo.exceptions import TimeBudgetExceeded
    from metabo.optimizer.budget import TimeBudget, deadline

    spins = 0
    with pytest.raises(TimeBudgetExceeded, match="time budget of 0.05 s ran out"):
        with deadline(TimeBudget(0.05), grace=0.0):
            end = time.monotonic() + 60
            while time.monotonic() < end:  # pure Python work that would run a minute
                try:  # a handler of its own failures (a reader's, a worker's) does not take the interrupt
                    spins += 1
                except Exception:  # noqa: BLE001
                    pass
    assert time.monotonic() < end
    with deadline(None):  # no clock: inert
        pass
    import signal

    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # the timer is disarmed after the block


def test_meta_features_past_their_limit_leave_the_dataset_stored_without_them(tmp_path, caplog):
    from metabo.data.loaders import load_dataset
    from metabo.ingest.datasets import ingest_dataset, meta_features_limit

    iris, wine = load_dataset("sklearn:iris"), load_dataset("sklearn:wine")
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        with caplog.at_level("WARNING", logger="metabo.ingest.datasets"):
            cut = ingest_dataset(kb, iris, time_limit=0.001)
            skipped = ingest_dataset(kb, wine, time_limit=-1.0)  # a budget already spent: not even started
        assert "were not computed within 0.0 s" in caplog.text
        stored = kb.query("SELECT count(*) AS n FROM meta_features WHERE dataset_id IN (?, ?)", [cut, skipped])
        assert stored["n"].iloc[0] == 0
        full = ingest_dataset(kb, load_dataset("sklearn:breast_cancer"), time_limit=120.0)
        assert kb.query("SELECT count(*) AS n FROM meta_features WHERE dataset_id = ?", [full])["n"].iloc[0] > 20
    assert meta_features_limit(iris, left=8.0) == pytest.approx(2.0)
    assert meta_features_limit(wine) > meta_features_limit(iris)  # without a budget: grows with the table
