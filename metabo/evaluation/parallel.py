"""Many evaluations in parallel, streamed back as they finish.

:func:`evaluate_many` hands :class:`EvalTask` objects to joblib
(``Parallel(n_jobs, return_as="generator_unordered")`` under
``joblib.parallel_config(backend=...)``) and yields a :class:`TaskResult` for each task
as soon as it is done, in completion order, so the caller can record each result as it
arrives and a long build resumes where it stopped. ``backend`` is any joblib backend
name: ``"loky"`` (processes, the default), ``"threading"``, ``"sequential"``, or
``"dask"`` / ``"ray"`` inside :func:`metabo.evaluation.backends.backend_context` (which
connects to or starts the cluster). With ``"threading"`` the evaluations share one
process, whose warning filters are global: prefer processes.

A task names its dataset by a loader spec (``"sklearn:iris"``, with ``load_options``
for :func:`metabo.data.loaders.load_dataset` such as ``target`` or ``lost_decimals``),
loaded in the worker and cached there (a few datasets per worker), or carries the
:class:`~metabo.data.dataset.Dataset` itself, which is then pickled with every task;
prefer specs for many tasks on one dataset (on a remote cluster a file spec must be
readable by the workers). Inside a task joblib runs sequentially: one evaluation is
one core (estimators take ``n_jobs=1``), and a nested call must not reach back to the
cluster from the forked child that enforces the limits.

A task that cannot run at all (its dataset fails to load, is flagged, the algorithm is
unknown) yields a :class:`TaskResult` with ``error`` set and no evaluations: nothing is
raised in the middle of a stream. Failures of a configuration are evaluations with a
failed status (:mod:`metabo.evaluation.evaluate`).
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from joblib import Parallel, delayed, parallel_config

from metabo.data.dataset import Dataset
from metabo.evaluation.evaluate import DEFAULT_METRICS, Evaluation, evaluate
from metabo.evaluation.factories import Factory
from metabo.evaluation.protocols import EvaluationProtocol, Holdout
from metabo.evaluation.runner import describe

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalTask:
    """One configuration to evaluate on one dataset, with its protocol, seed and limits."""

    dataset_id: str
    dataset: Dataset | str
    algorithm: str
    params: Mapping[str, Any]
    protocol: EvaluationProtocol = Holdout()
    seed: int = 0
    time_limit: float | None = None
    memory_limit_mb: int | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    keep_predictions: bool = True
    threads: int | None = 1
    factory: Factory | None = field(default=None, repr=False)
    load_options: tuple[tuple[str, Any], ...] = ()
    tag: Any = None  # the caller's label (a trial number), to match results that come back unordered
    total_time_limit: float | None = None  # seconds for all the protocol's splits together


@dataclass(frozen=True, eq=False)
class TaskResult:
    """The evaluations of a task, or why it could not run (``error``)."""

    task: EvalTask
    evaluations: list[Evaluation]
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the task ran without an error."""
        return self.error is None


@functools.lru_cache(maxsize=4)
def _load(spec: str, options: tuple[tuple[str, Any], ...]) -> Dataset:
    from metabo.data.loaders import load_dataset

    return load_dataset(spec, **dict(options))


def run_task(task: EvalTask) -> TaskResult:
    """Run one task in this process (what each worker does)."""
    try:
        dataset = _load(task.dataset, task.load_options) if isinstance(task.dataset, str) else task.dataset
        with parallel_config(backend="sequential"):  # one core per evaluation (module docstring)
            evaluations = evaluate(
                task.algorithm, task.params, dataset, protocol=task.protocol, seed=task.seed,
                metrics=task.metrics, time_limit=task.time_limit, memory_limit_mb=task.memory_limit_mb,
                keep_predictions=task.keep_predictions, factory=task.factory, threads=task.threads,
                total_time_limit=task.total_time_limit,
            )
    except Exception as e:  # noqa: BLE001 - reported in the result, the stream goes on
        logger.warning("task %s %s on %s failed: %s", task.algorithm, dict(task.params), task.dataset_id, describe(e))
        return TaskResult(task, [], describe(e))
    return TaskResult(task, evaluations)


def evaluate_many(
    tasks: Iterable[EvalTask],
    *,
    n_jobs: int = 1,
    backend: str = "loky",
    progress: bool | Callable[[TaskResult], None] | None = None,
) -> Iterator[TaskResult]:
    """Evaluate ``tasks`` with ``n_jobs`` joblib workers; yield results as they finish.

    ``tasks`` is consumed lazily (joblib pre-dispatches a few per worker), so it may be
    a long generator. ``progress``: ``True`` shows a tqdm bar; a callable is called
    with each result before it is yielded.
    """
    total = len(tasks) if hasattr(tasks, "__len__") else None  # type: ignore[arg-type]
    bar = None
    if progress is True:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="evaluations", unit="task")
    # The backend by parallel_config, not Parallel(backend=...): named in Parallel, the dask
    # backend (joblib 1.6, distributed 2026.8) fails on these tasks with "Batch.__call__()
    # got an unexpected keyword argument 'nesting_level'"; set by parallel_config it runs.
    try:
        for result in _stream((delayed(run_task)(task) for task in tasks), n_jobs, backend):
            if bar is not None:
                bar.update(1)
            elif callable(progress):
                progress(result)
            yield result
    finally:
        if bar is not None:
            bar.close()


def _stream(calls: Iterator[Any], n_jobs: int, backend: str) -> Iterator[TaskResult]:
    """The results of ``calls`` as they finish; on a backend that cannot return a
    generator (Ray's, joblib's multiprocessing), chunk by chunk of ``2 n_jobs`` calls."""
    with parallel_config(backend=backend, n_jobs=n_jobs):
        try:
            parallel, chunked = Parallel(return_as="generator_unordered"), False
        except ValueError:  # "does not support return_as=generator_unordered"
            parallel, chunked = Parallel(return_as="list"), True
    if not chunked:
        yield from parallel(calls)
        return
    while chunk := list(itertools.islice(calls, 2 * max(n_jobs, 1))):
        yield from parallel(chunk)
