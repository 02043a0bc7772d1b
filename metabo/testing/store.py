"""The whole content of a knowledge base, to show that a refused input changed nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from metabo.kb.schema import TABLES
from metabo.kb.store import KnowledgeBase, table_rows


def snapshot(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (the cached surrogate bank too), sorted: equal snapshots
    mean nothing was stored or changed."""
    return {t: table_rows(kb, t) for t in (*TABLES, "surrogate_bank")}


def snapshot_file(path: str | os.PathLike[str]) -> dict[str, list[tuple[Any, ...]]]:
    """:func:`snapshot` of the store at ``path``, opened read-only."""
    with KnowledgeBase(Path(path), read_only=True) as kb:
        return snapshot(kb)
