"""What a recorded configuration costs to fit on a new dataset, from the stored fit seconds.

Notation: for a past task ``t`` and a configuration ``c`` (stored id) of algorithm
``a``, ``s_tc`` the median fit seconds of its successful runs of a metric and ``n_t`` the
task's training rows (the runs' ``fidelity`` when recorded, else 60% of its rows, the
default holdout's training part); ``n`` the new task's training rows.

Fit time grows as a power of the rows, ``s ~ n^alpha_a`` (about 1 for trees and linear
models, about 2 for kernel SVMs). ``alpha_a`` is the within-configuration slope of
``log s_tc`` on ``log n_t`` over every configuration of ``a`` run on two or more tasks
(the pooled least-squares slope with a fixed effect per configuration), clipped to
[1, 2.5] (at least linear: a smaller slope is the fixed overhead of fits on small tables, which
large ones do not have) and 1 when no configuration has two sizes. The predicted fit seconds of ``c``
on the new task are the median over the tasks it ran on of
``s_tc (n / n_t)^alpha_a``. Features, classes and the machine are not modelled; a
strategy can rescale by what it observes (:func:`observed_scale`).

Used by :class:`~metabo.strategies.portfolio.PortfolioWarmStart` under a time budget, so
that the warm start does not open with configurations that cannot finish in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase
    from metabo.optimizer.history import History

#: the exponent's range (rows -> fit seconds) and its value without evidence
ALPHA_RANGE = (1.0, 2.5)
DEFAULT_ALPHA = 1.0
#: a strategy's rescaling of the predictions by what it observed stays in this range
SCALE_RANGE = (0.25, 4.0)


def recorded_fit_seconds(kb: KnowledgeBase, tasks: Sequence[str], *, metric: str = "error_rate") -> pd.DataFrame:
    """One row per (task, stored configuration) with recorded fit seconds: ``dataset_id,
    config_id, algorithm, seconds`` (median over its successful runs) and ``rows`` (``n_t``)."""
    if not tasks:
        return pd.DataFrame(columns=["dataset_id", "config_id", "algorithm", "seconds", "rows"])
    return kb.query(
        "SELECT r.dataset_id, r.config_id, c.algorithm, median(r.fit_seconds) AS seconds, "
        "coalesce(max(r.fidelity), 0.6 * any_value(d.n_instances)) AS rows "
        "FROM runs r JOIN configurations c USING (config_id) JOIN datasets d USING (dataset_id) "
        "WHERE r.metric = ? AND r.status = 'ok' AND r.fit_seconds > 0 "
        "AND r.dataset_id IN (SELECT unnest(?::VARCHAR[])) "
        "GROUP BY r.dataset_id, r.config_id, c.algorithm", [metric, list(tasks)])


def size_exponents(records: pd.DataFrame) -> dict[str, float]:
    """``alpha_a`` per algorithm (module docstring)."""
    out: dict[str, float] = {}
    frame = records[(records["seconds"] > 0) & (records["rows"] > 0)].assign(
        ls=lambda f: np.log(f["seconds"].astype(float)), ln=lambda f: np.log(f["rows"].astype(float)))
    for algorithm, group in frame.groupby("algorithm"):
        centred = group.assign(ls=group["ls"] - group.groupby("config_id")["ls"].transform("mean"),
                               ln=group["ln"] - group.groupby("config_id")["ln"].transform("mean"))
        var = float((centred["ln"] ** 2).sum())
        slope = float((centred["ln"] * centred["ls"]).sum()) / var if var > 1e-12 else DEFAULT_ALPHA
        out[str(algorithm)] = float(np.clip(slope, *ALPHA_RANGE))
    return out


def predicted_fit_seconds(records: pd.DataFrame, n_rows: int) -> dict[str, float]:
    """Stored configuration id -> predicted fit seconds on ``n_rows`` training rows."""
    if records.empty:
        return {}
    alpha = size_exponents(records)
    frame = records[(records["seconds"] > 0) & (records["rows"] > 0)]
    a = frame["algorithm"].map(lambda x: alpha.get(str(x), DEFAULT_ALPHA)).to_numpy(dtype=float)
    scaled = frame["seconds"].to_numpy(dtype=float) * (n_rows / frame["rows"].to_numpy(dtype=float)) ** a
    return {str(k): float(v) for k, v in pd.Series(scaled, index=frame["config_id"]).groupby(level=0).median().items()}


def observed_scale(history: History, predicted: Mapping[str, float]) -> float:
    """The median ratio of observed to predicted fit seconds over the completed trials
    that have a prediction (by canonical id), clipped to :data:`SCALE_RANGE`; 1 without any."""
    ratios = [r.fit_seconds / predicted[r.config_id] for r in history.completed
              if r.config_id in predicted and r.fit_seconds and predicted[r.config_id] > 0]
    return float(np.clip(np.median(ratios), *SCALE_RANGE)) if ratios else 1.0


__all__ = ["ALPHA_RANGE", "DEFAULT_ALPHA", "SCALE_RANGE", "observed_scale", "predicted_fit_seconds",
           "recorded_fit_seconds", "size_exponents"]
