"""Ask, evaluate and tell: the search's batches of trials, and the opening trial under a time
budget (:mod:`metabo.tuning.tune`)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabo.evaluation.backends import backend_context, worker_count
from metabo.evaluation.evaluate import Evaluation
from metabo.evaluation.parallel import TaskResult, evaluate_many, run_task
from metabo.evaluation.protocols import EvaluationProtocol, ReshuffledHoldout
from metabo.exceptions import EvaluationError, InputDataError
from metabo.kb.canonical import config_id
from metabo.optimizer.budget import TimeBudget
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.limits import DefaultLimit
from metabo.optimizer.optimizer import Optimizer
from metabo.space.cash import CASHSpace
from metabo.tuning.session import Setup

logger = logging.getLogger(__name__)


def _outcome(evaluations: list[Evaluation], metric: str) -> dict[str, Any]:
    """The told value (mean over splits), status, test value and timings of a trial (each
    summed over its splits)."""
    failed = [ev for ev in evaluations if not ev.ok]
    fit = float(np.nansum([ev.fit_seconds for ev in evaluations]))
    predict = float(np.nansum([ev.predict_seconds for ev in evaluations]))
    prepare = float(np.nansum([ev.prepare_seconds for ev in evaluations]))
    if failed:
        return {"value": math.nan, "status": failed[0].status, "message": failed[0].message,
                "fit_seconds": fit, "predict_seconds": None, "prepare_seconds": prepare}
    valid = [ev.valid.get(metric, math.nan) for ev in evaluations]
    if not evaluations or not all(math.isfinite(v) for v in valid):
        return {"value": math.nan, "status": "crash", "message": f"{metric} is undefined on the validation part",
                "fit_seconds": fit, "predict_seconds": predict, "prepare_seconds": prepare}
    tests = [ev.test.get(metric, math.nan) if ev.test else math.nan for ev in evaluations]
    test = float(np.mean(tests)) if all(math.isfinite(t) for t in tests) else None
    return {"value": float(np.mean(valid)), "status": "ok", "test_value": test, "message": evaluations[0].message,
            "fit_seconds": fit, "predict_seconds": predict, "prepare_seconds": prepare}


def run_trials(
    opt: Optimizer, setup: Setup, *, budget: int | None, seed: int, time_limit: float | None = None,
    memory_limit_mb: int | None = None, keep_predictions: bool = True, n_jobs: int = 1, backend: str = "loky",
    scheduler: str | None = None, progress: Callable[[TrialRecord], None] | None = None,
    on_evaluated: Callable[[TrialRecord, list[Evaluation]], None] | None = None,
    clock: TimeBudget | None = None, reserve: Callable[[], float] | None = None,
    default_limit: Callable[[str, History], float] | None = None,
) -> None:
    """Ask, evaluate and tell, in batches of ``n_jobs`` trials evaluated at once on
    ``backend`` (at ``scheduler`` for dask/ray), until ``budget`` trials of the session
    are complete or the ``clock`` has no time for another trial after ``reserve()``
    seconds (module docstring); ``on_evaluated`` sees each told trial with its
    evaluations (before ``progress``). Without a ``time_limit``, each split of a trial
    may run ``default_limit(algorithm, history)`` seconds (:mod:`metabo.optimizer.limits`).

    Under a ``clock`` a batch's trials may run what is left after ``reserve()`` and the
    search's own seconds around the batch before (the reserve, asking the strategy,
    telling the results: a GP's ask grows with the observations, and the ensemble guard's
    answer in ``reserve`` with the library), so that the search ends in time for the
    final model, not with it; and once a trial has succeeded, at most a tenth of the
    budget (:data:`~metabo.optimizer.budget.TRIAL_SHARE`)."""
    if budget is None and clock is None:
        raise InputDataError("run_trials needs a budget of trials or a clock")
    # a batch is still n_jobs trials (the history depends on the seed and n_jobs only);
    # the workers evaluating it are at most the cores, and at most the batch
    workers = worker_count(n_jobs, address=scheduler, what="n_jobs")
    if budget is not None:
        workers = min(workers, max(budget - len(opt.history.completed), len(opt.history.pending), 1))
    overhead = 0.0  # the search's own seconds around the last batch (docstring)
    with backend_context(backend, address=scheduler, n_jobs=workers):
        while (needed := n_jobs if budget is None else budget - len(opt.history.completed)) > 0:
            began = time.monotonic()
            total = None  # the seconds of a trial's fits together, under the clock
            if clock is not None:
                total = clock.trial_limit((reserve() if reserve is not None else 0.0) + overhead,
                                          capped=any(r.ok for r in opt.history.completed))
                if total is None:
                    logger.info("time budget: %.1f s left, stopping the search", clock.left())
                    break
            pending = len(opt.history.pending)  # left by a killed batch: re-asked on their own
            batch = [opt.ask() for _ in range(min(n_jobs, needed, pending or n_jobs))]
            # one job runs in this process (joblib's n_jobs=1, any backend): on the data as loaded
            pool = min(workers, len(batch))
            tasks = [setup.task(trial, _at(setup.protocol, trial.number), seed=seed,
                                time_limit=time_limit if time_limit is not None or default_limit is None
                                else default_limit(trial.algorithm, opt.history),
                                memory_limit_mb=memory_limit_mb, keep_predictions=keep_predictions,
                                in_process=pool == 1, total_time_limit=total)
                     for trial in batch]
            overhead = time.monotonic() - began
            for trial, result in _in_order(batch, evaluate_many(tasks, n_jobs=pool, backend=backend)):
                told = time.monotonic()
                _tell(opt, trial, _evaluations(trial, result), on_evaluated=on_evaluated, progress=progress)
                overhead += time.monotonic() - told


def _tell(opt: Optimizer, trial: Trial, evaluations: list[Evaluation], *,
          on_evaluated: Callable[[TrialRecord, list[Evaluation]], None] | None,
          progress: Callable[[TrialRecord], None] | None, note: str = "") -> TrialRecord:
    """Tell ``opt`` the trial's outcome, log it, then show it to ``on_evaluated`` (with its
    evaluations) and ``progress``: the one path every evaluated trial takes."""
    record = opt.tell(trial, evaluations=evaluations, **_outcome(evaluations, opt.metric))
    logger.info("trial %d %s%s: %s %.4g", record.number, record.algorithm, note, record.status, record.value)
    if on_evaluated is not None:
        on_evaluated(record, evaluations)
    if progress is not None:
        progress(record)
    return record


def _in_order(batch: list[Trial], results: Iterator[TaskResult]) -> Iterator[tuple[Trial, TaskResult]]:
    """(trial, result) in the batch's order, each as soon as it and those before it are
    done (a result's task is tagged with its trial number)."""
    done: dict[int, TaskResult] = {}
    at = 0
    for result in results:
        done[result.task.tag] = result
        while at < len(batch) and batch[at].number in done:
            yield batch[at], done.pop(batch[at].number)
            at += 1


#: the opening trial under a time budget (:func:`tune`'s ``opening``; module docstring): a
#: small LightGBM, 10 trees of at most 8 leaves at a learning rate of 0.3 (the rest at the
#: space's defaults), a fraction of a second per fold on the tables the knowledge covers,
#: so that a model exists within seconds of the start whatever the knowledge base holds.
#: FLAML opens with a LightGBM of 4 trees of 4 leaves for the same reason.
OPENING: tuple[str, dict[str, Any]] = ("lightgbm", {"n_estimators": 10, "num_leaves": 8, "learning_rate": 0.3})


@dataclass(frozen=True)
class Opened:
    """The opening trial's configuration, its evaluations and when they ended
    (:func:`time.monotonic`)."""

    config: tuple[str, dict[str, Any]]
    evaluations: list[Evaluation]
    ended: float


def _open(setup: Setup, space: CASHSpace, *, seed: int, clock: TimeBudget | None, time_limit: float | None,
          memory_limit_mb: int | None, keep_predictions: bool) -> Opened | None:
    """Evaluate :data:`OPENING` on ``setup`` as trial 0 would be (in this process, its
    splits bounded as the search bounds them without a knowledge base: ``time_limit`` or
    :class:`DefaultLimit`'s floor, and what the clock allows); None when the clock allows
    no trial."""
    total = None
    if clock is not None:
        total = clock.trial_limit()
        if total is None:
            return None
    algorithm, params = OPENING
    params = space[algorithm].normalize({**space[algorithm].default_configuration(), **params})
    trial = Trial(0, algorithm, params, config_id(algorithm, params))
    train_rows, fits, _ = setup.split_rows(seed)
    limit = time_limit if time_limit is not None else DefaultLimit(train_rows, setup.data.n_features, fits)(
        algorithm, History())
    task = setup.task(trial, _at(setup.protocol, 0), seed=seed, time_limit=limit, memory_limit_mb=memory_limit_mb,
                      keep_predictions=keep_predictions, in_process=True, total_time_limit=total)
    result = run_task(task)
    return Opened((algorithm, params), _evaluations(trial, result), time.monotonic())


def _at(protocol: EvaluationProtocol, number: int) -> EvaluationProtocol:
    """The protocol as trial ``number`` saw it (reshuffled splits are redrawn per trial)."""
    return protocol.at(number) if isinstance(protocol, ReshuffledHoldout) else protocol


def _evaluations(trial: Trial | TrialRecord, result: TaskResult) -> list[Evaluation]:
    """The trial's evaluations; a task that could not run at all is an error, not an outcome."""
    if not result.ok:
        raise EvaluationError(f"trial {trial.number} ({trial.algorithm}) could not run: {result.error}")
    return result.evaluations

