"""OpenML qualities that ship offline, joined by OpenML id onto every stored dataset.

A published meta-dataset such as OBOE or PMF names its datasets by OpenML id and ships
no meta-features, so its tasks cannot be compared with a new dataset by meta-features.
Other collections ship OpenML's qualities of (some of) the same datasets; this module
turns them into the project's meta-features (:mod:`metabo.data.meta_features.published`
says which names and why) and stores them on every dataset of that OpenML id, whichever
source registered it (dataset ids are ``openml-<id>`` for all of them, see
:func:`metabo.kb.datasets.register_dataset`).

Sources (:data:`QUALITY_SOURCES`, in the order their values are preferred):

- ``lcdb``: ``datasets.csv`` of LCDB 0.1.0 (:meth:`~metabo.metadatasets.lcdb.LCDB.qualities`):
  63 OpenML qualities of 219 datasets, as OpenML computed them (all 63 equal OpenML's
  current qualities, within 1e-6, for the datasets 3, 1119 and 1590 whose qualities
  scikit-learn's test fixtures ship), converted by
  :func:`~metabo.data.meta_features.published.from_openml_qualities`: up to 40 of the
  project's features.
- ``oboe``: ``dataset_sizes.csv`` of ``oboe==0.2.0``, column ``0``: the rows of each of
  its 418 datasets, which is OpenML's ``NumberOfInstances`` (equal to LCDB's on all 96
  shared ids). Column ``1`` counts OBOE's one-hot encoded columns plus the label, not
  OpenML's ``NumberOfFeatures``; it is left out.

Not joinable offline: auto-sklearn 0.15.0 names its datasets (lower-cased OpenML names)
without ids, and a name does not identify a version (of its 208 names, 90 are names in
LCDB's table, 9 of them of several versions there; of the 81 others, 3 have another
``NumberOfClasses`` and 5 another ``NumberOfFeatures`` there); its exact
conversions are stored on its own datasets at ingestion
(:meth:`~metabo.metadatasets.autosklearn.AutoSklearnMetadata.meta_features`). PMF ships
OpenML ids and no meta-features; Tensor-OBOE neither.

Rule (idempotent): a (dataset, name) pair stored already (computed by the project,
ingested from OpenML or a collection, or joined before; a NULL, an undefined value,
included) keeps its value; a missing one gets the value of the first source in the order
given (:data:`QUALITY_SOURCES` by default) that has it, stored with that source's name
as ``meta_features.source``. Sources give defined values only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metabo.data.meta_features import meta_feature_names
from metabo.data.meta_features.published import from_openml_qualities
from metabo.exceptions import InputDataError
from metabo.kb.datasets import defined_meta_feature_counts, meta_feature_keys, openml_ids
from metabo.kb.source_ids import registered_datasets
from metabo.kb.store import KnowledgeBase
from metabo.metadatasets.base import MetaDataset
from metabo.metadatasets.lcdb import LCDB
from metabo.metadatasets.oboe import OBOE

__all__ = [
    "QUALITY_COLUMNS",
    "QUALITY_SOURCES",
    "JoinReport",
    "coverage",
    "join_qualities",
    "lcdb_qualities",
    "oboe_qualities",
    "read_qualities",
]

logger = logging.getLogger(__name__)

#: Columns of a source's table of project meta-features by OpenML id.
QUALITY_COLUMNS = ("openml_id", "name", "value")
#: Sources of qualities, most trusted first (all of LCDB's are OpenML's; OBOE's is one count).
QUALITY_SOURCES: tuple[str, ...] = ("lcdb", "oboe")


def _long(rows: Mapping[int, Mapping[str, float]]) -> pd.DataFrame:
    records = [(int(i), str(n), float(v)) for i, values in rows.items() for n, v in values.items()]
    frame = pd.DataFrame(records, columns=list(QUALITY_COLUMNS))
    return frame.astype({"openml_id": np.int64, "name": object, "value": np.float64})


def lcdb_qualities(source: LCDB) -> pd.DataFrame:
    """The project's meta-features of every dataset in LCDB's ``datasets.csv``, columns
    :data:`QUALITY_COLUMNS` (only defined values)."""
    table = source.qualities()
    return _long({int(i): from_openml_qualities(row) for i, row in table.to_dict(orient="index").items()})


def oboe_qualities(source: OBOE) -> pd.DataFrame:
    """``NumberOfInstances`` of every OBOE dataset (``dataset_sizes.csv``), columns
    :data:`QUALITY_COLUMNS`."""
    ds = source.datasets()
    ds = ds[ds["openml_id"].notna() & ds["n_instances"].notna()]
    return _long({int(i): {"NumberOfInstances": float(n)}
                  for i, n in zip(ds["openml_id"], ds["n_instances"], strict=True)})


def read_qualities(source: MetaDataset) -> pd.DataFrame:
    """The qualities table of a reader of one of :data:`QUALITY_SOURCES`."""
    if isinstance(source, LCDB):
        return lcdb_qualities(source)
    if isinstance(source, OBOE):
        return oboe_qualities(source)
    raise InputDataError(f"{source.name} ships no OpenML qualities to join; choose among {list(QUALITY_SOURCES)}")


@dataclass(frozen=True)
class JoinReport:
    """What one :func:`join_qualities` call stored."""

    datasets_with_openml_id: int
    datasets_joined: int
    values_added: int
    by_source: Mapping[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = ", ".join(f"{s}: {n:,}" for s, n in self.by_source.items()) or "none"
        return (f"{self.values_added:,} meta-feature values added to {self.datasets_joined:,} of "
                f"{self.datasets_with_openml_id:,} datasets with an OpenML id ({parts})")


def join_qualities(kb: KnowledgeBase, tables: Mapping[str, pd.DataFrame]) -> JoinReport:
    """Store the qualities ``tables`` (source name -> columns :data:`QUALITY_COLUMNS`) on
    every stored dataset of the same OpenML id, where no value of that name is stored yet.

    Sources are preferred in the order of ``tables``; all values go in one transaction.
    """
    frames = []
    for rank, (source, table) in enumerate(tables.items()):
        missing = set(QUALITY_COLUMNS) - set(table.columns)
        if missing:
            raise InputDataError(f"qualities of {source} lack columns {sorted(missing)}")
        frame = table[list(QUALITY_COLUMNS)].copy()
        frame["source"], frame["rank"] = source, rank
        frames.append(frame)
    stored_ids = openml_ids(kb)
    if not frames or stored_ids.empty:
        return JoinReport(len(stored_ids), 0, 0, {})
    values = pd.concat(frames, ignore_index=True)
    values = values[np.isfinite(values["value"].to_numpy(np.float64))]
    values = values.astype({"openml_id": np.int64})
    stored_ids = stored_ids.astype({"openml_id": np.int64})
    rows = stored_ids.merge(values, on="openml_id")
    rows = rows.sort_values(["dataset_id", "name", "rank"], kind="mergesort")
    rows = rows.drop_duplicates(["dataset_id", "name"], keep="first")
    stored = meta_feature_keys(kb)  # NULL: stored as undefined
    if not stored.empty and not rows.empty:
        known = pd.MultiIndex.from_frame(stored[["dataset_id", "name"]])
        rows = rows[~pd.MultiIndex.from_frame(rows[["dataset_id", "name"]]).isin(known)]
    if rows.empty:
        return JoinReport(len(stored_ids), 0, 0, {})
    kb.add_meta_features_frame(rows[["dataset_id", "name", "value", "source"]])
    by_source = {s: int(n) for s, n in rows["source"].value_counts().items()}
    report = JoinReport(len(stored_ids), int(rows["dataset_id"].nunique()), len(rows),
                        {s: by_source[s] for s in tables if s in by_source})
    logger.info("%s", report)
    return report


def coverage(kb: KnowledgeBase, sources: Sequence[str] | None = None,
             names: Sequence[str] | None = None) -> pd.DataFrame:
    """How many of the project's meta-features (``names``, default all of
    :func:`~metabo.data.meta_features.meta_feature_names`) each dataset of each ingested
    source (``sources``, default every source in ``source_ids``) has, as a histogram:
    columns ``source``, ``n_meta_features``, ``datasets`` (datasets with exactly that
    many defined values), sources sorted by name, counts descending."""
    names = list(meta_feature_names() if names is None else names)
    registered = registered_datasets(kb)
    if sources is not None:
        unknown = sorted(set(sources) - set(registered["source"]))
        if unknown:
            raise InputDataError(f"no datasets of {unknown} are stored; ingest them first "
                                 "(`metabo ingest <source> --max-chunks 0` stores the datasets only)")
        registered = registered[registered["source"].isin(list(sources))]
    counts = defined_meta_feature_counts(kb, names)
    per = registered.drop_duplicates().merge(counts, on="dataset_id", how="left")
    per["n"] = per["n"].fillna(0).astype(np.int64)
    hist = per.groupby(["source", "n"]).size().rename("datasets").reset_index()
    hist = hist.rename(columns={"n": "n_meta_features"})
    return hist.sort_values(["source", "n_meta_features"], ascending=[True, False], ignore_index=True)
