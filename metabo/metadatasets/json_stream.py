"""Read a large one-object JSON file key by key and row by row, without loading it.

The DeepPipe meta-datasets are single JSON objects of 185-258 MB whose big values are
arrays of flat numeric arrays (one error-matrix row per dataset, one vector per
pipeline), with ``NaN`` literals that strict streaming parsers (yajl/ijson) refuse.
:class:`JsonObjectFile` memory-maps the file, finds the span of each top-level value
with one regular-expression pass over its brackets and strings (numbers are skipped by
the regex engine), and then parses either a whole small value or one row of a big one
at a time with :mod:`json` (which accepts ``NaN``). Peak memory is one row plus the
pages of the mapping the operating system keeps.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError

# A JSON string (escapes included) or one bracket/brace.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_WS = b" \t\r\n"


class JsonObjectFile:
    """Spans of the top-level values of a JSON object file (``key -> (start, end)``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            with self.path.open("rb") as f:
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise InputDataError(f"cannot read {self.path}: {e}") from e
        self.spans = self._index()

    def close(self) -> None:
        """Close the memory map of the file."""
        self._mm.close()

    def __enter__(self) -> JsonObjectFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _error(self, pos: int, what: str) -> InputDataError:
        return InputDataError(f"{self.path} is not the expected JSON object (byte {pos}): {what}")

    def _skip_ws(self, pos: int) -> int:
        mm = self._mm
        while pos < len(mm) and mm[pos] in _WS:
            pos += 1
        return pos

    def _index(self) -> dict[str, tuple[int, int]]:
        """One pass: at depth 1, a string followed by ':' is a key; its value ends where
        the depth comes back to 1 (containers) or at the next ',' / '}' (scalars)."""
        mm = self._mm
        pos = self._skip_ws(0)
        if pos >= len(mm) or mm[pos] != ord("{"):
            raise self._error(pos, "does not start with '{'")
        spans: dict[str, tuple[int, int]] = {}
        depth, key, start = 1, None, 0
        for m in _TOKEN.finditer(mm, pos + 1):
            tok = m.group()
            if depth == 1 and key is not None and m.start() == start and tok[:1] == b"\"":  # a string value
                spans[key], key = (start, m.end()), None
                continue
            if depth == 1 and key is None:
                if tok[:1] != b'"':
                    if tok == b"}":
                        depth = 0
                        break
                    raise self._error(m.start(), f"expected a key, found {tok[:20]!r}")
                colon = self._skip_ws(m.end())
                if colon >= len(mm) or mm[colon] != ord(":"):
                    raise self._error(colon, "expected ':' after a key")
                key, start = json.loads(tok), self._skip_ws(colon + 1)
                if mm[start] not in b'[{"':  # a number or literal: up to the next ',' or '}'
                    end = min(i for i in (mm.find(b",", start), mm.find(b"}", start)) if i >= 0)
                    spans[key], key = (start, end), None
                continue
            if tok[:1] == b'"':
                continue
            depth += 1 if tok in (b"[", b"{") else -1
            if depth == 1 and key is not None:
                spans[key], key = (start, m.end()), None
            elif depth == 0:
                break
        if depth != 0:
            raise self._error(len(mm), "truncated (brackets do not close)")
        return spans

    def keys(self) -> list[str]:
        """The top-level keys of the JSON object, in file order."""
        return list(self.spans)

    def _span(self, key: str) -> tuple[int, int]:
        try:
            return self.spans[key]
        except KeyError:
            raise InputDataError(f"{self.path} has no key {key!r}; it has {self.keys()}") from None

    def load(self, key: str) -> Any:
        """The whole value of ``key`` (for the small ones)."""
        start, end = self._span(key)
        try:
            return json.loads(self._mm[start:end])
        except ValueError as e:
            raise InputDataError(f"{self.path}: the value of {key!r} is not valid JSON: {e}") from e

    def iter_rows(self, key: str, start_row: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """``(i, row)`` for the flat numeric rows ``start_row, ...`` of the array ``key``.

        Rows before ``start_row`` are skipped without being parsed.
        """
        start, end = self._span(key)
        mm = self._mm
        if mm[start] != ord("["):
            raise self._error(start, f"{key!r} is not an array")
        pos, i = start + 1, 0
        while True:
            pos = self._skip_ws(pos)
            if pos >= end - 1:
                return
            if mm[pos] != ord("["):
                raise self._error(pos, f"row {i} of {key!r} is not an array")
            close = mm.find(b"]", pos, end)
            if close < 0:
                raise self._error(pos, f"row {i} of {key!r} does not close")
            if i >= start_row:
                try:
                    row = np.asarray(json.loads(mm[pos:close + 1]), dtype=np.float64)
                except (ValueError, TypeError) as e:
                    raise self._error(pos, f"row {i} of {key!r} is not a list of numbers: {e}") from e
                yield i, row
            i += 1
            pos = self._skip_ws(close + 1)
            if pos < end and mm[pos] == ord(","):
                pos += 1

    def count_rows(self, key: str) -> int:
        """How many rows the array ``key`` has (no parsing)."""
        start, end = self._span(key)
        n, pos = 0, self._mm.find(b"]", start + 1, end - 1)
        while pos >= 0:
            n += 1
            pos = self._mm.find(b"]", pos + 1, end - 1)
        return n
