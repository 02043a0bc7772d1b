"""Store a published meta-dataset in the knowledge base: resumable, idempotent, bounded.

:func:`ingest_metadataset` runs in two stages.

1. **Header**, one transaction: the source's algorithms, its datasets (registered by
   OpenML id, so a dataset several sources describe is one row, see
   :func:`metabo.kb.datasets.register_dataset`), its meta-features (values already
   stored for a dataset under the same name, from another source or computed here,
   are kept, not overwritten), its configurations, and the provenance map
   ``source_ids`` (original id -> stored id) of datasets and configurations.
2. **Runs**, one transaction per chunk of :meth:`MetaDataset.run_chunks`: original ids
   are mapped to stored ids, the runs go through the knowledge base's bulk insert
   (anti-join on ``run_id``, so a run stored already is skipped), and the cursor
   ``metadataset:<name>`` in ``ingest_state`` advances in the same transaction. A
   killed ingestion resumes at the first uncommitted chunk; a completed one is not
   read again unless ``force`` (which re-reads everything and stores only what is
   missing).

Memory is bounded by one chunk: nothing holds the whole source in Python objects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError
from metabo.kb.datasets import dataset_ids_not_from, without_stored_meta_features
from metabo.kb.runs import insert_normalized, normalize_runs
from metabo.kb.source_ids import add_source_ids
from metabo.kb.store import KnowledgeBase
from metabo.metadatasets.base import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    META_FEATURE_COLUMNS,
    RUN_COLUMNS,
    MetaDataset,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetaDatasetReport:
    """What one :func:`ingest_metadataset` call did."""

    source: str
    datasets: int
    joined_datasets: int
    meta_features: int
    configurations: int
    chunks_read: int
    first_chunk: int
    runs_seen: int
    runs_added: int
    seconds: float

    def __str__(self) -> str:
        rate = self.runs_seen / self.seconds if self.seconds > 0 else float("nan")
        return (
            f"{self.source}: {self.datasets} datasets ({self.joined_datasets} already stored "
            f"from another source), {self.meta_features} meta-feature values, "
            f"{self.configurations} configurations; chunks {self.first_chunk}.."
            f"{self.first_chunk + self.chunks_read - 1 if self.chunks_read else self.first_chunk - 1} read, "
            f"{self.runs_seen:,} runs seen, {self.runs_added:,} new, "
            f"{self.seconds:.1f} s ({rate:,.0f} runs/s)"
        )


def state_key(source: MetaDataset | str) -> str:
    """The ``ingest_state`` key of a source's cursor."""
    return f"metadataset:{source if isinstance(source, str) else source.name}"


def ingest_metadataset(
    kb: KnowledgeBase,
    source: MetaDataset,
    *,
    force: bool = False,
    max_chunks: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> MetaDatasetReport:
    """Store ``source`` in ``kb``; return a :class:`MetaDatasetReport`.

    ``max_chunks`` stops after that many chunks (the cursor keeps the place; the next
    call goes on). ``progress`` is called with the number of runs of each chunk read.
    """
    start = time.perf_counter()
    key = state_key(source)
    state = kb.get_state(key, {}) or {}
    if state.get("complete") and not force:
        logger.info("%s is ingested already (%s runs); nothing to do", source.name, state.get("runs"))
        return MetaDatasetReport(source.name, 0, 0, 0, 0, 0, int(state.get("next_chunk", 0)), 0, 0,
                                 time.perf_counter() - start)
    with kb.transaction():
        header = _store_header(kb, source)
    if state.get("chunking", "") != source.chunking and state.get("next_chunk"):
        logger.warning("%s: the saved cursor is for chunking %r, this reader uses %r; starting "
                       "from chunk 0 (runs stored already are skipped)", source.name,
                       state.get("chunking"), source.chunking)
        state = {"runs": state.get("runs", 0)}
    first = 0 if force else int(state.get("next_chunk", 0))
    total = source.n_chunks()
    seen = added = read = 0
    for chunk in source.run_chunks(first):
        if max_chunks is not None and read >= max_chunks:
            break
        frame = _map_runs(chunk.runs, source, header.dataset_map, header.config_map, chunk.index)
        with kb.transaction():
            n_new = insert_normalized(kb, normalize_runs(kb, frame)) if len(frame) else 0
            done = chunk.index + 1 >= total
            kb.set_state(key, {"next_chunk": chunk.index + 1, "complete": done,
                               "chunking": source.chunking, "runs": int(state.get("runs", 0)) + n_new})
            state = kb.get_state(key, {})
        seen += len(frame)
        added += n_new
        read += 1
        if progress is not None:
            progress(len(frame))
    report = MetaDatasetReport(
        source.name, header.n_datasets, header.n_joined, header.n_meta_features, header.n_configs,
        read, first, seen, added, time.perf_counter() - start,
    )
    logger.info("%s", report)
    return report


@dataclass(frozen=True)
class _Header:
    dataset_map: pd.Series  # original id -> dataset_id
    config_map: pd.Series  # original id -> config_id
    n_datasets: int
    n_joined: int
    n_meta_features: int
    n_configs: int


def _require_columns(frame: pd.DataFrame, columns: tuple[str, ...], what: str, source: str) -> None:
    missing = set(columns) - set(frame.columns)
    if missing:
        raise InputDataError(f"{source}: its {what} lack columns {sorted(missing)}")


def _optional_int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _store_header(kb: KnowledgeBase, source: MetaDataset) -> _Header:
    name = source.name
    for algo in source.algorithms():
        kb.add_algorithms([algo.name], family=algo.family, description=algo.description)

    datasets = source.datasets()
    _require_columns(datasets, DATASET_COLUMNS, "datasets", name)
    if datasets["original_id"].duplicated().any():
        raise InputDataError(f"{name}: dataset original ids repeat")
    others = dataset_ids_not_from(kb, name)
    ids = []
    for row in datasets.itertuples(index=False):
        ids.append(kb.register_dataset(
            name=str(row.name), source=name, openml_id=_optional_int(row.openml_id),
            n_instances=_optional_int(row.n_instances), n_features=_optional_int(row.n_features),
            n_classes=_optional_int(row.n_classes),
            description=f"from the {name} meta-dataset (original id {row.original_id})",
        ))
    dataset_map = pd.Series(ids, index=datasets["original_id"].astype(str).to_numpy(), dtype=object)
    n_joined = len(set(ids) & others)

    meta = source.meta_features()
    _require_columns(meta, META_FEATURE_COLUMNS, "meta-features", name)
    n_meta = _store_meta_features(kb, meta, dataset_map, name)

    configs = source.configurations()
    _require_columns(configs, CONFIGURATION_COLUMNS, "configurations", name)
    if configs["original_id"].duplicated().any():
        raise InputDataError(f"{name}: configuration original ids repeat")
    config_ids = kb.add_configurations(configs["algorithm"].astype(str), configs["params"])
    config_map = pd.Series(config_ids, index=configs["original_id"].astype(str).to_numpy(), dtype=object)

    _store_source_ids(kb, name, "dataset", dataset_map)
    _store_source_ids(kb, name, "configuration", config_map)
    return _Header(dataset_map, config_map, len(dataset_map), n_joined, n_meta, len(config_map))


def _store_meta_features(kb: KnowledgeBase, meta: pd.DataFrame, dataset_map: pd.Series, name: str) -> int:
    """Insert the source's meta-features where no value of that name is stored yet."""
    if meta.empty:
        return 0
    orig = meta["original_id"].astype(str)
    unknown = sorted(set(orig) - set(dataset_map.index))
    if unknown:
        raise InputDataError(f"{name}: meta-features of unknown datasets {unknown[:5]}")
    values = pd.to_numeric(meta["value"], errors="coerce").astype(np.float64)
    frame = pd.DataFrame({
        "dataset_id": dataset_map.reindex(orig).to_numpy(), "name": meta["name"].astype(str).to_numpy(),
        "value": values.where(np.isfinite(values)).to_numpy(), "source": name,
    }).drop_duplicates(["dataset_id", "name"], keep="first")
    frame = without_stored_meta_features(kb, frame)
    if frame.empty:
        return 0
    return kb.add_meta_features_frame(frame)


def _store_source_ids(kb: KnowledgeBase, source: str, kind: str, mapping: pd.Series) -> None:
    frame = pd.DataFrame({"source": source, "kind": kind, "original_id": mapping.index.astype(str),
                          "local_id": mapping.to_numpy().astype(str)})
    add_source_ids(kb, frame)


def _map_runs(runs: pd.DataFrame, source: MetaDataset, dataset_map: pd.Series, config_map: pd.Series,
              index: int) -> pd.DataFrame:
    """A chunk with original ids -> the ``runs`` columns with stored ids."""
    _require_columns(runs, RUN_COLUMNS, f"runs (chunk {index})", source.name)
    frame = runs.drop(columns=["dataset", "configuration"])
    ds = dataset_map.reindex(runs["dataset"].astype(str).to_numpy())
    cf = config_map.reindex(runs["configuration"].astype(str).to_numpy())
    for what, mapped, orig in (("dataset", ds, runs["dataset"]), ("configuration", cf, runs["configuration"])):
        if mapped.isna().any():
            bad = sorted(set(orig[mapped.isna().to_numpy()].astype(str)))[:5]
            raise InputDataError(f"{source.name}: chunk {index} has runs of unknown {what}(s) {bad}")
    frame["dataset_id"] = ds.to_numpy()
    frame["config_id"] = cf.to_numpy()
    if "metric" not in frame.columns:
        frame["metric"] = source.metric
    frame["source"] = source.name
    return frame
