"""A wall-clock budget for a whole tuning: how long each trial may still run.

Notation: ``T`` the budget in seconds, counted from ``start`` (a :func:`time.monotonic`
reading; by default when the budget is made, the CLI passes its own start so that its
imports count too); ``r`` the seconds reserved for the final model (the selection fitted
again on training + validation rows, :func:`final_fit_seconds`); ``left = T - elapsed``.

- A trial is started only while ``left - r >= min_trial`` (:meth:`TimeBudget.trial_limit`
  is None otherwise), so the search stops in time for the final fit.
- A started trial may run at most ``left - r`` seconds (and at most the user's per-trial
  limit): a trial still running then is killed by the evaluation runner and recorded as
  ``timeout`` (:mod:`metabo.evaluation.runner`), nothing else is lost.

This is how FLAML's ``time_budget`` and auto-sklearn's ``time_left_for_this_task`` treat a
budget: the search, not each trial, owns it; the final fit is inside it here (FLAML's
``retrain_full="budget"`` does the same).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from metabo.exceptions import InputDataError, TimeBudgetExceeded
from metabo.optimizer.history import TrialRecord

#: A trial is not started with less time than this left (seconds): the fork, fit and
#: scoring of even a tiny model take about this long.
MIN_TRIAL_SECONDS = 0.5
#: The final model trains on training + validation rows (4/3 of the 60% training part
#: under the default holdout) and the fit time of a model grows at least linearly with
#: its rows; the margin covers superlinear learners and a noisy machine.
FINAL_FIT_MARGIN = 2.0
#: once the search has a model, the share of the time budget one trial may take at most
#: (:meth:`TimeBudget.trial_limit`): auto-sklearn's default ``per_run_time_limit``
#: (``time_left_for_this_task / 10``, auto-sklearn pull request 884)
TRIAL_SHARE = 0.1


@dataclass(frozen=True)
class TimeBudget:
    """``seconds`` of wall-clock time from ``start`` (module docstring)."""

    seconds: float
    start: float = field(default_factory=time.monotonic)
    min_trial: float = MIN_TRIAL_SECONDS

    def __post_init__(self) -> None:
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)) \
                or not math.isfinite(self.seconds) or self.seconds <= 0:
            raise InputDataError(f"time_budget must be a positive number of seconds, got {self.seconds!r}")

    def elapsed(self) -> float:
        """Seconds since the budget started (monotonic clock)."""
        return time.monotonic() - self.start

    def left(self) -> float:
        """Seconds left of the budget (negative once it is spent)."""
        return self.seconds - self.elapsed()

    def less(self, seconds: float) -> TimeBudget:
        """This budget ending ``seconds`` earlier (the same start; spent already when
        ``seconds`` is not less than it): the work under it leaves those seconds."""
        return TimeBudget(max(self.seconds - max(seconds, 0.0), 1e-9), start=self.start, min_trial=self.min_trial)

    def trial_limit(self, reserve: float = 0.0, *, capped: bool = False) -> float | None:
        """The time limit of a trial started now (what is left after ``reserve`` seconds),
        or None when less than ``min_trial`` would be left. ``capped``: at most
        :data:`TRIAL_SHARE` of the budget (auto-sklearn's default ``per_run_time_limit``,
        a tenth of the task's time: one configuration that runs away, a kernel SVM of large
        ``C`` say, costs the search at most that)."""
        left = self.left() - reserve
        if left < self.min_trial:
            return None
        return max(min(left, TRIAL_SHARE * self.seconds), self.min_trial) if capped else left


#: seconds past the budget before :func:`deadline` interrupts the work
DEADLINE_GRACE = 1.0


class _Alarm(BaseException):
    """Raised by :func:`deadline`'s timer: a BaseException, as KeyboardInterrupt is, so that
    no ``except Exception`` on the way (a reader's, a worker's) takes it for a failure of
    its own; turned into :class:`TimeBudgetExceeded` where the block ends."""


@contextmanager
def deadline(clock: TimeBudget | None, grace: float = DEADLINE_GRACE) -> Iterator[None]:
    """Within this block, the work is interrupted with :class:`TimeBudgetExceeded`
    ``grace`` seconds after ``clock`` runs out (``SIGALRM``; the next Python instruction
    after it fires, so one long call into a compiled library ends first; a library that
    turns the signal into an exception of its own, as CatBoost's KeyboardInterrupt, ends
    the block the same way). Trials are
    bounded by their limits already; this bounds what runs outside them. Inert without a
    clock, outside the main thread, or when a timer is already set (pytest-timeout's)."""
    usable = (clock is not None and threading.current_thread() is threading.main_thread()
              and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL)[0] == 0)
    if not usable:
        yield
        return
    assert clock is not None
    fired: list[bool] = []

    def expired(signum: int, frame: object) -> None:
        fired.append(True)
        raise _Alarm

    def exceeded() -> TimeBudgetExceeded:
        return TimeBudgetExceeded(f"the time budget of {clock.seconds:g} s ran out (by {-clock.left():.1f} s) "
                                  "before the work outside the trials ended; give a larger time budget")

    previous = signal.signal(signal.SIGALRM, expired)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(clock.left() + grace, 0.01))
        yield
    except _Alarm:
        raise exceeded() from None
    except (KeyboardInterrupt, Exception) as e:
        # a compiled library that checks for signals may turn the alarm into an error of its
        # own (CatBoost raises KeyboardInterrupt): after the alarm, that is the budget's end
        if fired and not isinstance(e, TimeBudgetExceeded):
            raise exceeded() from e
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def final_fit_seconds(best: TrialRecord | None, *, train_rows: int, final_rows: int, fits: int = 1,
                      scaling: Callable[[str, float, float], float] | None = None) -> float:
    """The seconds to reserve for fitting ``best`` on ``final_rows`` rows, given that its
    trial made ``fits`` fits (one per split of its protocol) of ``train_rows`` rows in
    ``best.fit_seconds`` together: scaled by ``scaling(algorithm, train_rows, final_rows)``
    (:class:`~metabo.kb.costs.RowsScaling`, from the knowledge base's recorded fit times;
    default: linear in the rows), at least 1, times :data:`FINAL_FIT_MARGIN` (0 before any
    successful trial). The trial's preprocessing seconds (``best.prepare_seconds``, summed
    over its splits like the fit's) are added, scaled linearly in the rows: the final fit
    preprocesses its rows again, which on a wide table costs more than the estimator."""
    if best is None or best.fit_seconds is None or not math.isfinite(best.fit_seconds):
        return 0.0
    train_rows = max(train_rows, 1)
    scale = final_rows / train_rows if scaling is None else scaling(best.algorithm, train_rows, final_rows)
    prepare = best.prepare_seconds if best.prepare_seconds is not None and math.isfinite(best.prepare_seconds) else 0.0
    fit = best.fit_seconds * max(scale, 1.0) + prepare * max(final_rows / train_rows, 1.0)
    return (FINAL_FIT_MARGIN * fit + (best.predict_seconds or 0.0)) / max(fits, 1)


__all__ = ["DEADLINE_GRACE", "FINAL_FIT_MARGIN", "MIN_TRIAL_SECONDS", "TRIAL_SHARE", "TimeBudget", "deadline",
           "final_fit_seconds"]
