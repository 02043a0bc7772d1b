"""Export a knowledge base to Parquet files and import them back.

Export writes one ``<table>.parquet`` per table plus ``manifest.json`` (schema version,
row counts, each file's SHA-256) into a folder, through DuckDB's ``COPY ... TO $1 (FORMAT
parquet)`` (sorted by key): column types, NULLs, timestamps and blobs survive exactly. The
files are written into a temporary folder beside the target and renamed into place at the
end, so a failed export (a full disk) leaves no half-written folder. Import checks the
manifest and each file's checksum, then inserts into each table the rows whose key is not
stored yet, all in one transaction: importing twice is importing once, and a failed (or
corrupt) import stores nothing.

The runs travel without their ``run_id`` (:data:`DERIVED`) when every stored id is the
hash of the run's identity (:data:`~metabo.kb.schema.RUN_ID_SQL`), as ids written by
this package are: import computes it again. They are ordered by source, dataset, metric
and configuration, so that the columns which repeat along a dataset's runs compress: the
ids, 32 random hex digits a row, were four tenths of the file, and ordering by them
scattered every other column.
Only the tables in :data:`~metabo.kb.schema.TABLES` travel: the ``surrogate_bank`` cache
is derived from the runs and is rebuilt where it is needed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from metabo.data.pypi_fetch import sha256_of
from metabo.exceptions import InputDataError, KnowledgeBaseError, MetaboError, SchemaVersionError
from metabo.kb._sql import scalar
from metabo.kb.schema import FILL_RUN_PROTOCOLS, RUN_ID_SQL, SCHEMA_VERSION, TABLE_KEYS, TABLE_SINCE, TABLES

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
#: Columns an export may leave out because import computes them from the others.
DERIVED: dict[str, dict[str, str]] = {"runs": {"run_id": RUN_ID_SQL}}
#: The order of the runs in an export: a run's identity, grouped by what repeats.
RUNS_EXPORT_ORDER = ("source", "dataset_id", "metric", "algorithm", "config_id", "repeat", "fold", "split_seed",
                     "fidelity")


def export_parquet(kb: KnowledgeBase, folder: str | Path, *, compression: str = "zstd",
                   without: tuple[str, ...] = ()) -> dict[str, int]:
    """Write every table to ``folder/<table>.parquet``; return the row counts. The tables
    named in ``without`` (``predictions``: large, and derived from the runs) are written
    empty, with their columns, so the export imports as any other."""
    out = Path(folder)
    if compression not in {"zstd", "snappy", "gzip", "uncompressed"}:
        raise InputDataError(f"unknown Parquet compression {compression!r}")
    if unknown := set(without) - set(TABLES):
        raise InputDataError(f"unknown table(s) {sorted(unknown)}; tables: {list(TABLES)}")
    _check_export_folder(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    except OSError as e:
        raise KnowledgeBaseError(f"cannot export to {out}: {e.strerror or e}") from e
    counts: dict[str, int] = {}
    con = kb.connection
    try:
        digests = {}
        derived = _derivable(kb)
        for table in TABLES:
            order = ", ".join(RUNS_EXPORT_ORDER if table == "runs" else TABLE_KEYS[table])
            limit = " LIMIT 0" if table in without else ""
            columns = "*" + (f" EXCLUDE ({', '.join(derived[table])})" if derived.get(table) else "")
            con.execute(
                f"COPY (SELECT {columns} FROM {table} ORDER BY {order}{limit}) TO $1 "  # noqa: S608 - fixed names
                f"(FORMAT parquet, COMPRESSION {compression})",
                [str(tmp / f"{table}.parquet")],
            )
            counts[table] = 0 if table in without else int(
                scalar(con.execute(f"SELECT count(*) FROM {table}")))  # noqa: S608
            digests[table] = sha256_of(tmp / f"{table}.parquet")
        (tmp / MANIFEST).write_text(json.dumps(
            {"schema_version": kb.schema_version(), "rows": counts, "sha256": digests, "derived": derived}, indent=2))
        _replace_folder(tmp, out)
    except (duckdb.Error, OSError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0]
        raise KnowledgeBaseError(f"export to {out} failed, nothing was written: {reason}") from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("exported %s to %s", counts, out)
    return counts


def _derivable(kb: KnowledgeBase) -> dict[str, list[str]]:
    """The columns of :data:`DERIVED` that equal their formula on every stored row (a
    store written by another tool may hold other ids: those travel as stored)."""
    out: dict[str, list[str]] = {}
    for table, formulas in DERIVED.items():
        out[table] = [c for c, sql in formulas.items()
                      if scalar(kb.connection.execute(
                          f"SELECT count(*) FROM {table} WHERE {c} IS DISTINCT FROM {sql}")) == 0]  # noqa: S608
    return out


def _check_export_folder(out: Path) -> None:
    """Refuse a target that is a file, or a folder holding anything but an earlier export
    (which the new one replaces)."""
    if out.exists() and not out.is_dir():
        raise InputDataError(f"{out} is a file; give a new folder (or an earlier export's) to export to")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise InputDataError(f"{out} holds files that are not a metabo export; give a new or empty folder")


def _replace_folder(tmp: Path, out: Path) -> None:
    """Move the finished export ``tmp`` to ``out``, replacing an earlier export there."""
    if out.is_dir():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
        try:
            os.replace(tmp, out)
        except OSError:
            os.replace(old / out.name, out)  # put the earlier export back
            raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def import_parquet(kb: KnowledgeBase, folder: str | Path) -> dict[str, int]:
    """Import an export folder; return the rows newly written per table."""
    src = Path(folder)
    manifest_path = src / MANIFEST
    if not manifest_path.is_file():
        raise InputDataError(f"{src} is not a metabo export (no {MANIFEST})")
    try:
        manifest = json.loads(manifest_path.read_text())
        version = int(manifest["schema_version"])
        rows = {str(t): int(n) for t, n in manifest["rows"].items()}
        derived = {str(t): [str(c) for c in cs] for t, cs in (manifest.get("derived") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise InputDataError(f"{manifest_path} is corrupt: {type(e).__name__} {e}") from e
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(f"export has schema version {version}; this metabo knows {SCHEMA_VERSION}")
    _check_digests(src, manifest)
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
                computed = [c for c in derived.get(table, ()) if c in DERIVED.get(table, {}) and c not in rel.columns]
                if computed:
                    rel = rel.project(", ".join(["*", *(f"{DERIVED[table][c]} AS {c}" for c in computed)]))
                expected = rows.get(table, -1)
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
                n = scalar(con.execute(
                    f"INSERT INTO {table} ({', '.join(shared)}) "  # noqa: S608 - fixed names
                    f"SELECT {', '.join('b.' + c for c in shared)} FROM _import_batch b "
                    f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {cond})"
                ))
                con.unregister("_import_batch")  # (after a failure, the rollback drops it)
                added[table] = int(n)
                if table == "runs" and "algorithm" not in rel.columns:  # an export from before v4
                    con.execute(
                        "UPDATE runs SET algorithm = c.algorithm FROM configurations c "
                        "WHERE runs.algorithm IS NULL AND c.config_id = runs.config_id"
                    )
            for stmt in FILL_RUN_PROTOCOLS:  # an export from before v6 (needs the sessions: after every table)
                con.execute(stmt)
    except MetaboError:
        raise
    except (duckdb.Error, RuntimeError, UnicodeError) as e:  # a corrupt file can fail in DuckDB's reader too
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise KnowledgeBaseError(f"import of {src} failed, nothing was imported: {text} (a corrupt or "
                                 "truncated file? export it again)") from e
    logger.info("imported %s from %s", added, src)
    return added


def _check_digests(src: Path, manifest: dict) -> None:
    """Compare each file with the SHA-256 the manifest records (exports from before the
    checksums have none): a corrupt file is refused before anything is read from it."""
    digests = manifest.get("sha256") or {}
    if not isinstance(digests, dict):
        raise InputDataError(f"{src / MANIFEST} is corrupt: its sha256 entry is not a table of files")
    for table, expected in digests.items():
        path = src / f"{table}.parquet"
        if path.is_file() and sha256_of(path) != expected:
            raise InputDataError(f"{path} is not the file the export wrote (its SHA-256 differs from the "
                                 "manifest's): a corrupt or changed file; export it again")
