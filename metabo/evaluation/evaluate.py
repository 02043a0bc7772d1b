"""Evaluate one configuration on one dataset; the outcome as run rows for the knowledge base.

Notation: K classes of the dataset (its target's categories, in order); for a split,
``n_valid`` / ``n_test`` rows. ``valid_proba`` is n_valid x K, column k = class k.

:func:`evaluate` never raises because of the configuration: an invalid configuration
(the factory raises :class:`~metabo.exceptions.InvalidConfigurationError`, or anything
else while building the estimator) becomes one ``crash`` :class:`Evaluation` per split
carrying the error's message, without fitting anything; a fit or predict that raises,
exceeds its time limit or its memory limit becomes a ``crash`` / ``timeout`` /
``memout`` evaluation. Its metric values are NaN, so a batch of evaluations goes on and
every failure is recorded. What does raise: a flagged dataset
(:class:`~metabo.exceptions.DataQualityError`), an unknown algorithm
(:class:`~metabo.exceptions.UnknownAlgorithmError`), an unknown metric, a regression
dataset: mistakes of the caller, not properties of a configuration.

The limits apply to each split (each split is one run): its fit plus its predictions.
A failed split records its wall-clock time until failure as ``fit_seconds``.

Predicted labels are the arg max of the predicted probabilities, so the error rates of
stored predictions can be recomputed from them exactly (ensemble selection does). An
estimator without ``predict_proba`` gets probabilities from its ``decision_function``
(logistic sigmoid for two classes, softmax otherwise) or, lacking that, one-hot labels.
Warnings (ConvergenceWarning, ...) are captured, not printed; the distinct ones are kept
in the ``message`` of a successful evaluation.

Runs in the knowledge base (:func:`to_run_rows`, :func:`run_rows`; stored by
:func:`metabo.kb.runs.record`): ``runs.value`` is one
lower-is-better number, so an evaluation gives one run row per metric on the validation
part (metric name as is, e.g. ``error_rate``) and one per metric on the test part under
the name ``test_<metric>`` (e.g. ``test_error_rate``). Failed evaluations give the same
rows with value NaN, their status and message. A metric undefined for a successful
evaluation (the AUC of a validation set holding a single class) is left out. The
training-set size of the split is the run's ``fidelity``. Predictions attach to the run
row of the primary metric, :data:`PRIMARY_METRIC` (``error_rate``; the first metric
evaluated when ``error_rate`` is not among them): ``valid_proba`` under split
``"valid"``, ``test_proba`` under split ``"test"``, both on that same validation run.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from metabo.data.dataset import Dataset
from metabo.evaluation.factories import Factory, registry_factory
from metabo.evaluation.metrics import align_proba, get_metric
from metabo.evaluation.preprocessing import encoder_kind, make_preprocessor, tell_nominal
from metabo.evaluation.protocols import EvaluationProtocol, Holdout, Split, class_codes, class_labels
from metabo.evaluation.runner import Ok, describe, run_each_with_limits
from metabo.exceptions import EvaluationError, InputDataError, UnknownAlgorithmError

logger = logging.getLogger(__name__)

Status = Literal["ok", "crash", "timeout", "memout"]
DEFAULT_METRICS: tuple[str, ...] = ("error_rate", "balanced_error_rate", "log_loss", "one_minus_auc")
PRIMARY_METRIC = "error_rate"
TEST_PREFIX = "test_"
_MAX_MESSAGE = 2000


@dataclass(frozen=True, eq=False)
class Evaluation:
    """The outcome of one configuration on one split (see module docstring)."""

    algorithm: str
    params: Mapping[str, Any]
    fold: int
    repeat: int
    split_seed: int | None
    fidelity: int
    status: Status
    message: str | None
    fit_seconds: float
    predict_seconds: float
    valid: Mapping[str, float]
    test: Mapping[str, float] | None = None
    valid_proba: np.ndarray | None = field(default=None, repr=False)
    test_proba: np.ndarray | None = field(default=None, repr=False)
    #: seconds the split's preprocessing took when it was first computed (later trials on
    #: the same split reuse it, :func:`prepared_split`): what a refit on new rows pays again
    prepare_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the evaluation succeeded (``status == "ok"``)."""
        return self.status == "ok"


# ---------------------------------------------------------------------- in the worker
@dataclass(frozen=True)
class _Fitted:
    valid_proba: np.ndarray
    test_proba: np.ndarray | None
    fit_seconds: float
    predict_seconds: float
    warnings: str | None


def class_probabilities(pipeline: Any, X: pd.DataFrame | np.ndarray, n_classes: int) -> np.ndarray:
    """n x K class probabilities, aligned to the dataset's classes, rows summing to 1
    (``pipeline``: a fitted pipeline or a bare fitted estimator)."""
    classes = np.asarray(pipeline[-1].classes_ if isinstance(pipeline, Pipeline) else pipeline.classes_)
    if hasattr(pipeline, "predict_proba"):
        p = np.asarray(pipeline.predict_proba(X), dtype=np.float64)
    elif hasattr(pipeline, "decision_function"):
        d = np.asarray(pipeline.decision_function(X), dtype=np.float64)
        if d.ndim == 1:
            p1 = expit(d)
            p = np.column_stack([1.0 - p1, p1])
        else:
            p = softmax(d, axis=1)
    else:
        labels = np.asarray(pipeline.predict(X))
        p = (labels[:, None] == classes[None, :]).astype(np.float64)
    if not np.isfinite(p).all():
        raise EvaluationError("the model predicted non-finite probabilities")
    p = np.clip(p, 0.0, None)
    total = p.sum(axis=1, keepdims=True)
    p = np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / p.shape[1])
    return align_proba(p, classes, n_classes)


def summarize_warnings(caught: list[warnings.WarningMessage]) -> str | None:
    """The distinct first lines of the caught warnings in one line (None when none were
    caught): what a run's message records of a fit's warnings."""
    distinct: dict[str, None] = {}
    for w in caught:
        first_line = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
        distinct[f"{w.category.__name__}: {first_line[:200]}"] = None
    if not distinct:
        return None
    shown = list(distinct)[:3]
    more = f" (+{len(distinct) - 3} more)" if len(distinct) > 3 else ""
    return "; ".join(shown) + more


@dataclass(frozen=True, eq=False)
class _Prepared:
    """A split's rows after the preprocessing fitted on its training rows (module
    docstring of :mod:`metabo.evaluation.preprocessing`), and the distinct warnings it raised."""

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray | None
    warnings: tuple[str, ...]
    seconds: float = 0.0  # to fit the preprocessing and transform the split's rows

    @property
    def nbytes(self) -> int:
        return self.train.nbytes + self.valid.nbytes + (0 if self.test is None else self.test.nbytes)


def _prepare(spec: Any, dataset: Dataset, split: Split) -> _Prepared:
    """The preprocessing of ``spec``'s needs fitted on ``split``'s training rows, applied to
    its training, validation and test rows: what the pipeline's first step would compute,
    the same for every configuration of algorithms with the same needs."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pre = make_preprocessor(spec, dataset)
        numeric = all(k == "numeric" for k in dataset.feature_kinds)

        def rows(idx: np.ndarray) -> Any:
            """The rows as a float matrix when every column is numeric: the preprocessor
            takes its columns by position, without per-column name checks (seconds on
            10,000 columns)."""
            part = dataset.X.iloc[idx]
            return part.to_numpy(dtype=np.float64, na_value=np.nan) if numeric else part
        train = np.asarray(pre.fit_transform(rows(split.train_idx)))
        valid = np.asarray(pre.transform(rows(split.valid_idx)))
        test = None if split.test_idx is None else np.asarray(pre.transform(rows(split.test_idx)))
    summary = summarize_warnings(caught)
    return _Prepared(train, valid, test, () if summary is None else (summary,), time.perf_counter() - start)


def prepared_split(spec: Any, dataset: Dataset, split: Split) -> _Prepared:
    """:func:`_prepare`, computed once per (needs, split) and kept on the dataset
    (:meth:`~metabo.data.dataset.Dataset.memo`): every configuration evaluated on the same
    folds reuses it (a search's trials, a build's algorithms with the same needs)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (split.train_idx, split.valid_idx, split.test_idx):
        digest.update(b"|" if part is None else np.ascontiguousarray(part, dtype=np.int64).tobytes() + b"/")
    key = ("prepared", bool(spec.needs_scaling), encoder_kind(spec), bool(spec.handles_missing),
           digest.hexdigest())
    return dataset.memo(key, lambda: _prepare(spec, dataset, split))


def _fit_predict(model: Any, prepared: _Prepared, codes: np.ndarray, split: Split, n_classes: int) -> _Fitted:
    """Fit ``model`` on the split's preprocessed training rows, predict its validation (and
    test) rows (under the thread limits :func:`evaluate` set before forking the worker)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(prepared.train, codes[split.train_idx])
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        valid = class_probabilities(model, prepared.valid, n_classes)
        test = None if prepared.test is None else class_probabilities(model, prepared.test, n_classes)
        predict_seconds = time.perf_counter() - start
    fitted = summarize_warnings(caught)
    notes = [*prepared.warnings, *([] if fitted is None else [fitted])]
    return _Fitted(valid, test, fit_seconds, predict_seconds, "; ".join(notes) if notes else None)


# ---------------------------------------------------------------------- evaluate
def _scores(metrics: Mapping[str, Callable[..., float]], y_true: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    y_pred = proba.argmax(axis=1)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in metrics.items():
            try:
                out[name] = float(fn(y_true, proba, y_pred))
            except ValueError as e:  # an undefined metric for this split
                logger.debug("metric %s undefined: %s", name, e)
                out[name] = math.nan
    return out


def _failed(
    algorithm: str, params: Mapping[str, Any], split: Split, status: Status, message: str,
    seconds: float, metrics: Iterable[str],
) -> Evaluation:
    nan = dict.fromkeys(metrics, math.nan)
    return Evaluation(
        algorithm=algorithm, params=params, fold=split.fold, repeat=split.repeat,
        split_seed=split.split_seed, fidelity=split.n_train, status=status,
        message=message[:_MAX_MESSAGE], fit_seconds=seconds, predict_seconds=math.nan,
        valid=nan, test=None if split.test_idx is None else dict(nan),
    )


def evaluate(
    algorithm: str,
    params: Mapping[str, Any],
    dataset: Dataset,
    *,
    protocol: EvaluationProtocol = Holdout(),
    seed: int = 0,
    metrics: Iterable[str] = DEFAULT_METRICS,
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
    keep_predictions: bool = True,
    factory: Factory | None = None,
    threads: int | None = 1,
    total_time_limit: float | None = None,
) -> list[Evaluation]:
    """Evaluate ``algorithm`` with ``params`` on ``dataset``: one :class:`Evaluation` per split.

    Args:
        protocol: how the rows are split (:mod:`metabo.evaluation.protocols`).
        seed: seeds both the split and the estimator.
        metrics: names from :data:`metabo.evaluation.metrics.METRICS`.
        time_limit, memory_limit_mb: per split; with either, each fit runs in a forked
            worker (:func:`metabo.evaluation.runner.run_with_limits`).
        total_time_limit: seconds for all splits together (a search's time budget): each
            split may run only what is left of it, and splits with nothing left are
            recorded as ``timeout`` without running.
        keep_predictions: keep ``valid_proba`` / ``test_proba`` in the evaluations.
        factory: builds ``(preprocessing needs, estimator)``; default
            :func:`~metabo.evaluation.factories.registry_factory`.
        threads: BLAS / OpenMP threads of the fit (threadpoolctl); ``None`` keeps the
            libraries' defaults. One by default: parallelism comes from evaluating
            several configurations at once (:mod:`metabo.evaluation.parallel`), recorded
            fit times stay comparable, and OpenMP's thread teams cost more than they
            save on small data (HistGradientBoosting on 144 rows: 0.05 s on 1 thread,
            13 s on 2 contended ones, measured).

    Returns a failed evaluation rather than raising for a bad configuration (see the
    module docstring for what raises).
    """
    dataset.require_clean()
    metric_fns = {name: get_metric(name) for name in dict.fromkeys(metrics)}
    if not metric_fns:
        raise InputDataError("evaluate needs at least one metric")
    codes = class_codes(dataset)
    n_classes = len(class_labels(dataset))
    splits = protocol.splits(dataset, seed)
    params = dict(params)
    factory = registry_factory if factory is None else factory
    try:
        spec, estimator = factory(algorithm, params, seed)
        estimator = tell_nominal(spec, dataset, estimator)
    except UnknownAlgorithmError:
        raise
    except Exception as e:  # noqa: BLE001 - a bad configuration is an outcome, not an error
        message = describe(e)
        logger.info("%s %s not evaluated: %s", algorithm, params, message)
        return [_failed(algorithm, params, s, "crash", message, math.nan, metric_fns) for s in splits]

    # The thread limits are set here, in the process that forks the workers, once per call:
    # a worker inherits them, where setting them inside each worker makes OpenBLAS rebuild
    # its thread server after the fork (about 80 ms per fold, as much as a small fit).
    with threadpool_limits(limits=threads):
        started = time.perf_counter()

        def split_limit(split: Split, when: str) -> tuple[str | None, float | None]:
            """(None, the split's limit) under ``total_time_limit``, or (the timeout's
            message, None) when no time is left for the split."""
            if total_time_limit is None:
                return None, time_limit
            left = total_time_limit - (time.perf_counter() - started)
            if left <= 0:
                return (f"Timeout: no time left for fold {split.fold}{when} (limit {total_time_limit:.1f} s for all "
                        "folds)"), None
            return None, left if time_limit is None else min(time_limit, left)

        runnable: list[tuple[int, Split, _Prepared]] = []  # (position in splits, split, its prepared rows)
        done: dict[int, Evaluation] = {}
        for position, split in enumerate(splits):
            late = split_limit(split, "")[0]
            if late is not None:
                done[position] = _failed(algorithm, params, split, "timeout", late, 0.0, metric_fns)
                continue
            try:
                prepared = prepared_split(spec, dataset, split)
            except Exception as e:  # noqa: BLE001 - a preprocessing failure is this split's outcome
                done[position] = _failed(algorithm, params, split, "crash", describe(e), 0.0, metric_fns)
                continue
            runnable.append((position, split, prepared))

        late_messages: dict[int, str] = {}

        def limit_of(i: int) -> float | None:
            """The limit of the i-th runnable split when it starts (the preprocessing, here
            and not in the worker, counted too); 0 once no time is left."""
            late, limit = split_limit(runnable[i][1], " after its preprocessing")
            if late is not None:
                late_messages[i] = late
                return 0.0
            return limit

        # one worker for the trial's splits (runner.run_each_with_limits), each split its own limit
        outcomes = run_each_with_limits(
            _fit_predict, [(clone(estimator, safe=False), prepared, codes, split, n_classes)
                           for _, split, prepared in runnable],
            time_limit=None if time_limit is None and total_time_limit is None else limit_of,
            memory_limit_mb=memory_limit_mb)
        for i, ((position, split, _), outcome) in enumerate(zip(runnable, outcomes)):
            if not isinstance(outcome, Ok):
                message = late_messages.get(i, outcome.message)
                logger.info("%s %s fold %d: %s", algorithm, params, split.fold, message)
                done[position] = _failed(algorithm, params, split, cast(Status, outcome.status), message,
                                         outcome.seconds, metric_fns)
                continue
            fitted: _Fitted = outcome.value
            test = None
            if fitted.test_proba is not None:
                test = _scores(metric_fns, codes[split.test_idx], fitted.test_proba)
            done[position] = Evaluation(
                algorithm=algorithm, params=params, fold=split.fold, repeat=split.repeat,
                split_seed=split.split_seed, fidelity=split.n_train, status="ok",
                message=fitted.warnings, fit_seconds=fitted.fit_seconds,
                predict_seconds=fitted.predict_seconds,
                valid=_scores(metric_fns, codes[split.valid_idx], fitted.valid_proba), test=test,
                valid_proba=fitted.valid_proba if keep_predictions else None,
                test_proba=fitted.test_proba if keep_predictions else None,
                prepare_seconds=runnable[i][2].seconds,
            )
    return [done[position] for position in sorted(done)]


# ---------------------------------------------------------------------- to the knowledge base
def run_rows(evaluations: list[Evaluation], dataset_id: str, source: str, protocol: str | None = None,
             created_at: Sequence[datetime] | None = None) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """The run rows and, per evaluation, (evaluation index, row of its primary run), the
    run its predictions attach to (module docstring). ``created_at``: each evaluation's
    time (naive UTC; default: when the rows are stored)."""
    if created_at is not None and len(created_at) != len(evaluations):
        raise InputDataError(f"created_at has {len(created_at)} times for {len(evaluations)} evaluations")
    rows: list[dict[str, Any]] = []
    primary: list[tuple[int, int]] = []
    for i, ev in enumerate(evaluations):
        base = {
            "dataset_id": dataset_id, "algorithm": ev.algorithm, "params": dict(ev.params),
            "fold": ev.fold, "repeat": ev.repeat, "split_seed": ev.split_seed,
            "fidelity": float(ev.fidelity), "fit_seconds": ev.fit_seconds,
            "predict_seconds": ev.predict_seconds, "status": ev.status, "message": ev.message,
            "source": source, "protocol": protocol,
            **({} if created_at is None else {"created_at": created_at[i]}),
        }
        named = list(ev.valid.items())
        named += [(TEST_PREFIX + m, v) for m, v in (ev.test or {}).items()]
        at: dict[str, int] = {}
        for metric, value in named:
            if ev.ok and not math.isfinite(value):
                continue  # undefined for this split (module docstring)
            at[metric] = len(rows)
            rows.append({**base, "metric": metric, "value": value})
        valid_rows = [at[m] for m in ev.valid if m in at]
        if PRIMARY_METRIC in at:
            primary.append((i, at[PRIMARY_METRIC]))
        elif valid_rows:
            primary.append((i, valid_rows[0]))
    columns = [
        "dataset_id", "algorithm", "params", "metric", "value", "fold", "repeat", "split_seed",
        "fidelity", "fit_seconds", "predict_seconds", "status", "message", "source", "protocol",
        *([] if created_at is None else ["created_at"]),
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame["split_seed"] = frame["split_seed"].astype("Int64")
    return frame, primary


def to_run_rows(evaluations: Iterable[Evaluation], *, dataset_id: str, source: str,
                protocol: str | None = None) -> pd.DataFrame:
    """The rows of ``evaluations`` for :meth:`KnowledgeBase.add_runs` (module docstring)."""
    return run_rows(list(evaluations), dataset_id, source, protocol)[0]
