"""Datasets and their meta-features in the knowledge base.

A dataset is registered once, whatever its provenance: the same content (fingerprint)
or the same OpenML id maps onto the row already stored. Meta-features are stored per
``(dataset_id, name)``, replacing earlier values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, UnknownDatasetError
from metabo.kb._sql import scalar
from metabo.kb.timestamps import utcnow

if TYPE_CHECKING:
    from metabo.data.dataset import Dataset
    from metabo.kb.store import KnowledgeBase


def add_dataset(
    kb: KnowledgeBase,
    dataset: Dataset,
    meta_features: Mapping[str, float] | None = None,
    *,
    meta_source: str = "metabo",
) -> str:
    """Register ``dataset`` (and its meta-features); return its ``dataset_id``.

    The same content (fingerprint) or the same OpenML id maps onto the dataset
    already stored, whatever its source: one dataset, several provenances.
    """
    with kb.transaction():
        ds_id = kb.register_dataset(
            name=dataset.name,
            source=dataset.source,
            openml_id=dataset.openml_id,
            fingerprint=dataset.fingerprint,
            task=dataset.task,
            n_instances=dataset.n_instances,
            n_features=dataset.n_features,
            n_classes=dataset.n_classes,
            flags={k: list(v) for k, v in dataset.flags.items()},
            description=dataset.description,
        )
        if meta_features:
            kb.add_meta_features(ds_id, meta_features, source=meta_source)
    return ds_id


def register_dataset(
    kb: KnowledgeBase,
    *,
    name: str,
    source: str,
    openml_id: int | None = None,
    fingerprint: str | None = None,
    task: str = "classification",
    n_instances: int | None = None,
    n_features: int | None = None,
    n_classes: int | None = None,
    flags: Mapping[str, Any] | None = None,
    description: str = "",
) -> str:
    """Register a dataset known by its description only (e.g. an OpenML meta-dataset).

    Lookup order: fingerprint, OpenML id, ``<source>-<name>``; the first match is
    returned (and its missing fields filled), otherwise a new row is written. A dataset
    whose ``<source>-<name>`` is taken by other content (another fingerprint) is stored
    as ``<source>-<name>-<first 8 hex digits of its fingerprint>``, never merged into it.
    """
    if not name or not source:
        raise InputDataError("a dataset needs a non-empty name and source")
    con = kb.connection
    existing = None
    if fingerprint is not None:
        existing = con.execute(
            "SELECT dataset_id FROM datasets WHERE fingerprint = ?", [fingerprint]
        ).fetchone()
    if existing is None and openml_id is not None:
        existing = con.execute(
            "SELECT dataset_id FROM datasets WHERE openml_id = ? ORDER BY dataset_id",
            [int(openml_id)],
        ).fetchone()
    ds_id = f"openml-{int(openml_id)}" if openml_id is not None else f"{source}-{name}"
    if existing is None:
        existing = con.execute(
            "SELECT dataset_id, fingerprint FROM datasets WHERE dataset_id = ?", [ds_id]
        ).fetchone()
        if existing is not None and fingerprint is not None and existing[1] not in (None, fingerprint):
            # another table of the same name (two files called train.csv, two DataFrames):
            # a dataset of its own, named apart by its content
            ds_id = f"{ds_id}-{fingerprint[:8]}"
            existing = con.execute("SELECT dataset_id FROM datasets WHERE dataset_id = ?", [ds_id]).fetchone()
    with kb.transaction() as tx:
        if existing is not None:
            tx.execute(
                """UPDATE datasets SET
                    openml_id = coalesce(openml_id, ?), fingerprint = coalesce(fingerprint, ?),
                    n_instances = coalesce(n_instances, ?), n_features = coalesce(n_features, ?),
                    n_classes = coalesce(n_classes, ?)
                   WHERE dataset_id = ?""",
                [openml_id, fingerprint, n_instances, n_features, n_classes, existing[0]],
            )
            return str(existing[0])
        tx.execute(
            "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                ds_id, name, source, openml_id, fingerprint, task, n_instances,
                n_features, n_classes, json.dumps(dict(flags or {}), sort_keys=True),
                description, utcnow(),
            ],
        )
    return ds_id


def set_dataset_flag(kb: KnowledgeBase, dataset_id: str, flag: str, values: list[str] | None) -> None:
    """Set the quality flag ``flag`` of a stored dataset to ``values``, or lift it (None)."""
    row = kb.connection.execute("SELECT flags FROM datasets WHERE dataset_id = ?", [dataset_id]).fetchone()
    if row is None:
        raise UnknownDatasetError(f"unknown dataset {dataset_id!r}; `metabo kb datasets` lists the stored ones")
    flags = json.loads(row[0]) if row[0] else {}
    updated = {k: v for k, v in flags.items() if k != flag}
    if values is not None:
        updated[flag] = list(values)
    if updated != flags:
        with kb.transaction() as tx:
            tx.execute("UPDATE datasets SET flags = ? WHERE dataset_id = ?",
                       [json.dumps(updated, sort_keys=True), dataset_id])


def dataset_ids(kb: KnowledgeBase) -> list[str]:
    """The ids of all stored datasets, sorted."""
    return [r[0] for r in kb.connection.execute(
        "SELECT dataset_id FROM datasets ORDER BY dataset_id").fetchall()]


def get_dataset(kb: KnowledgeBase, dataset_id: str) -> dict[str, Any]:
    """The stored row of a dataset; :class:`UnknownDatasetError` if absent."""
    df = kb.query("SELECT * FROM datasets WHERE dataset_id = ?", [dataset_id])
    if df.empty:
        raise UnknownDatasetError(
            f"unknown dataset {dataset_id!r}; `metabo kb datasets` lists the stored ones"
        )
    row = df.iloc[0].to_dict()
    row["flags"] = json.loads(row["flags"])
    return row


def resolve_dataset(kb: KnowledgeBase, ref: str | int) -> str:
    """Map a dataset id, an OpenML id (int or ``openml:ID``) or a unique name to its id."""
    con = kb.connection
    if isinstance(ref, int) or (isinstance(ref, str) and ref.startswith("openml:")):
        oid = int(str(ref).removeprefix("openml:"))
        hit = con.execute("SELECT dataset_id FROM datasets WHERE openml_id = ?", [oid]).fetchall()
    else:
        hit = con.execute("SELECT dataset_id FROM datasets WHERE dataset_id = ?", [ref]).fetchall()
        if not hit:
            hit = con.execute("SELECT dataset_id FROM datasets WHERE name = ?", [ref]).fetchall()
    if len(hit) == 1:
        return str(hit[0][0])
    if len(hit) > 1:
        raise UnknownDatasetError(
            f"dataset {ref!r} is ambiguous: {[h[0] for h in hit]}; use the dataset id"
        )
    raise UnknownDatasetError(f"unknown dataset {ref!r}; `metabo kb datasets` lists the stored ones")


def add_meta_features(
    kb: KnowledgeBase, dataset_id: str, values: Mapping[str, float], *, source: str = "metabo"
) -> int:
    """Store (replace) meta-features of one stored dataset; returns how many were written."""
    frame = pd.DataFrame({"dataset_id": dataset_id, "name": [str(n) for n in values],
                          "value": list(values.values()), "source": source})
    return kb.add_meta_features_frame(frame)


def add_meta_features_frame(kb: KnowledgeBase, frame: pd.DataFrame) -> int:
    """Bulk path: store (replace) rows ``dataset_id, name, value[, source]``.

    NaN or None is stored as NULL (the quantity is undefined for that dataset);
    infinite or non-numeric values and unknown datasets are refused, storing nothing.
    """
    frame = frame.copy()
    if "source" not in frame.columns:
        frame["source"] = "metabo"
    missing = {"dataset_id", "name", "value"} - set(frame.columns)
    if missing:
        raise InputDataError(f"meta-feature rows need columns {sorted(missing)}")
    try:
        values = pd.to_numeric(frame["value"], errors="raise").astype(np.float64)
    except (TypeError, ValueError) as e:
        raise InputDataError(f"meta-feature values must be numbers: {e}") from e
    if np.isinf(values).any():
        bad = frame.loc[np.isinf(values), "name"].tolist()[:5]
        raise InputDataError(f"meta-features {bad} are infinite")
    frame["value"] = values
    frame = frame[["dataset_id", "name", "value", "source"]].astype(
        {"dataset_id": str, "name": str, "source": str}
    ).drop_duplicates(["dataset_id", "name"], keep="last")
    with kb.transaction() as tx:
        tx.register("_mf_batch", frame)
        try:
            unknown = [r[0] for r in tx.execute(
                "SELECT DISTINCT dataset_id FROM _mf_batch ANTI JOIN datasets USING (dataset_id) LIMIT 5"
            ).fetchall()]
            if unknown:
                raise UnknownDatasetError(f"unknown dataset(s) {unknown}; register them first")
            tx.execute(
                "DELETE FROM meta_features WHERE (dataset_id, name) IN "
                "(SELECT (dataset_id, name) FROM _mf_batch)"
            )
            tx.execute("INSERT INTO meta_features SELECT dataset_id, name, value, source FROM _mf_batch")
        finally:
            tx.unregister("_mf_batch")
    return len(frame)


# ---------------------------------------------------------------------- lookups
def same_content_dataset_ids(kb: KnowledgeBase, dataset_id: str) -> list[str]:
    """The ids of the stored datasets with ``dataset_id``'s content (its fingerprint; itself
    included), empty when it has no fingerprint."""
    return kb.query("SELECT dataset_id FROM datasets WHERE fingerprint = "
                    "(SELECT fingerprint FROM datasets WHERE dataset_id = ?)", [dataset_id])["dataset_id"].tolist()


def dataset_ids_with_fingerprint(kb: KnowledgeBase, fingerprint: str) -> list[str]:
    """The ids of the stored datasets whose content has ``fingerprint``."""
    return kb.query("SELECT dataset_id FROM datasets WHERE fingerprint = ?", [fingerprint])["dataset_id"].tolist()


def dataset_ids_not_from(kb: KnowledgeBase, source: str) -> set[str]:
    """The ids of the stored datasets registered by another source than ``source``."""
    return set(kb.query("SELECT dataset_id FROM datasets WHERE source <> ?", [source])["dataset_id"])


def dataset_names(kb: KnowledgeBase, dataset_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Columns ``dataset_id, name`` of every stored dataset, or of those of ``dataset_ids``."""
    if dataset_ids is None:
        return kb.query("SELECT dataset_id, name FROM datasets")
    return kb.query("SELECT dataset_id, name FROM datasets WHERE dataset_id IN (SELECT unnest(?))",
                    [list(dataset_ids)])


def datasets_summary(kb: KnowledgeBase) -> pd.DataFrame:
    """The stored datasets by id: ``dataset_id, name, source, openml_id, n_instances,
    n_features, n_classes, flags`` (JSON text) and their counts of ``runs`` and ``meta_features``."""
    return kb.query(
        "SELECT d.dataset_id, d.name, d.source, d.openml_id, d.n_instances, d.n_features, d.n_classes, "
        "d.flags, (SELECT count(*) FROM runs r WHERE r.dataset_id = d.dataset_id) AS runs, "
        "(SELECT count(*) FROM meta_features m WHERE m.dataset_id = d.dataset_id) AS meta_features "
        "FROM datasets d ORDER BY d.dataset_id"
    )


def openml_ids(kb: KnowledgeBase) -> pd.DataFrame:
    """Columns ``dataset_id, openml_id`` of the stored datasets that have an OpenML id."""
    return kb.query("SELECT dataset_id, openml_id FROM datasets WHERE openml_id IS NOT NULL")


def dataset_with_openml_meta_features(kb: KnowledgeBase, openml_id: int) -> str | None:
    """The first id (sorted) of a stored dataset of OpenML id ``openml_id`` that has
    meta-features of source ``openml``, or None."""
    row = kb.connection.execute(
        "SELECT d.dataset_id FROM datasets d WHERE d.openml_id = ? AND EXISTS "
        "(SELECT 1 FROM meta_features m WHERE m.dataset_id = d.dataset_id AND m.source = 'openml') "
        "ORDER BY d.dataset_id LIMIT 1",
        [int(openml_id)],
    ).fetchone()
    return None if row is None else str(row[0])


def content_has_meta_features(kb: KnowledgeBase, fingerprint: str, *, source: str) -> bool:
    """Whether a stored dataset with content ``fingerprint`` has meta-features of ``source``."""
    return bool(scalar(kb.connection.execute(
        "SELECT count(*) FROM meta_features m JOIN datasets d USING (dataset_id) "
        "WHERE d.fingerprint = ? AND m.source = ?", [fingerprint, source],
    )))


def meta_feature_values(kb: KnowledgeBase, dataset_id: str) -> list[tuple[str, float | None]]:
    """The stored ``(name, value)`` meta-features of ``dataset_id`` (None: undefined)."""
    return kb.connection.execute(
        "SELECT name, value FROM meta_features WHERE dataset_id = ?", [dataset_id]).fetchall()


def meta_feature_keys(kb: KnowledgeBase) -> pd.DataFrame:
    """Columns ``dataset_id, name`` of every stored meta-feature (undefined, NULL, ones too);
    :class:`~metabo.exceptions.KnowledgeBaseError` when the read fails."""
    return kb.query("SELECT dataset_id, name FROM meta_features")


def without_stored_meta_features(kb: KnowledgeBase, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` (columns ``dataset_id, name``, ...) whose ``(dataset_id, name)``
    has no stored meta-feature yet (read on the connection: DuckDB's own error on failure)."""
    stored = kb.connection.execute("SELECT dataset_id, name FROM meta_features").df()
    if not stored.empty:
        known = pd.MultiIndex.from_frame(stored)
        frame = frame[~pd.MultiIndex.from_frame(frame[["dataset_id", "name"]]).isin(known)]
    return frame


def defined_meta_feature_counts(kb: KnowledgeBase, names: Sequence[str]) -> pd.DataFrame:
    """Columns ``dataset_id, n``: per dataset with any, how many of the meta-features
    ``names`` have a defined (non-NULL) value."""
    con = kb.connection
    con.register("_mf_names", pd.DataFrame({"name": names}))
    try:
        return con.execute(
            "SELECT dataset_id, count(*) AS n FROM meta_features JOIN _mf_names USING (name) "
            "WHERE value IS NOT NULL GROUP BY dataset_id"
        ).df()
    finally:
        con.unregister("_mf_names")
