"""Tune a classifier on one dataset: ask, evaluate with :mod:`metabo.evaluation`, tell.

Each trial is evaluated the way ``metabo kb build`` evaluates a configuration (an
:class:`~metabo.evaluation.parallel.EvalTask` run by
:func:`~metabo.evaluation.parallel.run_task`: seeded split and estimator, per-run time
and memory limits, failures as crash/timeout/memout), and its evaluations are recorded
by :meth:`Optimizer.tell` through :func:`metabo.evaluation.record` (every metric on the
validation and test parts, and the predictions) as runs of ``session:<id>``.

Protocols (``cv``, :func:`~metabo.evaluation.protocols.search_protocol`): by default
(``cv="auto"``) 5-fold cross-validation of the 80% of the rows not kept for test on
datasets of at most 3,000 rows (every trial sees the same folds; its value is the mean
over them), a fixed stratified :class:`~metabo.evaluation.protocols.Holdout` 60/20/20
above that or with ``cv=None``; with ``reshuffle=True`` a
:class:`~metabo.evaluation.protocols.ReshuffledHoldout` 60/20/20 whose train/validation
split is redrawn at each trial (thesis 3.2.1, ``protocol.at(trial.number)``) while the
test part stays fixed. The objective is the validation ``metric`` (mean over a
protocol's splits); the reported test error is the selected trial's own test value
(its model, or the mean of its fold models', trained on that trial's training part,
scored on the common test part).
With ``refit=True`` (the default) the selected configuration is trained again on every
row of its split that is not test (training and validation rows, also those a
``max_train`` subsample left out of the search) and scored on the same test part:
``refit_test_error``. The model returned, ``TuneResult.model`` (a fitted
:class:`~metabo.ensembles.model.EnsembleModel`, the model one would deploy: by default,
``ensemble="posthoc"``, the ensemble selected over the trials' out-of-fold predictions
when the guard keeps it (:mod:`metabo.ensembles.library`; its members are refitted the same
way and ``refit_test_error`` is its own), else the selected configuration alone),
is then trained on every row given, the test part too (``final_rows="all"``, the default:
a deployed model should learn from all the data, as FLAML's ``retrain_full`` and
auto-sklearn's refit do; ``refit_test_error`` estimates its error from the fit on 80% of
the rows, slightly pessimistically); with ``final_rows="train+valid"`` it is the scored
fit itself. Neither fit is stored as a run (the knowledge base keeps what the optimizer
saw).

``budget`` counts completed trials of the session: continuing a stored session
(``session_id`` of an existing one) runs only what is missing, re-evaluating first a
trial that was pending when the previous process stopped. ``time_budget`` bounds the
wall-clock time of the whole call, the final fit included
(:class:`~metabo.optimizer.budget.TimeBudget`): trials stop in time for the final fit,
each trial (all its folds together) may run only what is left, and one still running when
the budget is spent is recorded as ``timeout``. Either bound, or both (the first reached ends the search).
Under a time budget a new session opens with :data:`OPENING` (``opening``): the data are
loaded and checked, the opening trial is evaluated in this process, and only then is the
dataset stored with its meta-features, the strategy resolved from the knowledge base and
the session opened, which tells the opening as its trial 0 (the strategy sees it as any
observation; its own picks are trials 1, 2, ...). The time to a first model is then the
imports, the loading and one small fit per fold, whatever the knowledge base holds.

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

import contextlib
import dataclasses
import functools
import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.evaluation.backends import backend_context, check_backend, worker_count
from metabo.evaluation.evaluate import DEFAULT_METRICS, Evaluation
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.parallel import EvalTask, TaskResult, evaluate_many, run_task
from metabo.evaluation.protocols import (
    EvaluationProtocol,
    Holdout,
    KFold,
    ReshuffledHoldout,
    class_codes,
    class_labels,
    require_classification,
    resolve_cv,
    search_protocol,
)
from metabo.exceptions import EvaluationError, InputDataError, TimeBudgetExceeded
from metabo.optimizer.budget import (
    DEADLINE_GRACE,
    TimeBudget,
    deadline,
    final_fit_seconds,
)
from metabo.optimizer.halving import ETA, EVAL_ROWS, Rung, first_promotion, rung_sizes, successive_halving, winner
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.limits import DefaultLimit, default_limit
from metabo.kb.canonical import config_id
from metabo.optimizer.optimizer import Optimizer, Select, get_session
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy, make_strategy
from metabo.strategies.names import COLD_STRATEGIES
from metabo.strategies.warm import AUTO, WARM_STRATEGIES, choose, warm_factory

if TYPE_CHECKING:
    from metabo.ensembles.library import EnsembleChoice, OutOfFoldLibrary
    from metabo.ensembles.model import EnsembleModel
    from metabo.kb.costs import FitCosts
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
    #: the selection fitted on every row (``final_rows="all"``) or on training + validation
    #: rows (``refit=True``): ``predict``, ``predict_proba``, ``classes_`` (the labels as
    #: given), ``save(path)``
    model: EnsembleModel | None = None
    #: the rows ``model`` was fitted on: ``all``, or ``train+valid`` (asked for with
    #: ``final_rows``, or the fit on every row failed or was cut by the time budget)
    model_rows: Literal["all", "train+valid"] | None = None
    #: wall-clock seconds from ``started`` to the end of each told trial, by number
    trial_end_seconds: dict[int, float] | None = None
    #: the :func:`time.monotonic` instant those seconds count from: the time budget's start
    #: when one was given (a budget started before the call counts what came before it),
    #: else the start of the call
    started: float | None = None
    #: wall-clock seconds of the final fit, and of the whole call
    refit_seconds: float | None = None
    total_seconds: float | None = None
    #: the folds of the search's cross-validation (None: a hold-out)
    cv: int | None = None
    #: the post-hoc ensemble's choice (``ensemble.kept``: ``ensemble`` or ``single``, its
    #: members, cross-validated gain and noise); None when none was made (``ensemble_note``)
    ensemble: EnsembleChoice | None = None
    #: why no ensemble was chosen or fitted, when so
    ensemble_note: str = ""
    #: successive halving on training rows (:mod:`metabo.optimizer.halving`): rung 0 (the
    #: search) and the rungs after it, each with the trials it evaluated and their values;
    #: empty when the table is too small or ``halving="none"``
    rungs: list[Rung] = field(default_factory=list)

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

    @property
    def time_to_first_model(self) -> float | None:
        """Seconds from :attr:`started` to the end of the first successful trial."""
        ends = self.trial_end_seconds or {}
        ok = [ends[r.number] for r in self.history.completed if r.ok and r.number in ends]
        return min(ok) if ok else None


def _load(dataset: Dataset | pd.DataFrame | str, target: str | None
          ) -> tuple[Dataset, Dataset, tuple[tuple[str, Any], ...]]:
    """(the dataset as stored, the dataset trained on, the loader options that load the
    latter from the spec): the two differ only for a KEEL dataset whose flagged columns
    are dropped, as ``metabo kb build`` does. A DataFrame is read as a file's table is
    (:meth:`Dataset.from_frame`, its ``target`` column; named by ``frame.attrs["name"]``)."""
    if isinstance(dataset, Dataset):
        return dataset, dataset, ()
    if isinstance(dataset, pd.DataFrame):
        if target is None:
            raise InputDataError("a DataFrame needs target=: the name of its class column")
        name = str(dataset.attrs.get("name", "dataframe"))
        data = Dataset.from_frame(dataset, target, name=name, source="dataframe")
        return data, data, ()
    from metabo.ingest.build import load_for_training

    stored, trainable, note, options = load_for_training(dataset, target)
    if trainable is None:
        raise InputDataError(f"{dataset}: nothing left to train on ({note})")
    return stored, trainable, options


def _protocol(protocol: EvaluationProtocol | None, reshuffle: bool, max_train: int | None, cv: int | str | None,
              n_rows: int) -> EvaluationProtocol:
    """The search's protocol: ``protocol`` as given, else the reshuffled hold-out
    (``reshuffle``) or :func:`~metabo.evaluation.protocols.search_protocol` (``cv``)."""
    resolve_cv(cv, n_rows)  # a bad cv is refused whichever protocol is used
    if protocol is None:
        if reshuffle:
            if cv not in (None, "auto"):
                raise InputDataError(f"reshuffle=True redraws one hold-out split per trial: drop cv={cv!r}")
            return ReshuffledHoldout(train=0.6, valid=0.2, test=0.2, max_train=max_train)
        return search_protocol(cv, n_rows, max_train=max_train)
    if max_train is not None:
        raise InputDataError("max_train subsamples the default protocol; give it to your protocol instead")
    if cv not in (None, "auto"):
        raise InputDataError(f"cv={cv!r} chooses the default protocol; give either cv or protocol, not both")
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


def check_budget(budget: object, time_budget: object = None) -> None:
    """A budget is a positive integer number of trials; it may be None when a time budget
    bounds the search instead."""
    if budget is None and time_budget is not None:
        return
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputDataError(f"budget must be a positive integer (or None with a time budget), got {budget!r}")


def check_limits(time_limit: object, memory_limit_mb: object) -> None:
    """A trial's time limit is a positive, finite number of seconds, its memory limit a
    positive number of megabytes; None is no limit."""
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not 0 < time_limit < 1e8):
        raise InputDataError(f"time_limit must be a positive number of seconds (or None), got {time_limit!r}")
    if memory_limit_mb is not None and (isinstance(memory_limit_mb, bool) or not isinstance(memory_limit_mb, int)
                                        or memory_limit_mb < 1):
        raise InputDataError(f"memory_limit_mb must be a positive integer (or None), got {memory_limit_mb!r}")


def check_resumable(kb: KnowledgeBase, session_id: str, dataset_id: str | None, metric: str) -> None:
    """Raise :class:`InputDataError` unless the stored session ``session_id`` (if any) tuned
    ``metric`` on ``dataset_id``: a session continues on its own task only."""
    row = get_session(kb, session_id)
    if row is None:
        return
    theirs, their_metric = row["dataset_id"], json.loads(row["settings"]).get("metric", "error_rate")
    if theirs != dataset_id or their_metric != metric:
        raise InputDataError(f"session {session_id!r} tuned {their_metric} on dataset {theirs!r}, not {metric} on "
                             f"{dataset_id!r}: resume it on its own dataset, or choose another session id")


def open_session(
    kb: KnowledgeBase | None, space: CASHSpace | SearchSpace, strategy: Strategy, *, session_id: str | None,
    dataset_id: str | None, metric: str, seed: int, settings: dict[str, Any],
) -> Optimizer:
    """The stored session ``session_id`` resumed (it must have tuned ``metric`` on
    ``dataset_id`` under the same protocol), or a new optimizer."""
    if kb is not None and session_id is not None and (row := get_session(kb, session_id)) is not None:
        stored = json.loads(row["settings"]).get("protocol")
        if stored is not None and "protocol" in settings and stored != settings["protocol"]:
            raise InputDataError(
                f"session {session_id!r} evaluated its trials with {stored}, not {settings['protocol']}: its values "
                "are not comparable; resume it with the same protocol (cv: none for a hold-out, K for K folds)"
            )
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
    #: the training rows of successive halving's rungs (:mod:`metabo.optimizer.halving`);
    #: empty without halving
    rungs: tuple[int, ...] = ()

    def task(self, trial: Trial | TrialRecord, protocol: EvaluationProtocol, *, seed: int,
             time_limit: float | None, memory_limit_mb: int | None, keep_predictions: bool,
             in_process: bool = False, total_time_limit: float | None = None) -> EvalTask:
        """The evaluation of ``trial``: for workers, by spec when there is one (module
        docstring); ``in_process``, on :attr:`data` as loaded (not loaded again).
        ``time_limit`` bounds each split, ``total_time_limit`` all of them together."""
        return EvalTask(dataset_id=self.dataset_id or self.data.name,
                        dataset=self.data if in_process or self.spec is None else self.spec, algorithm=trial.algorithm,
                        params=trial.params, protocol=protocol, seed=seed, time_limit=time_limit,
                        memory_limit_mb=memory_limit_mb, metrics=self.metrics, keep_predictions=keep_predictions,
                        load_options=self.load_options, tag=trial.number, total_time_limit=total_time_limit)

    def settings(self, budget: int | None, time_limit: float | None, memory_limit_mb: int | None,
                 time_budget: float | None = None) -> dict[str, Any]:
        """The session settings stored with the optimizer."""
        return {"protocol": repr(self.protocol), "budget": budget, "metrics": list(self.metrics),
                "time_limit": time_limit, "memory_limit_mb": memory_limit_mb, "dataset": self.data.name,
                "time_budget": time_budget}

    @property
    def folds(self) -> int | None:
        """The folds of the search's cross-validation (None: a hold-out)."""
        return self.protocol.k if isinstance(self.protocol, KFold) else None

    def split_rows(self, seed: int) -> tuple[int, int, int]:
        """(training rows of one of a trial's fits, the fits of a trial (its splits), rows
        of the fit on training + validation rows) of split 0."""
        splits = self.protocol.splits(self.data, seed)
        test = 0 if splits[0].test_idx is None else len(splits[0].test_idx)
        return splits[0].n_train, len(splits), self.data.n_instances - test


def prepare(
    dataset: Dataset | pd.DataFrame | str, *, kb: KnowledgeBase | None, target: str | None = None,
    protocol: EvaluationProtocol | None = None, reshuffle: bool = False, metric: str = "error_rate",
    metrics: tuple[str, ...] = DEFAULT_METRICS, meta_features: bool = True, seed: int = 0,
    max_train: int | None = None, cv: int | str | None = "auto", clock: TimeBudget | None = None,
    halving: Literal["auto", "none"] = "none",
) -> Setup:
    """Load ``dataset``, store it in ``kb`` (with its meta-features unless
    ``meta_features=False``) and fix the protocol (see :func:`tune`; with ``halving="auto"``
    a large table's default hold-out searches on the first rung's rows, :func:`_halving`). The meta-features
    may take a quarter of what is left of the ``clock`` once the data are loaded (without
    one, a default growing with the table's size); past it the dataset is stored
    without them (:func:`~metabo.ingest.datasets.ingest_dataset`)."""
    setup, stored = load_setup(dataset, target=target, protocol=protocol, reshuffle=reshuffle, metric=metric,
                               metrics=metrics, seed=seed, max_train=max_train, cv=cv, halving=halving)
    return store_setup(setup, stored, kb, meta_features=meta_features, seed=seed, clock=clock)


def load_setup(
    dataset: Dataset | pd.DataFrame | str, *, target: str | None = None, protocol: EvaluationProtocol | None = None,
    reshuffle: bool = False, metric: str = "error_rate", metrics: tuple[str, ...] = DEFAULT_METRICS, seed: int = 0,
    max_train: int | None = None, cv: int | str | None = "auto", halving: Literal["auto", "none"] = "none",
) -> tuple[Setup, Dataset]:
    """The first half of :func:`prepare`: the data loaded and checked, the protocol fixed,
    nothing stored; with the dataset as it is to be stored."""
    stored, data, options = _load(dataset, target)
    given = protocol
    protocol = _protocol(protocol, reshuffle, max_train, cv, data.n_instances)
    rungs: tuple[int, ...] = ()
    if halving == "auto" and given is None and not reshuffle and max_train is None:
        protocol, rungs = _halving(protocol, data, seed)
    metrics = tuple(dict.fromkeys((metric, *metrics)))
    for name in metrics:  # every check before anything is stored
        get_metric(name)
    require_classification(data, target=target)
    spec = dataset if isinstance(dataset, str) else None
    return Setup(data, None, protocol, metrics, spec, options, rungs), stored


def store_setup(setup: Setup, stored: Dataset, kb: KnowledgeBase | None, *, meta_features: bool = True,
                seed: int = 0, clock: TimeBudget | None = None) -> Setup:
    """The second half of :func:`prepare`: ``stored`` (with its meta-features) in ``kb``,
    ``setup`` with its id."""
    if kb is None:
        return setup
    from metabo.ingest.datasets import (
        has_own_meta_features,
        ingest_dataset,
        meta_features_limit,
    )

    if meta_features and not has_own_meta_features(kb, stored):
        limit = meta_features_limit(stored, None if clock is None else clock.left())
        dataset_id = ingest_dataset(kb, stored, seed=seed, time_limit=limit)
    else:
        dataset_id = kb.add_dataset(stored)
    return dataclasses.replace(setup, dataset_id=dataset_id)


def _halving(protocol: EvaluationProtocol, data: Dataset, seed: int) -> tuple[EvaluationProtocol, tuple[int, ...]]:
    """The default hold-out on its first rung's rows, scored on at most
    :data:`~metabo.optimizer.halving.EVAL_ROWS` validation and test rows, and the rungs
    (:func:`~metabo.optimizer.halving.rung_sizes`) when its training part has three rungs
    or more; ``protocol`` and no rungs otherwise (cross-validated tables, small ones)."""
    if not isinstance(protocol, Holdout) or protocol.max_train is not None:
        return protocol, ()
    sizes = rung_sizes(protocol.splits(data, seed)[0].n_train)
    if len(sizes) < 3:
        return protocol, ()
    return dataclasses.replace(protocol, max_train=sizes[0], max_eval=EVAL_ROWS), tuple(sizes)


def strategy_factory(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str, cv: int | str | None = "auto") -> Callable[[int], Strategy]:
    """Seed -> a fresh strategy ``name``: cold (:func:`~metabo.strategies.make_strategy`) or a
    warm start from ``kb`` for the stored ``dataset_id`` (:func:`~metabo.strategies.warm.warm_factory`,
    which reads what transfers once for every strategy it makes); ``auto``: the one
    :func:`~metabo.strategies.warm.choose_strategy` picks (:func:`resolve_strategy`)."""
    return resolve_strategy(name, kb, dataset_id, space, metric=metric, cv=cv)[2]


def resolve_strategy(name: str, kb: KnowledgeBase | None, dataset_id: str | None, space: CASHSpace | SearchSpace,
                     *, metric: str, time_budget: float | None = None, n_train: int | None = None,
                     fits_per_trial: int = 1, cv: int | str | None = "auto", costs: FitCosts | None = None
                     ) -> tuple[str, str, Callable[[int], Strategy]]:
    """``(name, note, seed -> strategy)`` of :func:`strategy_factory`, with ``auto``
    resolved (:func:`~metabo.strategies.warm.choose`, its reason logged and returned as
    ``note``; empty for a named strategy) and the past it read passed on, not read twice.
    ``time_budget``, ``n_train`` and ``fits_per_trial`` make the warm start cost-aware
    (:func:`~metabo.strategies.warm.warm_factory`); ``cv``, the search's, picks the
    protocol of each past task's runs (:func:`~metabo.strategies.warm.past_for`); ``costs``,
    the recorded fit seconds if already read."""
    note, past = "", None
    if name == AUTO:
        name, note, past = choose(kb, dataset_id, space, metric=metric, cv=cv)
        logger.info("strategy auto: %s", note)
    if name not in WARM_STRATEGIES:
        if name not in COLD_STRATEGIES:
            raise InputDataError(f"unknown strategy {name!r}; use {AUTO}, a warm start ({', '.join(WARM_STRATEGIES)}) "
                                 f"or a cold one ({', '.join(COLD_STRATEGIES)})")
        cold = name
        return name, note, lambda seed: make_strategy(cold, seed=seed)
    if kb is None or dataset_id is None:
        raise InputDataError(f"strategy {name!r} warm-starts from a knowledge base: pass kb")
    if not isinstance(space, CASHSpace):
        raise InputDataError(f"strategy {name!r} needs a CASH space")
    return name, note, warm_factory(name, kb, dataset_id, space, metric=metric, past=past,
                                    time_budget=time_budget, n_train=n_train, fits_per_trial=fits_per_trial, cv=cv,
                                    costs=costs)


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
    final model, not with it."""
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
                total = clock.trial_limit((reserve() if reserve is not None else 0.0) + overhead)
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


def tune(
    dataset: Dataset | pd.DataFrame | str,
    *,
    budget: int | None = None,
    time_budget: float | TimeBudget | None = None,
    space: CASHSpace | SearchSpace | None = None,
    strategy: Strategy | str = AUTO,
    kb: KnowledgeBase | None = None,
    seed: int = 0,
    target: str | None = None,
    protocol: EvaluationProtocol | None = None,
    reshuffle: bool = False,
    cv: int | str | None = "auto",
    select: Select = "argmin",
    metric: str = "error_rate",
    metrics: tuple[str, ...] = DEFAULT_METRICS,
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
    keep_predictions: bool = True,
    session_id: str | None = None,
    meta_features: bool = True,
    progress: Callable[[TrialRecord], None] | None = None,
    refit: bool = True,
    final_rows: Literal["all", "train+valid"] = "all",
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    max_train: int | None = None,
    on_strategy: Callable[[str, str, str | None], None] | None = None,
    ensemble: Literal["posthoc", "none"] = "posthoc",
    ensemble_size: int | None = None,
    halving: Literal["auto", "none"] = "auto",
    opening: bool | None = None,
) -> TuneResult:
    """Tune ``dataset`` for ``budget`` trials or ``time_budget`` seconds; return the
    selected configuration and its model.

    Args:
        dataset: a :class:`Dataset`, a DataFrame with its ``target`` column, or a loader
            spec (``sklearn:iris``, a CSV/Parquet path with ``target``, ``keel:...``,
            ``openml:ID``).
        budget: completed trials of the session to reach (None: until ``time_budget``).
        time_budget: seconds of wall-clock time for the whole call, final fit included
            (or a :class:`~metabo.optimizer.budget.TimeBudget` started earlier); module
            docstring.
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
        protocol, reshuffle, cv: see the module docstring; ``cv`` (``"auto"``, None for the
            60/20/20 hold-out, or a number of folds) chooses the protocol when ``protocol``
            is not given.
        select: ``argmin`` or ``posterior_mean`` (thesis 3.4), see :meth:`Optimizer.best`.
        metric: the objective, one of ``metrics`` (all are recorded).
        time_limit, memory_limit_mb: per evaluation (:mod:`metabo.evaluation.runner`).
        session_id: continue this stored session, or name a new one.
        progress: called with each completed trial.
        refit: train the selected configuration on training + validation rows, score it
            on the test part (``refit_test_error``) and return a model (module docstring).
        final_rows: the rows of the returned model: ``all`` (default; a second fit, on
            every row) or ``train+valid`` (the scored fit).
        max_train: search on a stratified subsample of at most this many training rows
            (the final model trains on all of them).
        on_strategy: called with the strategy's name, its note and the stored dataset id
            once the data are loaded and checked and the strategy resolved, before the
            first trial (the CLI prints them).
        n_jobs, backend, scheduler: evaluate ``n_jobs`` trials at once on the joblib
            ``backend`` (``loky``, ``dask``, ``ray``, ...; for dask and ray the cluster at
            ``scheduler`` or a local one), in synchronous batches (module docstring);
            ``n_jobs=1`` is the sequential run.
        ensemble: ``posthoc`` (default): the model returned is the bagged ensemble selection
            over the trials' out-of-fold predictions when its cross-validated gain over the
            selected configuration is beyond its noise, that configuration otherwise
            (:mod:`metabo.ensembles.library`; ``TuneResult.ensemble`` says which and why);
            ``none``: always the selected configuration alone.
        ensemble_size: the ensemble selection's size limit (draws with replacement; None:
            :data:`~metabo.ensembles.library.ENSEMBLE_SIZE`).
        halving: ``auto`` (default): on a table whose default hold-out trains on 12,000
            rows or more, the search runs on 2,000 of them and its best trials are
            evaluated again on 3, 9, ... times as many (successive halving,
            :mod:`metabo.optimizer.halving`); the selected configuration is the best of the
            largest rung (``TuneResult.rungs``); ``none``: every trial on every training row.
        opening: evaluate :data:`OPENING` as the session's first trial as soon as the data
            are loaded, before the knowledge base is read (module docstring); None
            (default): under a ``time_budget``, on a new session of a CASH space with
            LightGBM.
    """
    if final_rows not in ("all", "train+valid"):
        raise InputDataError(f"final_rows must be 'all' or 'train+valid', got {final_rows!r}")
    if ensemble not in ("posthoc", "none"):
        raise InputDataError(f"ensemble must be 'posthoc' or 'none', got {ensemble!r}")
    if halving not in ("auto", "none"):
        raise InputDataError(f"halving must be 'auto' or 'none', got {halving!r}")
    if ensemble_size is not None and (isinstance(ensemble_size, bool) or not isinstance(ensemble_size, int)
                                      or ensemble_size < 1):
        raise InputDataError(f"ensemble_size must be a positive integer, got {ensemble_size!r}")
    clock = time_budget if isinstance(time_budget, TimeBudget) or time_budget is None else TimeBudget(time_budget)
    check_budget(budget, clock)
    check_limits(time_limit, memory_limit_mb)
    check_backend(backend, address=scheduler, n_jobs=n_jobs)
    started = clock.start if clock is not None else time.monotonic()
    if space is None:
        from metabo.space.algorithms import default_cash_space

        space = default_cash_space()
    # the dataset is stored and the strategy resolved together: a strategy that cannot be
    # made (a warm start with nothing to transfer) leaves nothing behind
    # nothing outside the trials runs past the time budget (optimizer.budget.deadline)
    with deadline(clock):
        setup, stored = load_setup(dataset, target=target, protocol=protocol, reshuffle=reshuffle, metric=metric,
                                   metrics=metrics, seed=seed, max_train=max_train, cv=cv, halving=halving)
    opened = None
    if opening is None:
        opening = clock is not None and isinstance(space, CASHSpace) and OPENING[0] in space.algorithms and (
            kb is None or session_id is None or get_session(kb, session_id) is None)
    if opening:
        opened = _open(setup, space, seed=seed, clock=clock, time_limit=time_limit, memory_limit_mb=memory_limit_mb,
                       keep_predictions=keep_predictions)
    with deadline(clock), kb.transaction() if kb is not None else contextlib.nullcontext():
        setup = store_setup(setup, stored, kb, meta_features=meta_features, seed=seed, clock=clock)
        train_rows, fits, refit_rows = setup.split_rows(seed)
        # the other tasks' recorded fit seconds, read once: the warm start's opening under a
        # time budget and the default trial limits both predict from them
        costs = None
        if clock is not None or time_limit is None:
            costs = search_costs(kb, setup, space, metric=metric)
        if isinstance(strategy, str):
            name, note, make = resolve_strategy(strategy, kb, setup.dataset_id, space, metric=metric,
                                                time_budget=None if clock is None else clock.seconds,
                                                n_train=train_rows, fits_per_trial=fits,
                                                cv=cv if protocol is None and not reshuffle else "auto", costs=costs)
            strategy = make(seed)
        else:
            name, note = getattr(strategy, "name", type(strategy).__name__), ""
        # still inside the transaction: a refusal here leaves the dataset unstored too
        if kb is not None and session_id is not None:
            check_resumable(kb, session_id, setup.dataset_id, metric)
        # the opening's model is a result: a budget spent by the time the data are stored
        # ends with it (the search has no trial) rather than with nothing
        opened_ok = opened is not None and bool(opened.evaluations) and all(
            e.status == "ok" for e in opened.evaluations)
        if clock is not None and clock.trial_limit() is None and not opened_ok:
            raise InputDataError(f"the time budget of {clock.seconds:g} s has {max(clock.left(), 0.0):.1f} s left "
                                 f"after loading the data, less than a trial needs ({clock.min_trial:g} s): give "
                                 "a larger time budget")
    if on_strategy is not None:
        on_strategy(name, note, setup.dataset_id)
    settings = setup.settings(budget, time_limit, memory_limit_mb, None if clock is None else clock.seconds)
    limit = None
    if time_limit is None:  # every trial is bounded all the same (metabo.optimizer.limits)
        limit = default_trial_limit(setup, kb, space, seed=seed, metric=metric, costs=costs)
        settings["default_time_limit"] = limit.describe()
    opt = open_session(kb, space, strategy, session_id=session_id, dataset_id=setup.dataset_id, metric=metric,
                       seed=seed, settings=settings)
    ends: dict[int, float] = {}

    def told(record: TrialRecord, ended: float | None = None) -> None:
        ends[record.number] = (time.monotonic() if ended is None else ended) - started
        if progress is not None:
            progress(record)

    library, ensemble_note = None, ""
    if ensemble == "posthoc":
        library, ensemble_note = _library(setup, seed=seed, metric=metric, ensemble_size=ensemble_size,
                                          keep_predictions=keep_predictions)

    if opened is not None and not opt.history:
        _tell(opt, opt.ask(config=opened.config), opened.evaluations,
              on_evaluated=None if library is None else library.observe,
              progress=functools.partial(told, ended=opened.ended), note=" (opening)")

    reserve = None
    # how fit seconds grow from a trial's rows to the final fit's (recorded fit times; linear without)
    scaling = None if limit is None else limit.scaling
    # the guard's answer for (library size, best trial): asked during the search by the
    # reserve below, reused after it when neither has changed since
    decided: dict[tuple[int, int], EnsembleChoice | None] = {}
    # (seconds, library size) of the guard's last answer: its selections score every model at
    # every greedy step, so an answer on a larger library is predicted as the last one's
    # seconds times (size / its size) ** 1.5 (linear in the models, with a margin)
    asked: list[tuple[float, int]] = []

    def guard_seconds(size: int) -> float:
        """The guard's predicted seconds on a library of ``size`` models (0 before it is measured)."""
        return asked[0][0] * (size / asked[0][1]) ** 1.5 if asked else 0.0

    def ask_guard(key: tuple[int, int]) -> None:
        assert library is not None
        began = time.monotonic()
        decided.clear()
        decided[key] = library.choose(key[1])
        asked[:] = [(time.monotonic() - began, key[0])]
    if clock is not None and refit:

        def scored_fit(record: TrialRecord) -> float:
            return final_fit_seconds(record, train_rows=train_rows, final_rows=refit_rows, fits=fits, scaling=scaling)

        def reserve() -> float:
            """The scored fit of the best trial, its fit on every row when one is made, and
            the fits of an ensemble's other members (at most ENSEMBLE_RESERVE in all). When
            the runners-up's fits would stop the search, the guard is asked whether there
            will be an ensemble (its answer kept until the library or the best trial
            changes) and its members' fits reserved, or none: a search whose ensemble would
            not be kept is not cut short for it. The guard is first asked as soon as the
            library holds two models (a moment), to measure it; later it is not asked when
            twice its predicted seconds would not leave a trial's time, since near the end
            of the budget its selections over a large library would run past it."""
            best = opt.history.best()
            own = scored_fit(best) + (final_fit_seconds(best, train_rows=train_rows,
                                                        final_rows=setup.data.n_instances, fits=fits,
                                                        scaling=scaling)
                                      if final_rows == "all" else 0.0)
            own += _halving_reserve(opt.history, setup.rungs, clock.seconds)
            if library is None or best is None or len(library) < 2:
                return own
            key = (len(library), best.number)
            if not asked:
                ask_guard(key)
            runners_up = sorted((r for r in opt.history.completed if r.ok and r.number != best.number),
                                key=lambda r: (r.value, r.number))[:ENSEMBLE_RESERVE - 1]
            likely = own + sum(scored_fit(r) for r in runners_up)
            if clock.trial_limit(likely) is not None:
                return likely  # a trial starts either way: it is only kept short of the ensemble's fits
            if key not in decided:
                if clock.left() - own < 2 * guard_seconds(len(library)) + clock.min_trial:
                    return own  # no time to ask the guard and still run a trial: no ensemble is reserved for
                ask_guard(key)
            choice = decided[key]
            if choice is None or choice.kept != "ensemble":
                return own
            members = sorted((k for k in choice.weights if k != best.number), key=lambda k: -choice.weights[k])
            return own + sum(scored_fit(opt.history[k]) for k in members[:ENSEMBLE_RESERVE - 1])

    try:  # the trials end by their own limits; a second more for telling the one cut last
        with deadline(clock, grace=DEADLINE_GRACE + 1.0):
            run_trials(opt, setup, budget=budget, seed=seed, time_limit=time_limit, memory_limit_mb=memory_limit_mb,
                       keep_predictions=keep_predictions, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                       progress=told, clock=clock, reserve=reserve, default_limit=limit,
                       on_evaluated=None if library is None else library.observe)
    except TimeBudgetExceeded as e:  # e.g. in a strategy's ask: the trials told so far stand
        logger.warning("search stopped: %s", e)
    opt.finish()
    best = opt.best(select)
    rungs: list[Rung] = []
    if setup.rungs and best.ok:
        rungs = _promote(opt, setup, seed=seed, clock=clock, time_limit=time_limit, default_limit=limit,
                         memory_limit_mb=memory_limit_mb, scaling=scaling)
        top = winner(rungs)
        if top is not None and top != best.number:
            logger.info("successive halving: trial %d is the best on %d rows (the search's best: trial %d)",
                        top, max(r.rows for r in rungs if r.complete), best.number)
            best = opt.history[top]
    choice = None
    model, refit_error, refit_seconds, model_rows = None, None, None, None
    t0 = time.monotonic()
    if refit and best.ok:  # here, on the dataset in memory
        try:  # the selected configuration first: whatever happens next, a model (a second past the
            # budget rather than none, as a trial cut last gets; the CLI's watchdog allows 3)
            with deadline(clock, grace=DEADLINE_GRACE + 1.0):
                model, refit_error = final_model(best, setup, seed=seed, metric=metric)
        except TimeBudgetExceeded as e:  # the search's results stand, without a model
            logger.warning("no final model: %s", e)
            model, refit_error = None, None
        if model is not None:
            model_rows = "train+valid"
    if library is not None and best.ok and (model is not None or not refit):
        key = (len(library), best.number)
        try:  # the guard's cross-validated selections take a moment too: after the model above
            if key not in decided and clock is not None and clock.left() < guard_seconds(len(library)):
                raise TimeBudgetExceeded("the guard would run past the budget")  # not started, as in reserve()
            with deadline(clock):
                choice = decided[key] if key in decided else library.choose(best.number)
            if choice is None:
                ensemble_note = f"{len(library)} trial(s) with out-of-fold predictions: nothing to ensemble"
        except TimeBudgetExceeded:
            ensemble_note = "no time was left to choose an ensemble"
    if refit and best.ok:
        if model is not None and choice is not None and choice.kept == "ensemble":
            fitted, why = _ensemble_model(choice, opt.history, setup, seed=seed, metric=metric, clock=clock,
                                          train_rows=train_rows, fits=fits, refit_rows=refit_rows, scaling=scaling)
            if fitted is None:
                ensemble_note = f"the ensemble was not fitted ({why}): the selected configuration instead"
            else:
                (model, refit_error), ensemble_note = fitted, why
        if model is not None and final_rows == "all":
            try:
                with deadline(clock):
                    deployed = fit_on_every_row(model, setup)
            except TimeBudgetExceeded as e:  # the scored fit is a model too: it is kept
                logger.warning("the fit on every row was cut (%s); the model is the fit on training + validation "
                               "rows", e)
                deployed = None
            if deployed is not None:
                model, model_rows = deployed, "all"
        refit_seconds = time.monotonic() - t0
    return TuneResult(opt.session_id, setup.dataset_id, metric, select, best, opt.history, refit_error, name, note,
                      model=model, model_rows=model_rows, trial_end_seconds=ends, started=started,
                      refit_seconds=refit_seconds,
                      total_seconds=time.monotonic() - started,
                      cv=setup.folds, ensemble=choice, ensemble_note=ensemble_note, rungs=rungs)


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


#: under a time budget the search stops in time to fit this many members of an ensemble
#: (the best trial and the runners-up): the ensemble's own fits are reserved, not hoped for
ENSEMBLE_RESERVE = 5


#: successive halving's promotions may take at most this share of a time budget
HALVING_SHARE = 0.5


def _halving_reserve(history: History, sizes: Sequence[int], budget: float) -> float:
    """The seconds the promotions after the search are predicted to take (at most
    :data:`HALVING_SHARE` of the ``budget``): each rung's trials' fit seconds on the first
    rung, scaled linearly to the rung's rows (:mod:`metabo.optimizer.halving`)."""
    if len(sizes) < 3:
        return 0.0
    done = [r for r in history.completed if r.ok]
    chosen = [history[k] for k in first_promotion({r.number: float(r.value) for r in done}, len(sizes),
                                                  groups={r.number: r.algorithm for r in done})]
    seconds = 0.0
    for rows in sizes[1:-1]:
        if len(chosen) < 2:
            break
        seconds += sum((r.fit_seconds or 0.0) + (r.predict_seconds or 0.0) for r in chosen) * rows / sizes[0]
        chosen = chosen[:math.ceil(len(chosen) / ETA)]
    return min(seconds, HALVING_SHARE * budget)


def _promote(opt: Optimizer, setup: Setup, *, seed: int, clock: TimeBudget | None, time_limit: float | None,
             default_limit: DefaultLimit | None, memory_limit_mb: int | None,
             scaling: Callable[[str, float, float], float] | None = None) -> list[Rung]:
    """Successive halving's rungs after the search (:func:`~metabo.optimizer.halving.successive_halving`):
    each promoted trial evaluated on the hold-out split with more training rows, its split
    limited as a trial's is (the default limit scaled to the rows), under the ``clock``
    (less the final fit's predicted seconds). Promotions are not stored as runs."""
    first = {r.number: float(r.value) for r in opt.history.completed if r.ok}
    train_rows, fits, refit_rows = setup.split_rows(seed)

    def evaluate_at(number: int, rows: int) -> float:
        record = opt.history[number]
        total = None
        if clock is not None:
            total = clock.trial_limit(final_fit_seconds(record, train_rows=train_rows, final_rows=refit_rows,
                                                        fits=fits, scaling=scaling))
            if total is None:
                raise TimeBudgetExceeded(f"no time left for trial {number} on {rows} rows")
        limit = time_limit
        if limit is None and default_limit is not None:
            limit = default_limit(record.algorithm, opt.history) * rows / setup.rungs[0]
        protocol = dataclasses.replace(setup.protocol, max_train=rows)  # type: ignore[type-var]
        result = run_task(setup.task(record, protocol, seed=seed, time_limit=limit, memory_limit_mb=memory_limit_mb,
                                     keep_predictions=False, in_process=True, total_time_limit=total))
        try:
            outcome = _outcome(_evaluations(record, result), opt.metric)
        except EvaluationError as e:
            logger.warning("successive halving: trial %d on %d rows could not run: %s", number, rows, e)
            return math.nan
        logger.info("successive halving: trial %d %s on %d rows: %s %.4g", number, record.algorithm, rows,
                    outcome["status"], outcome["value"])
        return float(outcome["value"]) if outcome["status"] == "ok" else math.nan

    with deadline(clock, grace=DEADLINE_GRACE + 1.0):
        try:
            return successive_halving(first, setup.rungs, evaluate_at,
                                      groups={k: opt.history[k].algorithm for k in first})
        except TimeBudgetExceeded:  # raised outside an evaluation: the search's choice stands
            return [Rung(setup.rungs[0], first)]


def _library(setup: Setup, *, seed: int, metric: str, ensemble_size: int | None, keep_predictions: bool
             ) -> tuple[OutOfFoldLibrary | None, str]:
    """The library of out-of-fold predictions the search fills, or None and why none can be
    kept (a reshuffled protocol predicts other rows at each trial; no predictions kept)."""
    from metabo.ensembles.library import ENSEMBLE_SIZE, OutOfFoldLibrary

    if isinstance(setup.protocol, ReshuffledHoldout):
        return None, "no ensemble: the reshuffled protocol predicts other rows at each trial"
    if not keep_predictions:
        return None, "no ensemble: the trials' predictions were not kept (keep_predictions=False)"
    splits = setup.protocol.splits(setup.data, seed)
    if any(s.valid_idx is None or len(s.valid_idx) == 0 for s in splits):
        return None, "no ensemble: the protocol has no validation rows"
    return OutOfFoldLibrary.for_splits(splits, class_codes(setup.data), len(class_labels(setup.data)), metric=metric,
                            ensemble_size=ensemble_size or ENSEMBLE_SIZE, seed=seed), ""


def _ensemble_model(choice: EnsembleChoice, history: History, setup: Setup, *, seed: int, metric: str,
                    clock: TimeBudget | None, train_rows: int, fits: int, refit_rows: int,
                    scaling: Callable[[str, float, float], float] | None = None
                    ) -> tuple[tuple[EnsembleModel, float | None] | None, str]:
    """The chosen ensemble fitted on training + validation rows and its test ``metric``
    (:func:`~metabo.ensembles.model.refit_test_error`) with a note, or None and why.
    Under a time budget only the members of highest weight whose predicted fits
    (:func:`~metabo.optimizer.budget.final_fit_seconds`) fit in the time left are fitted,
    their weights renormalized (the note says so); None when fewer than two fit, when the
    budget runs out during the fit, or when a member's fit fails."""
    from metabo.ensembles.model import refit_test_error

    weights = dict(choice.weights)
    note = ""
    if clock is not None:  # the members of highest weight whose fits fit in the time left
        left, need, kept = clock.left(), 0.0, {}
        seconds = {k: final_fit_seconds(history[k], train_rows=train_rows, final_rows=refit_rows, fits=fits,
                                        scaling=scaling) for k in weights}
        for k in sorted(weights, key=lambda k: (-weights[k], k)):
            if need + seconds[k] > left:
                break
            need += seconds[k]
            kept[k] = weights[k]
        if len(kept) < 2:
            return None, (f"its {len(weights)} members need about {sum(seconds.values()):.1f} s, "
                          f"{max(left, 0):.1f} s were left")
        if len(kept) < len(weights):
            note = (f"{len(kept)} of its {len(weights)} members, those of highest weight that fit in the "
                    f"{left:.1f} s left")
            total = sum(kept.values())
            weights = {k: w / total for k, w in kept.items()}
    numbers = list(weights)
    members = [(history[k].algorithm, dict(history[k].params)) for k in numbers]
    try:
        with deadline(clock):
            model, error = refit_test_error(members, list(weights.values()), choice.combine,  # type: ignore[arg-type]
                                            setup.data, setup.protocol, seed=seed, metric=metric)
    except TimeBudgetExceeded:
        return None, "the time budget ran out during its fit"
    except EvaluationError as e:
        logger.warning("the ensemble's final fit failed: %s", e)
        return None, f"a member's fit failed: {e}"
    return (model, error if math.isfinite(error) else None), note


def final_model(best: TrialRecord, setup: Setup, *, seed: int, metric: str
                ) -> tuple[EnsembleModel | None, float | None]:
    """The selected configuration fitted on every non-test row of its split and its test
    ``metric`` (:func:`~metabo.ensembles.model.refit_test_error`); ``(None, None)``, logged,
    when that fit fails (the search's results stand)."""
    from metabo.ensembles.model import refit_test_error

    try:
        model, error = refit_test_error([(best.algorithm, dict(best.params))], None, "average", setup.data,
                                        _at(setup.protocol, best.number), seed=seed, metric=metric)
    except EvaluationError as e:
        logger.warning("the final fit of trial %d failed: %s", best.number, e)
        return None, None
    return model, error if math.isfinite(error) else None


def fit_on_every_row(model: EnsembleModel, setup: Setup) -> EnsembleModel | None:
    """``model`` (the selected configuration or the ensemble: its members, weights and
    combination) fitted again on every row of the dataset; None, logged, when a fit fails
    (the scored fit on training + validation rows is returned instead)."""
    from metabo.ensembles.model import EnsembleModel

    try:
        return EnsembleModel(model.members, model.weights, model.combine, model.seed).fit_dataset(setup.data)
    except EvaluationError as e:
        logger.warning("the fit on every row failed (%s); the model is its fit on training + validation rows", e)
        return None


def search_costs(kb: KnowledgeBase | None, setup: Setup, space: CASHSpace | SearchSpace, *,
                 metric: str = "error_rate") -> FitCosts | None:
    """The fit seconds the other stored tasks recorded for the space's algorithms
    (:meth:`~metabo.kb.costs.FitCosts.for_target`), read once per search for everything
    that predicts a trial's seconds: the warm start's opening and the default trial limits."""
    if kb is None:
        return None
    from metabo.kb.costs import FitCosts

    return FitCosts.for_target(kb, setup.dataset_id, _algorithms(space), metric=metric)


def default_trial_limit(setup: Setup, kb: KnowledgeBase | None, space: CASHSpace | SearchSpace, *, seed: int,
                        metric: str = "error_rate", costs: FitCosts | None = None) -> DefaultLimit:
    """The time limit of each split of a trial when the user gives none
    (:func:`metabo.optimizer.limits.default_limit` on the rows of one of its fits)."""
    train_rows, fits, _ = setup.split_rows(seed)
    return default_limit(kb, dataset_id=setup.dataset_id, algorithms=list(_algorithms(space)), n_rows=train_rows,
                         n_features=setup.data.n_features, fits=fits, metric=metric, costs=costs)


def _algorithms(space: CASHSpace | SearchSpace) -> tuple[str, ...]:
    """The algorithms a space's trials run (a bare space: its name)."""
    return space.algorithms if isinstance(space, CASHSpace) else (getattr(space, "name", ""),)


def _at(protocol: EvaluationProtocol, number: int) -> EvaluationProtocol:
    """The protocol as trial ``number`` saw it (reshuffled splits are redrawn per trial)."""
    return protocol.at(number) if isinstance(protocol, ReshuffledHoldout) else protocol


def _evaluations(trial: Trial | TrialRecord, result: TaskResult) -> list[Evaluation]:
    """The trial's evaluations; a task that could not run at all is an error, not an outcome."""
    if not result.ok:
        raise EvaluationError(f"trial {trial.number} ({trial.algorithm}) could not run: {result.error}")
    return result.evaluations
