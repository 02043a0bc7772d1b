"""Ingest OpenML run evaluations into the knowledge base, page by page and resumably.

For each page of ``evaluation/list`` (one metric, optionally some tasks and flows) it
fetches the setups of the page's runs (``setup/list``) and, once per dataset, the
dataset's description and qualities; then, in one transaction, it stores the datasets
(``openml-<id>``, qualities as meta-features with source ``openml``), algorithms,
configurations and runs together with the cursor of the next page
(:meth:`~metabo.kb.store.KnowledgeBase.set_state`). A second call resumes after the
last stored page; a killed process loses at most the page in flight.

Flows become project algorithms by :func:`~metabo.ingest.openml_flows.map_flow` (a flow
it cannot map is kept as ``openml-flow:<flow name>`` and counted in
:class:`IngestReport`); values become lower-is-better metrics by
:func:`~metabo.ingest.openml_metrics.metric_mapping`. Runs are aggregate evaluations:
fold 0, repeat 0, source ``openml-run:<run id>``. The names of both modules are
re-exported here.
"""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import openml
import pandas as pd

from metabo.exceptions import InputDataError, OpenMLResponseError
from metabo.ingest.openml_client import (
    DEFAULT_RETRY,
    RetryPolicy,
    call_openml,
    current_server,
    openml_config,
)
from metabo.ingest.openml_flows import (
    NON_HYPERPARAMETERS,
    PIPELINE,
    SKLEARN_ALGORITHMS,
    UNMAPPED_PREFIX,
    decode_value,
    flow_base_name,
    map_flow,
    sklearn_algorithm,
    split_flow_name,
)
from metabo.ingest.openml_metrics import METRICS, MetricMapping, metric_mapping
from metabo.kb.canonical import config_id

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

__all__ = [
    "METRICS",
    "NON_HYPERPARAMETERS",
    "PIPELINE",
    "SKLEARN_ALGORITHMS",
    "UNMAPPED_PREFIX",
    "IngestReport",
    "MetricMapping",
    "decode_value",
    "flow_base_name",
    "ingest_openml",
    "map_flow",
    "metric_mapping",
    "sklearn_algorithm",
    "split_flow_name",
    "state_key",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestReport:
    """What one :func:`ingest_openml` call did.

    Attributes:
        runs_fetched: evaluations received (this call).
        runs_new: runs newly written (the rest were stored already).
        datasets: distinct OpenML datasets of the fetched runs.
        configurations: distinct configurations of the fetched runs.
        unmapped_flows: flows kept as ``openml-flow:<name>`` (sorted names).
        unmapped_runs: fetched runs of those flows.
        runs_skipped: evaluations without a value (logged, not stored).
        pages: evaluation pages stored by this call.
        offset: the cursor after this call (evaluations stored in total).
    """

    runs_fetched: int = 0
    runs_new: int = 0
    datasets: int = 0
    configurations: int = 0
    unmapped_flows: tuple[str, ...] = ()
    unmapped_runs: int = 0
    runs_skipped: int = 0
    pages: int = 0
    offset: int = 0


@dataclass
class _Progress:
    """Mutable tallies behind the frozen report."""

    runs_fetched: int = 0
    runs_new: int = 0
    datasets: set[int] = field(default_factory=set)
    configurations: set[str] = field(default_factory=set)
    unmapped_flows: set[str] = field(default_factory=set)
    unmapped_runs: int = 0
    runs_skipped: int = 0
    pages: int = 0
    offset: int = 0

    def report(self) -> IngestReport:
        return IngestReport(
            runs_fetched=self.runs_fetched, runs_new=self.runs_new, datasets=len(self.datasets),
            configurations=len(self.configurations), unmapped_flows=tuple(sorted(self.unmapped_flows)),
            unmapped_runs=self.unmapped_runs, runs_skipped=self.runs_skipped, pages=self.pages,
            offset=self.offset,
        )


# ---------------------------------------------------------------------- fetching
def _list_page(
    metric: str, offset: int, size: int, tasks: list[int] | None, flows: list[int] | None,
    retry: RetryPolicy,
) -> pd.DataFrame:
    endpoint = f"evaluation/list/function/{metric}/limit/{size}/offset/{offset}"
    if tasks:
        endpoint += "/task/" + ",".join(map(str, tasks))
    if flows:
        endpoint += "/flow/" + ",".join(map(str, flows))
    frame = call_openml(
        openml.evaluations.list_evaluations, endpoint=f"{endpoint} (and user/list)", retry=retry,
        function=metric, offset=offset, size=size, tasks=tasks, flows=flows,
        output_format="dataframe",
    )
    if len(frame) and not {"run_id", "setup_id", "flow_name", "data_id", "value"} <= set(frame.columns):
        raise OpenMLResponseError(f"OpenML endpoint {endpoint} returned no evaluation columns")
    return frame


def _fetch_setups(ids: Iterable[int], retry: RetryPolicy) -> dict[int, list[dict[str, Any]]]:
    """Setup id -> its parameter records, 100 ids per request (URL length)."""
    ids = sorted(set(int(i) for i in ids))
    out: dict[int, list[dict[str, Any]]] = {}
    for start in range(0, len(ids), 100):
        chunk = ids[start: start + 100]
        endpoint = f"setup/list/setup/{','.join(map(str, chunk))}"
        frame = call_openml(
            openml.setups.list_setups, endpoint=endpoint, retry=retry, setup=chunk,
            output_format="dataframe",
        )
        for sid, params in zip(frame.get("setup_id", []), frame.get("parameters", []), strict=True):
            out[int(sid)] = list((params or {}).values())
        missing = set(chunk) - set(out)
        if missing:
            raise OpenMLResponseError(f"OpenML endpoint {endpoint} did not return setups {sorted(missing)}")
    return out


def _fetch_dataset(did: int) -> tuple[str, dict[str, float], str | None]:
    """Name, qualities and default target of an OpenML dataset (no data download)."""
    try:
        ds = openml.datasets.get_dataset(
            did, download_data=False, download_qualities=True, download_features_meta_data=False,
        )
        return str(ds.name), dict(ds.qualities or {}), ds.default_target_attribute
    except BaseException:
        # the client caches what it downloaded before parsing it: drop a bad copy
        shutil.rmtree(Path(openml.config.get_cache_directory()) / "datasets" / str(did), ignore_errors=True)
        raise


def _known_datasets(kb: KnowledgeBase, dids: Iterable[int]) -> dict[int, str]:
    """OpenML ids already stored with OpenML meta-features -> their dataset ids."""
    out = {}
    for did in dids:
        row = kb.connection.execute(
            "SELECT d.dataset_id FROM datasets d WHERE d.openml_id = ? AND EXISTS "
            "(SELECT 1 FROM meta_features m WHERE m.dataset_id = d.dataset_id AND m.source = 'openml') "
            "ORDER BY d.dataset_id LIMIT 1",
            [int(did)],
        ).fetchone()
        if row is not None:
            out[int(did)] = str(row[0])
    return out


def _qualities_fields(qualities: Mapping[str, float], target: str | None) -> dict[str, Any]:
    def whole(name: str) -> int | None:
        v = qualities.get(name)
        return int(v) if v is not None and math.isfinite(v) else None

    n_features, n_classes = whole("NumberOfFeatures"), whole("NumberOfClasses")
    if n_features is not None and target:
        n_features -= 1
    task = "regression" if n_classes == 0 else "classification"
    return {"n_instances": whole("NumberOfInstances"), "n_features": n_features,
            "n_classes": n_classes or None, "task": task}


# ---------------------------------------------------------------------- ingestion
def state_key(server: str, metric: str, task_ids: Sequence[int], flow_ids: Sequence[int]) -> str:
    """The ``ingest_state`` key of one (server, metric, tasks, flows) ingestion."""
    tasks = ",".join(map(str, sorted(set(task_ids)))) or "*"
    flows = ",".join(map(str, sorted(set(flow_ids)))) or "*"
    return f"openml:{server}:{metric}:{tasks}:{flows}"


def ingest_openml(
    kb: KnowledgeBase,
    *,
    task_ids: Iterable[int] = (),
    flow_ids: Iterable[int] = (),
    metric: str = "predictive_accuracy",
    server: str | None = None,
    cache_dir: str | Path | None = None,
    page_size: int = 1000,
    max_runs: int | None = None,
    progress: Callable[[int], None] | None = None,
    lower_is_better: bool | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> IngestReport:
    """Store OpenML evaluations of ``metric`` (on ``task_ids``, by ``flow_ids``) in ``kb``.

    Args:
        kb: the knowledge base.
        task_ids, flow_ids: filters; empty means all.
        metric: the OpenML evaluation measure (see :data:`METRICS`).
        server, cache_dir: the OpenML API root and the client's cache (default: the
            client's settings), set only for this call.
        page_size: evaluations per request and per transaction.
        max_runs: stop after this many evaluations (this call); ``None``: all.
        progress: called with the number of evaluations of each stored page
            (``tqdm(...).update`` fits).
        lower_is_better: direction of a metric outside :data:`METRICS`.
        retry: tries and backoff for transient server failures.

    Returns:
        The :class:`IngestReport`. Calling again resumes after the last stored page.

    Raises:
        InputDataError: an unknown metric without ``lower_is_better``, or bad arguments.
        OpenMLResponseError: a malformed response, or a server failing every try; the
            page being fetched is not stored, earlier pages are.
    """
    mapping = metric_mapping(metric, lower_is_better)
    if page_size < 1:
        raise InputDataError(f"page_size must be >= 1, got {page_size}")
    if max_runs is not None and max_runs < 0:
        raise InputDataError(f"max_runs must be >= 0, got {max_runs}")
    tasks = sorted({int(t) for t in task_ids}) or None
    flows = sorted({int(f) for f in flow_ids}) or None
    with openml_config(server, cache_dir):
        key = state_key(current_server(), metric, tasks or (), flows or ())
        cursor = dict(kb.get_state(key, {}) or {})
        prog = _Progress(offset=int(cursor.get("offset", 0)))
        setups: dict[int, list[dict[str, Any]]] = {}
        datasets: dict[int, str] = {}
        while max_runs is None or prog.runs_fetched < max_runs:
            size = page_size if max_runs is None else min(page_size, max_runs - prog.runs_fetched)
            page = _list_page(metric, prog.offset, size, tasks, flows, retry)
            if len(page) == 0:
                break
            _store_page(kb, page, mapping, prog, setups, datasets, key, cursor, retry)
            if progress is not None:
                progress(len(page))
            if len(page) < size:
                break
    report = prog.report()
    logger.info("OpenML ingestion %s: %s", key, report)
    return report


def _store_page(
    kb: KnowledgeBase, page: pd.DataFrame, mapping: MetricMapping, prog: _Progress,
    setups: dict[int, list[dict[str, Any]]], datasets: dict[int, str], key: str,
    cursor: dict[str, Any], retry: RetryPolicy,
) -> None:
    """Fetch what one page needs, then write it and the cursor in one transaction."""
    page = page.sort_values("run_id", kind="stable").reset_index(drop=True)
    setups.update(_fetch_setups(set(page["setup_id"].astype(int)) - set(setups), retry))
    dids = sorted(set(page["data_id"].astype(int)))
    datasets.update(_known_datasets(kb, [d for d in dids if d not in datasets]))
    fetched = {
        did: call_openml(_fetch_dataset, did, endpoint=f"data/{did} and data/qualities/{did}", retry=retry)
        for did in dids if did not in datasets
    }
    value = pd.to_numeric(page["value"], errors="coerce").to_numpy(np.float64)
    has_value = np.isfinite(value)
    for run_id in page.loc[~has_value, "run_id"]:
        logger.warning("OpenML run %s has no %s value; not stored", run_id, page["function"].iloc[0])

    rows, unmapped_runs, unmapped, configs = [], 0, set(), set()
    for i, ev in enumerate(page.itertuples(index=False)):
        if not has_value[i]:
            continue
        algorithm, params, mapped = map_flow(str(ev.flow_name), setups[int(ev.setup_id)])
        if not mapped:
            unmapped_runs += 1
            unmapped.add(algorithm.removeprefix(UNMAPPED_PREFIX))
        configs.add(config_id(algorithm, params))
        rows.append({
            "data_id": int(ev.data_id), "algorithm": algorithm, "params": params,
            "value": mapping.convert(float(value[i])),
            "source": f"openml-run:{int(ev.run_id)}",
            "message": f"task={int(ev.task_id)} flow={int(ev.flow_id)} setup={int(ev.setup_id)}",
        })
    new_offset = prog.offset + len(page)
    with kb.transaction():
        for did, (name, qualities, target) in fetched.items():
            datasets[did] = kb.register_dataset(
                name=name, source="openml", openml_id=did, **_qualities_fields(qualities, target),
                description=f"OpenML dataset {did}",
            )
            clean = {k: (v if math.isfinite(v) else float("nan")) for k, v in qualities.items()}
            if clean:
                kb.add_meta_features(datasets[did], clean, source="openml")
        algos = {r["algorithm"] for r in rows}
        kb.add_algorithms(sorted(a for a in algos if not a.startswith(UNMAPPED_PREFIX)))
        kb.add_algorithms(
            sorted(a for a in algos if a.startswith(UNMAPPED_PREFIX)), family="openml-flow",
            description="OpenML flow kept under its own name (not mapped to a metabo algorithm)",
        )
        frame = pd.DataFrame(rows, columns=["data_id", "algorithm", "params", "value", "source", "message"])
        frame.insert(0, "dataset_id", [datasets[d] for d in frame.pop("data_id")])
        frame["metric"] = mapping.name
        frame["fold"], frame["repeat"], frame["status"] = 0, 0, "ok"
        new = kb.add_runs(frame) if len(frame) else 0
        state = {**cursor, "offset": new_offset, "pages": int(cursor.get("pages", 0)) + 1,
                 "last_run_id": int(page["run_id"].max())}
        kb.set_state(key, state)
    cursor.clear()
    cursor.update(state)
    # the page counts only once committed
    prog.runs_fetched += len(page)
    prog.runs_new += new
    prog.unmapped_runs += unmapped_runs
    prog.runs_skipped += int((~has_value).sum())
    prog.pages += 1
    prog.offset = new_offset
    prog.datasets.update(dids)
    prog.configurations.update(configs)
    prog.unmapped_flows.update(unmapped)
