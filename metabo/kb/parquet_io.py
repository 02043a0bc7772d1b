"""Export a knowledge base to Parquet files and import them back.

Export writes one ``<table>.parquet`` per table plus ``manifest.json`` (schema version,
row counts) into a folder, through DuckDB's ``COPY ... TO $1 (FORMAT parquet)`` (sorted by key): column types,
NULLs, timestamps and blobs survive exactly. Import reads the files (checking the
manifest), and inserts into each table the rows whose key is not stored yet, all in
one transaction: importing twice is importing once, and a failed import stores nothing.
Only the tables in :data:`~metabo.kb.schema.TABLES` travel: the ``surrogate_bank`` cache
is derived from the runs and is rebuilt where it is needed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from metabo.exceptions import InputDataError, KnowledgeBaseError, SchemaVersionError
from metabo.kb.schema import FILL_RUN_PROTOCOLS, SCHEMA_VERSION, TABLE_KEYS, TABLE_SINCE, TABLES

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"


def export_parquet(kb: KnowledgeBase, folder: str | Path, *, compression: str = "zstd",
                   without: tuple[str, ...] = ()) -> dict[str, int]:
    """Write every table to ``folder/<table>.parquet``; return the row counts. The tables
    named in ``without`` (``predictions``: large, and derived from the runs) are written
    empty, with their columns, so the export imports as any other."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    if compression not in {"zstd", "snappy", "gzip", "uncompressed"}:
        raise InputDataError(f"unknown Parquet compression {compression!r}")
    if unknown := set(without) - set(TABLES):
        raise InputDataError(f"unknown table(s) {sorted(unknown)}; tables: {list(TABLES)}")
    counts: dict[str, int] = {}
    con = kb.connection
    for table in TABLES:
        order = ", ".join(TABLE_KEYS[table])
        limit = " LIMIT 0" if table in without else ""
        con.execute(
            f"COPY (SELECT * FROM {table} ORDER BY {order}{limit}) TO $1 "  # noqa: S608 - fixed names
            f"(FORMAT parquet, COMPRESSION {compression})",
            [str(out / f"{table}.parquet")],
        )
        counts[table] = 0 if table in without else int(
            con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608
    (out / MANIFEST).write_text(json.dumps({"schema_version": kb.schema_version(), "rows": counts}, indent=2))
    logger.info("exported %s to %s", counts, out)
    return counts


def import_parquet(kb: KnowledgeBase, folder: str | Path) -> dict[str, int]:
    """Import an export folder; return the rows newly written per table."""
    src = Path(folder)
    manifest_path = src / MANIFEST
    if not manifest_path.is_file():
        raise InputDataError(f"{src} is not a metabo export (no {MANIFEST})")
    try:
        manifest = json.loads(manifest_path.read_text())
        version = int(manifest["schema_version"])
    except (ValueError, KeyError, TypeError) as e:
        raise InputDataError(f"{manifest_path} is corrupt: {e}") from e
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(f"export has schema version {version}; this metabo knows {SCHEMA_VERSION}")
    con = kb.connection
    added: dict[str, int] = {}
    try:
        with kb.transaction():
            for table in TABLES:
                path = src / f"{table}.parquet"
                if version < TABLE_SINCE.get(table, 1):
                    continue  # an older export, from before this table existed
                if not path.is_file():
                    raise InputDataError(f"{path} is missing from the export")
                rel = con.read_parquet(str(path))
                expected = int(manifest["rows"].get(table, -1))
                if expected >= 0 and rel.shape[0] != expected:
                    raise InputDataError(
                        f"{path} has {rel.shape[0]} rows, the manifest says {expected}: truncated file?"
                    )
                cols = [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall()]  # noqa: S608
                missing = set(cols) - set(rel.columns)
                if missing and version == SCHEMA_VERSION:
                    raise InputDataError(f"{path} lacks columns {sorted(missing)}")
                shared = [c for c in cols if c in rel.columns]
                key = TABLE_KEYS[table]
                cond = " AND ".join(f"t.{k} = b.{k}" for k in key)
                con.register("_import_batch", rel)
                try:
                    n = con.execute(
                        f"INSERT INTO {table} ({', '.join(shared)}) "  # noqa: S608 - fixed names
                        f"SELECT {', '.join('b.' + c for c in shared)} FROM _import_batch b "
                        f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {cond})"
                    ).fetchone()[0]
                finally:
                    con.unregister("_import_batch")
                added[table] = int(n)
                if table == "runs" and "algorithm" not in rel.columns:  # an export from before v4
                    con.execute(
                        "UPDATE runs SET algorithm = c.algorithm FROM configurations c "
                        "WHERE runs.algorithm IS NULL AND c.config_id = runs.config_id"
                    )
            for stmt in FILL_RUN_PROTOCOLS:  # an export from before v6 (needs the sessions: after every table)
                con.execute(stmt)
    except duckdb.Error as e:
        raise KnowledgeBaseError(f"import of {src} failed, nothing was imported: {e}") from e
    logger.info("imported %s from %s", added, src)
    return added
