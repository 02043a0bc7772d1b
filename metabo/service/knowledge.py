"""What the knowledge base tells a new task, and bulk ingestion of runs, for the service.

Each function takes the bare store (the caller holds its lock) and returns plain
records: warm-start suggestions for given meta-features (the kNN design of ``metabo
suggest``), the nearest stored tasks, per-configuration transfer ranks with a greedy
portfolio (``metabo transfer``), and :func:`ingest_runs`, which checks every run against
its algorithm's space before storing the batch in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


def _finite(meta_features: Mapping[str, float | None]) -> dict[str, float]:
    return {str(k): float(v) for k, v in meta_features.items() if v is not None and math.isfinite(v)}


def _names(kb: KnowledgeBase, dataset_ids: Iterable[str]) -> dict[str, str]:
    from metabo.kb.datasets import dataset_names

    ids = list(dict.fromkeys(dataset_ids))
    frame = dataset_names(kb, ids)
    return dict(zip(frame["dataset_id"], frame["name"], strict=True))


def suggestions(kb: KnowledgeBase, meta_features: Mapping[str, float | None], *, k: int = 5,
                algorithms: Sequence[str] | None = None, metric: str = "error_rate",
                exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The best configuration of each of the ``k`` nearest stored tasks (by meta-features),
    nearest first (:func:`metabo.strategies.knn.warm_start_suggestions`); ``exclude``:
    tasks to leave out."""
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies.knn import warm_start_suggestions

    space = default_cash_space(algorithms)
    past = PastRuns.from_kb(kb, metric=metric, algorithms=list(space.algorithms)).without(exclude)
    rows = warm_start_suggestions(past, _finite(meta_features), space, k=k)
    names = _names(kb, (r["from_task"] for r in rows))
    return [{**r, "task_name": names.get(r["from_task"], r["from_task"])} for r in rows]


def nearest(kb: KnowledgeBase, meta_features: Mapping[str, float | None], *, k: int = 5,
            exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``k`` stored tasks nearest in meta-feature space (:func:`metabo.kb.queries.nearest_tasks`)."""
    from metabo.kb.queries import nearest_tasks

    frame = nearest_tasks(kb, _finite(meta_features), k=k, exclude=exclude)
    names = _names(kb, frame["dataset_id"])
    return [{"dataset_id": str(d), "name": names.get(d, d), "distance": float(dist), "n_features_used": int(n)}
            for d, dist, n in zip(frame["dataset_id"], frame["distance"], frame["n_features_used"], strict=True)]


def _records(frame: pd.DataFrame, ints: Sequence[str], floats: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for row in frame.to_dict(orient="records"):
        row = {**row, **{c: int(row[c]) for c in ints}, **{c: float(row[c]) for c in floats}}
        row["config_id"] = str(row["config_id"])
        out.append(row)
    return out


def ranks(kb: KnowledgeBase, algorithm: str, *, metric: str = "error_rate", top: int = 10, k: int = 5,
          min_tasks: int | None = None) -> dict[str, Any]:
    """Configurations of ``algorithm`` by mean within-task rank (the ``top`` best,
    :func:`~metabo.kb.queries.mean_ranks`) and a greedy portfolio of ``k``
    (:func:`~metabo.kb.transfer.greedy_portfolio`)."""
    from metabo.kb.queries import mean_ranks
    from metabo.kb.transfer import greedy_portfolio

    ranked = mean_ranks(kb, algorithm, metric=metric, min_tasks=min_tasks).head(top)
    portfolio = greedy_portfolio(kb, algorithm, k, metric=metric)
    return {"algorithm": algorithm, "metric": metric,
            "mean_ranks": _records(ranked, ["n_tasks"], ["mean_rank"]),
            "portfolio": _records(portfolio, ["n_tasks_covered"], ["mean_regret"])}


def ingest_runs(kb: KnowledgeBase, runs: Sequence[Mapping[str, Any]], *, source: str) -> int:
    """Store ``runs`` (mappings with the fields of :class:`~metabo.service.schemas.RunIn`)
    as runs of ``source``; return how many were new.

    Each run's metric must be one the project knows, its value one that metric can take
    (:func:`~metabo.evaluation.metrics.check_value`), and its params are validated against its algorithm's space
    (:class:`~metabo.exceptions.InvalidConfigurationError` names the first bad
    hyperparameter and its row) and normalized; the algorithms are registered and the
    runs written in one transaction, so a bad row stores nothing.
    """
    from metabo.evaluation.metrics import check_value, get_metric
    from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
    from metabo.space.algorithms import get_algorithm

    rows = []
    for i, run in enumerate(runs):
        try:
            get_metric(run.get("metric", "error_rate"))
            if run.get("value") is not None:
                check_value(run.get("metric", "error_rate"), run["value"])
            params = get_algorithm(run["algorithm"]).space.normalize(run["params"])
        except UnknownAlgorithmError as e:  # a bad field of the body (422), not a missing resource
            raise InputDataError(f"run {i}: {e}") from e
        except (InvalidConfigurationError, InputDataError) as e:
            raise type(e)(f"run {i}: {e}") from e
        rows.append({**{k: v for k, v in run.items() if v is not None}, "params": params, "source": source})
    with kb.transaction():
        kb.add_algorithms(sorted({r["algorithm"] for r in rows}))
        return kb.add_runs(rows)
