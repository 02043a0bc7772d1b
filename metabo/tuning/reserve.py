"""What a search under a time budget keeps back for the work after it: the final model's
fits, successive halving's promotions, the ensemble guard's answer and the members' fits
(:class:`SearchReserve`, called before every trial by
:func:`~metabo.tuning.trials.run_trials`), and the guard's answers asked on the way
(:class:`GuardAnswers`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from metabo.optimizer.budget import FINAL_FIT_MARGIN, TimeBudget, final_fit_seconds
from metabo.optimizer.history import TrialRecord
from metabo.optimizer.optimizer import Optimizer
from metabo.tuning.final import (
    ENSEMBLE_RESERVE,
    GUARD_MARGIN,
    GUARD_REMEASURE,
    WRITE_PER_FIT,
    FitGrowth,
    _halving_reserve,
    best_that_fits,
    every_row_growth,
    first_promoted,
    members_reserve,
)
from metabo.tuning.rounds import Rounds, rounds_name
from metabo.tuning.session import Setup

if TYPE_CHECKING:
    from metabo.ensembles.library import EnsembleChoice, OutOfFoldLibrary


#: without successive halving, the share of the budget kept for a booster model's more rounds
#: and its fits (:mod:`metabo.tuning.rounds`): the last rung's share under the fewest rungs
#: successive halving runs (three: :func:`~metabo.optimizer.halving.rung_sizes`)
ROUNDS_SHARE = 1.0 / 3.0


class GuardAnswers:
    """The guard's answers (:meth:`~metabo.ensembles.library.OutOfFoldLibrary.choose`) by
    (library size, best trial), asked during the search and reused after it when neither
    has changed since, and the seconds they take. An answer's selections score every
    model at every greedy step, so an answer on a larger library is predicted as the last
    measured one's seconds times :data:`~metabo.tuning.final.GUARD_MARGIN` x size / its
    size (linear in the models)."""

    def __init__(self, library: OutOfFoldLibrary | None) -> None:
        self.library = library
        self.decided: dict[tuple[int, int], EnsembleChoice | None] = {}
        #: (seconds, library size) of the last answer measured (empty before the first)
        self.asked: list[tuple[float, int]] = []

    def seconds(self, size: int) -> float:
        """The predicted seconds of an answer on a library of ``size`` models (0 before one is measured)."""
        if not self.asked:
            return 0.0
        seconds, measured = self.asked[0]
        return seconds * GUARD_MARGIN * max(size / measured, 1.0)

    def ask(self, key: tuple[int, int]) -> None:
        """Ask the guard about the library of ``key[0]`` models and the best trial ``key[1]``, and time it."""
        assert self.library is not None
        began = time.monotonic()
        self.decided.clear()
        self.decided[key] = self.library.choose(key[1])
        self.asked[:] = [(time.monotonic() - began, key[0])]


@dataclasses.dataclass
class SearchReserve:
    """The seconds the search keeps back before each trial (its call), under ``clock``.

    The scored fit of the trial whose model would be fitted (the best whose fit fits,
    :func:`~metabo.tuning.final.best_that_fits`) and its fit on every row when one is made
    (``final_rows="all"``); successive halving's promotions
    (:func:`~metabo.tuning.final._halving_reserve`) and, when that trial or one they would
    promote is a booster, its rounds read on every training row (:mod:`metabo.tuning.rounds`:
    the last rung's share of the budget, the model's fits included; without successive
    halving, when the model is a booster, ``ROUNDS_SHARE`` of it; none for a trial whose rounds
    were ``read`` (its fits are then reserved with the rounds kept), nor for one the
    promotions settled: the search resumes after them in what they did not spend); the guard's answer after the search
    (on a library one model larger than now); and the fits of an ensemble's other members,
    each with its fit on every row when the model gets one (``final_rows="all"``:
    :func:`~metabo.tuning.final._ensemble_model` fits only the members whose fits on every
    row fit too) (at most ``ENSEMBLE_RESERVE`` in all, never more seconds than the search has run:
    :func:`~metabo.tuning.final.members_reserve`). When the runners-up's fits would stop
    the search, the guard is asked whether there will be an ensemble (its answer kept until
    the library or the best trial changes) and its members' fits reserved, or none: a
    search whose ensemble would not be kept is not cut short for it. The guard is first
    asked as soon as the library holds two models (a moment), to measure it; later it is
    not asked when twice its predicted seconds would not leave a trial's time, and it is
    measured again once the library has grown ``GUARD_REMEASURE`` times (a small library's
    answer is mostly fixed costs and would overstate a large one's). Under successive
    halving the ensemble is chosen after the promotions among their models
    (:class:`~metabo.tuning.final.Promotions`), which the search cannot know yet: its
    members are not reserved (those that fit in what is left are fitted), and the guard is
    measured once and reserved on the first promotion's models. Under a model writer every
    fit is followed by its write (``WRITE_PER_FIT``).

    When the search resumes after a round of promotions (:func:`metabo.tuning.tune.tune`),
    the trials ``settled`` by them (every trial but the promotions' winner) are no longer
    candidates for the model, and the trials the promotions made so far (``known``,
    (trial, rows) -> value, :func:`~metabo.tuning.final._promote`) evaluated on the second
    rung are not promoted again."""

    opt: Optimizer
    setup: Setup
    clock: TimeBudget
    guard: GuardAnswers
    #: the trials' fits on more rows (their own rows, the folds, what the promotions measured)
    growth: FitGrowth
    refit_rows: int
    final_rows: Literal["all", "train+valid"]
    writing: bool = False
    settled: set[int] = dataclasses.field(default_factory=set)
    known: Mapping[tuple[int, int], float] = dataclasses.field(default_factory=dict)
    #: the last call's seconds by what they are kept for, and the trial whose model they fit
    parts: dict[str, float] = dataclasses.field(default_factory=dict)
    model: TrialRecord | None = None
    #: the boosting rounds read, by trial (no share is kept for them again; the fits of a
    #: trial's model are predicted with the rounds kept, :meth:`Rounds.fit_seconds`)
    read: Mapping[int, Rounds | None] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        """The last call's reserve, part by part (for the log when the search stops)."""
        what = "" if self.model is None else f" (the model: trial {self.model.number} {self.model.algorithm})"
        return ", ".join(f"{k} {v:.1f} s" for k, v in self.parts.items() if v > 0) + what

    @property
    def written(self) -> float:
        """A reserved fit's seconds per second of fit: one, plus its write under a model writer."""
        return 1.0 + (WRITE_PER_FIT if self.writing else 0.0)

    def scored_fit(self, record: TrialRecord | None) -> float:
        """The predicted seconds of ``record``'s fit on training + validation rows (and its write)."""
        return self.written * self.growth.seconds(record, self.refit_rows)

    def _with_rounds(self, record: TrialRecord | None, seconds: float, rows: int) -> float:
        """``seconds``, or the fit on ``rows`` rows of the rounds kept (and its write, with
        :data:`~metabo.optimizer.budget.FINAL_FIT_MARGIN`) when ``record``'s were read and take longer."""
        rounds = None if record is None else self.read.get(record.number)
        return seconds if rounds is None else max(seconds, self.written * FINAL_FIT_MARGIN * rounds.fit_seconds(rows))

    def __call__(self) -> float:
        opt, clock, guard, library = self.opt, self.clock, self.guard, self.guard.library
        costs: dict[int, float] = {}  # this call's predicted fits, by trial

        def scored_fit(record: TrialRecord) -> float:
            if record.number not in costs:
                costs[record.number] = self.scored_fit(record)
            return costs[record.number]

        # the trial whose model would be fitted: the best whose fit fits in the time left, among
        # those the promotions have not settled, or else among all (as tune then chooses)
        best = best_that_fits(opt.history, scored_fit, clock.left(), exclude=self.settled)
        if self.settled and (best is None or scored_fit(best) > clock.left()):
            best = best_that_fits(opt.history, scored_fit, clock.left())
        self.model, parts = best, self.parts
        parts.clear()
        # (chosen by its own rounds' fit: a model whose rounds were read stays the model, and
        # the search leaves the time its rounds' fits take)
        parts["model's fit"] = 0.0 if best is None else self._with_rounds(best, scored_fit(best), self.refit_rows)
        if self.final_rows == "all":
            growth, every = self.growth, self.setup.data.n_instances
            parts["its fit on every row"] = self._with_rounds(best, self.written * final_fit_seconds(
                best, train_rows=growth.train_rows, final_rows=every, fits=growth.fits, scaling=growth.scaling), every)

        def affordable(record: TrialRecord) -> bool:
            return scored_fit(record) <= clock.left()

        promoted = first_promoted(opt.history, self.setup.rungs, affordable)  # none without halving
        to_make = [r for r in promoted if (r.number, self.setup.rungs[1]) not in self.known]
        parts["promotions"] = _halving_reserve(to_make, self.setup.rungs, clock.seconds)
        candidates = [] if best is None else [best, *promoted]  # their rounds not yet read, nor settled
        if any(rounds_name(r.algorithm) and r.number not in self.read and r.number not in self.settled
               for r in candidates):
            # the model's rounds, read on every training row when it is a booster (the
            # promotions may make one the model: metabo.tuning.rounds), its fits included:
            # under successive halving the last rung's share of the budget, as it gives each
            # rung about as much (Li et al. 2018, Algorithm 1: n_i r_i about B / (s + 1));
            # without it, ROUNDS_SHARE of it
            share = clock.seconds * (1.0 / len(self.setup.rungs) if self.setup.rungs else ROUNDS_SHARE)
            model_fits = parts["model's fit"] + parts.get("its fit on every row", 0.0)
            parts["more rounds"] = max(share - model_fits, 0.0)
        own = sum(parts.values())
        if library is None or best is None or len(library) < 2:
            return own
        key = (len(library), best.number)
        if not guard.asked or (len(library) >= GUARD_REMEASURE * guard.asked[0][1] and not self.setup.rungs):
            guard.ask(key)
        if self.setup.rungs:
            parts["guard"] = guard.seconds(len(promoted))
            return own + parts["guard"]
        parts["guard"] = guard.seconds(len(library) + 1)  # its answer after the search: reserved, not hoped for
        own += parts["guard"]
        runners_up = sorted((r for r in opt.history.completed if r.ok and r.number != best.number
                             and affordable(r)), key=lambda r: (r.value, r.number))[:ENSEMBLE_RESERVE - 1]
        # a member's fit, and its fit on every row after it when the model gets one (_ensemble_model)
        again = 1.0 + (every_row_growth(self.setup.data.n_instances, self.refit_rows)
                       if self.final_rows == "all" else 0.0)
        likely = own + members_reserve((again * scored_fit(r) for r in runners_up), searched=clock.elapsed())
        if clock.trial_limit(likely) is not None:
            parts["members"] = likely - own
            return likely  # a trial starts either way: it is only kept short of the ensemble's fits
        if key not in guard.decided:
            if clock.left() - own < 2 * guard.seconds(len(library)) + clock.min_trial:
                return own  # no time to ask the guard and still run a trial: no ensemble is reserved for
            guard.ask(key)
        choice = guard.decided[key]
        if choice is None or choice.kept != "ensemble":
            return own
        members = sorted((k for k in choice.weights if k != best.number), key=lambda k: -choice.weights[k])
        member_fits = (again * scored_fit(opt.history[k]) for k in members[:ENSEMBLE_RESERVE - 1])
        parts["members"] = members_reserve(member_fits, searched=clock.elapsed())
        return own + parts["members"]


__all__ = ["ROUNDS_SHARE", "GuardAnswers", "SearchReserve"]
