"""Classification metrics, every one lower-is-better, as the ``runs`` table stores them.

Notation: n validation rows, K classes of the dataset (in the order of its target's
categories). ``y_true`` holds class codes in ``0..K-1`` (length n); ``proba`` is the
n x K matrix of class probabilities whose column k is class k; ``y_pred`` holds
predicted codes (length n). A metric is called ``metric(y_true, proba, y_pred)``; the
error rates accept either ``y_pred`` or ``proba`` (then ``y_pred = argmax proba``),
``log_loss`` and ``one_minus_auc`` need ``proba``.

A model trained on a split that lacks some class predicts only the classes it saw;
:func:`align_proba` places its columns among the dataset's K classes (the missing
ones 0) before any metric is computed, so every metric sees all K columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np

from metabo.exceptions import InputDataError

Metric = Callable[..., float]


def align_proba(proba: np.ndarray, model_classes: np.ndarray, n_classes: int) -> np.ndarray:
    """An n x K matrix from a model's n x len(model_classes) output.

    ``model_classes`` are the class codes the model was trained on (its ``classes_``);
    column j of ``proba`` goes to column ``model_classes[j]``, the classes the model
    never saw get probability 0.
    """
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[1] != len(model_classes):
        raise InputDataError(
            f"probabilities of shape {proba.shape} do not match {len(model_classes)} model classes"
        )
    codes = np.asarray(model_classes, dtype=np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= n_classes):
        raise InputDataError(f"model classes {codes.tolist()} fall outside 0..{n_classes - 1}")
    out = np.zeros((proba.shape[0], n_classes), dtype=np.float64)
    out[:, codes] = proba
    return out


def _labels(y_true: np.ndarray, proba: np.ndarray | None, y_pred: np.ndarray | None) -> np.ndarray:
    if y_pred is not None:
        return np.asarray(y_pred)
    if proba is None:
        raise InputDataError("an error rate needs predicted labels (y_pred) or probabilities (proba)")
    return np.asarray(proba).argmax(axis=1)


def _need_proba(name: str, y_true: np.ndarray, proba: np.ndarray | None) -> np.ndarray:
    if proba is None:
        raise InputDataError(f"{name} needs class probabilities (proba), not only labels")
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] != len(y_true):
        raise InputDataError(f"{name}: proba must be n x K with n = {len(y_true)}, got {proba.shape}")
    return proba


def _same_length(y_true: np.ndarray, y_pred: np.ndarray) -> None:
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise InputDataError(f"y_true and the predictions must be 1-D of one length, got {y_true.shape} and "
                             f"{y_pred.shape}")


def error_rate(y_true: np.ndarray, proba: np.ndarray | None = None, y_pred: np.ndarray | None = None) -> float:
    """Fraction of misclassified rows, ``1 - accuracy`` (scikit-learn's ``accuracy_score``,
    computed directly: a search scores every fold of every trial with it)."""
    y_true, labels = np.asarray(y_true), np.asarray(_labels(y_true, proba, y_pred))
    _same_length(y_true, labels)
    if len(y_true) == 0:
        raise InputDataError("an error rate needs at least one row")
    return float(np.mean(y_true != labels))


def balanced_error_rate(
    y_true: np.ndarray, proba: np.ndarray | None = None, y_pred: np.ndarray | None = None
) -> float:
    """``1 - balanced accuracy``: the mean over the classes present in ``y_true`` of
    their error rates (scikit-learn's ``balanced_accuracy_score``; predictions of classes
    absent from ``y_true`` count as errors of their row's class only)."""
    y_true, labels = np.asarray(y_true), np.asarray(_labels(y_true, proba, y_pred))
    _same_length(y_true, labels)
    if len(y_true) == 0:
        raise InputDataError("a balanced error rate needs at least one row")
    classes, index = np.unique(y_true, return_inverse=True)
    wrong = np.bincount(index, weights=(y_true != labels).astype(np.float64), minlength=len(classes))
    return float(np.mean(wrong / np.bincount(index, minlength=len(classes))))


def ovr_balanced_error_rate(
    y_true: np.ndarray, proba: np.ndarray | None = None, y_pred: np.ndarray | None = None
) -> float:
    """OBOE's "BER" (``util.error``, Yang et al. 2019): the mean over the classes ``c``
    present in ``y_true`` of the one-vs-rest ``1 - (TPR_c + TNR_c) / 2``.

    With two classes it equals :func:`balanced_error_rate`; with K > 2 it does not (a
    constant prediction scores 1/2 instead of ``1 - 1/K``). It is here so that the runs
    of OBOE's meta-dataset are stored under what they measured, and a search can
    optimize it.
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(_labels(y_true, proba, y_pred))
    errors = []
    for c in np.unique(y_true):
        positive, predicted = y_true == c, y_pred == c
        tpr = (positive & predicted).sum() / positive.sum()
        negatives = (~positive).sum()
        tnr = (~positive & ~predicted).sum() / negatives if negatives else 1.0
        errors.append(1.0 - 0.5 * tpr - 0.5 * tnr)
    return float(np.mean(errors))


def log_loss(y_true: np.ndarray, proba: np.ndarray | None = None, y_pred: np.ndarray | None = None) -> float:
    """Mean negative log-likelihood of the true class (natural log).

    Probabilities are clipped by scikit-learn to ``[eps, 1 - eps]`` (float64 eps), so a
    confident mistake costs about 36 per row rather than infinity.
    """
    proba = _need_proba("log_loss", y_true, proba)
    y_true = np.asarray(y_true)
    k = proba.shape[1]
    if len(y_true) == 0 or not np.issubdtype(y_true.dtype, np.integer) or y_true.min() < 0 or y_true.max() >= k:
        raise InputDataError(f"log_loss: y_true must be class codes 0..{k - 1}")
    if proba.min() < 0 or proba.max() > 1:
        raise InputDataError("log_loss: probabilities must lie in [0, 1]")
    eps = np.finfo(np.float64).eps
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y_true)), y_true], eps, 1 - eps))))


def one_minus_auc(
    y_true: np.ndarray, proba: np.ndarray | None = None, y_pred: np.ndarray | None = None
) -> float:
    """``1 - ROC AUC``.

    Binary (K = 2): ``1 - roc_auc_score(y_true == 1, proba[:, 1])``. Multiclass: one
    minus the macro average of the one-vs-rest AUCs, ``1 - mean_k AUC(y_true == k,
    proba[:, k])`` (each by :func:`_auc`), which equals scikit-learn's ``roc_auc_score(..., multi_class="ovr",
    average="macro")`` when every class occurs in ``y_true``. A class absent from
    ``y_true`` (or making up all of it) has no defined one-vs-rest AUC and is left out
    of the average; NaN when no class has one (e.g. a single-class validation set).
    """
    proba = _need_proba("one_minus_auc", y_true, proba)
    y_true = np.asarray(y_true)
    k = proba.shape[1]
    targets = [1] if k == 2 else range(k)
    aucs = []
    for c in targets:
        positive = y_true == c
        if positive.all() or not positive.any():
            continue
        aucs.append(_auc(positive, proba[:, c]))
    return float(1.0 - np.mean(aucs)) if aucs else float("nan")


def _auc(positive: np.ndarray, score: np.ndarray) -> float:
    """The ROC AUC of ``score`` for the boolean labels ``positive``, by the Mann-Whitney
    statistic (Hanley and McNeil 1982, eq. 2): ``(R+ - n+ (n+ + 1) / 2) / (n+ n-)`` with
    ``R+`` the sum of the positives' ranks, ties sharing their mean rank. It equals the
    trapezoidal area scikit-learn's ``roc_auc_score`` computes, in one sort."""
    from scipy.stats import rankdata

    ranks = rankdata(score)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


METRICS: Mapping[str, Metric] = MappingProxyType(
    {
        "error_rate": error_rate,
        "balanced_error_rate": balanced_error_rate,
        "ovr_balanced_error_rate": ovr_balanced_error_rate,
        "log_loss": log_loss,
        "one_minus_auc": one_minus_auc,
    }
)
"""The metrics by name (read-only); every value is lower-is-better."""


#: The values each metric can take (every one lower-is-better).
METRIC_RANGES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"error_rate": (0.0, 1.0), "balanced_error_rate": (0.0, 1.0), "ovr_balanced_error_rate": (0.0, 1.0),
     "log_loss": (0.0, math.inf),
     "one_minus_auc": (0.0, 1.0)}
)
#: Higher-is-better names people try, and the metric that minimizes the same thing.
_MINIMIZED_AS = {"accuracy": "error_rate", "acc": "error_rate", "predictive_accuracy": "error_rate",
                 "balanced_accuracy": "balanced_error_rate", "auc": "one_minus_auc", "roc_auc": "one_minus_auc",
                 "area_under_roc_curve": "one_minus_auc", "balanced_error": "balanced_error_rate",
                 "logloss": "log_loss", "neg_log_loss": "log_loss"}


#: The error rates of hard predictions: they order classifiers alike on most tasks, so a
#: warm start for one of them also transfers from tasks that recorded only another, on
#: per-task normalized values (:func:`transfer_metrics`).
ERROR_RATES = ("error_rate", "balanced_error_rate", "ovr_balanced_error_rate")


def transfer_metrics(metric: str) -> tuple[str, ...]:
    """The metrics whose runs a warm start for ``metric`` reads, by preference: ``metric``
    itself, then (for an error rate) the other :data:`ERROR_RATES`. A task contributes
    the runs of the first of these it recorded; transfer compares values only within a
    task (ranks or per-task normalized regret), never across metrics."""
    return (metric, *(m for m in ERROR_RATES if m != metric)) if metric in ERROR_RATES else (metric,)


def get_metric(name: str) -> Metric:
    """The metric called ``name``; an unknown name raises :class:`InputDataError` (naming
    the metric that minimizes the same thing when ``name`` is a known maximized one)."""
    try:
        return METRICS[name]
    except (KeyError, TypeError):
        hint = f"; metabo minimizes, use {_MINIMIZED_AS[name]!r}" if name in _MINIMIZED_AS else ""
        raise InputDataError(f"unknown metric {name!r}{hint}; choose from {sorted(METRICS)}") from None


def check_value(name: str, value: float, *, what: str = "value") -> None:
    """Raise :class:`InputDataError` when ``value`` is outside the values the known metric
    ``name`` takes (:data:`METRIC_RANGES`, 1e-9 of slack); other names are not checked."""
    low, high = METRIC_RANGES.get(name, (-math.inf, math.inf))
    if not low - 1e-9 <= value <= high + 1e-9:
        raise InputDataError(f"{what} {value:g} is not a possible {name} (it lies in [{low:g}, {high:g}], lower is "
                             "better); send the metric itself, not a score or its negation")


def library_losses(metric: str, loss: Callable[..., float], y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``L(y, candidates[h])`` for every ``h`` of (H, n, K): the error rate in one vectorized
    step (arg max, first maximum, as :func:`error_rate`), any other metric one call each."""
    if metric == "error_rate":
        return np.mean(first_argmax(candidates) != y[None, :], axis=1)
    return np.array([loss(y, c) for c in candidates])


def first_argmax(a: np.ndarray) -> np.ndarray:
    """``a.argmax(axis=-1)`` (the first maximum) for finite ``a``, as one comparison per
    class over the other axes when the classes are few: numpy's arg max along a short
    last axis runs row by row, several times slower than these whole-array steps."""
    K = a.shape[-1]
    if K > 16:
        return a.argmax(axis=-1)
    if K == 2:  # one comparison: class 1 only when strictly ahead (ties go to the first)
        return (a[..., 1] > a[..., 0]).astype(np.intp)
    idx = np.zeros(a.shape[:-1], dtype=np.intp)
    best = a[..., 0].copy()
    for k in range(1, K):
        col = a[..., k]
        idx[col > best] = k
        np.maximum(best, col, out=best)
    return idx
