"""Which configurations transfer across tasks: greedy portfolios and ranking similarity.

Notation: T tasks, C configurations of one algorithm, Y (T x C) the per-task means
y_tc of :func:`~metabo.kb.queries.performance_matrix` (lower is better, NaN where c
was not run on t), O_tc = 1 where y_tc is observed.

- :func:`greedy_portfolio`: regret r_tc = y_tc - b_t with b_t = min_c y_tc, divided by
  the range w_t - b_t (w_t = max_c y_tc) when ``normalize`` (r_tc = 0 on a task whose
  observed values are all equal), so r_tc is in [0, 1] and adding a constant to, or
  scaling, a task's values changes nothing. A portfolio P scores
  R(P) = mean_t min_{c in P, O_tc = 1} r_tc, where a member not observed on t
  contributes nothing and a task on which no member is observed counts its worst
  observed regret max_c r_tc (1 when normalized, 0 if all its values are equal: such a
  task cannot tell configurations apart and does not weigh on the choice); i.e.
  unobserved r_tc are set to the task's worst regret. Greedy:
  P_{k+1} = P_k + argmin_c R(P_k + c); scores within 1e-12 (relative) of the best
  tie, and ties go to the smallest ``config_id``.
- :func:`task_similarity`: Kendall tau-b of two tasks a, b over their shared
  configurations S_ab (observed on both):
  tau_b = sum_{i<j} s^a_ij s^b_ij / sqrt(n_a n_b), s^a_ij = sign(y_ai - y_aj), n_a the
  pairs of S_ab not tied on a (scipy's ``kendalltau`` variant "b"). Over a list of
  configuration pairs p = (i, j), with A_tp = s^t_ij (0 if i or j is unobserved on t)
  and M_tp = 1 if both are observed on t, the numerators of all task pairs are
  A A^T and the denominators' factors |A| M^T and M |A|^T (its transpose when the two
  sets of tasks are the same): matrix products, blocked over pairs. If
  C (C - 1) / 2 <= ``max_pairs`` all pairs are used and tau_b is exact; otherwise
  ``max_pairs`` pairs are drawn uniformly (with replacement, from ``seed``) and tau_b
  is their ratio estimate, with a standard error of about sqrt((1 - tau^2) / m_ab)
  for m_ab sampled pairs shared by both tasks (~0.41 ``max_pairs`` at 80% density).
  The shared count |S_ab| = (O O^T)_ab is always exact; pairs with fewer than
  ``min_shared`` shared configurations, or no untied pair, get NaN.
- :func:`nearest_tasks_by_ranking`: tau_b between a new task's observed values (a few
  configurations) and each stored task over the configurations both have, best first.

Values are compared after rounding to :data:`~metabo.kb.queries.RANK_DECIMALS`
decimals, so means equal up to floating-point noise tie (as in ``mean_ranks``).
Each ``kb`` function reads the matrix (:func:`~metabo.kb.queries._matrix_arrays`, the
per-task means of :mod:`metabo.kb.queries`) and calls its ``*_from_matrix``
counterpart. Reading is most of the cost on a large store (one scan of ``runs``); a
caller asking several questions of one algorithm (a service) can read
:func:`~metabo.kb.queries.performance_matrix` once and use the ``*_from_matrix``
functions directly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError
from metabo.kb.queries import RANK_DECIMALS, _matrix_arrays, _require_algorithm

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

#: Default number of configuration pairs above which tau_b is estimated from a sample.
MAX_PAIRS = 10_000
# Pairs per block of the matrix products (bounds memory at ~3 x T x _BLOCK floats).
_BLOCK = 4096


# ---------------------------------------------------------------------- portfolios
def greedy_portfolio(
    kb: KnowledgeBase,
    algorithm: str,
    k: int = 5,
    *,
    metric: str = "error_rate",
    dataset_ids: Sequence[str] | None = None,
    normalize: bool = True,
) -> pd.DataFrame:
    """A portfolio of ``k`` configurations of ``algorithm`` chosen greedily (see module doc).

    Returns, in the order chosen, columns ``config_id``, ``mean_regret`` (R of the
    portfolio up to that member), ``n_tasks_covered`` (tasks where some member so far
    was observed) and ``params`` (decoded); ``dataset_ids`` restricts the tasks.
    """
    _require_algorithm(kb, algorithm)
    matrix = _frame(*_matrix_arrays(kb, algorithm, metric, None, dataset_ids))
    if matrix.empty:
        raise InputDataError(f"no {metric!r} runs of {algorithm!r}; check the metric name (metabo kb stats)")
    out = greedy_portfolio_from_matrix(matrix, k, normalize=normalize)
    out["params"] = _params(kb, out["config_id"].tolist())
    return out


def greedy_portfolio_from_matrix(matrix: pd.DataFrame, k: int = 5, *, normalize: bool = True) -> pd.DataFrame:
    """:func:`greedy_portfolio` of a task x configuration matrix (without ``params``)."""
    if k < 1:
        raise InputDataError("k must be >= 1")
    if matrix.empty:
        raise InputDataError("the performance matrix is empty")
    y = matrix.to_numpy(dtype=float)
    observed = ~np.isnan(y)
    keep = observed.any(axis=1)
    if not keep.any():
        raise InputDataError("the performance matrix holds no observed value")
    if not keep.all():
        y, observed = y[keep], observed[keep]
    best, worst = np.fmin.reduce(y, axis=1), np.fmax.reduce(y, axis=1)  # NaN-ignoring
    spread = worst - best
    regret = y - best[:, None]  # NaN where unobserved
    if normalize:
        np.divide(regret, spread[:, None], out=regret, where=spread[:, None] > 0)  # spread 0: regret 0
        spread = (spread > 0).astype(float)
    np.copyto(regret, np.broadcast_to(spread[:, None], regret.shape), where=~observed)  # the task's worst
    current = spread.copy()  # empty portfolio: every task uncovered
    covered = np.zeros(len(y), dtype=bool)
    taken = np.zeros(y.shape[1], dtype=bool)
    buf = np.empty_like(regret)
    rows = []
    for _ in range(min(k, y.shape[1])):
        score = np.minimum(current[:, None], regret, out=buf).sum(axis=0) / len(y)
        score[taken] = np.inf
        best_score = score.min()
        tied = np.flatnonzero(score <= best_score + 1e-12 * max(1.0, abs(best_score)))
        pick = int(min(tied, key=lambda c: str(matrix.columns[c])))  # ties: smallest config_id
        taken[pick] = True
        current = np.minimum(current, regret[:, pick])
        covered |= observed[:, pick]
        rows.append((matrix.columns[pick], float(current.mean()), int(covered.sum())))
    return pd.DataFrame(rows, columns=["config_id", "mean_regret", "n_tasks_covered"])


# ---------------------------------------------------------------------- similarity
def task_similarity(
    kb: KnowledgeBase,
    algorithm: str,
    *,
    metric: str = "error_rate",
    dataset_ids: Sequence[str] | None = None,
    min_shared: int = 5,
    max_pairs: int = MAX_PAIRS,
    seed: Seed = 0,
) -> pd.DataFrame:
    """Task x task Kendall tau-b of their rankings of shared configurations (see module doc).

    Rows and columns ``dataset_id`` (sorted); NaN where fewer than ``min_shared``
    configurations are shared or tau_b is undefined.
    """
    _require_algorithm(kb, algorithm)
    matrix = _frame(*_matrix_arrays(kb, algorithm, metric, None, dataset_ids))
    return task_similarity_from_matrix(matrix, min_shared=min_shared, max_pairs=max_pairs, seed=seed)[0]


def similar_task_pairs(
    kb: KnowledgeBase,
    algorithm: str,
    *,
    top: int = 20,
    metric: str = "error_rate",
    dataset_ids: Sequence[str] | None = None,
    min_shared: int = 5,
    max_pairs: int = MAX_PAIRS,
    seed: Seed = 0,
) -> pd.DataFrame:
    """The ``top`` task pairs whose rankings agree most (highest tau_b), from :func:`task_similarity`.

    Columns ``dataset_a`` < ``dataset_b``, ``tau``, ``n_shared``; ties by ``n_shared``
    (more first), then names.
    """
    _require_algorithm(kb, algorithm)
    matrix = _frame(*_matrix_arrays(kb, algorithm, metric, None, dataset_ids))
    tau, shared = task_similarity_from_matrix(matrix, min_shared=min_shared, max_pairs=max_pairs, seed=seed)
    a, b = np.triu_indices(len(tau), 1)
    t = tau.to_numpy()[a, b]
    ok = ~np.isnan(t)
    names = tau.index.to_numpy(dtype=object)
    out = pd.DataFrame({"dataset_a": names[a[ok]], "dataset_b": names[b[ok]], "tau": t[ok],
                        "n_shared": shared.to_numpy()[a[ok], b[ok]]})
    out = out.sort_values(["tau", "n_shared", "dataset_a", "dataset_b"], ascending=[False, False, True, True],
                          kind="mergesort")
    return out.head(top).reset_index(drop=True)


def task_similarity_from_matrix(
    matrix: pd.DataFrame, *, min_shared: int = 5, max_pairs: int = MAX_PAIRS, seed: Seed = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tau_b, shared counts): two task x task frames of a task x configuration matrix."""
    if min_shared < 2:
        raise InputDataError("min_shared must be >= 2 (a ranking needs two configurations)")
    index = pd.Index(matrix.index, name="dataset_id")
    y = _rounded(matrix.to_numpy(dtype=float))
    observed = (~np.isnan(y)).astype(np.float32)
    shared = (observed @ observed.T).round().astype(np.int64)  # exact: counts < 2^24
    pairs = _config_pairs(y.shape[1], max_pairs, as_generator(seed))
    tau = _kendall_tau_b(y, None, pairs)
    tau[shared < min_shared] = np.nan
    return (pd.DataFrame(tau, index=index, columns=index.rename("other")),
            pd.DataFrame(shared, index=index, columns=index.rename("other")))


def nearest_tasks_by_ranking(
    kb: KnowledgeBase,
    algorithm: str,
    observations: Mapping[str, float] | str,
    *,
    k: int = 10,
    metric: str = "error_rate",
    min_shared: int = 3,
    exclude: Sequence[str] = (),
    max_pairs: int = MAX_PAIRS,
    seed: Seed = 0,
) -> pd.DataFrame:
    """The ``k`` stored tasks whose ranking agrees best with ``observations``, nearest first.

    ``observations`` maps config_id -> value on a new task (e.g. its first
    evaluations), or is a stored dataset id (its values; itself excluded). Returns
    columns ``dataset_id``, ``tau`` (tau_b over the shared configurations) and
    ``n_shared``; tasks sharing fewer than ``min_shared`` configurations are left out;
    ties by ``n_shared`` (more first), then ``dataset_id``.
    """
    _require_algorithm(kb, algorithm)
    if isinstance(observations, str):
        ds, cfg, vals = _matrix_arrays(kb, algorithm, metric, None, [observations])
        if not len(ds):
            raise InputDataError(f"no {metric!r} runs of {algorithm!r} on {observations!r}")
        exclude = (*exclude, observations)
        observations = dict(zip(cfg, vals[0]))
    obs = _observations(observations, min_shared)
    matrix = _frame(*_matrix_arrays(kb, algorithm, metric, None, None, config_ids=list(obs)))
    return nearest_tasks_by_ranking_from_matrix(matrix, obs, k=k, min_shared=min_shared, exclude=exclude,
                                                max_pairs=max_pairs, seed=seed)


def nearest_tasks_by_ranking_from_matrix(
    matrix: pd.DataFrame,
    observations: Mapping[str, float],
    *,
    k: int = 10,
    min_shared: int = 3,
    exclude: Sequence[str] = (),
    max_pairs: int = MAX_PAIRS,
    seed: Seed = 0,
) -> pd.DataFrame:
    """:func:`nearest_tasks_by_ranking` of a task x configuration matrix."""
    if k < 1:
        raise InputDataError("k must be >= 1")
    obs = _observations(observations, min_shared)
    matrix = matrix.drop(index=[e for e in exclude if e in matrix.index])
    cols = [c for c in matrix.columns if c in obs]
    empty = pd.DataFrame({"dataset_id": pd.Series([], dtype=object), "tau": pd.Series([], dtype=float),
                          "n_shared": pd.Series([], dtype=np.int64)})
    if not cols or matrix.empty:
        return empty
    y = _rounded(matrix[cols].to_numpy(dtype=float))
    x = _rounded(np.array([[obs[c] for c in cols]], dtype=float))
    shared = (~np.isnan(y)).sum(axis=1)
    tau = _kendall_tau_b(x, y, _config_pairs(len(cols), max_pairs, as_generator(seed)))[0]
    ok = (shared >= min_shared) & ~np.isnan(tau)
    out = pd.DataFrame({"dataset_id": matrix.index.to_numpy(dtype=object)[ok], "tau": tau[ok],
                        "n_shared": shared[ok].astype(np.int64)})
    out = out.sort_values(["tau", "n_shared", "dataset_id"], ascending=[False, False, True], kind="mergesort")
    return out.head(k).reset_index(drop=True) if len(out) else empty


# ---------------------------------------------------------------------- helpers
def _kendall_tau_b(a: np.ndarray, b: np.ndarray | None, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """tau_b between each row of ``a`` and each row of ``b`` (``None``: ``a``) over ``pairs``.

    NaN where no pair is untied on both sides. Counts per block are exact in float32
    (< 2^24) and summed in float64.
    """
    same = b is None
    at = np.ascontiguousarray(a.T)  # configurations x tasks: gathering pairs copies rows
    bt = at if b is None else np.ascontiguousarray(b.T)
    num = np.zeros((len(a), len(a) if b is None else len(b)))
    den_a = np.zeros_like(num)
    den_b = den_a if same else np.zeros_like(num)
    first, second = pairs
    for start in range(0, len(first), _BLOCK):
        i, j = first[start:start + _BLOCK], second[start:start + _BLOCK]
        sa, ma = _signs(at, i, j)
        sb, mb = (sa, ma) if same else _signs(bt, i, j)
        num += sa.T @ sb
        den_a += np.abs(sa).T @ mb  # pairs untied on the row of a, observed on the row of b
        if not same:
            den_b += ma.T @ np.abs(sb)
    if same:
        den_b = den_a.T
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = num / np.sqrt(den_a * den_b)
    tau[(den_a == 0) | (den_b == 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _signs(yt: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs x tasks: sign(y_ti - y_tj) (0 where either is NaN) and both-observed, float32."""
    diff = yt[i] - yt[j]
    sign = (diff > 0).astype(np.float32)  # NaN compares False: 0
    sign -= diff < 0
    return sign, (diff == diff).astype(np.float32)


def _config_pairs(n: int, max_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of ``n`` configurations, or ``max_pairs`` drawn uniformly if more."""
    if max_pairs < 1:
        raise InputDataError("max_pairs must be >= 1")
    if n * (n - 1) // 2 <= max_pairs:
        return np.triu_indices(n, 1)
    i = rng.integers(0, n, size=max_pairs)
    j = rng.integers(0, n - 1, size=max_pairs)
    return i, j + (j >= i)  # j uniform over the others


def _rounded(values: np.ndarray) -> np.ndarray:
    return np.round(values, RANK_DECIMALS)


def _observations(observations: Mapping[str, float], min_shared: int) -> dict[str, float]:
    if min_shared < 2:
        raise InputDataError("min_shared must be >= 2 (a ranking needs two configurations)")
    try:
        obs = {str(c): float(v) for c, v in observations.items()}
    except (TypeError, ValueError) as e:
        raise InputDataError(f"observations must map config_id -> number: {e}") from e
    bad = [c for c, v in obs.items() if not np.isfinite(v)]
    if bad:
        raise InputDataError(f"observations must be finite; {bad[:3]} are not")
    if len(obs) < min_shared:
        raise InputDataError(f"{len(obs)} observation(s); need at least min_shared={min_shared}")
    return obs


def _frame(datasets: np.ndarray, configs: np.ndarray, values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(values, index=pd.Index(datasets, name="dataset_id"),
                        columns=pd.Index(configs, name="config_id"))


def _params(kb: KnowledgeBase, config_ids: list[str]) -> list[dict[str, object]]:
    stored = dict(kb.connection.execute(
        "SELECT config_id, params FROM configurations WHERE list_contains(?, config_id)", [config_ids]
    ).fetchall()) if config_ids else {}
    return [json.loads(stored[c]) for c in config_ids]
