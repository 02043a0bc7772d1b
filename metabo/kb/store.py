"""The DuckDB knowledge base: connection, transactions, migrations and writes.

One :class:`KnowledgeBase` wraps one DuckDB connection to one file (or ``:memory:``).
Every write goes through :meth:`KnowledgeBase.transaction`: a batch is committed whole
or not at all, so a process killed mid-batch leaves the store as it was before it.
All SQL is parameterized or reads registered DataFrames; no value is pasted into SQL.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.exceptions import (
    InputDataError,
    KnowledgeBaseError,
    SchemaVersionError,
    UnknownAlgorithmError,
    UnknownDatasetError,
)
from metabo.kb import predictions as _pred
from metabo.kb import runs as _runs
from metabo.kb.canonical import canonical_json, config_id_of_canonical
from metabo.kb.schema import MIGRATIONS, SCHEMA_VERSION, TABLES
from metabo.paths import default_kb_path

logger = logging.getLogger(__name__)


def utcnow() -> datetime:
    """Naive UTC timestamp at microsecond precision (what DuckDB's TIMESTAMP stores)."""
    return datetime.now(UTC).replace(tzinfo=None)


class KnowledgeBase:
    """A knowledge base of datasets, meta-features, configurations and runs.

    Args:
        path: the DuckDB file; ``None`` is the embedded default
            (:func:`metabo.paths.default_kb_path`), ``":memory:"`` a throwaway store.
        read_only: open without write access (several readers may share a file).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False) -> None:
        self.path = Path(path) if path not in (None, ":memory:") else path
        if self.path is None:
            self.path = default_kb_path()
        target = str(self.path)
        if target != ":memory:":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(target, read_only=read_only)
        except duckdb.Error as e:
            raise KnowledgeBaseError(
                f"cannot open knowledge base {target}: {e}. If the file is corrupt, restore it "
                "from a Parquet export (metabo kb import)"
            ) from e
        self._lock = threading.RLock()
        self._depth = 0
        if not read_only:
            self.migrate()
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
        except duckdb.Error as e:
            raise KnowledgeBaseError(f"query failed: {e}") from e

    # ------------------------------------------------------------------ schema
    def schema_version(self) -> int:
        """The highest applied migration (0 for an empty file)."""
        exists = self.connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
        ).fetchone()[0]
        if not exists:
            return 0
        return int(self.connection.execute(
            "SELECT coalesce(max(version), 0) FROM schema_migrations"
        ).fetchone()[0])

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

    # ------------------------------------------------------------------ datasets
    def add_dataset(
        self,
        dataset: Dataset,
        meta_features: Mapping[str, float] | None = None,
        *,
        meta_source: str = "metabo",
    ) -> str:
        """Register ``dataset`` (and its meta-features); return its ``dataset_id``.

        The same content (fingerprint) or the same OpenML id maps onto the dataset
        already stored, whatever its source: one dataset, several provenances.
        """
        with self.transaction():
            ds_id = self.register_dataset(
                name=dataset.name,
                source=dataset.source,
                openml_id=dataset.openml_id,
                fingerprint=dataset.fingerprint,
                task=dataset.task,
                n_instances=dataset.n_instances,
                n_features=dataset.n_features,
                n_classes=dataset.n_classes,
                flags={k: list(v) for k, v in dataset.flags.items()},
                description=dataset.description,
            )
            if meta_features:
                self.add_meta_features(ds_id, meta_features, source=meta_source)
        return ds_id

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
        """Register a dataset known by its description only (e.g. an OpenML meta-dataset).

        Lookup order: fingerprint, OpenML id, ``<source>-<name>``; the first match is
        returned (and its missing fields filled), otherwise a new row is written.
        """
        if not name or not source:
            raise InputDataError("a dataset needs a non-empty name and source")
        con = self.connection
        existing = None
        if fingerprint is not None:
            existing = con.execute(
                "SELECT dataset_id FROM datasets WHERE fingerprint = ?", [fingerprint]
            ).fetchone()
        if existing is None and openml_id is not None:
            existing = con.execute(
                "SELECT dataset_id FROM datasets WHERE openml_id = ? ORDER BY dataset_id",
                [int(openml_id)],
            ).fetchone()
        ds_id = f"openml-{int(openml_id)}" if openml_id is not None else f"{source}-{name}"
        if existing is None:
            existing = con.execute(
                "SELECT dataset_id FROM datasets WHERE dataset_id = ?", [ds_id]
            ).fetchone()
        with self.transaction() as tx:
            if existing is not None:
                tx.execute(
                    """UPDATE datasets SET
                        openml_id = coalesce(openml_id, ?), fingerprint = coalesce(fingerprint, ?),
                        n_instances = coalesce(n_instances, ?), n_features = coalesce(n_features, ?),
                        n_classes = coalesce(n_classes, ?)
                       WHERE dataset_id = ?""",
                    [openml_id, fingerprint, n_instances, n_features, n_classes, existing[0]],
                )
                return str(existing[0])
            tx.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    ds_id, name, source, openml_id, fingerprint, task, n_instances,
                    n_features, n_classes, json.dumps(dict(flags or {}), sort_keys=True),
                    description, utcnow(),
                ],
            )
        return ds_id

    def dataset_ids(self) -> list[str]:
        return [r[0] for r in self.connection.execute(
            "SELECT dataset_id FROM datasets ORDER BY dataset_id").fetchall()]

    def get_dataset(self, dataset_id: str) -> dict[str, Any]:
        """The stored row of a dataset; :class:`UnknownDatasetError` if absent."""
        df = self.query("SELECT * FROM datasets WHERE dataset_id = ?", [dataset_id])
        if df.empty:
            raise UnknownDatasetError(
                f"unknown dataset {dataset_id!r}; `metabo kb datasets` lists the stored ones"
            )
        row = df.iloc[0].to_dict()
        row["flags"] = json.loads(row["flags"])
        return row

    def resolve_dataset(self, ref: str | int) -> str:
        """Map a dataset id, an OpenML id (int or ``openml:ID``) or a unique name to its id."""
        con = self.connection
        if isinstance(ref, int) or (isinstance(ref, str) and ref.startswith("openml:")):
            oid = int(str(ref).removeprefix("openml:"))
            hit = con.execute("SELECT dataset_id FROM datasets WHERE openml_id = ?", [oid]).fetchall()
        else:
            hit = con.execute("SELECT dataset_id FROM datasets WHERE dataset_id = ?", [ref]).fetchall()
            if not hit:
                hit = con.execute("SELECT dataset_id FROM datasets WHERE name = ?", [ref]).fetchall()
        if len(hit) == 1:
            return str(hit[0][0])
        if len(hit) > 1:
            raise UnknownDatasetError(
                f"dataset {ref!r} is ambiguous: {[h[0] for h in hit]}; use the dataset id"
            )
        raise UnknownDatasetError(f"unknown dataset {ref!r}; `metabo kb datasets` lists the stored ones")

    def add_meta_features(
        self, dataset_id: str, values: Mapping[str, float], *, source: str = "metabo"
    ) -> int:
        """Store (replace) meta-features of one stored dataset; returns how many were written."""
        frame = pd.DataFrame({"dataset_id": dataset_id, "name": [str(n) for n in values],
                              "value": list(values.values()), "source": source})
        return self.add_meta_features_frame(frame)

    def add_meta_features_frame(self, frame: pd.DataFrame) -> int:
        """Bulk path: store (replace) rows ``dataset_id, name, value[, source]``.

        NaN or None is stored as NULL (the quantity is undefined for that dataset);
        infinite or non-numeric values and unknown datasets are refused, storing nothing.
        """
        frame = frame.copy()
        if "source" not in frame.columns:
            frame["source"] = "metabo"
        missing = {"dataset_id", "name", "value"} - set(frame.columns)
        if missing:
            raise InputDataError(f"meta-feature rows need columns {sorted(missing)}")
        try:
            values = pd.to_numeric(frame["value"], errors="raise").astype(np.float64)
        except (TypeError, ValueError) as e:
            raise InputDataError(f"meta-feature values must be numbers: {e}") from e
        if np.isinf(values).any():
            bad = frame.loc[np.isinf(values), "name"].tolist()[:5]
            raise InputDataError(f"meta-features {bad} are infinite")
        frame["value"] = values
        frame = frame[["dataset_id", "name", "value", "source"]].astype(
            {"dataset_id": str, "name": str, "source": str}
        ).drop_duplicates(["dataset_id", "name"], keep="last")
        with self.transaction() as tx:
            tx.register("_mf_batch", frame)
            try:
                unknown = [r[0] for r in tx.execute(
                    "SELECT DISTINCT dataset_id FROM _mf_batch ANTI JOIN datasets USING (dataset_id) LIMIT 5"
                ).fetchall()]
                if unknown:
                    raise UnknownDatasetError(f"unknown dataset(s) {unknown}; register them first")
                tx.execute(
                    "DELETE FROM meta_features WHERE (dataset_id, name) IN "
                    "(SELECT (dataset_id, name) FROM _mf_batch)"
                )
                tx.execute("INSERT INTO meta_features SELECT dataset_id, name, value, source FROM _mf_batch")
            finally:
                tx.unregister("_mf_batch")
        return len(frame)

    # ------------------------------------------------------------------ algorithms, configs
    def add_algorithms(self, names: Iterable[str], *, family: str = "", description: str = "") -> int:
        """Register algorithm names (existing ones are kept); returns how many were new."""
        new = [n for n in dict.fromkeys(names)]
        for n in new:
            if not isinstance(n, str) or not n.strip():
                raise InputDataError(f"invalid algorithm name {n!r}")
        with self.transaction() as tx:
            known = {r[0] for r in tx.execute("SELECT name FROM algorithms").fetchall()}
            fresh = [n for n in new if n not in known]
            now = utcnow()
            if fresh:
                tx.executemany(
                    "INSERT INTO algorithms VALUES (?, ?, ?, ?)",
                    [(n, family, description, now) for n in fresh],
                )
        return len(fresh)

    def algorithms(self) -> list[str]:
        return [r[0] for r in self.connection.execute("SELECT name FROM algorithms ORDER BY name").fetchall()]

    def add_configurations(self, algorithms: Iterable[str], params: Iterable[Any]) -> list[str]:
        """Store configurations (canonical JSON + hash); return their ids in input order.

        Unknown algorithms raise :class:`UnknownAlgorithmError`; a params value that is
        not a JSON object raises :class:`InputDataError`; nothing is written then.
        """
        algos = algorithms if isinstance(algorithms, pd.Series) else pd.Series(list(algorithms), dtype=object)
        plist = params if isinstance(params, pd.Series) else pd.Series(list(params), dtype=object)
        algos, plist = algos.reset_index(drop=True), plist.reset_index(drop=True)
        if len(algos) != len(plist):
            raise InputDataError("algorithms and params differ in length")
        missing = sorted(set(algos.unique()) - set(self.algorithms()))
        if missing:
            raise UnknownAlgorithmError(
                f"unknown algorithm(s) {missing[:5]}; register them first with add_algorithms"
            )
        # Canonicalize each distinct (algorithm, params) once: JSON texts are compared as
        # given, mappings by their canonical text (they are not hashable).
        if pd.api.types.infer_dtype(plist, skipna=False) == "string":
            texts = plist
        else:
            texts = plist.astype(object).copy()
            is_text = texts.map(lambda p: isinstance(p, str)).to_numpy(bool)
            texts[~is_text] = [canonical_json(p) for p in texts[~is_text]]
        codes, uniques = pd.factorize(algos.astype(str) + "\x00" + texts.astype(str))
        rows = []
        for key in uniques:
            algo, _, raw = key.partition("\x00")
            text = canonical_json(raw)
            rows.append((config_id_of_canonical(algo, text), algo, text))
        unique_ids = np.array([r[0] for r in rows], dtype=object)
        ids = unique_ids[codes].tolist() if len(codes) else []
        rows = list({r[0]: r for r in rows}.values())
        frame = pd.DataFrame(rows, columns=["config_id", "algorithm", "params"])
        frame["created_at"] = pd.Timestamp(utcnow())
        with self.transaction() as tx:
            tx.register("_cfg_batch", frame)
            try:
                tx.execute(
                    "INSERT INTO configurations SELECT config_id, algorithm, params, created_at "
                    "FROM _cfg_batch b WHERE NOT EXISTS "
                    "(SELECT 1 FROM configurations c WHERE c.config_id = b.config_id)"
                )
            finally:
                tx.unregister("_cfg_batch")
        return ids

    def get_configuration(self, cid: str) -> tuple[str, dict[str, Any]]:
        row = self.connection.execute(
            "SELECT algorithm, params FROM configurations WHERE config_id = ?", [cid]
        ).fetchone()
        if row is None:
            raise InputDataError(f"unknown configuration id {cid!r}")
        return row[0], json.loads(row[1])

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
        return _pred.get_predictions(self, run_id, split=split)

    # ------------------------------------------------------------------ sessions, state
    def add_session(
        self, session_id: str, *, strategy: str, dataset_id: str | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> str:
        """Create (or return) a tuning session; its runs use ``source='session:<id>'``."""
        if dataset_id is not None:
            self.get_dataset(dataset_id)
        now = utcnow()
        with self.transaction() as tx:
            if tx.execute("SELECT 1 FROM sessions WHERE session_id = ?", [session_id]).fetchone():
                return session_id
            tx.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, 'running', ?, ?)",
                [session_id, dataset_id, strategy, json.dumps(dict(settings or {}), sort_keys=True), now, now],
            )
        return session_id

    def set_session_status(self, session_id: str, status: str) -> None:
        with self.transaction() as tx:
            tx.execute(
                "UPDATE sessions SET status = ?, updated_at = ? WHERE session_id = ?",
                [status, utcnow(), session_id],
            )

    def get_state(self, key: str, default: Any = None) -> Any:
        """A resumable job's saved cursor (JSON-decoded), or ``default``."""
        row = self.connection.execute("SELECT value FROM ingest_state WHERE key = ?", [key]).fetchone()
        return default if row is None else json.loads(row[0])

    def set_state(self, key: str, value: Any) -> None:
        """Save a cursor; call inside the batch's transaction so both land together."""
        with self.transaction() as tx:
            tx.execute("DELETE FROM ingest_state WHERE key = ?", [key])
            tx.execute("INSERT INTO ingest_state VALUES (?, ?, ?)", [key, json.dumps(value), utcnow()])

    # ------------------------------------------------------------------ summary
    def stats(self) -> dict[str, Any]:
        """Counts of what is stored: datasets, algorithms, configurations, runs by status."""
        con = self.connection
        out: dict[str, Any] = {"path": str(self.path), "schema_version": self.schema_version()}
        for table in TABLES:
            out[table] = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608 - fixed names
        by_status = dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
        out["runs_by_status"] = {s: int(by_status.get(s, 0)) for s in ("ok", "crash", "timeout", "memout")}
        out["runs_by_source"] = {
            str(k): int(v) for k, v in con.execute(
                "SELECT split_part(source, ':', 1) AS kind, count(*) FROM runs GROUP BY kind ORDER BY kind"
            ).fetchall()
        }
        return out
