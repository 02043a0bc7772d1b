"""Ask/tell over a CASH space, every told result written to the knowledge base.

Optuna's ``ask``/``tell`` shape: :meth:`Optimizer.ask` returns a :class:`Trial` (number,
algorithm, params, config_id), the caller evaluates it however it likes and
:meth:`Optimizer.tell` reports the value (lower is better) and status.

Reproducibility: trial ``t`` is suggested with the generator
``default_rng(SeedSequence([seed, t]))`` and a strategy whose state is a function of the
history, so the same seed and the same told values give the same suggestions, and a
resumed session continues exactly as an uninterrupted one would have.

Knowledge base (when ``kb`` is given): the session is created with its settings (strategy,
seed, metric, the space as JSON); each ask writes the trial's record (state ``pending``)
and each tell, in one transaction, the runs of source ``session:<id>`` and the trial's
completed record. Runs: either the caller's evaluations through
:func:`metabo.kb.runs.record` (all their metrics and predictions; what
:func:`metabo.tuning.tune` does), or one row of ``metric`` and, with
``test_value``, one of ``test_<metric>``. Trial records are JSON cursors in
``ingest_state`` under ``session:<id>:trial:<number>``, so :meth:`Optimizer.resume`
rebuilds the history, numbers and pending trials included, from the store alone.

Writes are immediate by default. With ``write_every`` seconds (what
:func:`metabo.tuning.tune` uses), asks and tells wait and are written together, in one
transaction, once the oldest has waited that long, and at :meth:`Optimizer.flush` and
:meth:`Optimizer.finish`: each write of a trial costs several queries of a columnar store
whatever its size, about a tenth of a second per trial, which on a small table is as much
as the trial. A process killed between writes loses the trials since the last one (never
part of one); the store holds the session as of that write, resumable.

Pending trials at resume (asked, never told: the process stopped mid-evaluation) are
re-asked first, with their numbers and configurations, so nothing is skipped and the
seeded sequence is kept.

Concurrent trials: ``ask`` may be called again before the earlier trials are told (several
workers, a batch evaluated in parallel). The strategy then sees the pending trials as
observed with the constant lie ``liar`` (:meth:`History.with_lies`, Ginsbourger et al.
2010), so it proposes a configuration away from the ones being evaluated instead of the
same acquisition maximum again. Sequential use (each trial told before the next ask)
never lies, so its suggestions are unchanged; ``liar=None`` turns the heuristic off.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from metabo.exceptions import InputDataError, MetaboError
from metabo.kb.canonical import config_id
from metabo.kb.schema import check_outcome
from metabo.kb.sessions import get_session, state_values  # get_session: also imported from here
from metabo.kb.timestamps import utcnow
from metabo.optimizer.history import LIARS, History, Liar, Trial, TrialRecord
from metabo.optimizer.strategy import PosteriorModel, Strategy
from metabo.space.cash import CASHSpace, as_cash
from metabo.space.space import SearchSpace

if TYPE_CHECKING:
    from metabo.evaluation.evaluate import Evaluation
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

Select = Literal["argmin", "posterior_mean"]
TEST_PREFIX = "test_"


def trial_key(session_id: str, number: int) -> str:
    """The ``ingest_state`` key of a trial's record."""
    return f"session:{session_id}:trial:{number:08d}"


def new_session_id(prefix: str) -> str:
    """A new session id: ``<prefix>-<UTC timestamp to the microsecond>``."""
    return f"{prefix}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"


def _default_session_id(strategy: Strategy) -> str:
    return new_session_id(strategy.name)


class Optimizer:
    """Ask/tell optimization of ``space`` by ``strategy`` (see module docstring).

    Args:
        space: a :class:`CASHSpace` (or a :class:`SearchSpace`, wrapped as one algorithm).
        strategy: proposes configurations (:mod:`metabo.strategies`).
        kb: the knowledge base results are written to (optional).
        session_id: the session's id (default: ``<strategy>-<UTC timestamp>``); an id
            already stored raises (use :meth:`resume`).
        dataset_id: the stored dataset the runs are of; required with ``kb``.
        metric: the name the objective is recorded under (``test_<metric>`` for tests).
        seed: seeds every suggestion (module docstring).
        settings: extra settings stored with the session (protocol, budget, ...).
        liar: the constant lie told the strategy for pending trials (module docstring),
            ``min``/``mean``/``max`` of the successful values, or None to show them as
            pending; stored with the session.
    """

    def __init__(
        self,
        space: CASHSpace | SearchSpace,
        strategy: Strategy,
        *,
        kb: KnowledgeBase | None = None,
        session_id: str | None = None,
        dataset_id: str | None = None,
        metric: str = "error_rate",
        seed: int = 0,
        settings: dict[str, Any] | None = None,
        liar: Liar | None = "max",
        write_every: float = 0.0,
    ) -> None:
        if liar is not None and liar not in LIARS:
            raise InputDataError(f"liar must be one of {LIARS} or None, got {liar!r}")
        self.liar = liar
        self.space = as_cash(space)
        self.strategy = strategy
        self.kb = kb
        self.session_id = session_id or _default_session_id(strategy)
        self.dataset_id = dataset_id
        self.metric = metric
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self._history = History()
        self._reask: list[int] = []
        self.write_every = write_every
        # asks and tells not yet written (module docstring): (record, evaluations or None,
        # when it was told or None for an ask), and the monotonic time the oldest was made
        self._unwritten: list[tuple[TrialRecord, list[Evaluation] | None, datetime | None]] = []
        self._waiting_since = 0.0
        if kb is not None:
            if dataset_id is None:
                raise InputDataError(
                    "recording in a knowledge base needs dataset_id: store the dataset first "
                    "(kb.add_dataset) and pass its id"
                )
            if get_session(kb, self.session_id) is not None:
                raise InputDataError(
                    f"session {self.session_id!r} already exists; continue it with Optimizer.resume "
                    "or choose another session id"
                )
            kb.add_session(self.session_id, strategy=strategy.name, dataset_id=dataset_id,
                           settings=self._settings(settings))

    def _settings(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "strategy": self.strategy.name, "strategy_repr": repr(self.strategy), "seed": self.seed,
            "metric": self.metric, "space": self.space.to_json(), "liar": self.liar, **(extra or {}),
        }

    # ---------------------------------------------------------------- resume
    @classmethod
    def resume(
        cls, kb: KnowledgeBase, session_id: str, space: CASHSpace | SearchSpace, strategy: Strategy, *,
        reask_pending: bool = True, write_every: float = 0.0,
    ) -> Optimizer:
        """The optimizer of a stored session, its history rebuilt from ``kb``.

        The seed, metric and dataset come from the session's settings. The space must
        be the session's (same JSON); a different strategy is allowed (logged): the
        history is the strategy's input, whoever proposed it. Pending trials are
        re-asked first (module docstring); with ``reask_pending=False`` they stay
        pending, to be told by whoever asked them (a service's clients outlive its
        restarts), and ``ask`` proposes new trials around them (the constant lie).
        """
        row = get_session(kb, session_id)
        if row is None:
            raise InputDataError(f"no session {session_id!r} in {kb.path}; start one with Optimizer(...)")
        settings = json.loads(row["settings"])
        space = as_cash(space)
        if "space" in settings and settings["space"] != space.to_json():
            raise InputDataError(
                f"session {session_id!r} was run on another search space; resume it with the same "
                "algorithms and spaces (the stored space: sessions.settings['space'])"
            )
        if row["strategy"] != strategy.name:
            logger.warning("session %s was started by %s, continued by %s", session_id, row["strategy"], strategy.name)
        self = cls.__new__(cls)
        self.space, self.strategy, self.kb, self.session_id = space, strategy, kb, session_id
        self.dataset_id = row["dataset_id"]
        self.metric = settings.get("metric", "error_rate")
        self.seed = int(settings.get("seed", 0))
        self.liar = settings.get("liar", "max")
        texts = state_values(kb, f"session:{session_id}:trial:")
        records = [TrialRecord.from_json(json.loads(text)) for text in texts]
        self._history = History(records)
        self._reask = [r.number for r in records if not r.complete] if reask_pending else []
        self.write_every, self._unwritten, self._waiting_since = write_every, [], 0.0
        kb.set_session_status(session_id, "running")
        logger.info("resumed session %s: %d trials, %d pending", session_id, len(records), len(self._reask))
        return self

    # ---------------------------------------------------------------- ask / tell
    @property
    def history(self) -> History:
        """The search's history: every trial asked so far."""
        return self._history

    def ask(self, config: tuple[str, Mapping[str, Any]] | None = None) -> Trial:
        """The next configuration to evaluate (a re-asked pending trial first; trials
        still pending are shown to the strategy as constant lies, module docstring).
        ``config``: this ``(algorithm, params)`` instead of the strategy's suggestion (a
        trial chosen by the caller, as Optuna's ``enqueue_trial``; the strategy sees it in
        the history like any other)."""
        if self._reask:
            return self._history[self._reask.pop(0)].trial
        number = len(self._history)
        start = time.perf_counter()
        if config is not None:
            algorithm, params = config
        else:
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, number]))
            seen = self._history if self.liar is None else self._history.with_lies(self.liar)
            algorithm, params = self.strategy.suggest(seen, self.space, rng)
        seconds = time.perf_counter() - start
        algorithm, params = self.space.normalize(algorithm, params)
        cid = config_id(algorithm, params)
        if cid in self._history:
            logger.warning("trial %d repeats configuration %s (trial %d)", number, cid,
                           next(r.number for r in self._history if r.config_id == cid))
        record = TrialRecord(number, algorithm, params, cid, suggest_seconds=seconds)
        self._history.add(record)
        if self.kb is not None:
            self._write(record, None, told=False)
        logger.debug("trial %d: %s %s (%.3f s)", number, algorithm, params, seconds)
        return record.trial

    def tell(
        self,
        trial: Trial | int,
        value: float | None,
        *,
        status: str = "ok",
        test_value: float | None = None,
        fit_seconds: float | None = None,
        predict_seconds: float | None = None,
        message: str | None = None,
        evaluations: Iterable[Evaluation] | None = None,
        prepare_seconds: float | None = None,
    ) -> TrialRecord:
        """Report the outcome of a pending trial; record it (module docstring).

        ``value`` must be finite when ``status`` is ``ok``; a failed trial (``crash``,
        ``timeout``, ``memout``) has no value: None/NaN (a number is refused, as the
        service refuses it, rather than stored beside the failure). ``evaluations``: the trial's
        evaluations, recorded as they are instead of the single metric row. ``prepare_seconds``:
        its preprocessing's seconds (kept with the trial, for the final fit's reserve).
        """
        number = trial.number if isinstance(trial, Trial) else int(trial)
        if not 0 <= number < len(self._history):
            raise InputDataError(f"no trial {number}: {len(self._history)} trials were asked")
        record = self._history[number]
        if record.complete:
            raise InputDataError(f"trial {number} was already told ({record.status}, {record.value})")
        try:
            check_outcome(status, value=value, test_value=test_value)
        except InputDataError as e:
            raise InputDataError(f"trial {number}: {e}") from None
        value = math.nan if value is None else float(value)
        outcome: dict[str, Any] = {
            "value": value, "status": status,
            "test_value": None if test_value is None or not math.isfinite(test_value) else float(test_value),
            "fit_seconds": fit_seconds, "predict_seconds": predict_seconds, "message": message,
            "prepare_seconds": prepare_seconds,
        }
        done = replace(record, state="complete", **outcome)
        if self.kb is not None:
            self._write(done, None if evaluations is None else list(evaluations), told=True)
        if number in self._reask:
            self._reask.remove(number)
        return self._history.complete(number, **outcome)

    def _write(self, record: TrialRecord, evaluations: list[Evaluation] | None, *, told: bool) -> None:
        """Write ``record`` (asked, or ``told`` with its ``evaluations``) now, or with the
        next write when ``write_every`` allows it to wait (module docstring); a told
        trial's runs keep the time it was told."""
        if not self._unwritten:
            self._waiting_since = time.monotonic()
        self._unwritten.append((record, evaluations, utcnow() if told else None))
        if time.monotonic() - self._waiting_since >= self.write_every:
            self.flush()

    def flush(self) -> None:
        """Write the asks and tells still waiting (module docstring), in one transaction:
        the told trials' runs (their evaluations through :func:`metabo.kb.runs.record`, or
        one row per metric) and every trial's latest record. Nothing is lost when it fails:
        they wait for the next write."""
        if self.kb is None or not self._unwritten:
            return
        from metabo.kb.runs import record as record_evaluations
        from metabo.kb.sessions import set_states

        kb, source = self.kb, f"session:{self.session_id}"
        assert self.dataset_id is not None
        told = [(done, evaluations, at) for done, evaluations, at in self._unwritten if at is not None]
        with kb.transaction():
            evaluated = [(e, at) for _, evaluations, at in told if evaluations is not None for e in evaluations]
            if evaluated:
                record_evaluations(kb, [e for e, _ in evaluated], dataset_id=self.dataset_id, source=source,
                                   created_at=[at for _, at in evaluated])
            rows: list[dict[str, Any]] = []
            for done, evaluations, at in told:
                if evaluations is not None:
                    continue
                base = {"dataset_id": self.dataset_id, "algorithm": done.algorithm, "params": dict(done.params),
                        "source": source, "status": done.status, "message": done.message,
                        "fit_seconds": done.fit_seconds, "predict_seconds": done.predict_seconds, "created_at": at}
                rows.append({**base, "metric": self.metric, "value": done.value})
                if done.test_value is not None:
                    rows.append({**base, "metric": TEST_PREFIX + self.metric, "value": done.test_value})
            if rows:
                kb.add_algorithms(sorted({r["algorithm"] for r in rows}))
                kb.add_runs(rows)
            # the latest record of each trial (a tell's replaces its ask's)
            set_states(kb, {trial_key(self.session_id, r.number): r.to_json() for r, _, _ in self._unwritten})
        self._unwritten.clear()

    def finish(self, status: str = "done") -> None:
        """Write what waits (:meth:`flush`) and mark the session finished in the
        knowledge base (no-op without one)."""
        if self.kb is not None:
            self.flush()
            self.kb.set_session_status(self.session_id, status)

    # ---------------------------------------------------------------- selection
    def best(self, select: Select = "argmin", model: PosteriorModel | None = None) -> TrialRecord:
        """The selected configuration among the successful trials.

        ``argmin``: the lowest observed value. ``posterior_mean`` (thesis 3.4): ``model``
        (by default the strategy's own surrogate; :func:`metabo.strategies.posterior_model`
        gives a conditional GP for a strategy without one) refitted on the whole history,
        then the evaluated configuration with the lowest posterior mean, which smooths the
        noise an arg min over noisy observations picks up.
        """
        ok = [r for r in self._history.completed if r.ok]
        if not ok:
            raise MetaboError("no successful trial yet: nothing to select")
        if select == "argmin":
            best = self._history.best()
            assert best is not None
            return best
        if select != "posterior_mean":
            raise InputDataError(f"select must be 'argmin' or 'posterior_mean', got {select!r}")
        if len(self._history.completed) < 2:
            return ok[0]
        if model is None:
            if not isinstance(self.strategy, PosteriorModel):
                raise InputDataError(f"select='posterior_mean': the strategy {getattr(self.strategy, 'name', '?')!r} "
                                     "models no posterior mean; pass model= (metabo.strategies.posterior_model gives "
                                     "a conditional GP)")
            model = self.strategy
        mean = model.posterior_mean(
            self._history, self.space, [(r.algorithm, cast(dict[str, Any], r.params)) for r in ok]
        )
        return ok[int(np.argmin(mean))]
