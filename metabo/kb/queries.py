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

Both read y_tc through :func:`_matrix_arrays`: when every (task, configuration) has a
single run (PMF, Tensor-OBOE) y_tc is that run's value, scattered into the matrix with
no GROUP BY; otherwise SQL aggregates. Ranks are then computed in numpy.
y_tc is summed in sorted order with compensated summation (``fsum(value ORDER BY
value)``), so it does not depend on the order runs were stored in (an export/import
round trip gives the same matrix to the bit); ranks compare y_tc rounded to
:data:`RANK_DECIMALS` decimals, so means equal up to floating-point noise tie.
- :func:`nearest_tasks`: tasks ordered by the Euclidean distance between meta-feature
  vectors after each meta-feature is z-scored across all stored tasks (the excluded
  ones too, so the metric does not depend on what is excluded; features with
  zero spread are dropped; a feature missing for one side is skipped, and the distance
  is rescaled by sqrt(total / used) so tasks with fewer shared features are comparable).
- Lookups of stored runs for ingestion, warm starts and the service
  (:func:`dataset_ids_with_runs`, :func:`largest_fidelity`, :func:`sources_with_runs`,
  :func:`run_pairs`, :func:`find_run_id`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, KnowledgeBaseError, UnknownAlgorithmError

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
    values; with one, exactly that fidelity. (The mean of every fidelity is computed,
    then the highest one's kept: the same as filtering runs first, without a window over
    every run.)
    """
    task_sql, task_params = _task_filter(dataset_ids)
    if fidelity is None:
        fid_sql, fid_params = "", []
    else:
        fid_sql, fid_params = " AND r.fidelity = ?", [float(fidelity)]
    sql = (
        "SELECT dataset_id, config_id, arg_max_null(value, f) AS value FROM ("
        f"SELECT r.dataset_id, r.config_id, coalesce(r.fidelity, 'inf'::DOUBLE) AS f, {_MEAN_SQL} AS value "
        "FROM runs r "
        f"WHERE r.algorithm = ? AND r.metric = ? AND r.status = 'ok'{fid_sql}{task_sql} "
        "GROUP BY r.dataset_id, r.config_id, f) GROUP BY dataset_id, config_id"
    )
    return sql, [*fid_params, *task_params]


def _matrix_arrays(
    kb: KnowledgeBase,
    algorithm: str,
    metric: str,
    fidelity: float | None,
    dataset_ids: Sequence[str] | None,
    *,
    config_ids: Sequence[str] | None = None,
    rounded: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dataset ids, config ids, T x C array y_tc) of :func:`_per_task_sql`, NaN where unobserved.

    Rows and columns sorted, only those with an observation; ``config_ids`` restricts
    the columns; ``rounded`` gives y_tc rounded to :data:`RANK_DECIMALS` by DuckDB.

    Fast path: when every (task, configuration) has exactly one run (one value per
    pair, as in PMF and Tensor-OBOE), y_tc is that run's value (the mean of one value
    is the value), so the runs are read as integer codes and scattered into the
    matrix without a GROUP BY; otherwise the per-task SQL aggregates.
    """
    fid_sql, fid_params = ("", []) if fidelity is None else (" AND r.fidelity = ?", [float(fidelity)])
    task_sql, task_params = _task_filter(dataset_ids)
    cfg_sql, cfg_params = ("", []) if config_ids is None else (
        " AND list_contains(?, config_id)", [list(map(str, config_ids))])
    configs = _fetch_column(kb, "SELECT config_id FROM configurations WHERE algorithm = ?"
                            f"{cfg_sql} ORDER BY config_id", [algorithm, *cfg_params], "config_id")
    datasets = _fetch_column(kb, "SELECT dataset_id FROM datasets ORDER BY dataset_id", [], "dataset_id")
    # integer codes: positions in the sorted lists above (-1: a run of an unregistered dataset)
    codes = (
        "JOIN (SELECT config_id, (row_number() OVER (ORDER BY config_id) - 1)::INTEGER AS j "
        f"FROM configurations WHERE algorithm = ?{cfg_sql}) c USING (config_id) "
        "LEFT JOIN (SELECT dataset_id, (row_number() OVER (ORDER BY dataset_id) - 1)::INTEGER AS i "
        "FROM datasets) d USING (dataset_id)"
    )
    value = "round({}.value, %d)" % RANK_DECIMALS if rounded else "{}.value"
    i, j, vals = _fetch_codes(kb, f"SELECT coalesce(d.i, -1) AS i, c.j, {value.format('r')} AS value "
                              f"FROM runs r {codes} "
                              f"WHERE r.algorithm = ? AND r.metric = ? AND r.status = 'ok'{fid_sql}{task_sql}",
                              [algorithm, *cfg_params, algorithm, metric, *fid_params, *task_params])
    n_cols = len(configs)
    if i is not None and (not len(i) or i.min() >= 0):
        seen = np.zeros(len(datasets) * n_cols, dtype=bool)
        seen[i.astype(np.int64) * n_cols + j] = True
        if np.count_nonzero(seen) == len(i):  # one run per (task, configuration)
            return _scatter(datasets, configs, i, j, vals)
    # several runs per (task, configuration) (folds, fidelities): aggregate in SQL
    sql, extra = _per_task_sql(fidelity, dataset_ids)
    i, j, vals = _fetch_codes(kb, f"SELECT coalesce(d.i, -1) AS i, c.j, {value.format('p')} AS value "
                              f"FROM ({sql}) p {codes}",
                              [algorithm, metric, *extra, algorithm, *cfg_params])
    if i is not None and (not len(i) or i.min() >= 0):
        return _scatter(datasets, configs, i, j, vals)
    # runs of unregistered datasets or NULL means (never written by add_runs): by name
    cfg_where = "" if config_ids is None else " WHERE list_contains(?, config_id)"
    long = kb.query(f"SELECT dataset_id, config_id, {value.format('p')} AS value FROM ({sql}) p{cfg_where}",
                    [algorithm, metric, *extra, *cfg_params])
    datasets, ti = np.unique(long["dataset_id"].to_numpy(object), return_inverse=True)
    configs, ci = np.unique(long["config_id"].to_numpy(object), return_inverse=True)
    matrix = np.full((len(datasets), len(configs)), np.nan)
    matrix[ti, ci] = long["value"].to_numpy(float, na_value=np.nan)
    return datasets, configs, matrix


def _fetch_codes(
    kb: KnowledgeBase, sql: str, params: list[object]
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Columns i, j, value as arrays; i is None when some value is NULL (a masked array)."""
    try:
        res = kb.connection.execute(sql, params).fetchnumpy()
    except duckdb.Error as e:
        raise KnowledgeBaseError(f"query failed: {e}") from e
    if any(np.ma.isMaskedArray(res[c]) for c in ("i", "j", "value")):
        return None, res["j"], res["value"]
    return res["i"], res["j"], res["value"]


def _scatter(
    datasets: np.ndarray, configs: np.ndarray, i: np.ndarray, j: np.ndarray, vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matrix with y[i, j] = vals, keeping only rows and columns with a value."""
    rows = np.zeros(len(datasets), dtype=bool)
    cols = np.zeros(len(configs), dtype=bool)
    rows[i], cols[j] = True, True
    matrix = np.full((np.count_nonzero(rows), np.count_nonzero(cols)), np.nan)
    matrix[(np.cumsum(rows) - 1)[i], (np.cumsum(cols) - 1)[j]] = vals
    return datasets[rows], configs[cols], matrix


def _fetch_column(kb: KnowledgeBase, sql: str, params: list[object], column: str) -> np.ndarray:
    try:
        return np.asarray(kb.connection.execute(sql, params).fetchnumpy()[column], dtype=object)
    except duckdb.Error as e:
        raise KnowledgeBaseError(f"query failed: {e}") from e


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
        df["params"] = _decode_params(df["params"])
    return df


def configurations(kb: KnowledgeBase, algorithm: str) -> pd.DataFrame:
    """The configurations of ``algorithm``: ``config_id`` and decoded ``params``."""
    _require_algorithm(kb, algorithm)
    df = kb.query(
        "SELECT config_id, params FROM configurations WHERE algorithm = ? ORDER BY config_id", [algorithm]
    )
    df["params"] = _decode_params(df["params"])
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
    datasets, configs, values = _matrix_arrays(kb, algorithm, metric, fidelity, dataset_ids)
    if values.size == 0:
        return pd.DataFrame(dtype=float)
    return pd.DataFrame(values, index=pd.Index(datasets, name="dataset_id"),
                        columns=pd.Index(configs, name="config_id"))


def mean_ranks(
    kb: KnowledgeBase,
    algorithm: str,
    *,
    metric: str = "error_rate",
    min_tasks: int | None = None,
    fidelity: float | None = None,
    dataset_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Configurations of ``algorithm`` by mean within-task rank (1 = best), best first.

    Columns ``config_id``, ``mean_rank``, ``n_tasks``, ``params`` (decoded);
    ``dataset_ids`` restricts the tasks ranked on. Only configurations ranked on at least
    ``min_tasks`` tasks are listed; by default (None) half as many as the best-supported
    configuration (rounded up): a mean rank over one task is not comparable with one over
    forty, and would otherwise top the list.
    """
    _require_algorithm(kb, algorithm)
    _, configs, values = _matrix_arrays(kb, algorithm, metric, fidelity, dataset_ids, rounded=True)
    ranks = average_ranks(values)
    n_tasks = np.count_nonzero(~np.isnan(ranks), axis=0)
    if min_tasks is None:
        min_tasks = max(1, -(-int(n_tasks.max(initial=0)) // 2))
    keep = (n_tasks >= int(min_tasks)) & (n_tasks > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(ranks, axis=0) / n_tasks  # half-integer sums: exact
    configs, mean, n_tasks = configs[keep], mean[keep], n_tasks[keep].astype(np.int64)
    order = np.lexsort((configs, -n_tasks, mean))
    if not len(order):
        return pd.DataFrame({"config_id": pd.Series([], dtype=object), "mean_rank": pd.Series([], dtype=float),
                             "n_tasks": pd.Series([], dtype=np.int64), "params": pd.Series([], dtype=float)})
    params = dict(kb.connection.execute(
        "SELECT config_id, params FROM configurations WHERE algorithm = ?", [algorithm]).fetchall())
    return pd.DataFrame({
        "config_id": pd.array(configs[order], dtype="str"),
        "mean_rank": mean[order],
        "n_tasks": n_tasks[order],
        "params": _decode_params([params[c] for c in configs[order]]),
    })


def _decode_params(texts: Sequence[str] | pd.Series) -> list[dict]:
    """Stored params (canonical JSON objects) decoded, in one parse of a JSON array."""
    return json.loads("[" + ",".join(texts) + "]") if len(texts) else []


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Per row, the rank of each value among the row's non-NaN values (1 = lowest).

    Ties share the average of their ranks (a tie group at sorted positions s..e,
    0-based, gets (s + e) / 2 + 1); NaN stays NaN.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return values.copy()
    if np.isposinf(values).any():
        order = np.argsort(values, axis=1)  # NaN last
    else:  # NaN as +inf: the same order, and numpy's SIMD argsort (several times faster)
        order = np.argsort(np.where(np.isnan(values), np.inf, values), axis=1)
    n_rows, n_cols = values.shape
    flat_order = (order + (np.arange(n_rows) * n_cols)[:, None]).ravel()
    srt = values.ravel()[flat_order]
    # tie groups over the flattened rows; each row starts a group
    starts_group = np.ones(srt.size, dtype=bool)
    starts_group[1:] = srt[1:] != srt[:-1]
    starts_group[::n_cols] = True
    first = np.flatnonzero(starts_group)
    last = np.append(first[1:], srt.size) - 1
    pos = np.tile(np.arange(n_cols), n_rows)  # position within the row (no integer division)
    mean_rank = (pos[first] + pos[last]) / 2 + 1
    rank_sorted = mean_rank[np.cumsum(starts_group) - 1]
    rank_sorted[np.isnan(srt)] = np.nan
    ranks = np.empty(values.size)
    ranks[flat_order] = rank_sorted
    return ranks.reshape(values.shape)


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
    matrix = meta_feature_matrix(kb, names)
    if isinstance(target, str):
        if target not in matrix.index:
            raise InputDataError(f"dataset {target!r} has no meta-features stored")
        query: Mapping[str, float] = matrix.loc[target].to_dict()
        exclude = (*exclude, target)
    else:
        query = target
    return nearest_from_matrix(matrix, query, k=k, exclude=exclude)


def nearest_from_matrix(
    matrix: pd.DataFrame, target: Mapping[str, float], *, k: int = 5, exclude: Sequence[str] = ()
) -> pd.DataFrame:
    """:func:`nearest_tasks` over a tasks x meta-features ``matrix``: Euclidean distance of
    meta-features z-scored with every row's mean and standard deviation (so excluding
    candidates does not change the metric), over the features both have, rescaled to all
    of them. Columns ``dataset_id``, ``distance``, ``n_features_used``, nearest first."""
    if k < 1:
        raise InputDataError("k must be >= 1")
    query = pd.Series({str(n): float(v) for n, v in target.items()}, dtype=float)
    common = [c for c in matrix.columns if c in query.index and np.isfinite(query[c])]
    if not common or matrix.empty:
        raise InputDataError("no meta-feature is shared by the target and the stored tasks")
    if len(matrix.index.difference(list(exclude))) == 0:
        raise InputDataError("the knowledge base holds no other task with meta-features to compare with")
    values = matrix[common].to_numpy(float)
    defined = np.isfinite(values).any(axis=0)  # a feature NaN on every task has no scale (and no warning)
    mu, sd = np.full(len(common), np.nan), np.full(len(common), np.nan)
    mu[defined] = np.nanmean(values[:, defined], axis=0)
    sd[defined] = np.nanstd(values[:, defined], axis=0)
    keep = np.isfinite(sd) & (sd > 0)
    if len(matrix) < 2:
        raise InputDataError("the knowledge base holds one task with meta-features: distances are scaled by "
                             "their spread over the stored tasks, so store at least two")
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


# ---------------------------------------------------------------------- lookups of stored runs
def dataset_ids_with_runs(kb: KnowledgeBase) -> set[str]:
    """The ids of the datasets that have at least one stored run."""
    return set(kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"])


def largest_fidelity(kb: KnowledgeBase, metrics: Sequence[str], dataset_ids: Sequence[str]) -> float | None:
    """The largest ``fidelity`` of the runs of ``metrics`` on ``dataset_ids`` (None when no
    such run records one)."""
    found = kb.query("SELECT max(fidelity) AS f FROM runs WHERE metric IN (SELECT unnest(?::VARCHAR[])) AND "
                     "dataset_id IN (SELECT unnest(?::VARCHAR[]))", [list(metrics), list(dataset_ids)]
                     )["f"].iloc[0]
    return None if found is None or found != found else float(found)


def sources_with_runs(kb: KnowledgeBase, metric: str, sources: Sequence[str]) -> set[str]:
    """Those of ``sources`` that have a stored run of ``metric``."""
    return {row[0] for row in kb.connection.execute(
        "SELECT DISTINCT source FROM runs WHERE metric = ? AND source IN (SELECT unnest(?::VARCHAR[]))",
        [metric, list(sources)],
    ).fetchall()}


def run_pairs(kb: KnowledgeBase, source: str, metric: str) -> set[tuple[str, str]]:
    """The ``(dataset_id, config_id)`` pairs with a stored run of ``source`` and ``metric``."""
    rows = kb.connection.execute(
        "SELECT DISTINCT dataset_id, config_id FROM runs WHERE source = ? AND metric = ?",
        [source, metric],
    ).fetchall()
    return {(r[0], r[1]) for r in rows}


def find_run_id(kb: KnowledgeBase, *, source: str, dataset_id: str | None, config_id: str, metric: str) -> str | None:
    """The id of a stored run of ``source`` on ``dataset_id`` of ``config_id`` and ``metric``
    (the first DuckDB finds), or None."""
    row = kb.connection.execute(
        "SELECT run_id FROM runs WHERE source = ? AND dataset_id = ? AND config_id = ? AND metric = ? LIMIT 1",
        [source, dataset_id, config_id, metric],
    ).fetchone()
    return None if row is None else str(row[0])


def _require_algorithm(kb: KnowledgeBase, algorithm: str) -> None:
    if kb.connection.execute("SELECT 1 FROM algorithms WHERE name = ?", [algorithm]).fetchone() is None:
        raise UnknownAlgorithmError(
            f"unknown algorithm {algorithm!r}; stored: {kb.algorithms()[:10]}"
        )
