"""Tuning sessions and the saved cursors of resumable jobs.

A session records a tuning run's strategy, dataset and settings; its runs carry
``source='session:<id>'``. ``ingest_state`` holds JSON cursors keyed by job, written
in the same transaction as the batch they describe.
"""

from __future__ import annotations

import json
import math
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from metabo.kb.timestamps import utcnow

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
        _own(tx, session_id)
    return session_id


def get_session(kb: KnowledgeBase, session_id: str) -> dict[str, Any] | None:
    """The stored row of a session (``settings`` as JSON text), or None."""
    df = kb.query("SELECT * FROM sessions WHERE session_id = ?", [session_id])
    return None if df.empty else df.iloc[0].to_dict()


def service_studies(kb: KnowledgeBase) -> pd.DataFrame:
    """The sessions the service started (settings holding ``service``), newest first:
    ``study_id, dataset_id, strategy`` (``service.strategy``), ``status, created_at``."""
    return kb.query(
        "SELECT session_id AS study_id, dataset_id, json_extract_string(settings, '$.service.strategy') "
        "AS strategy, status, created_at FROM sessions "
        "WHERE json_extract(settings, '$.service') IS NOT NULL ORDER BY created_at DESC, session_id")


def _owner_key(session_id: str) -> str:
    return f"session-owner:{session_id}"


def _own(tx: Any, session_id: str) -> None:
    """Record this process (host, pid) as the one running ``session_id`` (no write when it is already)."""
    owner = json.dumps({"host": socket.gethostname(), "pid": os.getpid()})
    row = tx.execute("SELECT value FROM ingest_state WHERE key = ?", [_owner_key(session_id)]).fetchone()
    if row is not None and row[0] == owner:
        return
    tx.execute("DELETE FROM ingest_state WHERE key = ?", [_owner_key(session_id)])
    tx.execute("INSERT INTO ingest_state VALUES (?, ?, ?)", [_owner_key(session_id), owner, utcnow()])


def _alive(owner: Mapping[str, Any] | None) -> bool:
    """Whether the recorded owner process still runs (True when it cannot be told: another host)."""
    if not owner or owner.get("host") != socket.gethostname():
        return owner is not None
    try:
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, KeyError, TypeError):
        return True
    return True


def list_sessions(kb: KnowledgeBase, *, dataset: str | None = None, limit: int | None = 20) -> pd.DataFrame:
    """The tuning sessions, newest first: ``session_id, dataset, strategy, metric, trials``
    (completed), ``failed``, ``best`` (lowest successful value), ``status`` and
    ``updated_at``. A session stored as ``running`` whose process is gone (killed, or
    the machine restarted) is shown ``interrupted``: ``metabo tune DATA --resume ID``
    continues it. ``dataset`` filters by dataset name or id. The sessions of ``metabo kb
    build`` (strategy ``build``, many datasets, no trials) are not listed."""
    sessions = kb.query(
        "SELECT s.session_id, coalesce(d.name, s.dataset_id) AS dataset, s.dataset_id, s.strategy, s.settings, "
        "s.status, s.updated_at FROM sessions s LEFT JOIN datasets d USING (dataset_id) "
        "WHERE s.strategy IS DISTINCT FROM 'build' ORDER BY s.updated_at DESC")  # kb build's are not tunings
    if dataset is not None:
        sessions = sessions[(sessions["dataset"] == dataset) | (sessions["dataset_id"] == dataset)]
    if limit is not None:
        sessions = sessions.head(limit)
    by_session = _trial_states(kb, sessions["session_id"].tolist())
    rows = []
    for s in sessions.itertuples(index=False):
        trials = by_session[s.session_id]
        done = [t for t in trials if t.get("state") == "complete"]
        ok = [t["value"] for t in done if t.get("status") == "ok" and t.get("value") is not None
              and math.isfinite(t["value"])]
        status = s.status
        if status == "running" and not _alive(get_state(kb, _owner_key(s.session_id))):
            status = "interrupted"
        rows.append({"session_id": s.session_id, "dataset": s.dataset, "strategy": s.strategy,
                     "metric": json.loads(s.settings or "{}").get("metric"), "trials": len(done),
                     "failed": len(done) - len(ok), "best": min(ok) if ok else None, "status": status,
                     "updated_at": s.updated_at})
    columns = ["session_id", "dataset", "strategy", "metric", "trials", "failed", "best", "status", "updated_at"]
    return pd.DataFrame(rows, columns=columns)


def _trial_states(kb: KnowledgeBase, ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Session id -> its trials' saved states, for every session of ``ids``, in one query."""
    states = kb.query(
        "SELECT regexp_extract(key, '^session:(.*):trial:[^:]*$', 1) AS session_id, value FROM ingest_state "
        "WHERE regexp_extract(key, '^session:(.*):trial:[^:]*$', 1) IN (SELECT unnest(?::VARCHAR[]))", [ids])
    by_session: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    for sid, value in zip(states["session_id"], states["value"], strict=True):
        by_session[sid].append(json.loads(value))
    return by_session


def completed_trials(kb: KnowledgeBase, session_id: str) -> int:
    """How many trials of ``session_id`` are complete (0 for an unknown session)."""
    return sum(t.get("state") == "complete" for t in _trial_states(kb, [session_id])[session_id])


def set_session_status(kb: KnowledgeBase, session_id: str, status: str) -> None:
    """Set a session's status (and its ``updated_at``)."""
    with kb.transaction() as tx:
        tx.execute(
            "UPDATE sessions SET status = ?, updated_at = ? WHERE session_id = ?",
            [status, utcnow(), session_id],
        )
        if status == "running":
            _own(tx, session_id)


def get_state(kb: KnowledgeBase, key: str, default: Any = None) -> Any:
    """A resumable job's saved cursor (JSON-decoded), or ``default``."""
    row = kb.connection.execute("SELECT value FROM ingest_state WHERE key = ?", [key]).fetchone()
    return default if row is None else json.loads(row[0])


def state_values(kb: KnowledgeBase, prefix: str) -> list[str]:
    """The saved cursors (JSON text, not decoded) whose key starts with ``prefix``, by key."""
    rows = kb.connection.execute(
        "SELECT value FROM ingest_state WHERE starts_with(key, ?) ORDER BY key", [prefix]
    ).fetchall()
    return [text for (text,) in rows]


def set_state(kb: KnowledgeBase, key: str, value: Any) -> None:
    """Save a cursor; call inside the batch's transaction so both land together."""
    set_states(kb, {key: value})


def set_states(kb: KnowledgeBase, values: Mapping[str, Any]) -> None:
    """Save several cursors (key -> JSON-able value) in one delete and one insert."""
    if not values:
        return
    now = utcnow()
    with kb.transaction() as tx:
        tx.execute("DELETE FROM ingest_state WHERE key IN (SELECT unnest(?::VARCHAR[]))", [list(values)])
        tx.executemany("INSERT INTO ingest_state VALUES (?, ?, ?)",
                       [[key, json.dumps(value), now] for key, value in values.items()])
