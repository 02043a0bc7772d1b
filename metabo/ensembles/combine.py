"""Combining members' predictions, and the history an ensemble search shows its base strategy.

- :func:`votes`: each member's predicted class code, the arg max of its probabilities
  (as :mod:`metabo.evaluation.evaluate` predicts labels).
- :func:`majority_vote`: the (weighted) majority vote of members' codes, ties to the
  lowest code (Lacoste et al. 2014 and the thesis' EO combine by majority vote).
- :func:`per_example_losses`: the per-row losses of the metrics that are means of them
  (error rate, log loss), for bootstrap risks (ESMBO) and paired comparisons (the guard).
- :func:`relabel`: a history whose trained trials carry another value (a replicate's risk
  in ESMBO, an ensemble's loss in EO), the rest as they are: the base strategy of an
  ensemble search models that value instead of the single model's error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.optimizer.history import History


def votes(probas: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """(m, n) class codes of ``m`` members from their (m, n, K) probabilities."""
    P = np.asarray(probas, dtype=float)
    if P.ndim != 3:
        raise InputDataError(f"probas must be (members, n, K), got {P.shape}")
    return P.argmax(axis=2)


def majority_vote(codes: np.ndarray, n_classes: int, weights: Sequence[float] | None = None) -> np.ndarray:
    """(n,) the class with the most (weighted) votes among the rows of ``codes`` (m, n);
    ties (up to rounding of the summed weights, 1e-12): the lowest code."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] < 1:
        raise InputDataError(f"codes must be (m >= 1, n), got {codes.shape}")
    w = np.ones(codes.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    counts = np.zeros((n_classes, codes.shape[1]))
    for c in range(n_classes):
        counts[c] = w @ (codes == c)
    return (counts >= counts.max(axis=0) - 1e-12).argmax(axis=0)


def weighted_average(weights: Mapping[int, float], probas: Mapping[int, np.ndarray]) -> np.ndarray:
    """``sum_k w_k P_k`` over the members ``weights`` (key -> weight) of ``probas``."""
    return sum(w * np.asarray(probas[k], dtype=float) for k, w in weights.items())  # type: ignore[return-value]


def combined_codes(weights: Mapping[int, float], probas: Mapping[int, np.ndarray], combine: str,
                   n_classes: int) -> np.ndarray:
    """(n,) the ensemble's class codes: the weighted majority vote of the members'
    (``combine="vote"``) or the arg max of :func:`weighted_average` (``"average"``)."""
    if combine == "average":
        return weighted_average(weights, probas).argmax(axis=1)
    members = list(weights)
    return majority_vote(votes([probas[k] for k in members]), n_classes, [weights[k] for k in members])


def per_example_losses(metric: str, y: np.ndarray, P: np.ndarray) -> np.ndarray | None:
    """(n,) per-row losses of the probabilities ``P`` (n, K) for the mean-decomposable
    metrics: the error rate's 0/1 (arg max, first maximum) and the log loss's
    ``-log P[i, y_i]`` (clipped at 1e-15); None for any other metric."""
    if metric == "error_rate":
        return (P.argmax(axis=1) != y).astype(float)
    if metric == "log_loss":
        return -np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1.0))
    return None


def relabel(history: History, values: Mapping[int, float]) -> History:
    """``history`` with the value of each completed trial in ``values`` replaced; a
    successful trial missing from ``values`` is an error (its predictions were never given)."""
    records = []
    for r in history:
        if r.complete and r.number in values:
            records.append(replace(r, value=float(values[r.number])))
        elif r.complete and r.ok:
            raise InputDataError(f"trial {r.number} was told without its validation predictions: call observe")
        else:
            records.append(r)
    from metabo.optimizer.history import (
        History,  # here: a model's combination needs no optimizer
    )

    return History(records)


__all__ = ["combined_codes", "majority_vote", "per_example_losses", "relabel", "votes", "weighted_average"]
