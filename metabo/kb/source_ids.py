"""Provenance of rows that came from an external collection (table ``source_ids``).

Each row maps a collection's own id of a dataset or configuration (``source, kind,
original_id``) to the id it is stored under (``local_id``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


def add_source_ids(kb: KnowledgeBase, frame: pd.DataFrame) -> None:
    """Insert the rows of ``frame`` (columns ``source, kind, original_id, local_id``, in
    that order) whose ``(source, kind, original_id)`` is not stored yet (call inside the
    caller's transaction)."""
    con = kb.connection
    con.register("_source_ids", frame)
    try:
        con.execute(
            "INSERT INTO source_ids SELECT b.* FROM _source_ids b ANTI JOIN source_ids s "
            "ON s.source = b.source AND s.kind = b.kind AND s.original_id = b.original_id"
        )
    finally:
        con.unregister("_source_ids")


def registered_datasets(kb: KnowledgeBase) -> pd.DataFrame:
    """Columns ``source, dataset_id``: the stored datasets each external collection registered."""
    return kb.query("SELECT source, local_id AS dataset_id FROM source_ids WHERE kind = 'dataset'")
