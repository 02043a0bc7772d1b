"""Tune a classifier on one dataset: ask, evaluate with :mod:`metabo.evaluation`, tell.

Each trial is evaluated the way ``metabo kb build`` evaluates a configuration (an
:class:`~metabo.evaluation.parallel.EvalTask` run by
:func:`~metabo.evaluation.parallel.run_task`: seeded split and estimator, per-run time
and memory limits, failures as crash/timeout/memout), and its evaluations are recorded
by :meth:`Optimizer.tell` through :func:`metabo.kb.runs.record` (every metric on the
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
wall-clock time of the whole call, the final fit included, and with ``save_model`` the
model file's write (:class:`~metabo.tuning.final.ModelWriter`)
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
import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from metabo.data.dataset import Dataset
from metabo.evaluation.backends import check_backend
from metabo.evaluation.evaluate import DEFAULT_METRICS
from metabo.evaluation.protocols import EvaluationProtocol
from metabo.exceptions import InputDataError, TimeBudgetExceeded
from metabo.optimizer.budget import DEADLINE_GRACE, TimeBudget, deadline
from metabo.optimizer.halving import Rung, winner
from metabo.optimizer.history import History, TrialRecord
from metabo.optimizer.optimizer import Select, get_session
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy, selection_model
from metabo.strategies.names import AUTO
from metabo.tuning.final import (
    FitGrowth,
    Promotions,
    _ensemble_model,
    _library,
    _promote,
    best_that_fits,
    every_row_growth,
    final_model,
    fit_on_every_row,
    model_writer,
    rows_that_fit,
)
from metabo.tuning.registry import resolve_strategy
from metabo.tuning.reserve import GuardAnswers, SearchReserve
from metabo.tuning.rounds import Rounds, boosted, lowest_read
from metabo.tuning.session import (
    check_budget,
    check_limits,
    check_options,
    check_resumable,
    default_trial_limit,
    load_setup,
    open_session,
    search_costs,
    store_setup,
)
from metabo.tuning.trials import OPENING, _at, _open, _tell, run_trials

if TYPE_CHECKING:
    from metabo.ensembles.library import EnsembleChoice
    from metabo.ensembles.model import EnsembleModel
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

#: seconds the search's asks and tells may wait to be written to the knowledge base together
#: (:class:`~metabo.optimizer.optimizer.Optimizer`'s ``write_every``): a trial's write costs
#: about a tenth of a second whatever its size, as much as a trial on a small table
WRITE_EVERY = 2.0


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
    #: ``final_rows``, or the fit on every row failed or was cut by the time budget), or
    #: ``subsample`` (a stratified part of the training + validation rows: under a time
    #: budget no trial's fit on all of them was predicted to fit, final.rows_that_fit)
    model_rows: Literal["all", "train+valid", "subsample"] | None = None
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
    #: the file ``model`` was written to (``save_model``), and the seconds its writes took
    model_path: Path | None = None
    write_seconds: float | None = None
    #: the boosting rounds read for the model's configuration on a large table, when they
    #: were (:mod:`metabo.tuning.rounds`): ``rounds.gained``, the model has ``rounds.best``
    rounds: Rounds | None = None

    @property
    def algorithm(self) -> str:
        """The best trial's algorithm."""
        return self.best.algorithm

    @property
    def params(self) -> dict[str, Any]:
        """The best trial's hyperparameters (a copy)."""
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
    save_model: str | os.PathLike[str] | None = None,
    trusted: bool = False,
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
            :func:`~metabo.tuning.registry.resolve_strategy`, which leaves the dataset's own
            earlier runs out of what it transfers); ``auto`` (default): ``warm`` when
            ``kb`` holds other tasks' runs on the space's algorithms, else cold ``gp``
            (:func:`~metabo.tuning.registry.resolve_strategy`; the result says which and why).
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
            largest rung (``TuneResult.rungs``); under a ``time_budget`` a search that the
            promotions' predicted seconds stopped resumes when they leave time for more
            trials, and its best trials are promoted in turn (those promoted before are not
            evaluated again): brackets one after another, as Hyperband's outer loop runs
            them (Li et al. 2018, sec. 3; here every bracket starts on the first rung);
            ``none``: every trial on every training row.
        opening: evaluate :data:`OPENING` as the session's first trial as soon as the data
            are loaded, before the knowledge base is read (module docstring); None
            (default): under a ``time_budget``, on a new session of a CASH space with
            LightGBM.
        save_model, trusted: write the model to this file before returning, inside the
            time budget (:class:`~metabo.tuning.final.ModelWriter`: under a budget the
            selected configuration is written as soon as it is fitted, and the ensemble's
            members and the fit on every row are kept only when their writes fit too); a
            skops file, or a joblib pickle with ``trusted`` (:meth:`EnsembleModel.save`). The
            path is checked before anything runs; ``refit=False`` is refused.
    """
    check_options(final_rows=final_rows, ensemble=ensemble, halving=halving, ensemble_size=ensemble_size,
                  save_model=save_model, refit=refit)
    writer = model_writer(save_model, trusted=trusted)
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
        if not isinstance(space, CASHSpace):
            raise InputDataError("the opening trial is a LightGBM configuration of a CASH space: pass opening=False "
                                 "with a single algorithm's space")
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
                       seed=seed, settings=settings, write_every=WRITE_EVERY)
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

    scaling = None if limit is None else limit.scaling  # fit seconds from a trial's rows to the final fit's
    # the final fits' seconds, from the trials' and, after successive halving's promotions,
    # from the fits on the most rows each trial was fitted on
    growth = FitGrowth(train_rows, fits, scaling)
    known: dict[tuple[int, int], float] = {}  # the promotions made: (trial, rows) -> value
    guard = GuardAnswers(library)  # asked during the search by the reserve, reused after it
    reserve = None
    if clock is not None and refit:
        reserve = SearchReserve(opt, setup, clock, guard, growth, refit_rows, final_rows,
                                writing=writer is not None, known=known)
    rungs: list[Rung] = []
    promotions = Promotions()  # their predictions: the ensemble is chosen among the most rows'
    read: dict[int, Rounds | None] = {}  # the boosting rounds read, by trial (metabo.tuning.rounds)
    if reserve is not None:
        reserve.read = read  # the reserve keeps no rounds' share for a trial read

    def read_rounds(record: TrialRecord) -> Rounds | None:
        """The rounds of the model's configuration ``record``, read once."""
        if record.number not in read:
            assert reserve is not None
            read[record.number] = boosted(record, setup, seed=seed, metric=metric, clock=reserve.clock,
                                          refit_rows=refit_rows,
                                          every_rows=setup.data.n_instances if final_rows == "all" else 0,
                                          seconds=lambda r, rows: reserve.written * growth.seconds(r, rows))
        return read[record.number]
    top_record: TrialRecord | None = None  # the search's best, when the loop chose it at its stop
    while True:  # the search, then successive halving's promotions, until no trial has time to start
        searched = len(opt.history.completed)
        try:  # the trials end by their own limits; a second more for telling the one cut last
            with deadline(clock, grace=DEADLINE_GRACE + 1.0):
                run_trials(opt, setup, budget=budget, seed=seed, time_limit=time_limit,
                           memory_limit_mb=memory_limit_mb, keep_predictions=keep_predictions, n_jobs=n_jobs,
                           backend=backend, scheduler=scheduler, progress=told, clock=clock, reserve=reserve,
                           default_limit=limit, on_evaluated=None if library is None else library.observe)
        except TimeBudgetExceeded as e:  # e.g. in a strategy's ask: the trials told so far stand
            logger.warning("search stopped: %s", e)
        except BaseException:  # interrupted or failed: the trials told so far are written first
            with contextlib.suppress(Exception):
                opt.flush()
            raise
        if reserve is not None and reserve.parts:
            logger.info("the search ended with %.1f s left; its reserve: %s", reserve.clock.left(), reserve.describe())
        if not setup.rungs and reserve is not None and any(r.ok for r in opt.history.completed):
            # without halving the model's rounds are read now, and the search resumes in what
            # their share did not spend (the reserve keeps none for a trial read); it stops
            # once its best has been read
            top_record = opt.best(select, model=selection_model(opt.strategy, select, seed=seed))
            if (top_record.number not in read and reserve.model is not None
                    and reserve.model.number == top_record.number and read_rounds(top_record) is not None):
                top_record = None  # the search goes on: its best is chosen again
                logger.info("boosting rounds read after %d trials with %.1f s left: the search goes on while a "
                            "trial has time", len(opt.history.completed), reserve.clock.left())
                continue
            break
        # under halving the rounds are read after the loop and the search does not resume after
        # them: its new trials would start on the first rung (reports/automl-v37-120-halving-resume-ab)
        if (rungs and len(opt.history.completed) == searched) or not (
                setup.rungs and any(r.ok for r in opt.history.completed)):
            break  # no halving, or no trial since the last promotions: they stand
        rungs, measured = _promote(opt, setup, seed=seed, clock=clock, time_limit=time_limit, default_limit=limit,
                                   memory_limit_mb=memory_limit_mb, scaling=scaling,
                                   on_promoted=None if library is None else promotions, known=known)
        growth.measure(opt.history, measured)
        if reserve is None or (top := winner(rungs)) is None:
            break
        # a search that stopped for promotions its reserve overstated resumes: the trials the
        # promotions settled are no longer the model's candidates, and are not promoted again
        reserve.settled = {r.number for r in opt.history.completed if r.number != top}
        logger.info("successive halving: promotions done with %.1f s left; the search goes on while a trial has "
                    "time", reserve.clock.left())
    best = top_record if top_record is not None else opt.best(select, model=selection_model(opt.strategy, select,
                                                                                           seed=seed))
    opt.finish()
    if (top := winner(rungs)) is not None and top != best.number:
        logger.info("successive halving: trial %d is the best on %d rows (the search's best: trial %d)",
                    top, max(r.rows for r in rungs if r.complete), best.number)
        best = opt.history[top]
    if (lowest := lowest_read(read, best.number)) != best.number:  # a resumed search's new best read higher
        logger.info("trial %d with its rounds (validation %.4g) is the model, not trial %d with its rounds (%.4g)",
                    lowest, read[lowest].best_value, best.number, read[best.number].best_value)  # type: ignore[union-attr]
        best = opt.history[lowest]
    if rungs and library is not None and (refitted := promotions.library(library, best.number)) is not None:
        library = guard.library = refitted
        guard.decided.clear()  # its answers were the search's library's
    max_rows = None  # the rows the model is fitted on when no trial's fit on all of them fits
    if reserve is not None and best.ok and reserve.scored_fit(best) > reserve.clock.left():
        fitting = best_that_fits(opt.history, reserve.scored_fit, reserve.clock.left())
        if fitting is not None and reserve.scored_fit(fitting) <= reserve.clock.left():
            if fitting.number != best.number:
                logger.warning("trial %d (%s) would need about %.0f s to fit on %d rows and %.1f s are left: the "
                               "model is trial %d (%s, %.4g), the best whose fit fits", best.number, best.algorithm,
                               reserve.scored_fit(best), refit_rows, reserve.clock.left(), fitting.number,
                               fitting.algorithm, fitting.value)
                best = fitting
        else:  # none fits: the best, on the rows whose fit does
            max_rows = rows_that_fit(best, growth, reserve.clock.left(), refit_rows=refit_rows,
                                     factor=reserve.written)
            logger.warning("no trial's fit on the %d training + validation rows fits in the %.1f s left (trial %d %s "
                           "would need about %.0f s): it is fitted on %d of them, stratified", refit_rows,
                           reserve.clock.left(), best.number, best.algorithm, reserve.scored_fit(best), max_rows)
    rounds, fitted_best = None, best  # more boosting rounds for a booster model
    if reserve is not None and best.ok and max_rows is None:
        rounds = read_rounds(best)
        if rounds is not None and rounds.gained:
            fitted_best = replace(best, params=rounds.params(best.params))
    choice = None
    model, refit_error, refit_seconds = None, None, None
    model_rows: Literal["all", "train+valid", "subsample"] | None = None
    t0 = time.monotonic()
    fitted_in = 0.0  # the measured seconds of the model in hand's fit
    if refit and best.ok:  # here, on the dataset in memory
        try:  # the selected configuration first: whatever happens next, a model (a second past the
            # budget rather than none, as a trial cut last gets; the CLI's watchdog allows 3)
            with deadline(clock, grace=DEADLINE_GRACE + 1.0):
                model, refit_error = final_model(fitted_best, setup, seed=seed, metric=metric, max_rows=max_rows)
        except TimeBudgetExceeded as e:  # the search's results stand, without a model
            logger.warning("no final model: %s", e)
            model, refit_error = None, None
        fitted_in = time.monotonic() - t0
        if model is not None:
            model_rows = "train+valid" if max_rows is None else "subsample"
            if writer is not None and clock is not None:  # written now, and measured (ModelWriter)
                writer.first(model, fitted_in)
    if rounds is not None and rounds.gained and library is not None:  # the model it has stands for the trial
        if len(rounds.probabilities) == len(library.selection.y):
            library = guard.library = library.replaced(best.number, rounds.best_value, rounds.probabilities)
            guard.decided.clear()
        else:
            library, ensemble_note = None, "the selected configuration's rounds were read on other rows"
    if library is not None and best.ok and max_rows is None and (model is not None or not refit):
        key = (len(library), best.number)
        try:  # the guard's cross-validated selections take a moment too: after the model above
            if key not in guard.decided and clock is not None and clock.left() < guard.seconds(len(library)):
                raise TimeBudgetExceeded("the guard would run past the budget")  # not started, as in reserve()
            with deadline(clock):
                choice = guard.decided[key] if key in guard.decided else library.choose(best.number)
            if choice is None:
                ensemble_note = f"{len(library)} trial(s) with out-of-fold predictions: nothing to ensemble"
        except TimeBudgetExceeded:
            ensemble_note = "no time was left to choose an ensemble"
    if refit and best.ok:
        grow = every_row_growth(setup.data.n_instances, refit_rows)
        if model is not None and choice is not None and choice.kept == "ensemble":
            began = time.monotonic()
            fixed = _at(setup.protocol, best.number) is setup.protocol  # the model in hand: the ensemble's rows
            fitted, why = _ensemble_model(choice, opt.history, setup, seed=seed, metric=metric, clock=clock,
                                          growth=growth, refit_rows=refit_rows, writer=writer, library=library,
                                          single=best.number, single_params=fitted_best.params,
                                          reuse=model if fixed else None, reused_seconds=fitted_in,
                                          every=grow if final_rows == "all" else 0.0)
            if fitted is None:
                ensemble_note = f"the ensemble was not fitted ({why}): the selected configuration instead"
            else:  # its fit's seconds: the selected configuration's (when reused) and the others'
                (model, refit_error), ensemble_note = fitted, why
                fitted_in = (fitted_in if fixed else 0.0) + time.monotonic() - began
        if model is not None and final_rows == "all" and max_rows is None:
            # ended in time to write the model it makes (or else the model in hand); not started
            # when the scored fit's measured seconds, grown to every row, would not end by then
            # (a compiled fit is cut only when it returns to Python)
            stop, grace, early = clock, DEADLINE_GRACE, ""
            if clock is not None and writer is not None:  # cut when only the write's time is left
                stop, grace = clock.less(writer.predict(fitted_in * grow, len(model.members))), 0.0
                early = f" ({clock.seconds - stop.seconds:.1f} s before the budget's end, for the model's write)"
            deployed = None  # the scored fit is a model too: it is kept when there is no other
            if stop is not None and stop.left() < fitted_in * grow:
                logger.warning("the fit on every row was not started: it would take about %.1f s, %.1f s were "
                               "left%s; the model is the fit on training + validation rows", fitted_in * grow,
                               max(stop.left(), 0.0), early)
            else:
                try:
                    with deadline(stop, grace=grace):
                        deployed = fit_on_every_row(model, setup)
                except TimeBudgetExceeded:
                    logger.warning("the fit on every row was cut by the time budget%s; the model is the fit on "
                                   "training + validation rows", early)
            if deployed is not None:
                model, model_rows = deployed, "all"
        refit_seconds = time.monotonic() - t0
    if writer is not None and model is not None:
        writer.write(model)
    return TuneResult(opt.session_id, setup.dataset_id, metric, select, best, opt.history, refit_error, name, note,
                      model=model, model_rows=model_rows, trial_end_seconds=ends, started=started,
                      refit_seconds=refit_seconds, total_seconds=time.monotonic() - started,
                      cv=setup.folds, ensemble=choice, ensemble_note=ensemble_note, rungs=rungs,
                      model_path=None if writer is None or writer.written is None else writer.path,
                      write_seconds=None if writer is None else writer.seconds, rounds=rounds)

