"""Tune a classifier on one dataset: ask, evaluate with :mod:`metabo.evaluation`, tell.

Each trial is evaluated the way ``metabo kb build`` evaluates a configuration (an
:class:`~metabo.evaluation.parallel.EvalTask` run by
:func:`~metabo.evaluation.parallel.run_task`: seeded split and estimator, per-run time
and memory limits, failures as crash/timeout/memout), and its evaluations are recorded
by :meth:`Optimizer.tell` through :func:`metabo.evaluation.record` (every metric on the
validation and test parts, and the predictions) as runs of ``session:<id>``.

Protocols: a fixed stratified :class:`~metabo.evaluation.protocols.Holdout` 60/20/20 by
default (every trial sees the same rows); with ``reshuffle=True`` a
:class:`~metabo.evaluation.protocols.ReshuffledHoldout` 60/20/20 whose train/validation
split is redrawn at each trial (thesis 3.2.1, ``protocol.at(trial.number)``) while the
test part stays fixed. The objective is the validation ``metric`` (mean over a
protocol's splits); the reported test error is the selected trial's own test value
(its model, trained on that trial's training part, scored on the common test part).
With ``refit=True`` the selected configuration is also trained again on its split's
training and validation rows together (:class:`~metabo.evaluation.protocols.RefitOnTrainValid`)
and scored on the same test part: ``refit_test_error``, the error of the model one would
deploy. That evaluation is not stored as a run (the knowledge base keeps what the
optimizer saw).

``budget`` counts completed trials of the session: continuing a stored session
(``session_id`` of an existing one) runs only what is missing, re-evaluating first a
trial that was pending when the previous process stopped.

Parallel trials (``n_jobs`` > 1, any joblib ``backend``: ``loky``, ``dask``, ``ray``,
see :func:`~metabo.evaluation.backends.backend_context`) run in synchronous batches:
ask ``n_jobs`` trials, evaluate them at once with
:func:`~metabo.evaluation.parallel.evaluate_many`, tell them in trial-number order (each
as soon as those before it are told), and ask the next batch; the last batch is cut to
what the budget still needs. While a batch is asked, its earlier trials are pending,
and :meth:`Optimizer.ask` shows them to the strategy as constant lies (Ginsbourger, Le
Riche & Carraro 2010, "Kriging is well-suited to parallelize optimization"), so a batch
is spread out rather than ``n_jobs`` copies of one suggestion. Every ask therefore sees
a history fixed by the seed, ``n_jobs`` and the told values, never by which worker
finished first: a run is reproducible on any backend, and ``n_jobs=1`` is the
sequential run. Trials left pending by a killed batch make up the first batch of the
resumed run on their own (no new trial joins them), so the batches after it are the
uninterrupted run's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.data.dataset import Dataset
from metabo.evaluation.evaluate import DEFAULT_METRICS, Evaluation
from metabo.evaluation.backends import backend_context, check_backend
from metabo.evaluation.parallel import EvalTask, TaskResult, evaluate_many, run_task
from metabo.evaluation.protocols import (
    EvaluationProtocol,
    Holdout,
    RefitOnTrainValid,
    ReshuffledHoldout,
)
from metabo.exceptions import EvaluationError, InputDataError
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.optimizer import Optimizer, Select, get_session
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy, make_strategy
from metabo.strategies.warm import AUTO, WARM_STRATEGIES, choose, warm_factory

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TuneResult:
    """The selected configuration, its errors, and the whole history."""

    session_id: str
    dataset_id: str | None
    metric: str
    select: str
    best: TrialRecord
    history: History
    refit_test_error: float | None = None
    #: the strategy's name (``auto`` resolved) and, for ``auto``, why it was chosen
    strategy: str = ""
    strategy_note: str = ""

    @property
    def algorithm(self) -> str:
        return self.best.algorithm

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.best.params)

    @property
    def validation_error(self) -> float:
        """The selected trial's validation ``metric``."""
        return self.best.value

    @property
    def test_error(self) -> float | None:
        """The selected trial's ``metric`` on the test part (None without one)."""
        return self.best.test_value


def _load(dataset: Dataset | str, target: str | None) -> tuple[Dataset, Dataset, tuple[tuple[str, Any], ...]]:
    """(the dataset as stored, the dataset trained on, the loader options that load the
    latter from the spec): the two differ only for a KEEL dataset whose flagged columns
    are dropped, as ``metabo kb build`` does."""
    if isinstance(dataset, Dataset):
        return dataset, dataset, ()
    from metabo.ingest.build import load_for_training

    stored, trainable, note, options = load_for_training(dataset, target)
    if trainable is None:
        raise InputDataError(f"{dataset}: nothing left to train on ({note})")
    return stored, trainable, options


def _protocol(protocol: EvaluationProtocol | None, reshuffle: bool) -> EvaluationProtocol:
    if protocol is None:
        return ReshuffledHoldout(train=0.6, valid=0.2, test=0.2) if reshuffle else Holdout(0.6, 0.2, 0.2)
    if reshuffle and not isinstance(protocol, ReshuffledHoldout):
        raise InputDataError(f"reshuffle=True needs a ReshuffledHoldout protocol, got {protocol!r}")
    return protocol


def _outcome(evaluations: list[Evaluation], metric: str) -> dict[str, Any]:
    """The told value (mean over splits), status, test value and timings of a trial."""
    failed = [ev for ev in evaluations if not ev.ok]
    fit = float(np.nansum([ev.fit_seconds for ev in evaluations]))
    predict = float(np.nansum([ev.predict_seconds for ev in evaluations]))
    if failed:
        return {"value": math.nan, "status": failed[0].status, "message": failed[0].message,
                "fit_seconds": fit, "predict_seconds": None}
    valid = [ev.valid.get(metric, math.nan) for ev in evaluations]
    if not evaluations or not all(math.isfinite(v) for v in valid):
        return {"value": math.nan, "status": "crash", "message": f"{metric} is undefined on the validation part",
                "fit_seconds": fit, "predict_seconds": predict}
    tests = [ev.test.get(metric, math.nan) if ev.test else math.nan for ev in evaluations]
    test = float(np.mean(tests)) if all(math.isfinite(t) for t in tests) else None
    return {"value": float(np.mean(valid)), "status": "ok", "test_value": test, "message": evaluations[0].message,
            "fit_seconds": fit, "predict_seconds": predict}


def check_budget(budget: object) -> None:
    """A budget is a positive integer number of trials."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputDataError(f"budget must be a positive integer, got {budget!r}")


def open_session(
    kb: KnowledgeBase | None, space: CASHSpace | SearchSpace, strategy: Strategy, *, session_id: str | None,
    dataset_id: str | None, metric: str, seed: int, settings: dict[str, Any],
) -> Optimizer:
    """The stored session ``session_id`` resumed (it must have tuned ``metric`` on
    ``dataset_id``), or a new optimizer."""
    if kb is not None and session_id is not None and get_session(kb, session_id) is not None:
        opt = Optimizer.resume(kb, session_id, space, strategy)
        if opt.dataset_id != dataset_id or opt.metric != metric:
            raise InputDataError(
                f"session {session_id!r} tuned {opt.metric} on dataset {opt.dataset_id!r}, not {metric} on "
                f"{dataset_id!r}; choose another session id"
            )
        return opt
    return Optimizer(space, strategy, kb=kb, session_id=session_id, dataset_id=dataset_id, metric=metric,
                     seed=seed, settings=settings)


@dataclass(frozen=True)
class Setup:
    """A dataset ready to tune on: as trained on, its id in the knowledge base, the
    protocol and the metrics recorded; ``spec`` and ``load_options`` load ``data`` again
    (what workers do) when it came from a loader spec."""

    data: Dataset
    dataset_id: str | None
    protocol: EvaluationProtocol
    metrics: tuple[str, ...]
    spec: str | None = None
    load_options: tuple[tuple[str, Any], ...] = ()

    def task(self, trial: Trial | TrialRecord, protocol: EvaluationProtocol, *, seed: int,
             time_limit: float | None, memory_limit_mb: int | None, keep_predictions: bool,
             in_process: bool = False) -> EvalTask:
        """The evaluation of ``trial``: for workers, by spec when there is one (module
        docstring); ``in_process``, on :attr:`data` as loaded (not loaded again)."""
        return EvalTask(dataset_id=self.dataset_id or self.data.name,
                        dataset=self.data if in_process or self.spec is None else self.spec, algorithm=trial.algorithm,
                        params=trial.params, protocol=protocol, seed=seed, time_limit=time_limit,
                        memory_limit_mb=memory_limit_mb, metrics=self.metrics, keep_predictions=keep_predictions,
                        load_options=self.load_options, tag=trial.number)

    def settings(self, budget: int, time_limit: float | None, memory_limit_mb: int | None) -> dict[str, Any]:
        """The session settings stored with the optimizer."""
        return {"protocol": repr(self.protocol), "budget": budget, "metrics": list(self.metrics),
                "time_limit": time_limit, "memory_limit_mb": memory_limit_mb, "dataset": self.data.name}


def prepare(
    dataset: Dataset | str, *, kb: KnowledgeBase | None, target: str | None = None,
    protocol: EvaluationProtocol | None = None, reshuffle: bool = False, metric: str = "error_rate",
    metrics: tuple[str, ...] = DEFAULT_METRICS, meta_features: bool = True, seed: int = 0,
) -> Setup:
    """Load ``dataset``, store it in ``kb`` (with its meta-features unless
    ``meta_features=False``) and fix the protocol (see :func:`tune`)."""
    stored, data, options = _load(dataset, target)
    protocol = _protocol(protocol, reshuffle)
    metrics = tuple(dict.fromkeys((metric, *metrics)))
    dataset_id = None
    if kb is not None:
        from metabo.ingest.datasets import has_own_meta_features, ingest_dataset

        dataset_id = (ingest_dataset(kb, stored, seed=seed)
                      if meta_features and not has_own_meta_features(kb, stored) else kb.add_dataset(stored))
    spec = dataset if isinstance(dataset, str) else None
    return Setup(data, dataset_id, protocol, metrics, spec, options)


def strategy_factory(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str) -> Callable[[int], Strategy]:
    """Seed -> a fresh strategy ``name``: cold (:func:`~metabo.strategies.make_strategy`) or a
    warm start from ``kb`` for the stored ``dataset_id`` (:func:`~metabo.strategies.warm.warm_factory`,
    which reads what transfers once for every strategy it makes); ``auto``: the one
    :func:`~metabo.strategies.warm.choose_strategy` picks (:func:`resolve_strategy`)."""
    return resolve_strategy(name, kb, dataset_id, space, metric=metric)[2]


def resolve_strategy(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str) -> tuple[str, str, Callable[[int], Strategy]]:
    """``(name, note, seed -> strategy)`` of :func:`strategy_factory`, with ``auto``
    resolved (:func:`~metabo.strategies.warm.choose`, its reason logged and returned as
    ``note``; empty for a named strategy) and the past it read passed on, not read twice."""
    note, past = "", None
    if name == AUTO:
        name, note, past = choose(kb, dataset_id, space, metric=metric)
        logger.info("strategy auto: %s", note)
    if name not in WARM_STRATEGIES:
        cold = name
        return name, note, lambda seed: make_strategy(cold, seed=seed)
    if kb is None or dataset_id is None:
        raise InputDataError(f"strategy {name!r} warm-starts from a knowledge base: pass kb")
    if not isinstance(space, CASHSpace):
        raise InputDataError(f"strategy {name!r} needs a CASH space")
    return name, note, warm_factory(name, kb, dataset_id, space, metric=metric, past=past)


def run_trials(
    opt: Optimizer, setup: Setup, *, budget: int, seed: int, time_limit: float | None = None,
    memory_limit_mb: int | None = None, keep_predictions: bool = True, n_jobs: int = 1, backend: str = "loky",
    scheduler: str | None = None, progress: Callable[[TrialRecord], None] | None = None,
    on_evaluated: Callable[[TrialRecord, list[Evaluation]], None] | None = None,
) -> None:
    """Ask, evaluate and tell, in batches of ``n_jobs`` trials evaluated at once on
    ``backend`` (at ``scheduler`` for dask/ray), until ``budget`` trials of the session
    are complete (module docstring); ``on_evaluated`` sees each told trial with its
    evaluations (before ``progress``)."""
    with backend_context(backend, address=scheduler, n_jobs=n_jobs):
        while (needed := budget - len(opt.history.completed)) > 0:
            pending = len(opt.history.pending)  # left by a killed batch: re-asked on their own
            batch = [opt.ask() for _ in range(min(n_jobs, needed, pending or n_jobs))]
            # one job runs in this process (joblib's n_jobs=1, any backend): on the data as loaded
            tasks = [setup.task(trial, _at(setup.protocol, trial.number), seed=seed, time_limit=time_limit,
                                memory_limit_mb=memory_limit_mb, keep_predictions=keep_predictions,
                                in_process=n_jobs == 1)
                     for trial in batch]
            for trial, result in _in_order(batch, evaluate_many(tasks, n_jobs=n_jobs, backend=backend)):
                evaluations = _evaluations(trial, result)
                record = opt.tell(trial, evaluations=evaluations, **_outcome(evaluations, opt.metric))
                logger.info("trial %d %s: %s %.4g", record.number, record.algorithm, record.status, record.value)
                if on_evaluated is not None:
                    on_evaluated(record, evaluations)
                if progress is not None:
                    progress(record)


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


def tune(
    dataset: Dataset | str,
    *,
    budget: int,
    space: CASHSpace | SearchSpace | None = None,
    strategy: Strategy | str = AUTO,
    kb: KnowledgeBase | None = None,
    seed: int = 0,
    target: str | None = None,
    protocol: EvaluationProtocol | None = None,
    reshuffle: bool = False,
    select: Select = "argmin",
    metric: str = "error_rate",
    metrics: tuple[str, ...] = DEFAULT_METRICS,
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
    keep_predictions: bool = True,
    session_id: str | None = None,
    meta_features: bool = True,
    progress: Callable[[TrialRecord], None] | None = None,
    refit: bool = False,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
) -> TuneResult:
    """Tune ``dataset`` for ``budget`` trials; return the selected configuration.

    Args:
        dataset: a :class:`Dataset` or a loader spec (``sklearn:iris``, a CSV/Parquet
            path with ``target``, ``keel:...``, ``openml:ID``).
        space: the CASH space (default: every registered algorithm).
        strategy: a strategy or its name: a cold one (:func:`~metabo.strategies.make_strategy`)
            or a warm start from ``kb`` (``warm``, ``knn``, ``rgpe``, ``rlgp``, ``scot``:
            :func:`~metabo.strategies.warm.warm_strategy`, which leaves the dataset's own
            earlier runs out of what it transfers); ``auto`` (default): ``warm`` when
            ``kb`` holds other tasks' runs on the space's algorithms, else cold ``gp``
            (:func:`~metabo.strategies.warm.choose_strategy`; the result says which and why).
        kb: the knowledge base: the dataset (with its meta-features unless
            ``meta_features=False``), the session and every evaluation are stored.
        seed: seeds the suggestions, the splits and the estimators.
        protocol, reshuffle: see the module docstring.
        select: ``argmin`` or ``posterior_mean`` (thesis 3.4), see :meth:`Optimizer.best`.
        metric: the objective, one of ``metrics`` (all are recorded).
        time_limit, memory_limit_mb: per evaluation (:mod:`metabo.evaluation.runner`).
        session_id: continue this stored session, or name a new one.
        progress: called with each completed trial.
        refit: also train the selected configuration on training + validation rows and
            score it on the test part (module docstring).
        n_jobs, backend, scheduler: evaluate ``n_jobs`` trials at once on the joblib
            ``backend`` (``loky``, ``dask``, ``ray``, ...; for dask and ray the cluster at
            ``scheduler`` or a local one), in synchronous batches (module docstring);
            ``n_jobs=1`` is the sequential run.
    """
    check_budget(budget)
    check_backend(backend, address=scheduler, n_jobs=n_jobs)
    setup = prepare(dataset, kb=kb, target=target, protocol=protocol, reshuffle=reshuffle, metric=metric,
                    metrics=metrics, meta_features=meta_features, seed=seed)
    if space is None:
        from metabo.space.algorithms import default_cash_space

        space = default_cash_space()
    if isinstance(strategy, str):
        name, note, make = resolve_strategy(strategy, kb, setup.dataset_id, space, metric=metric)
        strategy = make(seed)
    else:
        name, note = getattr(strategy, "name", type(strategy).__name__), ""
    opt = open_session(kb, space, strategy, session_id=session_id, dataset_id=setup.dataset_id, metric=metric, seed=seed,
                 settings=setup.settings(budget, time_limit, memory_limit_mb))
    run_trials(opt, setup, budget=budget, seed=seed, time_limit=time_limit, memory_limit_mb=memory_limit_mb,
               keep_predictions=keep_predictions, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
               progress=progress)
    opt.finish()
    best = opt.best(select)
    refit_error = None
    if refit:  # here, on the dataset in memory
        task = setup.task(best, RefitOnTrainValid(_at(setup.protocol, best.number)), seed=seed,
                          time_limit=time_limit, memory_limit_mb=memory_limit_mb, keep_predictions=False,
                          in_process=True)
        evaluations = _evaluations(best, run_task(task))
        refit_error = _outcome(evaluations, metric).get("test_value")
    return TuneResult(opt.session_id, setup.dataset_id, metric, select, best, opt.history, refit_error, name, note)


def _at(protocol: EvaluationProtocol, number: int) -> EvaluationProtocol:
    """The protocol as trial ``number`` saw it (reshuffled splits are redrawn per trial)."""
    return protocol.at(number) if isinstance(protocol, ReshuffledHoldout) else protocol


def _evaluations(trial: Trial | TrialRecord, result: TaskResult) -> list[Evaluation]:
    """The trial's evaluations; a task that could not run at all is an error, not an outcome."""
    if not result.ok:
        raise EvaluationError(f"trial {trial.number} ({trial.algorithm}) could not run: {result.error}")
    return result.evaluations
