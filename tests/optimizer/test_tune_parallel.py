"""tune(n_jobs=...): synchronous batches keep the seed contract.

``n_jobs=1`` is the sequential ask-evaluate-tell loop; ``n_jobs=2`` asks two trials (the
second sees the first as a constant lie), evaluates them at once and tells them in order;
a run killed mid-batch resumes into the uninterrupted run's history.
"""

from __future__ import annotations

import pytest

from metabo.evaluation.parallel import EvalTask, run_task
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.optimizer.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space
from metabo.strategies.gp import GPBO
from metabo.tuning.session import prepare
from metabo.tuning.trials import _outcome

SPACE = default_cash_space(["knn", "decision_tree"])


def _gp() -> GPBO:
    """A quick GP-BO whose suggestions depend on the history (pending trials included)."""
    return GPBO(n_init=2, n_restarts=0, n_random=200, n_local=2, n_starts=2, seed=0)


def _trials(history) -> list[tuple]:
    return [(r.number, r.algorithm, r.config_id, r.status, r.value, r.test_value) for r in history]


def _sequential(budget: int, seed: int) -> list[tuple]:
    """The one-trial-at-a-time loop tune ran before batches: ask, evaluate here, tell."""
    setup = prepare("sklearn:iris", kb=None, seed=seed)
    opt = Optimizer(SPACE, _gp(), seed=seed)
    while len(opt.history.completed) < budget:
        trial = opt.ask()
        task = EvalTask(setup.data.name, setup.data, trial.algorithm, trial.params, protocol=setup.protocol,
                        seed=seed, metrics=setup.metrics)
        evaluations = run_task(task).evaluations
        opt.tell(trial, evaluations=evaluations, **_outcome(evaluations, opt.metric))
    return _trials(opt.history)


def test_one_job_is_the_sequential_run():
    result = tune("sklearn:iris", budget=4, space=SPACE, strategy=_gp(), seed=5, n_jobs=1)
    assert _trials(result.history) == _sequential(4, 5)


@pytest.mark.slow
def test_batches_of_two_are_distinct_told_in_order_and_cut_to_the_budget():
    told = []
    result = tune("sklearn:iris", budget=5, space=SPACE, strategy=_gp(), seed=5, n_jobs=2,
                  progress=lambda r: told.append(r.number))
    assert told == [0, 1, 2, 3, 4]
    assert len(result.history) == 5 and not result.history.pending  # the third batch asked one trial
    assert len({r.config_id for r in result.history}) == 5
    again = tune("sklearn:iris", budget=5, space=SPACE, strategy=_gp(), seed=5, n_jobs=2, backend="threading")
    assert _trials(again.history) == _trials(result.history)


class Killed(Exception):
    pass


def _kill_after(number: int):
    def progress(record) -> None:
        if record.number == number:
            raise Killed
    return progress


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:1 tasks have been successfully executed:UserWarning")  # the kill drops one
def test_a_run_killed_mid_batch_resumes_into_the_uninterrupted_history(tmp_path):
    common = {"space": SPACE, "seed": 1, "n_jobs": 2, "meta_features": False}
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        full = tune("sklearn:iris", budget=6, strategy=_gp(), kb=kb, session_id="full", **common)

        # killed after telling trial 2 of the batch (2, 3): trial 3 is left pending
        with pytest.raises(Killed):
            tune("sklearn:iris", budget=6, strategy=_gp(), kb=kb, session_id="told-one", progress=_kill_after(2),
                 **common)
        resumed = tune("sklearn:iris", budget=6, strategy=_gp(), kb=kb, session_id="told-one", **common)
        assert _trials(resumed.history) == _trials(full.history)

        # killed before telling either trial of the batch (2, 3)
        tune("sklearn:iris", budget=2, strategy=_gp(), kb=kb, session_id="told-none", **common)
        opt = Optimizer.resume(kb, "told-none", SPACE, _gp())
        opt.ask(), opt.ask()
        told = []
        resumed = tune("sklearn:iris", budget=6, strategy=_gp(), kb=kb, session_id="told-none",
                       progress=lambda r: told.append(r.number), **common)
        assert told == [2, 3, 4, 5]
        assert _trials(resumed.history) == _trials(full.history)


def test_workers_are_capped_at_the_cores_and_the_batch(monkeypatch, caplog):
    """n_jobs far above the cores (1000 on 2) or above the trials a batch needs starts no
    more workers than either, says so, and keeps the batches (hence the history) of n_jobs."""
    import sys

    import joblib.externals.loky.reusable_executor as loky_executor

    import metabo.evaluation.backends as backends

    tune_module = sys.modules["metabo.tuning.trials"]  # where run_trials evaluates

    monkeypatch.setattr(backends, "available_cores", lambda: 2)
    pools, contexts = [], []
    real_many, real_context = tune_module.evaluate_many, tune_module.backend_context

    def many(tasks, *, n_jobs, backend):
        pools.append((len(tasks), n_jobs))
        return real_many(tasks, n_jobs=n_jobs, backend=backend)

    def context(name, *, address=None, n_jobs=1):
        contexts.append(n_jobs)
        return real_context(name, address=address, n_jobs=n_jobs)

    monkeypatch.setattr(tune_module, "evaluate_many", many)
    monkeypatch.setattr(tune_module, "backend_context", context)
    with caplog.at_level("WARNING", logger="metabo.evaluation.backends"):
        result = tune("sklearn:iris", budget=3, space=SPACE, strategy=_gp(), seed=5, n_jobs=1000)
    assert len(result.history.completed) == 3
    assert contexts == [2] and pools == [(3, 2)]  # one batch of 3 trials on 2 workers
    executor = loky_executor._executor  # the loky pool joblib started for it
    assert executor is not None and executor._max_workers == 2 and len(executor._processes) <= 2
    assert "n_jobs=1000 is more than the cores available to this process (2)" in caplog.text

    pools.clear(), contexts.clear()
    tune("sklearn:iris", budget=2, space=SPACE, strategy=_gp(), seed=5, n_jobs=20, backend="threading")
    assert contexts == [2] and pools == [(2, 2)]
    pools.clear(), contexts.clear()
    tune("sklearn:iris", budget=1, space=SPACE, strategy=_gp(), seed=5, n_jobs=20)
    assert contexts == [1] and pools == [(1, 1)]  # one trial: no pool at all, in this process
