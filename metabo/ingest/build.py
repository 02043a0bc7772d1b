"""Build a knowledge base from own evaluations: datasets x algorithms x seeded configurations.

For each algorithm, ``n_configs`` configurations are drawn once from its search space with
a seed derived from (``seed``, algorithm) and evaluated on every dataset, so the stored
task x configuration matrix is dense (as OpenML's and the PMF meta-datasets are) and
rankings compare across tasks. Every evaluation is recorded (status ok, crash, timeout or
memout) under one session, ``build-<hash of the settings>``; results are written in
small batches as they arrive, so a re-run with the same settings evaluates only what is
missing, and a killed build loses at most the batch in flight. Evaluations run on the
workers of any joblib backend, a Dask or Ray cluster included
(:func:`~metabo.evaluation.backends.backend_context`); each task names its dataset by
spec and loader options, and the worker loads it.

Datasets are stored with their meta-features first. A dataset flagged for lost decimal
points is trained on only after the flagged columns are repaired (from a clean sibling
file) or dropped; one with nothing left (KEEL ring) is stored with its flags and
meta-features but gets no runs, and the report says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from metabo.data.dataset import Dataset
from metabo.evaluation.backends import backend_context, check_backend, worker_count
from metabo.evaluation.evaluate import DEFAULT_METRICS, PRIMARY_METRIC
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.parallel import EvalTask, TaskResult, evaluate_many
from metabo.evaluation.protocols import EvaluationProtocol, Holdout, protocol_label, resolve_cv, search_protocol
from metabo.exceptions import (
    DataQualityError,
    InputDataError,
    InvalidConfigurationError,
    MetaboError,
    UnknownAlgorithmError,
)
from metabo.ingest.datasets import has_own_meta_features, ingest_dataset
from metabo.kb.canonical import canonical_json, config_id
from metabo.kb.queries import run_pairs
from metabo.kb.runs import record
from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuildSettings:
    """What a build evaluates; equal settings share one session (and resume it)."""

    n_configs: int = 50
    seed: int = 0
    protocol: EvaluationProtocol = field(default_factory=Holdout)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    time_limit: float | None = 60.0
    memory_limit_mb: int | None = 4096
    keep_predictions: bool = False
    #: :func:`grid_digest` of explicit configurations evaluated instead of ``n_configs``
    #: seeded ones (None: the seeded ones); :func:`build_knowledge_base` sets it from the
    #: configurations it is given
    grid: str | None = None
    #: ``metabo tune``'s rule instead of ``protocol``: each dataset measured by
    #: :func:`~metabo.evaluation.protocols.search_protocol` (``"auto"``: 5-fold CV of the
    #: 80% not kept for test up to 3,000 rows, else the 60/20/20 hold-out; a number of
    #: folds; None: ``protocol`` on every dataset), capped at ``protocol.max_train`` rows
    cv: int | str | None = None

    def protocol_for(self, n_rows: int) -> EvaluationProtocol:
        """The protocol a dataset of ``n_rows`` rows is measured by."""
        if self.cv is None:
            return self.protocol
        return search_protocol(self.cv, n_rows, max_train=self.protocol.max_train)

    def session_id(self) -> str:
        """``build-<12 hex>`` of the settings that change what a run means."""
        key = {"n_configs": self.n_configs, "seed": self.seed, "protocol": repr(self.protocol),
               "metrics": list(self.metrics)}
        if self.grid is not None:  # an explicit grid is another build (its session keeps the seeded one's id)
            key = {**key, "grid": self.grid}
        if self.cv is not None:  # tune's rule is another build (a build without it keeps its id)
            key = {**key, "cv": self.cv}
        return "build-" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def grid_digest(configurations: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """SHA-256 (hex) of explicit configurations, by algorithm, in their canonical form."""
    body = {a: sorted(canonical_json(p) for p in plist) for a, plist in configurations.items()}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_grid(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Explicit configurations from a JSON file: a list of ``[algorithm, params]`` pairs
    (or of ``{"algorithm": ..., "params": ...}`` objects), each normalized in its
    algorithm's space (an unknown algorithm or an invalid configuration is an error
    naming the entry; duplicates are kept once)."""
    from metabo.space.algorithms import get_algorithm

    try:
        entries = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputDataError(f"cannot read configurations from {path}: {e}") from e
    if not isinstance(entries, list) or not entries:
        raise InputDataError(f"{path}: expected a non-empty JSON list of [algorithm, params] pairs")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            algorithm, params = entry.get("algorithm"), entry.get("params", {})
        elif isinstance(entry, list) and len(entry) == 2:
            algorithm, params = entry
        else:
            raise InputDataError(f"{path}: entry {i} is not an [algorithm, params] pair: {entry!r}")
        if not isinstance(algorithm, str) or not isinstance(params, Mapping):
            raise InputDataError(f"{path}: entry {i} needs an algorithm name and a params object, got {entry!r}")
        try:
            normalized = get_algorithm(algorithm).space.normalize(params)
        except (InvalidConfigurationError, UnknownAlgorithmError) as e:
            raise InputDataError(f"{path}: entry {i}: {e}") from e
        out.setdefault(algorithm, {}).setdefault(canonical_json(normalized), normalized)
    return {a: list(by_id.values()) for a, by_id in out.items()}


@dataclass(frozen=True)
class BuildReport:
    """What :func:`build_knowledge_base` did."""

    session_id: str
    evaluated: int
    skipped_done: int
    #: evaluations by status: ``ok`` when every fold is, else the first failed fold's
    by_status: dict[str, int]
    datasets_without_runs: dict[str, str]
    seconds: float


def sample_configurations(algorithm: str, n: int, seed: int) -> list[dict]:
    """``n`` distinct seeded configurations of ``algorithm`` (fewer if its space is smaller).

    The seed is derived from (``seed``, algorithm), so adding an algorithm to a build does
    not change the configurations of the others.
    """
    from metabo.space.algorithms import get_algorithm

    space = get_algorithm(algorithm).space
    derived = int.from_bytes(hashlib.sha256(f"{seed}:{algorithm}".encode()).digest()[:4], "little")
    seen: dict[str, dict] = {}
    for attempt in range(20):  # small discrete spaces repeat themselves; stop when exhausted
        for params in space.sample(derived + attempt, n=n):
            seen.setdefault(canonical_json(params), params)
            if len(seen) == n:
                return list(seen.values())
    return list(seen.values())


class Loaded(NamedTuple):
    """A dataset spec loaded for training: the dataset as stored, the dataset trained on
    (None when nothing is left), a note on what was done to it, and the
    :func:`~metabo.data.loaders.load_dataset` options that load ``trainable`` again from
    the spec (what a worker does, :class:`~metabo.evaluation.parallel.EvalTask`)."""

    stored: Dataset
    trainable: Dataset | None
    note: str
    options: tuple[tuple[str, Any], ...]


def load_for_training(spec: str, target: str | None = None) -> Loaded:
    """The dataset of a loader spec, as stored and as trained on.

    KEEL datasets are repaired where a clean sibling exists and otherwise have their
    flagged columns dropped (noted); every other source is used as loaded (a file with
    its ``target`` column).
    """
    from metabo.data.loaders import load_dataset

    if not spec.startswith("keel:"):
        options = () if target is None else (("target", target),)
        ds = load_dataset(spec, **dict(options))
        return Loaded(ds, ds, "", options)
    repair = (("lost_decimals", "repair"),)
    stored = load_dataset(spec, **dict(repair))
    if not stored.flags:
        return Loaded(stored, stored, "", repair)
    try:
        dropped = load_dataset(spec, lost_decimals="drop")
    except DataQualityError as e:
        return Loaded(stored, None, str(e), ())
    cols = ", ".join(stored.flags["lost_decimals"])
    return Loaded(stored, dropped, f"trained without the columns that lost their decimal points ({cols})",
                  (("lost_decimals", "drop"),))


def _done(kb: KnowledgeBase, session: str) -> set[tuple[str, str]]:
    return run_pairs(kb, f"session:{session}", PRIMARY_METRIC)


def build_knowledge_base(
    kb: KnowledgeBase,
    datasets: Sequence[str],
    algorithms: Sequence[str],
    settings: BuildSettings = BuildSettings(),
    *,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    batch_size: int = 25,
    batch_seconds: float = 20.0,
    progress: Callable[[TaskResult], None] | None = None,
    on_dataset: Callable[[str], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    configurations: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> BuildReport:
    """Evaluate every (dataset, algorithm, configuration) not yet stored; record each.

    Args:
        kb: the knowledge base written to.
        datasets: loader specs (``keel:iris``, ``sklearn:wine``, a file path, ...).
        algorithms: algorithm names (:data:`metabo.space.algorithms.ALGORITHMS`).
        settings: configurations, protocol, metrics and per-run limits.
        n_jobs, backend, scheduler: ``n_jobs`` workers of the joblib ``backend``
            (``loky``, ``threading``, ``sequential``, ``dask``, ``ray``); for dask and
            ray, the cluster at ``scheduler`` or a local one of ``n_jobs`` workers
            (:func:`~metabo.evaluation.backends.backend_context`). Workers load each
            dataset from its spec; results are recorded as they arrive.
        batch_size, batch_seconds: results are recorded every that many results or
            seconds, whichever comes first, each batch in one transaction.
        progress: called with each result as it arrives.
        on_dataset: called with each dataset spec once it is stored.
        on_plan: called with (evaluations to run, evaluations already stored).
        configurations: algorithm -> explicit configurations to evaluate instead of
            ``settings.n_configs`` seeded ones (:func:`read_grid`; ``algorithms`` must name
            the same algorithms). Their :func:`grid_digest` becomes ``settings.grid``, so
            that the build has a session of its own.
    """
    check_backend(backend, address=scheduler, n_jobs=n_jobs)
    if settings.cv is not None:
        resolve_cv(settings.cv, 0)  # a bad cv is refused before anything is stored
    for name in settings.metrics:  # so is an unknown metric (it failed only when recording, mid-build)
        get_metric(name)
    if configurations is None and (isinstance(settings.n_configs, bool) or not isinstance(settings.n_configs, int)
                                   or settings.n_configs < 1):
        raise InputDataError(f"n_configs must be a positive integer, got {settings.n_configs!r}")
    if configurations is not None and sorted(configurations) != sorted(algorithms):
        raise InputDataError(f"the explicit configurations are of {sorted(configurations)}, "
                             f"the build names {sorted(algorithms)}")
    settings = replace(settings, grid=None if configurations is None else grid_digest(configurations))
    start = time.monotonic()
    session = settings.session_id()
    configs = ({a: [dict(p) for p in plist] for a, plist in configurations.items()} if configurations is not None
               else {a: sample_configurations(a, settings.n_configs, settings.seed) for a in algorithms})
    train_sets: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {}  # id -> (spec, load options)
    protocols: dict[str, EvaluationProtocol] = {}  # id -> how its runs are measured
    without_runs: dict[str, str] = {}
    notes: dict[str, str] = {}
    for spec in datasets:
        stored, trainable, note, options = load_for_training(spec)
        ds_id = (kb.add_dataset(stored) if has_own_meta_features(kb, stored)
                 else ingest_dataset(kb, stored, seed=settings.seed))
        if trainable is None:
            without_runs[ds_id] = note
            logger.warning("%s gets no runs: %s", spec, note)
        else:
            train_sets[ds_id] = (spec, options)
            protocols[ds_id] = settings.protocol_for(trainable.n_instances)
            if note:
                notes[ds_id] = note
                logger.info("%s: %s", spec, note)
        if on_dataset is not None:
            on_dataset(spec)
    settings_json = {**asdict(settings), "protocol": repr(settings.protocol), "algorithms": list(algorithms),
                     "datasets": list(datasets), "notes": notes}
    if settings.cv is not None:
        settings_json["protocols"] = {d: protocol_label(p) for d, p in protocols.items()}
    kb.add_session(session, strategy="build", settings=settings_json)

    done = _done(kb, session)
    # round-robin over the algorithms' configuration lists: the i-th configuration of every
    # algorithm on every dataset before any (i+1)-th, so a build stopped early holds a dense
    # task x configuration matrix of the first configurations of every algorithm; within a
    # round, dataset by dataset, so a worker's consecutive tasks load the same dataset (its
    # loader cache holds a few)
    tasks = [
        EvalTask(dataset_id=ds_id, dataset=ds_spec, algorithm=algo, params=plist[i], protocol=protocols[ds_id],
                 seed=settings.seed, time_limit=settings.time_limit, memory_limit_mb=settings.memory_limit_mb,
                 metrics=settings.metrics, keep_predictions=settings.keep_predictions, load_options=options)
        for i in range(max((len(p) for p in configs.values()), default=0))
        for ds_id, (ds_spec, options) in train_sets.items()
        for algo, plist in configs.items() if i < len(plist)
        if (ds_id, config_id(algo, plist[i])) not in done
    ]
    skipped = sum(len(p) for p in configs.values()) * len(train_sets) - len(tasks)
    if on_plan is not None:
        on_plan(len(tasks), skipped)
    by_status: dict[str, int] = {}
    kb.add_algorithms(algorithms)
    recorded = 0
    workers = max(min(worker_count(n_jobs, address=scheduler), len(tasks)), 1)  # the cores, the tasks at most
    with backend_context(backend, address=scheduler, n_jobs=workers):
        for batch in _batches(evaluate_many(tasks, n_jobs=workers, backend=backend, progress=progress),
                              batch_size, batch_seconds):
            _record_batch(kb, batch, session, by_status)
            recorded += len(batch)
            logger.info("recorded %d of %d evaluations", recorded, len(tasks))
    kb.set_session_status(session, "done")
    return BuildReport(session, len(tasks), skipped, by_status, without_runs, time.monotonic() - start)


def _batches(results: Iterator[TaskResult], size: int, seconds: float) -> Iterator[list[TaskResult]]:
    batch: list[TaskResult] = []
    last = time.monotonic()
    for result in results:
        batch.append(result)
        if len(batch) >= size or time.monotonic() - last >= seconds:
            yield batch
            batch, last = [], time.monotonic()
    if batch:
        yield batch


def _record_batch(kb: KnowledgeBase, batch: list[TaskResult], session: str, by_status: dict[str, int]) -> None:
    with kb.transaction():
        for result in batch:
            if not result.ok:
                raise MetaboError(f"task {result.task.algorithm} on {result.task.dataset_id} could not run: "
                                  f"{result.error}")
            record(kb, result.evaluations, dataset_id=result.task.dataset_id, source=f"session:{session}",
                   protocol=protocol_label(result.task.protocol))
            # an evaluation (every fold of one configuration on one dataset) is ok when every fold is,
            # else it counts under its first failed fold's status
            status = next((ev.status for ev in result.evaluations if not ev.ok), "ok")
            by_status[status] = by_status.get(status, 0) + 1
