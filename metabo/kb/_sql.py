"""Small SQL helpers shared by the knowledge-base modules.

DuckDB spends about half a millisecond planning even a tiny statement, and more per
constant it binds (about 60 us each), while registering an Arrow table costs about a
millisecond: so a few values are constants, a small batch is list parameters, and only
a large batch is an Arrow scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Up to this many values a set is written as constants; see :func:`in_list`.
MAX_CONSTANTS = 8
# Up to this many rows a batch is small: passed as list parameters or compared in Python.
SMALL_BATCH = 64


def scalar(cursor: Any) -> Any:
    """The first value of the one row a statement returns (an aggregate such as ``count(*)``,
    or the count an ``INSERT`` reports, always has one)."""
    row = cursor.fetchone()
    assert row is not None, "the statement returned no row"
    return row[0]


def in_list(values: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL for the right side of ``column IN ...`` holding ``values``, and its parameters.

    A few values are constants ``(?, ?)``: cheapest to plan, and they prune row groups
    by their min/max. More are one list parameter, unnested.
    """
    if 0 < len(values) <= MAX_CONSTANTS:
        return f"({', '.join('?' * len(values))})", list(values)
    return "(SELECT unnest(?::VARCHAR[]))", [list(values)]
