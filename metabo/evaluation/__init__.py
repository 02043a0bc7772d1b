"""Evaluation of configurations: protocols (holdout, k-fold, reshuffled holdout),
metrics, preprocessing, the per-run limits, and the run rows of evaluations (stored by
:func:`metabo.kb.runs.record`)."""

from metabo.evaluation.evaluate import Evaluation, evaluate, to_run_rows
from metabo.evaluation.factories import EstimatorFactory, registry_factory
from metabo.evaluation.metrics import METRICS, get_metric
from metabo.evaluation.parallel import EvalTask, TaskResult, evaluate_many
from metabo.evaluation.protocols import Holdout, KFold, RefitOnTrainValid, ReshuffledHoldout, Split
from metabo.evaluation.runner import Crash, Memout, Ok, Timeout, run_with_limits

__all__ = [
    "METRICS",
    "Crash",
    "EstimatorFactory",
    "EvalTask",
    "Evaluation",
    "Holdout",
    "KFold",
    "Memout",
    "Ok",
    "RefitOnTrainValid",
    "ReshuffledHoldout",
    "Split",
    "TaskResult",
    "Timeout",
    "evaluate",
    "evaluate_many",
    "get_metric",
    "registry_factory",
    "run_with_limits",
    "to_run_rows",
]
