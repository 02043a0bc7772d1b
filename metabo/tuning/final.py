"""After the search: successive halving's promotions, the ensemble's library and model, the
final fit and the fit on every row."""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import os
import time
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo.evaluation.parallel import run_task
from metabo.evaluation.protocols import ReshuffledHoldout, class_codes, class_labels
from metabo.exceptions import EvaluationError, TimeBudgetExceeded
from metabo.optimizer.budget import DEADLINE_GRACE, FINAL_FIT_MARGIN, TimeBudget, deadline, final_fit_seconds
from metabo.optimizer.halving import ETA, Rung, first_promotion, successive_halving
from metabo.optimizer.history import History, TrialRecord
from metabo.optimizer.limits import DefaultLimit
from metabo.optimizer.optimizer import Optimizer
from metabo.tuning.session import Setup
from metabo.tuning.trials import _at, _evaluations, _outcome

if TYPE_CHECKING:
    from metabo.ensembles.library import EnsembleChoice, OutOfFoldLibrary
    from metabo.ensembles.model import EnsembleModel

logger = logging.getLogger(__name__)


#: under a time budget the search stops in time to fit this many members of an ensemble
#: (the best trial and the runners-up): the ensemble's own fits are reserved, not hoped for
#: (the runners-up's at most as long as the search has run, :func:`members_reserve`)
ENSEMBLE_RESERVE = 5


#: the guard's answer on a library is predicted from its last measured answer, linearly in
#: the models, times this margin (:func:`metabo.tuning.tune.tune`'s reserve)
GUARD_MARGIN = 1.25
#: ... and measured again once the library has grown this many times since
GUARD_REMEASURE = 4


#: a model file's write is predicted from the first one measured in the session, times this
#: margin (:class:`ModelWriter`)
WRITE_MARGIN = 1.5
#: write seconds per second of a member's fit: over the default space's members that fit in
#: more than half a second, writes take a tenth of the fits in sum
#: (``scripts/bench_model_write.py``). The search's reserve counts it on each reserved fit
#: (predicted by :func:`~metabo.optimizer.budget.final_fit_seconds`, which doubles the fit
#: it expects), before any write is measured
WRITE_PER_FIT = 0.1


@dataclasses.dataclass
class ModelWriter:
    """Writes the model file inside the time budget (``tune(save_model=...)``).

    Writing a model (skops walks every object of its fitted pipelines, zips their arrays,
    audits the types and keeps the checked local copy) takes seconds for an ensemble of
    forests or boosters. A write is modelled as a cost per member (the pipeline's objects,
    the file's fixed costs) plus :data:`WRITE_PER_FIT` per second of the members' fits (the
    trees they grew); the first term dominates small tables, and varies with the algorithm
    (gradient boosting on many classes writes several times its fit). So it is measured:
    the selected configuration's scored fit is written as soon as it exists (from then on
    the file holds a model, whatever the rest of the budget brings), and what its write took
    beyond :data:`WRITE_PER_FIT` of its fit is the cost per member that prices the writes of
    the larger models that may replace it: the ensemble's members and the fit on every row,
    times :data:`WRITE_MARGIN`. A model already written is not written again."""

    path: Path
    trusted: bool = False
    #: measured write seconds per member, beyond WRITE_PER_FIT of its fit (None before the first write)
    per_member: float | None = None
    #: wall-clock seconds spent writing, all writes together
    seconds: float = 0.0
    written: EnsembleModel | None = None

    def write(self, model: EnsembleModel) -> float:
        """Write ``model`` (atomically: :meth:`EnsembleModel.save`) unless it is the one
        written last; its seconds."""
        if model is self.written:
            return 0.0
        began = time.monotonic()
        model.save(self.path, trusted=self.trusted)
        took = time.monotonic() - began
        self.seconds += took
        self.written = model
        return took

    def first(self, model: EnsembleModel, fit_seconds: float) -> None:
        """Write the first model, whose fit took ``fit_seconds``, and measure the cost per
        member from it."""
        took = self.write(model)
        self.per_member = max(took - WRITE_PER_FIT * fit_seconds, 0.0) / max(len(model.members), 1)

    def predict(self, fit_seconds: float, members: int = 1) -> float:
        """The predicted seconds to write a model of ``members`` members whose fits take
        ``fit_seconds`` together (0 before the first write)."""
        if self.per_member is None:
            return 0.0
        return WRITE_MARGIN * (members * self.per_member + WRITE_PER_FIT * fit_seconds)


def model_writer(path: str | os.PathLike[str] | None, *, trusted: bool) -> ModelWriter | None:
    """A :class:`ModelWriter` for ``path`` after checking it can be written
    (:func:`~metabo.ensembles.model.check_model_path`: before any search), or None."""
    if path is None:
        return None
    from metabo.ensembles.model import check_model_path

    return ModelWriter(check_model_path(path, trusted=trusted), trusted)


#: successive halving's promotions may take at most this share of a time budget
HALVING_SHARE = 0.5


def best_that_fits(history: History, seconds: Callable[[TrialRecord], float], left: float, *,
                   exclude: Container[int] = ()) -> TrialRecord | None:
    """The successful trial of lowest value (earliest among ties) whose final fit is
    predicted (``seconds``) to take at most ``left`` seconds; when none is, the one of the
    shortest predicted fit; None without a successful trial (the trials ``exclude`` are
    not considered).

    Under a time budget the model is fitted after the search, and a fit in compiled code
    (libsvm's, say) cannot be stopped at the deadline: a kernel SVM that won on the first
    rung's 2,000 rows needs minutes on 60,000. Selecting it would lose the model; the
    search reserving its fit would stop with most of the budget unspent."""
    ok = [r for r in history.completed if r.ok and math.isfinite(r.value) and r.number not in exclude]
    if not ok:
        return None
    cost = {r.number: seconds(r) for r in ok}
    fitting = [r for r in ok if cost[r.number] <= left]
    if fitting:
        return min(fitting, key=lambda r: (r.value, r.number))
    return min(ok, key=lambda r: (cost[r.number], r.value, r.number))


def _one_fit(record: TrialRecord, fits: int) -> float:
    """The seconds of one of ``record``'s fits on its training rows (its trial made ``fits``)."""
    return (record.fit_seconds or 0.0) / max(fits, 1)


#: the exponent of rows at which a fit's seconds are assumed to grow when no trial's final
#: fit is predicted to fit (:func:`rows_that_fit`): the worst case of the learners of the
#: space, kernel SVMs' SMO solvers (between n^2 and n^3 in the rows, Bottou & Lin 2007,
#: "Support Vector Machine Solvers"), whose recorded exponents under-predict them 4-30x
#: on large tables (reports/final-fit-costs)
WORST_GROWTH = 3.0


def rows_that_fit(record: TrialRecord, growth: FitGrowth, left: float, *, refit_rows: int,
                  factor: float = 1.0) -> int:
    """The most training + validation rows, between the trial's own rows
    (``growth.train_rows``) and all ``refit_rows``, on which ``record``'s fit is predicted
    to take at most ``left`` seconds (found by bisection; its own rows when none is, the
    rows its trial was fitted on in the seconds it took). A fit on ``r`` rows is predicted
    as the larger of :meth:`FitGrowth.seconds` and the trial's measured fit grown as
    ``r^WORST_GROWTH`` (times ``FINAL_FIT_MARGIN``), times ``factor`` (a write after it).

    Under a time budget, when no trial's fit on every non-test row fits in the time left
    (:func:`best_that_fits` finds none), the best trial is fitted on this many of them: a
    fit in compiled code cannot be stopped at the deadline, and a model on fewer rows is
    still a model, where a fit on all of them would run past the budget and leave none.
    The worst growth is assumed for a trial fitted on one size only; one that successive
    halving fitted on more rows (``growth.grown``) grew at a rate measured on this table,
    and :meth:`FitGrowth.seconds` predicts from it."""
    train_rows = growth.train_rows
    first = _one_fit(record, growth.fits)
    measured = record.number in growth.grown and growth.grown[record.number][0] > train_rows

    def seconds(rows: int) -> float:
        predicted = growth.seconds(record, rows)
        if measured:
            return factor * predicted
        return factor * max(FINAL_FIT_MARGIN * first * (rows / max(train_rows, 1)) ** WORST_GROWTH, predicted)

    low = min(train_rows, refit_rows)
    fitting = bisect.bisect_right(range(low, refit_rows + 1), left, key=seconds)  # seconds() is non-decreasing
    return max(low + fitting - 1, low)


def first_promoted(history: History, sizes: Sequence[int],
                   promotable: Callable[[TrialRecord], bool] | None = None) -> list[TrialRecord]:
    """The trials successive halving would promote to its second rung now
    (:func:`~metabo.optimizer.halving.first_promotion`), among those ``promotable`` admits;
    none when ``sizes`` has fewer than three rungs (no halving)."""
    if len(sizes) < 3:
        return []
    done = [r for r in history.completed if r.ok and (promotable is None or promotable(r))]
    return [history[k] for k in first_promotion({r.number: float(r.value) for r in done}, len(sizes),
                                                groups={r.number: r.algorithm for r in done})]


def _halving_reserve(chosen: Sequence[TrialRecord], sizes: Sequence[int], budget: float) -> float:
    """The seconds the promotions after the search are predicted to take (at most
    :data:`HALVING_SHARE` of the ``budget``): each rung's trials' fit seconds on the first
    rung, scaled linearly to the rung's rows (:mod:`metabo.optimizer.halving`), starting
    from the trials the first promotion would take, ``chosen`` (:func:`first_promoted`,
    among those whose final fit would fit: the others are not promoted, :func:`_promote`)."""
    if len(sizes) < 3:
        return 0.0
    seconds = 0.0
    for rows in sizes[1:-1]:
        if len(chosen) < 2:
            break
        seconds += sum((r.fit_seconds or 0.0) + (r.predict_seconds or 0.0) for r in chosen) * rows / sizes[0]
        chosen = chosen[:math.ceil(len(chosen) / ETA)]
    return min(seconds, HALVING_SHARE * budget)


def every_row_growth(rows: int, refit_rows: int) -> float:
    """A fit on every one of ``rows`` rows' seconds per second of the same fit on
    ``refit_rows`` (training + validation) rows: linear in the rows, at least 1; how
    :func:`~metabo.tuning.tune.tune` predicts the fit on every row from the measured one."""
    return max(rows / max(refit_rows, 1), 1.0)


def members_reserve(fits: Iterable[float], *, searched: float) -> float:
    """The seconds a search under a time budget reserves for an ensemble's members other
    than the best: the sum of their predicted ``fits`` without the margin they carry
    (:data:`~metabo.optimizer.budget.FINAL_FIT_MARGIN`), and the margin of the longest
    (the fit a deadline may not cut short, as :func:`_ensemble_model` counts them), but
    never more than the ``searched`` seconds so far. The ensemble is made of the search's trials, so a library
    of a few seconds' trials does not stop the search for its slow members' fits (ensemble
    selection gains with the library, Caruana et al. 2004, sec. 2); the reserve grows with
    the search. The margin is for a fit that must end, the best configuration's, which is
    reserved in full; a member whose fit does not fit after the search is left out of the
    ensemble (:func:`_ensemble_model`), so its expected seconds are reserved, not its worst."""
    fits = list(fits)
    if not fits:
        return 0.0
    return min(sum(fits) / FINAL_FIT_MARGIN + max(fits) * (1 - 1 / FINAL_FIT_MARGIN), max(searched, 0.0))


def _promote(opt: Optimizer, setup: Setup, *, seed: int, clock: TimeBudget | None, time_limit: float | None,
             default_limit: DefaultLimit | None, memory_limit_mb: int | None,
             scaling: Callable[[str, float, float], float] | None = None,
             on_promoted: Callable[[int, int, float, np.ndarray], None] | None = None,
             known: dict[tuple[int, int], float] | None = None,
             ) -> tuple[list[Rung], dict[int, tuple[int, float]]]:
    """Successive halving's rungs after the search (:func:`~metabo.optimizer.halving.successive_halving`):
    each promoted trial evaluated on the hold-out split with more training rows, its split
    limited as a trial's is (the default limit scaled to the rows), under the ``clock``
    (less the final fit's predicted seconds); and, by trial, the training rows and fit
    seconds of its evaluation on the most rows (for :meth:`FitGrowth.measure`). Promotions
    are not stored as runs. ``on_promoted(trial, rows, value, probabilities)`` sees each
    successful promotion's probabilities on the validation rows (the search's selection
    rows: the training rows alone are capped, :class:`~metabo.evaluation.protocols.Holdout`).
    ``known`` ((trial, rows) -> value) holds the promotions of an earlier round, which are
    not evaluated again, and gains this round's."""
    from metabo.ensembles.library import evaluated_probabilities

    first = {r.number: float(r.value) for r in opt.history.completed if r.ok}
    train_rows, fits, refit_rows = setup.split_rows(seed)
    grown: dict[int, tuple[int, float]] = {}

    def evaluate_at(number: int, rows: int) -> float:
        if known is not None and (number, rows) in known:
            return known[number, rows]
        value = _evaluate_at(number, rows)
        if known is not None:
            known[number, rows] = value
        return value

    def _evaluate_at(number: int, rows: int) -> float:
        record = opt.history[number]
        total = None
        if clock is not None:
            total = clock.trial_limit(final_fit_seconds(record, train_rows=train_rows, final_rows=refit_rows,
                                                        fits=fits, scaling=scaling))
            if total is None:  # its final fit would not fit after it: not promoted, the others still are
                logger.info("successive halving: trial %d %s not evaluated on %d rows: the time left would not "
                            "hold its final fit", number, record.algorithm, rows)
                return math.nan
        limit = time_limit
        if limit is None and default_limit is not None:
            limit = default_limit(record.algorithm, opt.history) * rows / setup.rungs[0]
        protocol = dataclasses.replace(setup.protocol, max_train=rows)  # type: ignore[type-var]
        result = run_task(setup.task(record, protocol, seed=seed, time_limit=limit, memory_limit_mb=memory_limit_mb,
                                     keep_predictions=on_promoted is not None, in_process=True,
                                     total_time_limit=total))
        try:
            evaluations = _evaluations(record, result)
            outcome = _outcome(evaluations, opt.metric)
        except EvaluationError as e:
            logger.warning("successive halving: trial %d on %d rows could not run: %s", number, rows, e)
            return math.nan
        if outcome["fit_seconds"] > 0:  # a fit cut by its limit took at least that: evidence too
            grown[number] = (rows, float(outcome["fit_seconds"]))
        logger.info("successive halving: trial %d %s on %d rows: %s %.4g", number, record.algorithm, rows,
                    outcome["status"], outcome["value"])
        if on_promoted is not None and outcome["status"] == "ok":
            if (proba := evaluated_probabilities(evaluations)) is not None:
                on_promoted(number, rows, float(outcome["value"]), proba)
        return float(outcome["value"]) if outcome["status"] == "ok" else math.nan

    with deadline(clock, grace=DEADLINE_GRACE + 1.0):
        try:
            return successive_halving(first, setup.rungs, evaluate_at,
                                      groups={k: opt.history[k].algorithm for k in first}), grown
        except TimeBudgetExceeded:  # raised outside an evaluation: the search's choice stands
            return [Rung(setup.rungs[0], first)], grown


@dataclasses.dataclass
class FitGrowth:
    """How the fits of the search's trials grow with the rows on this table: the seconds a
    trial's fit on more rows than its own ``train_rows`` is predicted to take (:meth:`seconds`).

    ``grown``: by trial, the training rows and fit seconds of its fit on the most rows
    (successive halving's promotions, :func:`_promote`); ``exponents``: by algorithm, the
    highest exponent of rows its promoted trials' fits grew at (:meth:`measure`), for its
    trials never promoted. ``fits``: the fits a trial made (cross-validation's folds);
    ``scaling``: the recorded exponents (:func:`~metabo.optimizer.budget.final_fit_seconds`).

    The recorded exponents come from tables of at most the store's largest size; beyond
    it an algorithm whose cost is superlinear in the rows (libsvm's SMO solver for kernel
    SVMs: at least quadratic in the rows once the kernel cache no longer holds them,
    Bottou & Lin 2007, "Support Vector Machine Solvers") is under-predicted by a factor of
    ten or more (``reports/final-fit-costs``). Two sizes of the table at hand show it."""

    train_rows: int
    fits: int = 1
    scaling: Callable[[str, float, float], float] | None = None
    grown: dict[int, tuple[int, float]] = dataclasses.field(default_factory=dict)
    exponents: dict[str, float] = dataclasses.field(default_factory=dict)

    def measure(self, history: History, grown: Mapping[int, tuple[int, float]]) -> None:
        """Take the fits a round of promotions measured (``grown``, :func:`_promote`), and
        the exponents of rows they show, by algorithm: after a resumed search the model may
        be a trial that was not promoted, of an algorithm whose fits the promotions showed
        to grow faster than the recorded exponents say (a kernel SVM)."""
        self.grown.update(grown)
        exponents: dict[str, float] = {}
        for number, (rows, seconds) in self.grown.items():
            record = history[number]
            first = _one_fit(record, self.fits)
            if rows > self.train_rows and seconds > 0 and first > 0:
                exponent = _exponent(first, self.train_rows, seconds, rows)
                exponents[record.algorithm] = max(exponents.get(record.algorithm, exponent), exponent)
        self.exponents = exponents

    def seconds(self, record: TrialRecord | None, final_rows: int) -> float:
        """:func:`~metabo.optimizer.budget.final_fit_seconds` on ``final_rows`` rows, or
        more when successive halving measured the trial's fit on more rows and that
        measurement, grown to ``final_rows`` at the exponent the table itself showed between
        the two sizes (at least linear), predicts a longer fit (times ``FINAL_FIT_MARGIN``).
        A trial never promoted is grown from its own fit at the exponent its algorithm
        showed on this table, when that predicts more."""
        base = final_fit_seconds(record, train_rows=self.train_rows, final_rows=final_rows, fits=self.fits,
                                 scaling=self.scaling)
        if record is None or not record.fit_seconds or (first := _one_fit(record, self.fits)) <= 0:
            return base
        if record.number not in self.grown:
            exponent = self.exponents.get(record.algorithm)
            if exponent is None or final_rows <= self.train_rows:
                return base
            return max(base, FINAL_FIT_MARGIN * first * (final_rows / max(self.train_rows, 1)) ** exponent)
        rows, seconds = self.grown[record.number]
        if rows <= self.train_rows or seconds <= 0 or final_rows <= rows:
            return base
        exponent = _exponent(first, self.train_rows, seconds, rows)
        return max(base, FINAL_FIT_MARGIN * seconds * (final_rows / rows) ** exponent)


def _exponent(first: float, train_rows: int, seconds: float, rows: int) -> float:
    """The exponent of rows at which a fit of ``first`` seconds on ``train_rows`` grew to
    ``seconds`` on ``rows`` (at least linear)."""
    return max(math.log(seconds / first) / math.log(rows / train_rows), 1.0)


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


class Promotions:
    """The probabilities on the selection rows of successive halving's promotions, by
    training rows and trial (give it as :func:`_promote`'s ``on_promoted``)."""

    def __init__(self) -> None:
        self.models: dict[int, dict[int, tuple[float, np.ndarray]]] = {}

    def __call__(self, number: int, rows: int, value: float, proba: np.ndarray) -> None:
        self.models.setdefault(rows, {})[number] = (value, proba)

    def library(self, library: OutOfFoldLibrary, best: int) -> OutOfFoldLibrary | None:
        """``library`` refitted (:meth:`~metabo.ensembles.library.OutOfFoldLibrary.refitted`)
        on the promotions of the most rows among which ``best`` and another trial
        succeeded: the ensemble is then chosen among models trained as the final ones are,
        on more than the search's first rung. None when no rung holds two such trials (the
        search's library stands)."""
        for rows in sorted(self.models, reverse=True):
            if best in self.models[rows] and len(self.models[rows]) >= 2:
                logger.info("the ensemble is chosen among the %d trials promoted to %d training rows",
                            len(self.models[rows]), rows)
                return library.refitted(self.models[rows])
        return None


def _ensemble_model(choice: EnsembleChoice, history: History, setup: Setup, *, seed: int, metric: str,
                    clock: TimeBudget | None, growth: FitGrowth, refit_rows: int,
                    writer: ModelWriter | None = None, library: OutOfFoldLibrary | None = None,
                    single: int | None = None, single_params: Mapping[str, Any] | None = None,
                    reuse: EnsembleModel | None = None, reused_seconds: float = 0.0, every: float = 0.0,
                    ) -> tuple[tuple[EnsembleModel, float | None] | None, str]:
    """The chosen ensemble fitted on training + validation rows and its test ``metric``
    (:func:`~metabo.ensembles.model.refit_test_error`) with a note, or None and why.

    ``reuse``: the selected configuration ``single`` already fitted on these rows (the
    model in hand), not fitted again (:meth:`EnsembleModel.fit_dataset`); ``single_params``:
    its parameters in the model, when they are not its trial's (more boosting rounds,
    :mod:`metabo.tuning.rounds`).

    Under a time budget only the members whose fits, and writes when a ``writer`` will
    write the model (:meth:`ModelWriter.predict`), fit in the time left are fitted: the
    selected configuration ``single`` first (the guard's comparison; no seconds when it
    is reused), then the others by weight, each counted at its expected seconds (the
    predicted fit on ``refit_rows``, ``growth``'s :meth:`FitGrowth.seconds`, without its margin
    :data:`~metabo.optimizer.budget.FINAL_FIT_MARGIN`, as the search reserved them:
    :func:`members_reserve`), and the last one admitted with its margin too: the fit in
    flight when the budget ends is the one a deadline cannot cut short (a compiled fit).
    ``every``: when the model is then fitted on every row (``final_rows="all"``), those
    rows over ``refit_rows``; each member is then admitted only when its fit on every row
    fits too, at ``every`` times its fit's expected seconds (``reused_seconds``, the model in
    hand's measured fit, for ``single``), as :func:`~metabo.tuning.tune.tune` predicts that
    fit before starting it. An ensemble left on training + validation rows while the selected
    configuration alone would have had every row is compared by the guard on equal rows, not
    as deployed: the members' fits on every row are counted whenever the selected
    configuration's own fits in the time left (else the ensemble on training + validation
    rows is kept as before, against a single model on the same rows).
    When that leaves some out, the ensemble is chosen again among those that
    fit (``library``'s :meth:`~metabo.ensembles.library.OutOfFoldLibrary.among`) and passes
    the guard again against ``single``: the members left out were part of what the guard
    measured, and a subset of an ensemble, its weights renormalized, need not beat the
    single model it was compared with (without a ``library``, the subset is kept with its
    weights renormalized). None when fewer than two fit, when the subset's ensemble does
    not pass the guard, when the budget runs out during the fit, or when a member's fit
    fails."""
    from metabo.ensembles.model import refit_test_error

    weights = dict(choice.weights)
    combine = choice.combine
    note = ""
    if clock is not None:  # the selected configuration, then the members of highest weight, that fit
        left, need, kept = clock.left(), 0.0, {}
        fit = {k: 0.0 if reuse is not None and k == single else
               growth.seconds(history[k], refit_rows) for k in weights}
        writes = {k: 0.0 if writer is None else writer.predict(s) for k, s in fit.items()}
        seconds = {k: fit[k] + writes[k] for k in weights}
        # each member's fit on every row after them, at its expected seconds (as tune predicts it)
        later = {k: every * (reused_seconds if reuse is not None and k == single else fit[k] / FINAL_FIT_MARGIN)
                 for k in weights}
        if single is not None and later.get(single, 0.0) > left:  # not even the selected configuration's
            later = dict.fromkeys(weights, 0.0)
        rows = " with their fits on every row" if any(later.values()) else ""
        for k in sorted(weights, key=lambda k: (k != single, -weights[k], k)):
            if need + seconds[k] + later[k] > left:
                break
            need += fit[k] / FINAL_FIT_MARGIN + writes[k] + later[k]
            kept[k] = weights[k]
        if len(kept) < 2:
            return None, (f"its {len(weights)} members need about {sum(seconds.values()) + sum(later.values()):.1f}"
                          f" s{rows}, {max(left, 0):.1f} s were left")
        if len(kept) < len(weights):
            note = f"{len(kept)} of its {len(weights)} members fit in the {left:.1f} s left{rows}"
            if library is not None:
                try:
                    with deadline(clock):
                        again = library.among(kept).choose(single)
                except TimeBudgetExceeded:
                    return None, f"{note}, and no time was left to choose among them"
                if again is None or again.kept != "ensemble":
                    gain = "" if again is None else f" ({again.decision.gain_text})"
                    return None, f"{note}, and their ensemble does not beat the selected configuration{gain}"
                kept, combine = dict(again.weights), again.combine
                note += f"; chosen again among them, {again.decision.gain_text}"
            total = sum(kept.values())
            weights = {k: w / total for k, w in kept.items()}
    numbers = list(weights)
    members = [(history[k].algorithm, dict(single_params if k == single and single_params is not None
                                            else history[k].params)) for k in numbers]
    stop = clock  # a fit that ends by its deadline leaves the time to write it
    if clock is not None and writer is not None:
        stop = clock.less(sum(writes[k] for k in numbers) + DEADLINE_GRACE)
    try:
        with deadline(stop):
            model, error = refit_test_error(members, list(weights.values()), combine,  # type: ignore[arg-type]
                                            setup.data, setup.protocol, seed=seed, metric=metric, reuse=reuse)
    except TimeBudgetExceeded:
        return None, "the time budget ran out during its fit"
    except EvaluationError as e:
        logger.warning("the ensemble's final fit failed: %s", e)
        return None, f"a member's fit failed: {e}"
    return (model, error if math.isfinite(error) else None), note


def final_model(best: TrialRecord, setup: Setup, *, seed: int, metric: str, max_rows: int | None = None
                ) -> tuple[EnsembleModel | None, float | None]:
    """The selected configuration fitted on every non-test row of its split (at most
    ``max_rows`` of them, stratified) and its test ``metric``
    (:func:`~metabo.ensembles.model.refit_test_error`); ``(None, None)``, logged, when that
    fit fails (the search's results stand)."""
    from metabo.ensembles.model import refit_test_error

    try:
        model, error = refit_test_error([(best.algorithm, dict(best.params))], None, "average", setup.data,
                                        _at(setup.protocol, best.number), seed=seed, metric=metric,
                                        max_rows=max_rows)
    except EvaluationError as e:
        logger.warning("the final fit of trial %d failed: %s", best.number, e)
        return None, None
    return model, error if math.isfinite(error) else None


#: An every-row fit is taken as diverged when its error rate on the rows it was fitted on
#: exceeds the scored fit's on the same rows by more than this (:func:`fit_on_every_row`).
DIVERGED_MARGIN = 0.05
#: The rows (at most) on which :func:`fit_on_every_row` compares the two fits.
CHECK_ROWS = 2000


def fit_on_every_row(model: EnsembleModel, setup: Setup) -> EnsembleModel | None:
    """``model`` (the selected configuration or the ensemble: its members, weights and
    combination) fitted again on every row of the dataset; None, logged, when a fit fails
    or diverges (the scored fit on training + validation rows is returned instead).

    Diverged: on a sample of :data:`CHECK_ROWS` rows, all of which the new fit was trained
    on, its error rate exceeds the scored fit's by more than :data:`DIVERGED_MARGIN`, for
    the model or for any one of its members (a member gone wrong can hide behind the others'
    votes and still cost the model on new rows). A fit that saw every row should do at
    least about as well on them as one that saw most of them (and was scored on the rest);
    one that does much worse has not converged to the model the search measured, as a
    LightGBM of learning rate 0.5 on a multi-class table can when a few hundred rows are
    added (its Newton steps on near-zero hessians)."""
    from metabo.ensembles.model import EnsembleModel

    try:
        fitted = EnsembleModel(model.members, model.weights, model.combine, model.seed).fit_dataset(setup.data)
    except EvaluationError as e:
        logger.warning("the fit on every row failed (%s); the model is its fit on training + validation rows", e)
        return None
    n = setup.data.n_instances
    rows = np.sort(np.random.default_rng(model.seed).choice(n, min(n, CHECK_ROWS), replace=False))
    X, truth = setup.data.X.iloc[rows], class_codes(setup.data)[rows]
    P_new, P_old = fitted.member_probabilities(X), model.member_probabilities(X)
    new, old = (float(np.mean(m.codes_of(P) != truth)) for m, P in ((fitted, P_new), (model, P_old)))
    if new > old + DIVERGED_MARGIN:
        logger.warning("the fit on every row diverged (error rate %.3f on %d of its own rows, against %.3f for the "
                       "fit on training + validation rows); the model is the latter", new, len(rows), old)
        return None
    rise = (P_new.argmax(axis=2) != truth).mean(axis=1) - (P_old.argmax(axis=2) != truth).mean(axis=1)
    j = int(np.argmax(rise))
    if rise[j] > DIVERGED_MARGIN:
        algorithm, _ = fitted.members_[j]
        logger.warning("member %d (%s) of the fit on every row diverged (its error rate %.3f higher on %d of its own "
                       "rows than its fit on training + validation rows'); the model is the latter",
                       j, algorithm, rise[j], len(rows))
        return None
    return fitted
