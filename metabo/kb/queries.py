"""Questions people ask of a knowledge base.

Notation: T tasks (datasets), C configurations of one algorithm, y_tc the mean value of
configuration c on task t over its folds/repeats (lower is better), m the meta-feature
vector of a task.

- :func:`runs`: the runs of a task and/or algorithm as a DataFrame, params decoded.
- :func:`configurations`: an algorithm's configurations with their params decoded.
- :func:`performance_matrix`: the T x C matrix (y_tc), NaN where c was not run on t.
- :func:`mean_ranks`: per configuration, the mean over tasks of its rank within the
  task (ties share the average rank; ranks computed among the configurations observed
  on that task), with the number of tasks it was ranked on.

y_tc is summed in sorted order with compensated summation (``fsum(value ORDER BY
value)``), so it does not depend on the order runs were stored in (an export/import
round trip gives the same matrix to the bit); ranks compare y_tc rounded to
:data:`RANK_DECIMALS` decimals, so means equal up to floating-point noise tie.
- :func:`nearest_tasks`: tasks ordered by the Euclidean distance between meta-feature
  vectors after each meta-feature is z-scored across all stored tasks (the excluded
  ones too, so the metric does not depend on what is excluded; features with
  zero spread are dropped; a feature missing for one side is skipped, and the distance
  is rescaled by sqrt(total / used) so tasks with fewer shared features are comparable).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, UnknownAlgorithmError

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


#: Decimals to which per-task means are rounded before ranking (ties within noise).
RANK_DECIMALS = 12

# Mean over folds/repeats, independent of storage order.
_MEAN_SQL = "fsum(value ORDER BY value) / count(value)"


def _per_task_sql(fidelity: float | None, dataset_ids: Sequence[str] | None) -> tuple[str, list[object]]:
    """SQL of (dataset_id, config_id, value): per-task means of one algorithm and metric.

    Parameters in order: algorithm, metric, [fidelity], [dataset ids]. Without a
    ``fidelity``, each (task, configuration) uses its highest fidelity (NULL, i.e. the
    full data, counts as the highest), so learning-curve points do not mix with final
    values; with one, exactly that fidelity.
    """
    task_sql, task_params = _task_filter(dataset_ids)
    if fidelity is None:
        fid_sql, fid_params = "", []
        keep = ("QUALIFY coalesce(r.fidelity, 'inf'::DOUBLE) = "
                "max(coalesce(r.fidelity, 'inf'::DOUBLE)) OVER (PARTITION BY r.dataset_id, r.config_id)")
    else:
        fid_sql, fid_params, keep = " AND r.fidelity = ?", [float(fidelity)], ""
    sql = (
        f"SELECT dataset_id, config_id, {_MEAN_SQL} AS value FROM ("
        "SELECT r.dataset_id, r.config_id, r.value FROM runs r JOIN configurations c USING (config_id) "
        f"WHERE c.algorithm = ? AND r.metric = ? AND r.status = 'ok'{fid_sql}{task_sql} {keep}) "
        "GROUP BY dataset_id, config_id"
    )
    return sql, [*fid_params, *task_params]


def _task_filter(dataset_ids: Sequence[str] | None) -> tuple[str, list[object]]:
    if dataset_ids is None:
        return "", []
    return " AND list_contains(?, r.dataset_id)", [list(map(str, dataset_ids))]


def _where(filters: Mapping[str, object]) -> tuple[str, list[object]]:
    parts, params = [], []
    for column, value in filters.items():
        if value is None:
            continue
        parts.append(f"{column} = ?")
        params.append(value)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def runs(
    kb: KnowledgeBase,
    *,
    dataset_id: str | None = None,
    algorithm: str | None = None,
    metric: str | None = None,
    status: str | None = "ok",
    decode_params: bool = True,
) -> pd.DataFrame:
    """Runs joined with their configuration (``algorithm``, ``params``).

    Oldest first; within one batch (same ``created_at``) by dataset, configuration,
    metric, repeat and fold.
    """
    where, params = _where(
        {"r.dataset_id": dataset_id, "c.algorithm": algorithm, "r.metric": metric, "r.status": status}
    )
    df = kb.query(
        "SELECT r.*, c.algorithm, c.params FROM runs r JOIN configurations c USING (config_id)"
        + where + " ORDER BY r.created_at, r.dataset_id, c.algorithm, r.config_id, r.metric, "
        "r.repeat, r.fold, r.source, r.run_id",
        params,
    )
    if decode_params and not df.empty:
        df["params"] = [json.loads(p) for p in df["params"]]
    return df


def configurations(kb: KnowledgeBase, algorithm: str) -> pd.DataFrame:
    """The configurations of ``algorithm``: ``config_id`` and decoded ``params``."""
    _require_algorithm(kb, algorithm)
    df = kb.query(
        "SELECT config_id, params FROM configurations WHERE algorithm = ? ORDER BY config_id", [algorithm]
    )
    df["params"] = [json.loads(p) for p in df["params"]]
    return df


def performance_matrix(
    kb: KnowledgeBase,
    algorithm: str,
    *,
    metric: str = "error_rate",
    fidelity: float | None = None,
    dataset_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Task x configuration matrix of mean values (rows ``dataset_id``, columns ``config_id``).

    ``dataset_ids`` restricts the tasks (e.g. to the nearest ones of a new dataset);
    :func:`configurations` decodes the columns.
    """
    _require_algorithm(kb, algorithm)
    sql, extra = _per_task_sql(fidelity, dataset_ids)
    long = kb.query(sql, [algorithm, metric, *extra])
    if long.empty:
        return pd.DataFrame(dtype=float)
    matrix = long.pivot(index="dataset_id", columns="config_id", values="value")
    return matrix.sort_index().sort_index(axis=1)


def mean_ranks(
    kb: KnowledgeBase,
    algorithm: str,
    *,
    metric: str = "error_rate",
    min_tasks: int = 1,
    fidelity: float | None = None,
    dataset_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Configurations of ``algorithm`` by mean within-task rank (1 = best), best first.

    Columns ``config_id``, ``mean_rank``, ``n_tasks``, ``params`` (decoded);
    ``dataset_ids`` restricts the tasks ranked on.
    """
    _require_algorithm(kb, algorithm)
    sql, extra = _per_task_sql(fidelity, dataset_ids)
    df = kb.query(
        f"""WITH per_task AS (
               SELECT dataset_id, config_id, round(value, {RANK_DECIMALS}) AS value FROM ({sql})),
           ranked AS (
               SELECT config_id,
                      (rank() OVER w + (count(*) OVER (PARTITION BY dataset_id, value) - 1) / 2.0) AS rnk
               FROM per_task WINDOW w AS (PARTITION BY dataset_id ORDER BY value))
           SELECT r.config_id, avg(rnk) AS mean_rank, count(*) AS n_tasks, any_value(c.params) AS params
           FROM ranked r JOIN configurations c USING (config_id)
           GROUP BY r.config_id HAVING count(*) >= ?
           ORDER BY mean_rank, n_tasks DESC, config_id""",
        [algorithm, metric, *extra, int(min_tasks)],
    )
    df["params"] = [json.loads(p) for p in df["params"]]
    return df


def meta_feature_matrix(kb: KnowledgeBase, names: Sequence[str] | None = None) -> pd.DataFrame:
    """Datasets x meta-features (NaN where a value is missing or undefined)."""
    long = kb.query("SELECT dataset_id, name, value FROM meta_features")
    if long.empty:
        return pd.DataFrame(dtype=float)
    wide = long.pivot(index="dataset_id", columns="name", values="value").astype(float)
    if names is not None:
        wide = wide.reindex(columns=list(names))
    return wide.sort_index()


def nearest_tasks(
    kb: KnowledgeBase,
    target: Mapping[str, float] | str,
    *,
    k: int = 5,
    names: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> pd.DataFrame:
    """The ``k`` stored tasks closest to ``target`` (a dataset id or meta-feature dict).

    Returns columns ``dataset_id``, ``distance``, ``n_features_used``, nearest first.
    """
    if k < 1:
        raise InputDataError("k must be >= 1")
    matrix = meta_feature_matrix(kb, names)
    if isinstance(target, str):
        if target not in matrix.index:
            raise InputDataError(f"dataset {target!r} has no meta-features stored")
        query = matrix.loc[target]
        exclude = (*exclude, target)
    else:
        query = pd.Series({str(n): float(v) for n, v in target.items()}, dtype=float)
    common = [c for c in matrix.columns if c in query.index and np.isfinite(query[c])]
    if not common or matrix.empty:
        raise InputDataError("no meta-feature is shared by the target and the stored tasks")
    # scale from every stored task, so excluding candidates does not change the metric
    mu = np.nanmean(matrix[common].to_numpy(float), axis=0)
    sd = np.nanstd(matrix[common].to_numpy(float), axis=0)
    keep = np.isfinite(sd) & (sd > 0)
    if not keep.any():
        raise InputDataError("every shared meta-feature is constant across the stored tasks")
    matrix = matrix.drop(index=[e for e in exclude if e in matrix.index])
    if matrix.empty:
        raise InputDataError("every stored task is excluded")
    values = matrix[common].to_numpy(float)
    z = (values[:, keep] - mu[keep]) / sd[keep]
    q = (query[common].to_numpy(float)[keep] - mu[keep]) / sd[keep]
    diff2 = (z - q) ** 2
    used = np.isfinite(diff2).sum(axis=1)
    total = np.nansum(diff2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.sqrt(total * keep.sum() / used)
    out = pd.DataFrame({"dataset_id": matrix.index, "distance": dist, "n_features_used": used})
    out = out[used > 0].sort_values(["distance", "dataset_id"], kind="mergesort")
    return out.head(k).reset_index(drop=True)


def _require_algorithm(kb: KnowledgeBase, algorithm: str) -> None:
    if kb.connection.execute("SELECT 1 FROM algorithms WHERE name = ?", [algorithm]).fetchone() is None:
        raise UnknownAlgorithmError(
            f"unknown algorithm {algorithm!r}; stored: {kb.algorithms()[:10]}"
        )
