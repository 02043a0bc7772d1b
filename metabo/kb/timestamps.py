"""Timestamps as the knowledge base stores them."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Naive UTC timestamp at microsecond precision (what DuckDB's TIMESTAMP stores)."""
    return datetime.now(UTC).replace(tzinfo=None)
