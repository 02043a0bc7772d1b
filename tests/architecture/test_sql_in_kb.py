"""Every SQL statement of the package lives in :mod:`metabo.kb` (issue 34, item 3).

Code outside ``metabo/kb/`` reaches the knowledge base through named functions of
``metabo.kb``'s modules; this test fails, listing ``file:line``, on any SQL keyword
pattern found in the source of another module.
"""

from __future__ import annotations

import re
from pathlib import Path

import metabo

PACKAGE = Path(metabo.__file__).resolve().parent
SQL = re.compile(r"\b(SELECT\s|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|VIEW)"
                 r"|ALTER\s+TABLE|DROP\s+TABLE)")
KB = PACKAGE / "kb"


def sql_outside_kb() -> list[str]:
    """``file:line: text`` of every SQL pattern found outside ``metabo/kb/``."""
    hits: dict[str, None] = {}  # one entry per line, in order
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(KB):
            continue
        relative = path.relative_to(PACKAGE)
        text = path.read_text(encoding="utf-8")
        for match in SQL.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            hits[f"metabo/{relative.as_posix()}:{line}: {text.splitlines()[line - 1].strip()}"] = None
    return list(hits)


def test_the_pattern_finds_statements_not_names() -> None:
    for statement in ("SELECT * FROM runs", "INSERT INTO runs VALUES (?)", "UPDATE datasets SET flags = ?",
                      "DELETE FROM ingest_state", "CREATE TABLE t (x INT)", "ALTER TABLE runs ADD x",
                      "DROP TABLE t", "(SELECT unnest(?))"):
        assert SQL.search(statement), statement
    for name in ("_SELECTIONS_KEPT = 64", "def do_DELETE(self)", 'handle(self, "DELETE")', "select x from t"):
        assert not SQL.search(name), name


def test_no_sql_outside_kb() -> None:
    assert (KB / "store.py").is_file()  # the scan looks at the package it means to
    hits = sql_outside_kb()
    assert not hits, "SQL outside metabo/kb/ (move it behind a function in metabo.kb):\n" + "\n".join(hits)
