"""How requests address the fake server's content: errors, lookups, list filters, pages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

API_PREFIX = "/api/v1/xml/"
# OpenML "no results" codes of each listing (see openml/_api_calls.py).
NO_RESULT_CODES: dict[str, int] = {
    "evaluation": 542, "setup": 674, "data": 372, "task": 482, "flow": 500, "run": 512,
}


class ApiError(Exception):
    """An OpenML error response: HTTP ``status`` with an ``<oml:error>`` body."""

    def __init__(self, code: int, message: str, status: int = 412, additional: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.additional = code, message, status, additional


def lookup(table: dict[int, Any], key: int, code: int, what: str) -> Any:
    """``table[key]``, or OpenML error ``code`` ("Unknown <what>") if it is missing."""
    if key not in table:
        raise ApiError(code, f"Unknown {what}")
    return table[key]


def list_filters(parts: list[str]) -> tuple[str, dict[str, str]]:
    """Split ``kind/list/k1/v1/k2/v2`` into ``kind`` and its filters."""
    kind = parts[0]
    rest = parts[2:]
    if len(rest) % 2:
        raise ApiError(100, f"filters must come in name/value pairs: {'/'.join(rest)}")
    return kind, {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}


def parse_ids(value: str | None) -> set[int] | None:
    """A filter's comma-separated ids (``None``: no filter)."""
    if value is None:
        return None
    try:
        return {int(v) for v in value.split(",") if v}
    except ValueError as e:
        raise ApiError(100, f"not a list of ids: {value}") from e


def page(items: list[Any], filters: Mapping[str, str], kind: str) -> list[Any]:
    """The ``limit``/``offset`` slice of a listing; past the end, OpenML's "no results"."""
    offset = int(filters.get("offset", 0))
    limit = filters.get("limit")
    chunk = items[offset: offset + int(limit)] if limit is not None else items[offset:]
    if not chunk:
        raise ApiError(NO_RESULT_CODES[kind], "No results")
    return chunk
