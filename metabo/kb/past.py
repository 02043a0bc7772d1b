"""Past runs as the warm-start methods read them: per (task, algorithm), the configurations
evaluated and their mean value, plus the tasks' meta-features.

Notation: a task is a stored dataset (``dataset_id``); for metric ``M`` (lower is better)
``y_{t,c}`` is the mean of the successful runs (``status = 'ok'``) of configuration ``c`` on
task ``t`` over folds, repeats and sources, under one protocol and at one fidelity.

- **One protocol per task** (``runs.protocol``, how a run was measured): values measured
  differently are never averaged, since they pick other best configurations
  (``reports/warm/oboe-grid``). By default (``prefer_cv="auto"``) a task's runs are those of
  the protocol ``metabo tune`` measures that task by
  (:func:`~metabo.evaluation.protocols.search_protocol` at the task's size: what a warm
  start is compared with), when the task has any; otherwise the protocol it has the most
  runs of. :attr:`PastRuns.protocols` says which each task got.
- **One fidelity**: by default the highest per task and fold (runs without a fidelity count
  as full; ``kb build`` records the training-set size; the folds of a cross-validation train
  on sizes that differ by a row, so each fold keeps its own highest).

Failed runs are left out: a warm-start method learns where good
configurations are, and a crash says nothing about the error surface. Loaded once;
:meth:`PastRuns.without` gives the leave-one-task-out views the benchmarks need
without reading the store again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


@dataclass(frozen=True)
class TaskAlgorithmRuns:
    """The configurations of one algorithm evaluated on one task, and their mean values."""

    config_ids: tuple[str, ...]
    params: tuple[dict[str, Any], ...] = field(repr=False)
    values: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.config_ids)


@dataclass(frozen=True)
class PastRuns:
    """Runs of one metric grouped by (task, algorithm), and the tasks' meta-features."""

    metric: str
    groups: Mapping[tuple[str, str], TaskAlgorithmRuns] = field(repr=False)
    meta_features: pd.DataFrame = field(repr=False)
    #: task -> the family of its runs' source (``runs.source`` before any ``:``, the most
    #: frequent): ``session`` for the project's own evaluations (``kb build``, tuning
    #: sessions), a published meta-dataset's name (``oboe``, ``pmf``, ...); where known
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: task -> the protocol its runs were measured by (``runs.protocol``), where known
    protocols: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks with runs, sorted, each once."""
        return tuple(sorted({t for t, _ in self.groups}))

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms with runs, sorted, each once."""
        return tuple(sorted({a for _, a in self.groups}))

    def __getitem__(self, key: tuple[str, str]) -> TaskAlgorithmRuns:
        return self.groups[key]

    def __contains__(self, key: object) -> bool:
        return key in self.groups

    def n_runs(self) -> int:
        """The number of runs over all (task, algorithm) groups."""
        return sum(len(g) for g in self.groups.values())

    def task_runs(self, task: str) -> dict[str, TaskAlgorithmRuns]:
        """Algorithm -> runs of ``task``."""
        return {a: g for (t, a), g in self.groups.items() if t == task}

    def without(self, tasks: str | Iterable[str]) -> PastRuns:
        """The same runs without ``tasks`` (a leave-one-task-out view; shares the arrays)."""
        drop = {tasks} if isinstance(tasks, str) else set(tasks)
        groups = {k: g for k, g in self.groups.items() if k[0] not in drop}
        return PastRuns(self.metric, groups, self.meta_features.drop(index=list(drop), errors="ignore"),
                        {t: s for t, s in self.sources.items() if t not in drop},
                        {t: p for t, p in self.protocols.items() if t not in drop})

    def only(self, tasks: Iterable[str] | None = None, algorithms: Iterable[str] | None = None) -> PastRuns:
        """The runs of ``tasks`` and ``algorithms`` only (None: all)."""
        keep_t = None if tasks is None else set(tasks)
        keep_a = None if algorithms is None else set(algorithms)
        groups = {(t, a): g for (t, a), g in self.groups.items()
                  if (keep_t is None or t in keep_t) and (keep_a is None or a in keep_a)}
        mf = self.meta_features if keep_t is None else self.meta_features.loc[
            [t for t in self.meta_features.index if t in keep_t]]
        return PastRuns(self.metric, groups, mf,
                        {t: s for t, s in self.sources.items() if keep_t is None or t in keep_t},
                        {t: p for t, p in self.protocols.items() if keep_t is None or t in keep_t})

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, metric: str = "error_rate",
                   meta_features: pd.DataFrame | None = None) -> PastRuns:
        """From rows with ``dataset_id``, ``algorithm``, ``config_id``, ``params`` (dict or
        JSON text) and ``value``; several rows of one (task, configuration) are averaged.
        An optional ``source`` column gives :attr:`sources` (each task's most frequent
        family), an optional ``protocol`` column :attr:`protocols` (each task's most frequent)."""
        need = {"dataset_id", "algorithm", "config_id", "params", "value"}
        if missing := need - set(frame.columns):
            raise InputDataError(f"past runs need the columns {sorted(need)}; missing {sorted(missing)}")
        values = pd.to_numeric(frame["value"], errors="coerce")
        if values.isna().any() or not np.all(np.isfinite(values.to_numpy(dtype=float))):
            raise InputDataError(f"past runs hold {int((~np.isfinite(values.fillna(np.nan))).sum())} "
                                 "non-finite values; keep only successful runs")
        df = frame.assign(value=values.astype(float))
        mean = df.groupby(["dataset_id", "algorithm", "config_id"], sort=True)["value"].mean()
        first = df.drop_duplicates("config_id")
        # each configuration's params parsed once (a configuration recurs across tasks)
        params_of = {c: _as_dict(p) for c, p in zip(first["config_id"].to_numpy(), first["params"].to_numpy())}
        # the sorted (task, algorithm) blocks cut by index, not by a pandas group-by per block
        keys = mean.index
        t = np.asarray(keys.get_level_values(0).astype(str), dtype=object)
        a = np.asarray(keys.get_level_values(1).astype(str), dtype=object)
        c = np.asarray(keys.get_level_values(2), dtype=object)
        v = mean.to_numpy(dtype=float)
        cut = np.flatnonzero((t[1:] != t[:-1]) | (a[1:] != a[:-1])) + 1
        groups: dict[tuple[str, str], TaskAlgorithmRuns] = {}
        for lo, hi in zip(np.r_[0, cut], np.r_[cut, len(t)]) if len(t) else ():
            cids = tuple(c[lo:hi])
            groups[(t[lo], a[lo])] = TaskAlgorithmRuns(cids, tuple(dict(params_of[x]) for x in cids), v[lo:hi].copy())
        mf = meta_features if meta_features is not None else pd.DataFrame(dtype=float)
        tasks = sorted({t for t, _ in groups})
        sources = {}
        if "source" in df.columns:
            family = df["source"].astype(str).str.split(":").str[0]
            sources = {str(t): str(part.mode().iloc[0]) for t, part in family.groupby(df["dataset_id"])}
        protocols = {}
        if "protocol" in df.columns:
            protocols = {str(t): str(part.mode().iloc[0])
                         for t, part in df["protocol"].astype(str).groupby(df["dataset_id"])}
        return cls(metric, groups, mf.reindex(index=[t for t in tasks if t in mf.index]), sources, protocols)

    @classmethod
    def from_kb(
        cls, kb: KnowledgeBase, *, metric: str = "error_rate", tasks: Sequence[str] | None = None,
        algorithms: Sequence[str] | None = None, fidelity: float | None = None,
        sources: Sequence[str] | None = None, also: Sequence[str] = (),
        prefer_cv: int | str | None = "auto", protocols: Sequence[str] | None = None,
    ) -> PastRuns:
        """The successful runs of ``metric`` at ``fidelity`` (None: each task's highest), for
        the given ``tasks``, ``algorithms`` and ``sources`` (None: all), with meta-features,
        one protocol per task (module docstring): the one ``metabo tune --cv prefer_cv``
        measures the task by when it has runs of it, else its most frequent; ``protocols``:
        only runs of these protocols (``runs.protocol`` labels; None: any).

        ``also``: metrics read from the tasks that recorded no run of ``metric`` (each
        such task contributes the first of them it recorded, e.g.
        :func:`metabo.evaluation.metrics.transfer_metrics`), so one past can hold tasks
        measured on different scales; the methods that read it compare values only
        within a task."""
        inf = "'Infinity'::DOUBLE"
        preference = list(dict.fromkeys([metric, *also]))
        where = ["r.status = 'ok'", "r.value IS NOT NULL", "isfinite(r.value)"]
        params: list[object] = []
        for column, values in (("r.dataset_id", tasks), ("r.algorithm", algorithms), ("r.source", sources),
                               ("r.protocol", protocols)):
            if values is not None:
                where.append(f"{column} IN (SELECT unnest(?))")
                params.append(list(values))
        chosen = (
            "WITH pref AS (SELECT unnest(?) AS metric, generate_subscripts(?, 1) AS rank), "
            "chosen AS (SELECT dataset_id, arg_min(metric, rank) AS metric FROM "
            "(SELECT DISTINCT dataset_id, metric FROM runs WHERE metric IN (SELECT metric FROM pref)) "
            "JOIN pref USING (metric) GROUP BY dataset_id)"
        )
        counts = kb.query(
            chosen + " SELECT r.dataset_id, coalesce(r.protocol, '') AS protocol, count(*) AS n, "
            "any_value(d.n_instances) AS n_rows FROM runs r JOIN chosen USING (dataset_id, metric) "
            "LEFT JOIN datasets d USING (dataset_id) WHERE " + " AND ".join(where) + " GROUP BY 1, 2",
            [preference, preference, *params],
        )
        picked = _pick_protocols(counts, prefer_cv)
        fid = ""
        if fidelity is not None:
            fid = " AND r.fidelity = ?"
            params.append(float(fidelity))
        frame = kb.query(
            chosen + ", picked AS (SELECT unnest(?::VARCHAR[]) AS dataset_id, unnest(?::VARCHAR[]) AS protocol), "
            "kept AS (SELECT r.* FROM runs r JOIN chosen USING (dataset_id, metric) "
            "JOIN picked p ON p.dataset_id = r.dataset_id AND p.protocol = coalesce(r.protocol, '') "
            "WHERE " + " AND ".join(where) + fid + "), "
            f"top AS (SELECT dataset_id, fold, max(coalesce(fidelity, {inf})) AS fidelity FROM kept GROUP BY 1, 2) "
            "SELECT r.dataset_id, r.algorithm, r.config_id, "
            # the folds summed in one order: avg() adds them in whatever order its threads
            # meet them, and a last-bit difference would break ties between configurations
            # differently from one call to the next
            "list_avg(list(r.value ORDER BY r.fold, r.repeat, r.run_id)) AS value, any_value(c.params) AS params, "
            "mode(r.source) AS source, any_value(coalesce(r.protocol, '')) AS protocol "
            "FROM kept r JOIN top ON top.dataset_id = r.dataset_id AND top.fold = r.fold "
            f"AND coalesce(r.fidelity, {inf}) = top.fidelity "
            "JOIN configurations c USING (config_id) GROUP BY r.dataset_id, r.algorithm, r.config_id",
            [preference, preference, list(picked), list(picked.values()), *params],
        )
        from metabo.kb.queries import meta_feature_matrix

        return cls.from_frame(frame, metric=metric, meta_features=meta_feature_matrix(kb))


def _pick_protocols(counts: pd.DataFrame, prefer_cv: int | str | None) -> dict[str, str]:
    """Task -> the protocol whose runs it contributes (module docstring), from its
    (``protocol``, ``n`` runs, ``n_rows``) rows."""
    from metabo.evaluation.protocols import protocol_label, search_protocol

    out: dict[str, str] = {}
    for task, part in counts.groupby("dataset_id", sort=True):
        n_rows = part["n_rows"].iloc[0]
        preferred = None if pd.isna(n_rows) else protocol_label(search_protocol(prefer_cv, int(n_rows)))
        have = part.sort_values(["n", "protocol"], ascending=[False, True])["protocol"].tolist()
        out[str(task)] = preferred if preferred is not None and preferred in have else have[0]
    return out


def _as_dict(params: Any) -> dict[str, Any]:
    return dict(json.loads(params)) if isinstance(params, str) else dict(params)


__all__ = ["PastRuns", "TaskAlgorithmRuns"]
