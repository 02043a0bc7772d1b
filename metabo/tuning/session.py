"""Loading and checking the data, the search protocol, storing the dataset and opening the
session: the :class:`Setup` every trial of :func:`~metabo.tuning.tune.tune` is evaluated on."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from metabo.data.dataset import Dataset
from metabo.evaluation.evaluate import DEFAULT_METRICS
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.parallel import EvalTask
from metabo.evaluation.protocols import (
    EvaluationProtocol,
    Holdout,
    KFold,
    ReshuffledHoldout,
    require_classification,
    resolve_cv,
    search_protocol,
)
from metabo.exceptions import InputDataError
from metabo.optimizer.budget import TimeBudget
from metabo.optimizer.halving import EVAL_ROWS, rung_sizes
from metabo.optimizer.history import Trial, TrialRecord
from metabo.optimizer.limits import DefaultLimit, default_limit
from metabo.optimizer.optimizer import Optimizer, get_session
from metabo.space.cash import CASHSpace
from metabo.space.space import SearchSpace
from metabo.strategies import Strategy

if TYPE_CHECKING:
    from metabo.kb.costs import FitCosts
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)


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


def check_options(*, final_rows: object, ensemble: object, halving: object, ensemble_size: object,
                  save_model: object, refit: bool) -> None:
    """``tune``'s options that name a choice are one of its choices, ``ensemble_size`` is a
    positive integer (or None), and a model to save is refitted."""
    if final_rows not in ("all", "train+valid"):
        raise InputDataError(f"final_rows must be 'all' or 'train+valid', got {final_rows!r}")
    if ensemble not in ("posthoc", "none"):
        raise InputDataError(f"ensemble must be 'posthoc' or 'none', got {ensemble!r}")
    if halving not in ("auto", "none"):
        raise InputDataError(f"halving must be 'auto' or 'none', got {halving!r}")
    if ensemble_size is not None and (isinstance(ensemble_size, bool) or not isinstance(ensemble_size, int)
                                      or ensemble_size < 1):
        raise InputDataError(f"ensemble_size must be a positive integer, got {ensemble_size!r}")
    if save_model is not None and not refit:
        raise InputDataError("save_model writes the final model: it needs refit=True")


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
    dataset_id: str | None, metric: str, seed: int, settings: dict[str, Any], write_every: float = 0.0,
) -> Optimizer:
    """The stored session ``session_id`` resumed (it must have tuned ``metric`` on
    ``dataset_id`` under the same protocol), or a new optimizer; either writes its trials
    every ``write_every`` seconds (:class:`Optimizer`)."""
    if kb is not None and session_id is not None and (row := get_session(kb, session_id)) is not None:
        stored = json.loads(row["settings"]).get("protocol")
        if stored is not None and "protocol" in settings and stored != settings["protocol"]:
            raise InputDataError(
                f"session {session_id!r} evaluated its trials with {stored}, not {settings['protocol']}: its values "
                "are not comparable; resume it with the same protocol (cv: none for a hold-out, K for K folds)"
            )
        opt = Optimizer.resume(kb, session_id, space, strategy, write_every=write_every)
        if opt.dataset_id != dataset_id or opt.metric != metric:
            raise InputDataError(
                f"session {session_id!r} tuned {opt.metric} on dataset {opt.dataset_id!r}, not {metric} on "
                f"{dataset_id!r}; choose another session id"
            )
        return opt
    return Optimizer(space, strategy, kb=kb, session_id=session_id, dataset_id=dataset_id, metric=metric,
                     seed=seed, settings=settings, write_every=write_every)


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

