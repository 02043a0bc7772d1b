"""Rows of the surrogate bank's cache (table ``surrogate_bank``, schema v5).

What a row holds and when it may be used: :mod:`metabo.surrogates.bank_cache`, which packs
and checks the members; this module only reads, replaces and deletes the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from metabo.kb.store import KnowledgeBase


def bank_rows(kb: KnowledgeBase, metric: str, settings: Sequence[str]) -> pd.DataFrame:
    """Columns ``task, algorithm, settings, fingerprint, state`` of the stored members of
    ``metric`` whose settings are among ``settings`` (KnowledgeBaseError on failure)."""
    return kb.query(
        "SELECT task, algorithm, settings, fingerprint, state FROM surrogate_bank "
        "WHERE metric = ? AND settings IN (SELECT unnest(?))", [metric, list(settings)])


def replace_bank_rows(kb: KnowledgeBase, frame: pd.DataFrame) -> None:
    """Write the rows of ``frame`` (columns ``task, algorithm, metric, settings, fingerprint,
    n, state, created_at``) in one transaction, replacing the stored rows of the same
    ``(task, algorithm, metric, settings)`` (DuckDB's error on failure, nothing written)."""
    with kb.transaction() as con:
        con.register("bank_new", frame)
        try:
            con.execute("DELETE FROM surrogate_bank WHERE (task, algorithm, metric, settings) IN "
                        "(SELECT task, algorithm, metric, settings FROM bank_new)")
            con.execute("INSERT INTO surrogate_bank SELECT task, algorithm, metric, settings, fingerprint, n, "
                        "state, created_at FROM bank_new")
        finally:
            con.unregister("bank_new")


def _where(metric: str | None) -> tuple[str, list[str]]:
    return ("WHERE metric = ?", [metric]) if metric is not None else ("", [])


def count_bank_rows(kb: KnowledgeBase, metric: str | None = None) -> int:
    """How many members are stored (of ``metric``, or all)."""
    where, params = _where(metric)
    return int(kb.query(f"SELECT count(*) AS n FROM surrogate_bank {where}", params)["n"].iloc[0])


def delete_bank_rows(kb: KnowledgeBase, metric: str | None = None) -> None:
    """Delete the stored members (of ``metric``, or all) in one transaction (DuckDB's error
    on failure)."""
    where, params = _where(metric)
    with kb.transaction() as con:
        con.execute(f"DELETE FROM surrogate_bank {where}", params)
