"""The knowledge base shipped with metabo, loaded into the embedded default on first use.

The shipped knowledge base is a Parquet export (:mod:`metabo.kb.parquet_io`) kept in
git under ``data/kb/`` and installed to ``<prefix>/share/metabo/kb``. The first time the
embedded default store is opened, and it holds no dataset yet, the export is imported
into it (once: a marker in ``ingest_state`` records it, so a user who empties the store
is not refilled against their will).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from metabo.kb._sql import scalar
from metabo.kb.parquet_io import MANIFEST, import_parquet

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

STATE_KEY = "shipped-kb:loaded"


def shipped_kb_path() -> Path | None:
    """Where the shipped export is: ``$METABO_SHIPPED_KB``, the source checkout's
    ``data/kb``, or the installed ``<prefix>/share/metabo/kb``; None if none exists."""
    candidates = []
    env = os.environ.get("METABO_SHIPPED_KB")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(Path(__file__).resolve().parents[2] / "data" / "kb")
    candidates.append(Path(sys.prefix) / "share" / "metabo" / "kb")
    for path in candidates:
        if (path / MANIFEST).is_file():
            return path
    return None


def load_shipped(kb: KnowledgeBase, *, force: bool = False) -> dict[str, int] | None:
    """Import the shipped export into ``kb`` if it is new (or ``force``); return counts.

    Returns None when there is nothing to do: no export found, already loaded once, or
    the store already holds datasets.
    """
    path = shipped_kb_path()
    if path is None:
        logger.info("no shipped knowledge base found")
        return None
    if not force:
        if kb.get_state(STATE_KEY) is not None:
            return None
        if scalar(kb.connection.execute("SELECT count(*) FROM datasets")):
            return None
    logger.info("loading the shipped knowledge base from %s", path)
    with kb.transaction():
        added = import_parquet(kb, path)
        kb.set_state(STATE_KEY, {"from": str(path), "rows": added})
    return added
