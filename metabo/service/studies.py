"""Studies: tuning sessions driven over HTTP, one :class:`~metabo.optimizer.Optimizer` each.

A study is a stored session (``sessions`` table) whose settings hold, besides what the
optimizer stores (the space as ConfigSpace JSON, seed, metric), ``service.strategy``: the
name :func:`metabo.tuning.registry.resolve_strategy` rebuilds the strategy from. Every ask
and tell is in the knowledge base when the request returns, so the service can stop at
any time: on the first request for a study after a restart, :class:`StudyManager` resumes
it from the store (:meth:`Optimizer.resume`).

Concurrency: requests run on a thread pool. Each study has a lock, so its asks and tells
happen one at a time (the optimizer's history is not shared unguarded); the store has
another (:class:`~metabo.service.store.SerializedStore`), held only while the store is
used, so a study's suggestion does not hold up the others. Several workers asking on one
study get distinct configurations: asked configurations are never suggested again, and
:meth:`Optimizer.ask` shows the strategy the pending ones (constant liar).

Pending trials belong to the client that asked them, also across a restart: a resumed
study does not hand them out again (``reask_pending=False``; re-asking them first is right
for a single process that stopped mid-evaluation, wrong for a service whose clients are
still evaluating); they stay tellable. A trial whose client died stays pending; tell it
as ``crash`` to close it. A study has at most ``max_pending`` pending trials open: an ask
beyond them is refused (409), so clients that ask and never tell cannot pile them up.

A tell is one transaction: the run, the trial's record and the predictions commit
together or not at all. Should the store fail mid-way, the study's in-memory state is
dropped and rebuilt from the store on the next request, so memory never runs ahead of
what is stored.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from metabo.exceptions import InputDataError
from metabo.optimizer.history import Trial, TrialRecord
from metabo.optimizer.optimizer import Optimizer, Select, get_session
from metabo.service.errors import ConflictError, NoResultError, UnknownStudyError, UnknownTrialError
from metabo.space.cash import CASHSpace
from metabo.tuning.registry import resolve_strategy

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase
    from metabo.service.datasets import PreparedDataset
    from metabo.service.store import SerializedStore
    from metabo.strategies.base import Strategy

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: The key of the service's own settings in a study's stored session settings.
SETTINGS_KEY = "service"


@dataclass(frozen=True)
class StudySpec:
    """What a new study is made of (validated request fields)."""

    dataset: PreparedDataset | str
    space: CASHSpace
    strategy: str = "auto"
    seed: int = 0
    metric: str = "error_rate"
    study_id: str | None = None


@dataclass
class _Study:
    """A study's lock and, once loaded, its optimizer and strategy name."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    optimizer: Optimizer | None = None
    strategy: str = ""
    note: str = ""  # why ``auto`` chose the strategy
    finished: bool = False  # its session's status is not 'running' (an ask reopens it)


class StudyManager:
    """The studies of one knowledge base (module docstring).

    Args:
        store: the knowledge base behind its lock.
        max_pending: the most pending trials a study may have open; an ask beyond them
            raises :class:`ConflictError` and stores nothing.
    """

    def __init__(self, store: SerializedStore, *, max_pending: int = 100) -> None:
        self.store = store
        self.max_pending = max_pending
        self._studies: dict[str, _Study] = {}
        self._registry = threading.Lock()

    # ---------------------------------------------------------------- create
    def create(self, spec: StudySpec) -> dict[str, Any]:
        """Store the dataset (if new) and the session of a new study; its summary.

        All in one transaction: a strategy that cannot be built (a warm start with
        nothing to transfer from, say) leaves nothing behind.
        """
        study_id = spec.study_id or f"study-{uuid.uuid4().hex[:16]}"
        entry = _Study(strategy=spec.strategy)
        with self._registry:
            if study_id in self._studies:
                raise ConflictError(f"study {study_id!r} exists; choose another id or continue it")
            self._studies[study_id] = entry  # reserved: a concurrent create of the id waits for this one
        try:
            with entry.lock, self.store.transaction():
                kb = self.store.kb
                if get_session(kb, study_id) is not None:
                    raise ConflictError(f"study {study_id!r} exists; choose another id or continue it")
                dataset_id = spec.dataset if isinstance(spec.dataset, str) else spec.dataset.store(kb)
                kb.get_dataset(dataset_id)  # an unknown id: UnknownDatasetError
                # auto resolved once: the resolved name is stored, so a resumed study keeps it
                name, note, make = resolve_strategy(spec.strategy, kb, dataset_id, spec.space, metric=spec.metric)
                entry.strategy, entry.note = name, note
                strategy = make(spec.seed)
                entry.optimizer = Optimizer(spec.space, strategy, kb=self.store, session_id=study_id,  # type: ignore[arg-type]
                                            dataset_id=dataset_id, metric=spec.metric, seed=spec.seed,
                                            settings={SETTINGS_KEY: {"strategy": name, "note": note}})
        except BaseException:
            with self._registry:
                self._studies.pop(study_id, None)
            raise
        logger.info("study %s created: %s on %s, seed %d%s", study_id, entry.strategy, dataset_id, spec.seed,
                    f" ({entry.note})" if entry.note else "")
        return self._summary(study_id, entry)

    @staticmethod
    def _strategy(kb: KnowledgeBase, name: str, dataset_id: str, space: CASHSpace, metric: str, seed: int) -> Strategy:
        return resolve_strategy(name, kb, dataset_id, space, metric=metric)[2](seed)

    # ---------------------------------------------------------------- lookup
    def _entry(self, study_id: str) -> _Study:
        with self._registry:
            entry = self._studies.get(study_id)
            if entry is None:
                entry = _Study()
                self._studies[study_id] = entry
        return entry

    @contextmanager
    def _open(self, study_id: str) -> Iterator[tuple[_Study, Optimizer]]:
        """The study's entry and optimizer, its lock held; resumed from the store on first use."""
        entry = self._entry(study_id)
        with entry.lock:
            if entry.optimizer is None:
                try:
                    self._load(study_id, entry)
                except BaseException:
                    with self._registry:
                        if self._studies.get(study_id) is entry:
                            del self._studies[study_id]
                    raise
            assert entry.optimizer is not None
            yield entry, entry.optimizer

    def _load(self, study_id: str, entry: _Study) -> None:
        with self.store.locked() as kb:
            row = get_session(kb, study_id)
            settings = json.loads(row["settings"]) if row is not None else {}
            if row is None or SETTINGS_KEY not in settings:
                raise UnknownStudyError(f"unknown study {study_id!r}; GET /studies lists them")
            name = settings[SETTINGS_KEY]["strategy"]
            space = CASHSpace.from_json(settings["space"])
            strategy = self._strategy(kb, name, row["dataset_id"], space, settings["metric"], int(settings["seed"]))
            opt = Optimizer.resume(kb, study_id, space, strategy, reask_pending=False)
            if row["status"] != "running":  # resume marks it running; reading a finished study does not
                kb.set_session_status(study_id, row["status"])
                entry.finished = True
        opt.kb = self.store  # type: ignore[assignment]  # later writes go through the lock
        entry.optimizer, entry.strategy = opt, name
        entry.note = str(settings[SETTINGS_KEY].get("note", ""))
        logger.info("study %s resumed from the store: %d trials, %d pending", study_id, len(opt.history),
                    len(opt.history.pending))

    def _guarded(self, entry: _Study, action: Callable[[], T]) -> T:
        """``action()``; if it fails other than by refusing its input (an
        :class:`InputDataError` is raised before anything changes), the in-memory optimizer
        is dropped, to be resumed from the store, which holds exactly what was committed."""
        try:
            return action()
        except InputDataError:
            raise
        except BaseException:
            entry.optimizer = None
            raise

    # ---------------------------------------------------------------- ask / tell
    def ask(self, study_id: str) -> Trial:
        """The next configuration of the study (a new pending trial; a finished study is
        running again)."""
        with self._open(study_id) as (entry, opt):
            if len(opt.history.pending) >= self.max_pending:
                raise ConflictError(f"study {study_id!r} has {len(opt.history.pending)} pending trials, the most "
                                    f"it may have open: tell them (status 'crash' for those abandoned) before "
                                    f"asking more")
            trial = self._guarded(entry, opt.ask)
            if entry.finished:
                opt.kb.set_session_status(study_id, "running")  # type: ignore[union-attr]
                entry.finished = False
            return trial

    def tell(self, study_id: str, number: int, *, value: float | None, status: str = "ok",
             test_value: float | None = None, fit_seconds: float | None = None,
             predict_seconds: float | None = None, message: str | None = None,
             predictions: Sequence[Any] | None = None) -> TrialRecord:
        """Record the outcome of pending trial ``number`` (and its validation predictions)."""
        from metabo.evaluation.metrics import check_value
        from metabo.kb.predictions import encode

        with self._open(study_id) as (entry, opt):
            if not 0 <= number < len(opt.history):
                raise UnknownTrialError(f"study {study_id!r} has no trial {number}: "
                                        f"{len(opt.history)} trials were asked")
            if opt.history[number].complete:
                done = opt.history[number]
                raise ConflictError(f"trial {number} of study {study_id!r} was already told "
                                    f"({done.status}, value {done.value})")
            if status == "ok" and value is not None:  # values the study's metric can take
                check_value(opt.metric, value, what=f"trial {number}: value")
            if test_value is not None:
                check_value(opt.metric, test_value, what=f"trial {number}: test_value")
            array = None if predictions is None else np.asarray(predictions, dtype=float)
            if array is not None:
                encode(array)  # refused (InputDataError) before anything is written

            def record() -> TrialRecord:
                with self.store.transaction():
                    done = opt.tell(number, value, status=status, test_value=test_value, fit_seconds=fit_seconds,
                                    predict_seconds=predict_seconds, message=message)
                    if array is not None:
                        self.store.kb.add_predictions(self._run_id(opt, done), array, split="valid")
                return done

            return self._guarded(entry, record)

    def finish(self, study_id: str, status: str = "done") -> dict[str, Any]:
        """Mark the study finished (:meth:`Optimizer.finish`); its summary. Pending trials
        stay tellable, and an ask reopens the study (status ``running``)."""
        with self._open(study_id) as (entry, opt):
            opt.finish(status)
            entry.finished = True
            return self._summary(study_id, entry)

    def _run_id(self, opt: Optimizer, record: TrialRecord) -> str:
        from metabo.kb.queries import find_run_id

        run_id = find_run_id(self.store.kb, source=f"session:{opt.session_id}", dataset_id=opt.dataset_id,
                             config_id=record.config_id, metric=opt.metric)
        if run_id is None:  # pragma: no cover - the tell just wrote it
            raise InputDataError(f"trial {record.number}: its run was not stored")
        return run_id

    # ---------------------------------------------------------------- reading
    def best(self, study_id: str, select: Select = "argmin") -> TrialRecord:
        """The selected trial (:meth:`Optimizer.best`)."""
        with self._open(study_id) as (_, opt):
            if not any(r.ok for r in opt.history.completed):
                raise NoResultError(f"study {study_id!r} has no successful trial yet")
            from metabo.strategies import selection_model

            return opt.best(select, model=selection_model(opt.strategy, select, seed=opt.seed))

    def ensemble(self, study_id: str, labels: Sequence[int], *, ensemble_size: int = 50, seed: int = 0
                 ) -> dict[str, Any]:
        """The post-hoc ensemble of the study's successful trials from their stored
        validation predictions and the rows' true ``labels``, as ``tune`` chooses it
        (:meth:`~metabo.ensembles.library.OutOfFoldLibrary.choose`: bagged ensemble selection,
        kept only when its cross-validated gain over the best trial is beyond its noise).
        Class indices are one-hot probabilities; trials whose predictions have another row
        count or more classes than ``labels`` are left out (listed). Nothing is stored."""
        from metabo.ensembles.library import OutOfFoldLibrary

        y = np.asarray(labels, dtype=int)
        with self._open(study_id) as (_, opt):
            done = [r for r in opt.history.completed if r.ok]
            if not done:
                raise NoResultError(f"study {study_id!r} has no successful trial yet")
            best = opt.best("argmin")
            with self.store.locked() as kb:
                stored = {}
                for r in done:
                    try:
                        stored[r.number] = kb.get_predictions(self._run_id(opt, r))
                    except InputDataError:  # told without predictions
                        continue
            metric = opt.metric
        stored = {k: P.ravel() if P.ndim == 2 and P.shape[1] == 1 else P for k, P in stored.items()}  # labels
        n_classes = int(max(y.max() + 1, *(P.shape[1] for P in stored.values() if P.ndim == 2), 2))
        library = OutOfFoldLibrary(y, n_classes, metric=metric, ensemble_size=ensemble_size,
                                   max_models=max(len(stored), 1), seed=seed)
        left_out = []
        for number, P in sorted(stored.items()):
            if P.ndim == 1:  # class indices: one-hot probabilities (a class beyond the labels': left out)
                codes = P.astype(int)
                P = np.eye(n_classes)[codes] if len(codes) and codes.max() < n_classes else np.empty((0, 0))
            if P.shape != (len(y), n_classes) or not library.add(number, float(opt.history[number].value), P):
                left_out.append(number)
        choice = library.choose(best.number) if best.number in library.selection.probas else None
        if choice is None:
            why = (f"{len(library)} trial(s) have predictions of the {len(y)} labelled rows"
                   + ("" if best.number in library.selection.probas else f", trial {best.number} (the best) not "
                      "among them") + ": nothing to ensemble, the best trial alone")
            return {"study_id": study_id, "kept": "single", "combine": "average",
                    "members": [{"number": best.number, "weight": 1.0}], "gain": None, "se": None,
                    "models": len(library), "left_out": left_out, "note": why}
        members = sorted(choice.weights.items(), key=lambda kv: (-kv[1], kv[0]))
        return {"study_id": study_id, "kept": choice.kept, "combine": choice.combine,
                "members": [{"number": int(k), "weight": float(w)} for k, w in members],
                "gain": float(choice.decision.gain), "se": float(choice.decision.se), "models": choice.models,
                "left_out": left_out, "note": choice.decision.summary}

    def history(self, study_id: str) -> list[TrialRecord]:
        """Every trial of the study, in the order asked."""
        with self._open(study_id) as (_, opt):
            return list(opt.history)

    def summary(self, study_id: str) -> dict[str, Any]:
        """The study's settings and trial counts."""
        with self._open(study_id) as (entry, _):
            return self._summary(study_id, entry)

    def _status(self, study_id: str) -> str:
        with self.store.locked() as kb:
            row = get_session(kb, study_id)
        assert row is not None
        return str(row["status"])

    def _summary(self, study_id: str, entry: _Study) -> dict[str, Any]:
        opt = entry.optimizer
        assert opt is not None
        status = self._status(study_id)
        history = opt.history
        return {"study_id": study_id, "dataset_id": opt.dataset_id, "strategy": entry.strategy,
                "strategy_note": entry.note, "seed": opt.seed,
                "metric": opt.metric, "algorithms": list(opt.space.algorithms), "status": status,
                "n_trials": len(history), "n_complete": len(history.completed), "n_pending": len(history.pending)}

    def studies(self) -> list[Mapping[str, Any]]:
        """The stored studies (id, dataset, strategy, status), newest first."""
        from metabo.kb.sessions import service_studies

        with self.store.locked() as kb:
            frame = service_studies(kb)
        frame["created_at"] = frame["created_at"].astype(str)
        return frame.to_dict(orient="records")
