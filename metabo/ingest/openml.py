"""Ingest OpenML run evaluations into the knowledge base, page by page and resumably.

For each page of ``evaluation/list`` (one metric, optionally some tasks and flows) it
leaves out the runs already stored (same ``openml-run:<id>`` source and metric), fetches
the setups of the others (``setup/list``) and, once per dataset, the dataset's
description and qualities; then, in one transaction, it stores the datasets
(``openml-<id>``, qualities as meta-features with source ``openml``), algorithms,
configurations and runs together with the ingestion's state
(:meth:`~metabo.kb.store.KnowledgeBase.set_state`). A killed process loses at most the
page in flight.

Every call lists the selection from its start: OpenML orders its listing only when asked
to sort by value, so an offset saved by one call would skip rows in the next once runs
were added or deleted before it. A run already stored costs its row of the listing and
nothing else; one that a call missed (the order changed under its paging) is found by
the next.

A listing ends at its first empty page (OpenML's "no results"), not at a short one: a
server may answer fewer rows than asked for in the middle of a listing. A run listed
twice in one call means the listing's order changed between pages, so as many rows may
have been missed: the call stops listing when a page brings nothing new and says so
(:attr:`IngestReport.listing_incomplete`); the next call finds what it missed.

What OpenML cannot give costs only the runs that need it: a setup it does not return
(deleted), a dataset it does not know (error 111) or keep private (112), and a setup
whose parameters are another flow's (:func:`~metabo.ingest.openml_flows.setup_flow_mismatch`)
leave their runs out; the report counts and names them, and the ingestion's state
(``missing``) lists the setups and datasets still missing.

A dataset without OpenML qualities (errors 362, 363 and 364, see
:mod:`~metabo.ingest.openml_fetch`) is stored without meta-features and flagged:
``flags["openml_qualities"]`` names the reason (``metabo kb datasets`` shows it) and
:attr:`IngestReport.datasets_without_qualities` lists it. A later call with new runs on
it asks again, stores the qualities if OpenML has them by then, and lifts the flag.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.data.openml_client import (
    DEFAULT_RETRY,
    RetryPolicy,
    check_server,
    current_server,
    openml_config,
)
from metabo.exceptions import FetchError, InputDataError
from metabo.ingest.openml_fetch import (
    OpenMLDatasetInfo,
    OpenMLSetupInfo,
    fetch_dataset,
    fetch_setups,
    list_evaluations_page,
)
from metabo.ingest.openml_flows import (
    NON_HYPERPARAMETERS,
    PIPELINE,
    SKLEARN_ALGORITHMS,
    UNMAPPED_PREFIX,
    decode_value,
    flow_base_name,
    map_flow,
    setup_flow_mismatch,
    sklearn_algorithm,
    split_flow_name,
)
from metabo.ingest.openml_metrics import METRICS, MetricMapping, metric_mapping
from metabo.kb.canonical import config_id
from metabo.kb.datasets import dataset_with_openml_meta_features

if TYPE_CHECKING:
    from pathlib import Path

    from metabo.kb.store import KnowledgeBase

__all__ = [
    "METRICS",
    "NO_QUALITIES_FLAG",
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


#: The dataset flag of an OpenML dataset stored without OpenML's qualities.
NO_QUALITIES_FLAG = "openml_qualities"


@dataclass(frozen=True)
class IngestReport:
    """What one :func:`ingest_openml` call did.

    Attributes:
        runs_listed: evaluations the listing returned (this call), stored ones included.
        runs_fetched: of those, the runs not stored before (their setups and datasets
            were fetched).
        runs_new: runs newly written.
        datasets: distinct OpenML datasets of the fetched runs.
        configurations: distinct configurations of the fetched runs.
        unmapped_flows: flows kept as ``openml-flow:<name>`` (sorted names).
        unmapped_runs: fetched runs of those flows.
        runs_skipped: evaluations without a value (logged, not stored).
        datasets_without_qualities: OpenML ids of the datasets stored without
            meta-features, OpenML having no qualities for them (flagged
            ``openml_qualities``).
        pages: evaluation pages whose runs this call stored.
        missing_setups: setups OpenML did not return (deleted); their runs not stored.
        missing_datasets: OpenML ids of datasets OpenML does not know (error 111) or
            does not show (112); their runs not stored.
        runs_unavailable: fetched runs not stored for a missing setup or dataset.
        wrong_flow_setups: setups whose parameters are not their run's flow's; their
            runs not stored.
        runs_wrong_flow: fetched runs of those setups.
        listing_incomplete: why the listing may have left runs out (its order changed
            between pages); ``None``: it was read to its end (or to ``max_runs``).
    """

    runs_listed: int = 0
    runs_fetched: int = 0
    runs_new: int = 0
    datasets: int = 0
    configurations: int = 0
    unmapped_flows: tuple[str, ...] = ()
    unmapped_runs: int = 0
    runs_skipped: int = 0
    datasets_without_qualities: tuple[int, ...] = ()
    pages: int = 0
    missing_setups: tuple[int, ...] = ()
    missing_datasets: tuple[int, ...] = ()
    runs_unavailable: int = 0
    wrong_flow_setups: tuple[int, ...] = ()
    runs_wrong_flow: int = 0
    listing_incomplete: str | None = None


@dataclass
class _Progress:
    """Mutable tallies behind the frozen report, and what this call fetched already."""

    runs_listed: int = 0
    runs_fetched: int = 0
    runs_new: int = 0
    datasets: set[int] = field(default_factory=set)
    configurations: set[str] = field(default_factory=set)
    unmapped_flows: set[str] = field(default_factory=set)
    unmapped_runs: int = 0
    runs_skipped: int = 0
    without_qualities: set[int] = field(default_factory=set)
    pages: int = 0
    setups: dict[int, OpenMLSetupInfo] = field(default_factory=dict)
    dataset_ids: dict[int, str] = field(default_factory=dict)  # OpenML id -> stored id
    missing_setups: set[int] = field(default_factory=set)
    missing_datasets: set[int] = field(default_factory=set)
    runs_unavailable: int = 0
    wrong_flow: set[int] = field(default_factory=set)
    runs_wrong_flow: int = 0
    listed: set[int] = field(default_factory=set)  # run ids the listing gave this call
    repeated: int = 0  # rows of a run listed before in this call

    def incomplete(self) -> str | None:
        if not self.repeated:
            return None
        return (f"the listing's order changed between pages: {self.repeated} rows repeated, so at "
                "least as many were not listed; the next call lists them")

    def report(self) -> IngestReport:
        return IngestReport(
            runs_listed=self.runs_listed, runs_fetched=self.runs_fetched, runs_new=self.runs_new,
            datasets=len(self.datasets), configurations=len(self.configurations),
            unmapped_flows=tuple(sorted(self.unmapped_flows)), unmapped_runs=self.unmapped_runs,
            runs_skipped=self.runs_skipped, datasets_without_qualities=tuple(sorted(self.without_qualities)),
            pages=self.pages, missing_setups=tuple(sorted(self.missing_setups)),
            missing_datasets=tuple(sorted(self.missing_datasets)), runs_unavailable=self.runs_unavailable,
            wrong_flow_setups=tuple(sorted(self.wrong_flow)), runs_wrong_flow=self.runs_wrong_flow,
            listing_incomplete=self.incomplete(),
        )


# ---------------------------------------------------------------------- the store's side
def _unstored(kb: KnowledgeBase, page: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The page's evaluations whose run is not stored under ``metric`` yet, by run id."""
    from metabo.kb.queries import sources_with_runs

    page = page.drop_duplicates("run_id").sort_values("run_id", kind="stable").reset_index(drop=True)
    sources = [f"openml-run:{int(r)}" for r in page["run_id"]]
    stored = sources_with_runs(kb, metric, sources)
    return page[[s not in stored for s in sources]].reset_index(drop=True)


def _known_datasets(kb: KnowledgeBase, dids: Iterable[int]) -> dict[int, str]:
    """OpenML ids already stored with OpenML meta-features -> their dataset ids."""
    out = {}
    for did in dids:
        dataset_id = dataset_with_openml_meta_features(kb, int(did))
        if dataset_id is not None:
            out[int(did)] = dataset_id
    return out


def _set_qualities_flag(kb: KnowledgeBase, dataset_id: str, reason: str | None) -> None:
    """Set (``reason``) or lift (``None``) a dataset's :data:`NO_QUALITIES_FLAG`."""
    kb.set_dataset_flag(dataset_id, NO_QUALITIES_FLAG, None if reason is None else [reason])


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


def _store_dataset(kb: KnowledgeBase, did: int, info: OpenMLDatasetInfo) -> str:
    """Register one OpenML dataset with its qualities, or flagged without them."""
    dataset_id = kb.register_dataset(
        name=info.name, source="openml", openml_id=did, **_qualities_fields(info.qualities, info.target),
        description=f"OpenML dataset {did}",
    )
    clean = {k: (v if math.isfinite(v) else float("nan")) for k, v in info.qualities.items()}
    if clean:
        kb.add_meta_features(dataset_id, clean, source="openml")
    _set_qualities_flag(kb, dataset_id, info.missing)
    return dataset_id


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
        page_size: evaluations per request and at most per transaction.
        max_runs: stop once this many new runs are stored (this call); ``None``: all.
        progress: called with the number of evaluations of each listed page
            (``tqdm(...).update`` fits).
        lower_is_better: direction of a metric outside :data:`METRICS`.
        retry: tries, backoff, per-request timeout and per-call deadline for transient
            server failures (a server that stops answering ends the call by then).

    Returns:
        The :class:`IngestReport`. Calling again stores only what is not stored yet.

    Raises:
        InputDataError: an unknown metric without ``lower_is_better``, or bad arguments.
        OpenMLResponseError: a server URL that is not an OpenML API, a malformed
            response, a server that cannot be reached, keeps silent past the deadline or
            fails every try; the page being fetched is not stored, earlier pages are
            (the message says how many runs this call stored).
        FetchError: an error the server states (an unknown id, ...).
    """
    mapping = metric_mapping(metric, lower_is_better)
    if page_size < 1:
        raise InputDataError(f"page_size must be >= 1, got {page_size}")
    if max_runs is not None and max_runs < 0:
        raise InputDataError(f"max_runs must be >= 0, got {max_runs}")
    tasks = sorted({int(t) for t in task_ids}) or None
    flows = sorted({int(f) for f in flow_ids}) or None
    prog = _Progress()
    with openml_config(server, cache_dir):
        check_server(retry)
        key = state_key(current_server(), metric, tasks or (), flows or ())
        try:
            _list_and_store(kb, prog, key, metric, mapping, tasks, flows, page_size, max_runs, progress, retry)
        except FetchError as e:
            if not prog.runs_new:
                raise
            raise type(e)(f"{e}; the {prog.runs_new} new runs stored by this call are kept") from e
    report = prog.report()
    logger.info("OpenML ingestion %s: %s", key, report)
    return report


def _list_and_store(
    kb: KnowledgeBase, prog: _Progress, key: str, metric: str, mapping: MetricMapping, tasks: list[int] | None,
    flows: list[int] | None, page_size: int, max_runs: int | None,
    progress: Callable[[int], None] | None, retry: RetryPolicy,
) -> None:
    """Page through the listing to its end (an empty page), storing each page's new runs."""
    offset = 0
    while max_runs is None or prog.runs_new < max_runs:
        page = list_evaluations_page(metric, offset, page_size, tasks, flows, retry)
        if len(page) == 0:
            break
        offset += len(page)
        prog.runs_listed += len(page)
        ids = [int(r) for r in page["run_id"]]
        fresh = len(set(ids) - prog.listed)
        prog.repeated += len(ids) - fresh
        prog.listed.update(ids)
        new = _with_value(_unstored(kb, page, mapping.name), prog)
        if max_runs is not None:
            new = new.iloc[: max_runs - prog.runs_new]
        if len(new):
            _store_page(kb, new, mapping, prog, key, retry)
        if progress is not None:
            progress(len(page))
        if not fresh:  # nothing this call had not listed: the listing does not advance
            break


def _with_value(page: pd.DataFrame, prog: _Progress) -> pd.DataFrame:
    """The evaluations with a finite value; the others are logged and counted."""
    has_value = np.isfinite(pd.to_numeric(page["value"], errors="coerce").to_numpy(np.float64))
    for run_id, function in zip(page.loc[~has_value, "run_id"], page.loc[~has_value, "function"], strict=True):
        logger.warning("OpenML run %s has no %s value; not stored", run_id, function)
    prog.runs_skipped += int((~has_value).sum())
    return page[has_value].reset_index(drop=True)


def _store_page(
    kb: KnowledgeBase, page: pd.DataFrame, mapping: MetricMapping, prog: _Progress, key: str,
    retry: RetryPolicy,
) -> None:
    """Fetch what a page's new runs need, then write them and the state in one transaction.

    Runs whose setup or dataset OpenML cannot give, or whose setup holds another flow's
    parameters, are left out and counted.
    """
    setup_ids = set(page["setup_id"].astype(int))
    wanted = setup_ids - set(prog.setups) - prog.missing_setups
    found = fetch_setups(wanted, retry)
    prog.setups.update(found)
    gone_setups = wanted - set(found)
    if gone_setups:
        logger.warning("OpenML did not return setups %s (deleted?); their runs are not stored", sorted(gone_setups))
    dids = sorted(set(page["data_id"].astype(int)))
    prog.dataset_ids.update(_known_datasets(kb, [d for d in dids if d not in prog.dataset_ids]))
    fetched: dict[int, OpenMLDatasetInfo] = {}
    gone_datasets: set[int] = set()
    for did in dids:
        if did not in prog.dataset_ids and did not in prog.missing_datasets:
            info = fetch_dataset(did, retry)
            if info is None:
                gone_datasets.add(did)
            else:
                fetched[did] = info
    missing_setups = prog.missing_setups | gone_setups
    missing_datasets = prog.missing_datasets | gone_datasets

    rows: list[dict[str, Any]] = []
    unmapped_runs, unmapped, configs = 0, set(), set()
    wrong: set[int] = set()
    unavailable, wrong_runs = 0, 0
    for ev in page.itertuples(index=False):
        sid, did = int(ev.setup_id), int(ev.data_id)
        if sid in missing_setups or did in missing_datasets:
            unavailable += 1
            continue
        setup = prog.setups[sid]
        reason = setup_flow_mismatch(int(ev.flow_id), str(ev.flow_name), setup.flow_id, setup.parameters)
        if reason is not None:
            if sid not in prog.wrong_flow | wrong:
                logger.warning("OpenML setup %d: %s; its runs are not stored", sid, reason)
            wrong.add(sid)
            wrong_runs += 1
            continue
        algorithm, params, mapped = map_flow(str(ev.flow_name), setup.parameters)
        if not mapped:
            unmapped_runs += 1
            unmapped.add(algorithm.removeprefix(UNMAPPED_PREFIX))
        configs.add(config_id(algorithm, params))
        rows.append({
            "data_id": did, "algorithm": algorithm, "params": params,
            "value": mapping.convert(float(ev.value)),
            "source": f"openml-run:{int(ev.run_id)}",
            "message": f"task={int(ev.task_id)} flow={int(ev.flow_id)} setup={sid}",
        })
    state = {k: v for k, v in (kb.get_state(key, {}) or {}).items() if k != "offset"}
    before = state.get("missing", {"setups": [], "datasets": []})
    missing = {  # what is still missing: earlier calls' and this page's, less what this page found
        "setups": sorted((set(before.get("setups", [])) - setup_ids) | (missing_setups & setup_ids)),
        "datasets": sorted((set(before.get("datasets", [])) - set(dids)) | (missing_datasets & set(dids))),
    }
    stored_ids: dict[int, str] = {}
    new = 0
    if rows or fetched or missing != before:
        with kb.transaction():
            stored_ids = {did: _store_dataset(kb, did, info) for did, info in fetched.items()}
            ids = {**prog.dataset_ids, **stored_ids}
            algos = {r["algorithm"] for r in rows}
            kb.add_algorithms(sorted(a for a in algos if not a.startswith(UNMAPPED_PREFIX)))
            kb.add_algorithms(
                sorted(a for a in algos if a.startswith(UNMAPPED_PREFIX)), family="openml-flow",
                description="OpenML flow kept under its own name (not mapped to a metabo algorithm)",
            )
            if rows:
                frame = pd.DataFrame(rows, columns=["data_id", "algorithm", "params", "value", "source", "message"])
                frame.insert(0, "dataset_id", [ids[d] for d in frame.pop("data_id")])
                frame["metric"] = mapping.name
                frame["fold"], frame["repeat"], frame["status"] = 0, 0, "ok"
                new = kb.add_runs(frame)
            kb.set_state(key, {
                **state, "runs": int(state.get("runs", 0)) + new,
                "pages": int(state.get("pages", 0)) + bool(rows),
                "last_run_id": max(int(state.get("last_run_id", 0)), int(page["run_id"].max())),
                "missing": missing,
            })
    # the page counts only once committed
    prog.dataset_ids.update(stored_ids)
    prog.without_qualities.update(did for did, info in fetched.items() if info.missing is not None)
    prog.missing_setups |= gone_setups
    prog.missing_datasets |= gone_datasets
    prog.runs_unavailable += unavailable
    prog.wrong_flow |= wrong
    prog.runs_wrong_flow += wrong_runs
    prog.runs_fetched += len(page)
    prog.runs_new += new
    prog.unmapped_runs += unmapped_runs
    prog.pages += bool(rows)
    prog.datasets.update(dids)
    prog.configurations.update(configs)
    prog.unmapped_flows.update(unmapped)
