"""The DuckDB knowledge base: connection, transactions, migrations and writes.

One :class:`KnowledgeBase` wraps one DuckDB connection to one file (or ``:memory:``).
This module holds the plumbing; each kind of write or lookup lives in its own module
(:mod:`~metabo.kb.datasets`, :mod:`~metabo.kb.configurations`, :mod:`~metabo.kb.runs`,
:mod:`~metabo.kb.predictions`, :mod:`~metabo.kb.sessions`) and the methods delegate.
Every write goes through :meth:`KnowledgeBase.transaction`: a batch is committed whole
or not at all, so a process killed mid-batch leaves the store as it was before it.
All SQL is parameterized or reads registered DataFrames; no value is pasted into SQL.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.exceptions import KnowledgeBaseError, SchemaVersionError
from metabo.kb import configurations as _configs
from metabo.kb import datasets as _datasets
from metabo.kb import predictions as _pred
from metabo.kb import runs as _runs
from metabo.kb import sessions as _sessions
from metabo.kb._sql import scalar
from metabo.kb.schema import CLUSTER_RUNS, MIGRATIONS, SCHEMA_VERSION, TABLES
from metabo.kb.timestamps import utcnow
from metabo.paths import default_kb_path

logger = logging.getLogger(__name__)


def _progress_bar_off(con: duckdb.DuckDBPyConnection) -> None:
    """Library code prints nothing: DuckDB's own progress bar is off (callers show progress).

    In a Jupyter kernel without ipywidgets DuckDB refuses to change the setting at all (the
    bar is off there already); only a refusal that leaves the bar on is an error.
    """
    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException:
        if scalar(con.execute("SELECT current_setting('enable_progress_bar')")):
            raise


class KnowledgeBase:
    """A knowledge base of datasets, meta-features, configurations and runs.

    Args:
        path: the DuckDB file; ``None`` is the embedded default
            (:func:`metabo.paths.default_kb_path`), ``":memory:"`` a throwaway store.
        read_only: open without write access (several readers may share a file).
        load_shipped: import the shipped knowledge base (:mod:`metabo.kb.shipped`) into a
            store that holds no dataset yet; default: only for the embedded default file.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self, path: str | Path | None = None, *, read_only: bool = False, load_shipped: bool | None = None
    ) -> None:
        embedded = path is None
        self.path = Path(path) if path not in (None, ":memory:") else path
        if self.path is None:
            self.path = default_kb_path()
        target = str(self.path)
        if target != ":memory:":
            _check_path(Path(target), read_only=read_only, embedded=embedded)
        try:
            self._con = duckdb.connect(target, read_only=read_only)
            _progress_bar_off(self._con)
        except duckdb.Error as e:
            raise KnowledgeBaseError(open_error(target, e)) from e
        self._lock = threading.RLock()
        self._depth = 0
        if not read_only:
            self.migrate()
            if embedded if load_shipped is None else load_shipped:
                from metabo.kb.shipped import load_shipped as _load_shipped

                _load_shipped(self)
        else:
            self._check_version()

    # ------------------------------------------------------------------ plumbing
    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._con is not None:
            self._con.close()
            self._con = None  # type: ignore[assignment]

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, for read queries (:mod:`metabo.kb.queries`)."""
        if self._con is None:
            raise KnowledgeBaseError("the knowledge base is closed")
        return self._con

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All writes inside commit together or not at all; nested calls join the outer one."""
        con = self.connection
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield con
                finally:
                    self._depth -= 1
                return
            con.execute("BEGIN TRANSACTION")
            self._depth = 1
            try:
                yield con
            except BaseException:
                self._depth = 0
                con.execute("ROLLBACK")
                raise
            self._depth = 0
            try:
                con.execute("COMMIT")
            except duckdb.Error as e:
                raise KnowledgeBaseError(f"commit failed, nothing of this batch was stored: {e}") from e

    def query(self, sql: str, params: Iterable[Any] | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Run a parameterized read query and return a DataFrame."""
        try:
            return self.connection.execute(sql, params or []).df()
        except duckdb.InterruptException as e:  # Ctrl-C while DuckDB ran it: an interrupt, not a failure
            raise KeyboardInterrupt from e
        except duckdb.Error as e:
            raise KnowledgeBaseError(f"query failed: {e}") from e
        except RuntimeError as e:  # the same, raised while the result is converted ("Query interrupted")
            if "interrupted" in str(e).lower():
                raise KeyboardInterrupt from e
            raise

    # ------------------------------------------------------------------ schema
    def schema_version(self) -> int:
        """The highest applied migration (0 for an empty file)."""
        exists = scalar(self.connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
        ))
        if not exists:
            return 0
        return int(scalar(self.connection.execute(
            "SELECT coalesce(max(version), 0) FROM schema_migrations"
        )))

    def _check_version(self) -> int:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} has schema version {version}, newer than this metabo "
                f"({SCHEMA_VERSION}); upgrade metabo"
            )
        return version

    def migrate(self, target: int = SCHEMA_VERSION) -> list[int]:
        """Apply pending migrations up to ``target``, each in its own transaction."""
        con = self.connection
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
        )
        current = self._check_version()
        applied = []
        for m in MIGRATIONS:
            if current < m.version <= target:
                with self.transaction() as tx:
                    for stmt in m.statements:
                        tx.execute(stmt)
                    tx.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        [m.version, m.description, utcnow()],
                    )
                logger.info("knowledge base %s migrated to version %d", self.path, m.version)
                applied.append(m.version)
        return applied

    def optimize(self) -> float:
        """Rewrite ``runs`` ordered by (algorithm, metric, dataset, configuration) and
        checkpoint; return the seconds it took.

        Nothing changes but the physical order: after large ingestions (a published
        meta-dataset stored chunk by chunk, dataset by dataset), a question about one
        algorithm then reads only that algorithm's row groups (DuckDB skips the others
        by their min/max statistics). One transaction: a failure leaves ``runs`` as it was.
        """
        start = time.perf_counter()
        with self.transaction() as tx:
            for stmt in CLUSTER_RUNS:
                tx.execute(stmt)
        self.connection.execute("CHECKPOINT")
        seconds = time.perf_counter() - start
        logger.info("runs of %s re-ordered in %.1f s", self.path, seconds)
        return seconds

    # ------------------------------------------------------------------ datasets
    def add_dataset(
        self,
        dataset: Dataset,
        meta_features: Mapping[str, float] | None = None,
        *,
        meta_source: str = "metabo",
    ) -> str:
        """See :func:`metabo.kb.datasets.add_dataset`."""
        return _datasets.add_dataset(self, dataset, meta_features, meta_source=meta_source)

    def register_dataset(
        self,
        *,
        name: str,
        source: str,
        openml_id: int | None = None,
        fingerprint: str | None = None,
        task: str = "classification",
        n_instances: int | None = None,
        n_features: int | None = None,
        n_classes: int | None = None,
        flags: Mapping[str, Any] | None = None,
        description: str = "",
    ) -> str:
        """See :func:`metabo.kb.datasets.register_dataset`."""
        return _datasets.register_dataset(
            self, name=name, source=source, openml_id=openml_id, fingerprint=fingerprint,
            task=task, n_instances=n_instances, n_features=n_features, n_classes=n_classes,
            flags=flags, description=description,
        )

    def set_dataset_flag(self, dataset_id: str, flag: str, values: list[str] | None) -> None:
        """See :func:`metabo.kb.datasets.set_dataset_flag`."""
        _datasets.set_dataset_flag(self, dataset_id, flag, values)

    def dataset_ids(self) -> list[str]:
        """See :func:`metabo.kb.datasets.dataset_ids`."""
        return _datasets.dataset_ids(self)

    def get_dataset(self, dataset_id: str) -> dict[str, Any]:
        """See :func:`metabo.kb.datasets.get_dataset`."""
        return _datasets.get_dataset(self, dataset_id)

    def resolve_dataset(self, ref: str | int) -> str:
        """See :func:`metabo.kb.datasets.resolve_dataset`."""
        return _datasets.resolve_dataset(self, ref)

    def add_meta_features(
        self, dataset_id: str, values: Mapping[str, float], *, source: str = "metabo"
    ) -> int:
        """See :func:`metabo.kb.datasets.add_meta_features`."""
        return _datasets.add_meta_features(self, dataset_id, values, source=source)

    def add_meta_features_frame(self, frame: pd.DataFrame) -> int:
        """See :func:`metabo.kb.datasets.add_meta_features_frame`."""
        return _datasets.add_meta_features_frame(self, frame)

    # ------------------------------------------------------------------ algorithms, configs
    def add_algorithms(self, names: Iterable[str], *, family: str = "", description: str = "") -> int:
        """See :func:`metabo.kb.configurations.add_algorithms`."""
        return _configs.add_algorithms(self, names, family=family, description=description)

    def algorithms(self) -> list[str]:
        """See :func:`metabo.kb.configurations.algorithms`."""
        return _configs.algorithms(self)

    def add_configurations(self, algorithms: Iterable[str], params: Iterable[Any]) -> list[str]:
        """See :func:`metabo.kb.configurations.add_configurations`."""
        return _configs.add_configurations(self, algorithms, params)

    def get_configuration(self, cid: str) -> tuple[str, dict[str, Any]]:
        """See :func:`metabo.kb.configurations.get_configuration`."""
        return _configs.get_configuration(self, cid)

    # ------------------------------------------------------------------ runs
    def add_runs(self, runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> int:
        """Ingest a batch of runs; return how many were new (see :mod:`metabo.kb.runs`)."""
        return _runs.add_runs(self, runs)

    def add_run(self, **fields: Any) -> str:
        """Ingest one run and return its ``run_id`` (same path as :meth:`add_runs`)."""
        with self.transaction():
            frame = _runs.normalize_runs(self, [fields])
            _runs.insert_normalized(self, frame)
            return _runs.run_ids(self, frame)[0]

    # ------------------------------------------------------------------ predictions
    def add_predictions(self, run_id: str, array: np.ndarray, *, split: str = "valid") -> None:
        """Store a run's outputs (n x k probabilities or n labels) compactly (float32 + zlib)."""
        _pred.add_predictions(self, run_id, array, split=split)

    def get_predictions(self, run_id: str, *, split: str = "valid") -> np.ndarray:
        """The stored predictions of run ``run_id`` on ``split``
        (:func:`metabo.kb.predictions.get_predictions`)."""
        return _pred.get_predictions(self, run_id, split=split)

    # ------------------------------------------------------------------ sessions, state
    def add_session(
        self, session_id: str, *, strategy: str, dataset_id: str | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> str:
        """See :func:`metabo.kb.sessions.add_session`."""
        return _sessions.add_session(
            self, session_id, strategy=strategy, dataset_id=dataset_id, settings=settings
        )

    def set_session_status(self, session_id: str, status: str) -> None:
        """See :func:`metabo.kb.sessions.set_session_status`."""
        _sessions.set_session_status(self, session_id, status)

    def get_state(self, key: str, default: Any = None) -> Any:
        """See :func:`metabo.kb.sessions.get_state`."""
        return _sessions.get_state(self, key, default)

    def set_state(self, key: str, value: Any) -> None:
        """See :func:`metabo.kb.sessions.set_state`."""
        _sessions.set_state(self, key, value)

    # ------------------------------------------------------------------ summary
    def stats(self) -> dict[str, Any]:
        """Counts of what is stored: datasets, algorithms, configurations, runs by status,
        by source and by protocol (how they were measured, with the datasets measured so)."""
        con = self.connection
        out: dict[str, Any] = {"path": str(self.path), "schema_version": self.schema_version()}
        for table in TABLES:
            out[table] = int(scalar(con.execute(f"SELECT count(*) FROM {table}")))  # noqa: S608 - fixed names
        by_status = dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
        out["runs_by_status"] = {s: int(by_status.get(s, 0)) for s in ("ok", "crash", "timeout", "memout")}
        out["runs_by_source"] = {
            str(k): int(v) for k, v in con.execute(
                "SELECT split_part(source, ':', 1) AS kind, count(*) FROM runs GROUP BY kind ORDER BY kind"
            ).fetchall()
        }
        out["runs_by_protocol"] = {
            str(p): {"runs": int(n), "datasets": int(d)} for p, n, d in con.execute(
                "SELECT coalesce(protocol, '?'), count(*), count(DISTINCT dataset_id) FROM runs "
                "GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
        }
        return out

    def status_by_algorithm(self) -> pd.DataFrame:
        """Per algorithm: runs by status and the fraction that failed (crash/timeout/memout).

        Counts the rows of the primary metric (``error_rate``) when an algorithm has
        any, so each evaluation counts once; otherwise all of its rows.
        """
        df = self.query(
            """WITH r AS (
                   SELECT r.algorithm, r.status, r.metric,
                          bool_or(r.metric = 'error_rate') OVER (PARTITION BY r.algorithm) AS has_primary
                   FROM runs r)
               SELECT algorithm,
                      count(*) FILTER (WHERE status = 'ok') AS ok,
                      count(*) FILTER (WHERE status = 'crash') AS crash,
                      count(*) FILTER (WHERE status = 'timeout') AS timeout,
                      count(*) FILTER (WHERE status = 'memout') AS memout
               FROM r WHERE NOT has_primary OR metric = 'error_rate'
               GROUP BY algorithm ORDER BY algorithm"""
        )
        total = df[["ok", "crash", "timeout", "memout"]].sum(axis=1)
        df["failed_fraction"] = ((total - df["ok"]) / total).round(4)
        return df


def table_rows(kb: KnowledgeBase, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` (a name the schema defines, never user input), sorted by all columns."""
    return kb.connection.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()  # noqa: S608 - fixed names


def _check_path(path: Path, *, read_only: bool, embedded: bool) -> None:
    """Refuse, before DuckDB creates anything, a store that cannot be what was meant: a
    folder, a missing file opened read-only, or a file in a folder that does not exist
    (a mistyped ``--kb``; only the embedded default's folder is made)."""
    if path.is_dir():
        raise KnowledgeBaseError(f"{path} is a folder, not a knowledge base file (give the .duckdb file in it)")
    if read_only and not path.exists():
        raise KnowledgeBaseError(f"no knowledge base at {path} (check the path; metabo kb init {path} creates one)")
    if embedded:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # $METABO_HOME is a file, say
            raise KnowledgeBaseError(f"cannot make the folder {path.parent} of the default knowledge base: "
                                     f"{e.strerror or e} (check $METABO_HOME and $METABO_KB)") from e
    elif not path.parent.is_dir():
        raise KnowledgeBaseError(f"no folder {path.parent} for the knowledge base {path.name}: check the path, or "
                                 "create the folder first")


def open_error(target: str, error: Exception) -> str:
    """One line saying why DuckDB could not open the store ``target``, and what to do."""
    text = str(error)
    lower = text.lower()
    if "lock" in lower:
        pid = re.search(r"PID (\d+)", text)
        holder = f"process {pid.group(1)}" if pid else "another process"
        return (f"knowledge base {target} is in use by {holder} (a running metabo serve or tune?), and DuckDB lets "
                "no other process open it meanwhile: wait for it to end or stop it, or give another --kb")
    if "permission denied" in lower:
        return f"cannot open knowledge base {target}: permission denied (read it with a read-only command, or fix " \
               "the file's permissions)"
    if "read-only" in lower or "read only" in lower:
        return f"cannot write knowledge base {target}: it is read-only here"
    return (f"cannot open knowledge base {target}: {text.splitlines()[0] if text else type(error).__name__}. "
            "If the file is corrupt, restore it from a Parquet export (metabo kb import)")
