"""Tuning sessions and the saved cursors of resumable jobs.

A session records a tuning run's strategy, dataset and settings; its runs carry
``source='session:<id>'``. ``ingest_state`` holds JSON cursors keyed by job, written
in the same transaction as the batch they describe.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from metabo.kb._time import utcnow

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


def add_session(
    kb: KnowledgeBase, session_id: str, *, strategy: str, dataset_id: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """Create (or return) a tuning session; its runs use ``source='session:<id>'``."""
    if dataset_id is not None:
        kb.get_dataset(dataset_id)
    now = utcnow()
    with kb.transaction() as tx:
        if tx.execute("SELECT 1 FROM sessions WHERE session_id = ?", [session_id]).fetchone():
            return session_id
        tx.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, 'running', ?, ?)",
            [session_id, dataset_id, strategy, json.dumps(dict(settings or {}), sort_keys=True), now, now],
        )
    return session_id


def set_session_status(kb: KnowledgeBase, session_id: str, status: str) -> None:
    """Set a session's status (and its ``updated_at``)."""
    with kb.transaction() as tx:
        tx.execute(
            "UPDATE sessions SET status = ?, updated_at = ? WHERE session_id = ?",
            [status, utcnow(), session_id],
        )


def get_state(kb: KnowledgeBase, key: str, default: Any = None) -> Any:
    """A resumable job's saved cursor (JSON-decoded), or ``default``."""
    row = kb.connection.execute("SELECT value FROM ingest_state WHERE key = ?", [key]).fetchone()
    return default if row is None else json.loads(row[0])


def set_state(kb: KnowledgeBase, key: str, value: Any) -> None:
    """Save a cursor; call inside the batch's transaction so both land together."""
    with kb.transaction() as tx:
        tx.execute("DELETE FROM ingest_state WHERE key = ?", [key])
        tx.execute("INSERT INTO ingest_state VALUES (?, ?, ?)", [key, json.dumps(value), utcnow()])
