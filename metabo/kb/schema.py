"""The knowledge base schema and its migrations.

Each migration is registered once, in order, with the SQL that moves the schema from
version ``v - 1`` to ``v``; applied versions are recorded in ``schema_migrations`` (the
sqlite-utils ``migrations.py`` habit). Opening a store applies what is pending, each
migration in its own transaction, so a crash leaves the store at the last complete
version.

Tables (lower ``runs.value`` is better, always):

- ``datasets``: one row per dataset; ``dataset_id`` is ``openml-<id>`` or
  ``<source>-<name>``; the content ``fingerprint`` joins the same data from two sources.
- ``meta_features``: (dataset, name) -> value, with the ``source`` that computed it.
- ``algorithms``: algorithm names runs may refer to.
- ``configurations``: ``config_id`` = SHA-256 prefix of the canonical JSON of
  ``{"algorithm": ..., "params": ...}`` (see :mod:`metabo.kb.canonical`).
- ``runs``: one evaluation; ``run_id`` = MD5 of its identity (dataset, configuration,
  metric, fold, repeat, split seed, source, fidelity), which makes ingestion idempotent.
- ``predictions``: a run's validation (or test) outputs, float32, zlib-compressed.
- ``sessions``: tuning sessions; their runs carry ``source = 'session:<id>'``.
- ``ingest_state``: cursors of resumable ingestions (key -> JSON value).
- ``runs.algorithm`` (v4) repeats the algorithm of the run's configuration, so a
  question about one algorithm reads its runs without a join; :meth:`KnowledgeBase.optimize`
  keeps ``runs`` ordered by (algorithm, metric, dataset, configuration), so it also
  reads only that algorithm's row groups.
- ``source_ids``: provenance of rows that came from an external collection: the
  ``original_id`` a ``source`` (``pmf``, ``lcdb``, ...) gives a dataset or
  configuration (``kind``), and the ``local_id`` it is stored under.
- ``runs.protocol`` (v6): how the run was measured, the ``repr`` of its evaluation
  protocol (:func:`metabo.evaluation.protocols.protocol_label`, e.g.
  ``KFold(k=5, stratified=True, test=0.2, max_train=None)``: kind, folds, test part,
  training-row cap; the run's ``fold``, ``split_seed`` and ``fidelity`` give the fold, the
  seed and the rows trained on), or, for runs taken from elsewhere, the source's name
  (``openml``, ``oboe``, ...: measured as that source measures). Migration 6 fills it for
  stored runs from their session's settings, else from the source.
- ``surrogate_bank`` (v5): a cache of fitted base GPs, one row per (task, algorithm,
  metric, settings) with the fingerprint of the task's runs they were fitted on and the
  GP as a checked, compressed float64 blob (:mod:`metabo.surrogates.bank_cache`). Derived
  data: it is not in :data:`TABLES`, so Parquet export leaves it out and an imported
  store refits its bank on first use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    """One schema step: ``version`` is reached by running ``statements`` in order."""

    version: int
    description: str
    statements: tuple[str, ...]


# The columns of ``runs`` from schema version 4 on.
_RUNS_V4_COLUMNS = """
    run_id VARCHAR NOT NULL, dataset_id VARCHAR NOT NULL, config_id VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, value DOUBLE, fold INTEGER NOT NULL, repeat INTEGER NOT NULL,
    split_seed BIGINT, fit_seconds DOUBLE, predict_seconds DOUBLE, status VARCHAR NOT NULL,
    message VARCHAR, source VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, fidelity DOUBLE,
    algorithm VARCHAR"""
# ... and from version 6 on.
_RUNS_V6_COLUMNS = _RUNS_V4_COLUMNS + ", protocol VARCHAR"

def protocol_sql(alias: str) -> str:
    """The protocol of a run of table ``alias`` (one SQL expression, the one rule every
    write uses): its own ``protocol`` when given, else its session's (the session's
    settings' entry for the run's dataset in ``protocols``, for a build measuring each
    dataset its own way, else their ``protocol``), else the source's name."""
    return (f"coalesce({alias}.protocol, (SELECT coalesce("
            f"json_extract_string(s.settings -> '$.protocols', {alias}.dataset_id), "
            f"json_extract_string(s.settings, '$.protocol')) FROM sessions s "
            f"WHERE 'session:' || s.session_id = {alias}.source), split_part({alias}.source, ':', 1))")


#: Fill ``runs.protocol`` where it is NULL by :func:`protocol_sql` (migration 6, and
#: imports of exports from before it).
FILL_RUN_PROTOCOLS: tuple[str, ...] = (
    f"UPDATE runs SET protocol = {protocol_sql('runs')} WHERE protocol IS NULL",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema",
        (
            """CREATE TABLE datasets (
                dataset_id VARCHAR PRIMARY KEY,
                name VARCHAR NOT NULL,
                source VARCHAR NOT NULL,
                openml_id BIGINT,
                fingerprint VARCHAR,
                task VARCHAR NOT NULL DEFAULT 'classification',
                n_instances BIGINT,
                n_features BIGINT,
                n_classes BIGINT,
                flags VARCHAR NOT NULL DEFAULT '{}',
                description VARCHAR NOT NULL DEFAULT '',
                created_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE meta_features (
                dataset_id VARCHAR NOT NULL,
                name VARCHAR NOT NULL,
                value DOUBLE,
                source VARCHAR NOT NULL,
                PRIMARY KEY (dataset_id, name)
            )""",
            """CREATE TABLE algorithms (
                name VARCHAR PRIMARY KEY,
                family VARCHAR NOT NULL DEFAULT '',
                description VARCHAR NOT NULL DEFAULT '',
                created_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE configurations (
                config_id VARCHAR PRIMARY KEY,
                algorithm VARCHAR NOT NULL,
                params VARCHAR NOT NULL,
                created_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE runs (
                run_id VARCHAR NOT NULL,
                dataset_id VARCHAR NOT NULL,
                config_id VARCHAR NOT NULL,
                metric VARCHAR NOT NULL,
                value DOUBLE,
                fold INTEGER NOT NULL,
                repeat INTEGER NOT NULL,
                split_seed BIGINT,
                fit_seconds DOUBLE,
                predict_seconds DOUBLE,
                status VARCHAR NOT NULL,
                message VARCHAR,
                source VARCHAR NOT NULL,
                created_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE predictions (
                run_id VARCHAR NOT NULL,
                split VARCHAR NOT NULL,
                n_rows INTEGER NOT NULL,
                n_cols INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (run_id, split)
            )""",
            """CREATE TABLE sessions (
                session_id VARCHAR PRIMARY KEY,
                dataset_id VARCHAR,
                strategy VARCHAR NOT NULL,
                settings VARCHAR NOT NULL DEFAULT '{}',
                status VARCHAR NOT NULL DEFAULT 'running',
                created_at TIMESTAMP NOT NULL,
                updated_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE ingest_state (
                key VARCHAR PRIMARY KEY,
                value VARCHAR NOT NULL,
                updated_at TIMESTAMP NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "runs.fidelity (training-set size, epochs, ...) for multi-fidelity sources such as LCDB",
        ("ALTER TABLE runs ADD COLUMN fidelity DOUBLE",),
    ),
    Migration(
        3,
        "source_ids: the original ids external collections give datasets and configurations",
        (
            """CREATE TABLE source_ids (
                source VARCHAR NOT NULL,
                kind VARCHAR NOT NULL,
                original_id VARCHAR NOT NULL,
                local_id VARCHAR NOT NULL,
                PRIMARY KEY (source, kind, original_id)
            )""",
        ),
    ),
    Migration(
        4,
        "runs.algorithm (the configuration's algorithm, denormalized) and runs ordered by it",
        (
            f"CREATE TABLE runs_v4 ({_RUNS_V4_COLUMNS})",
            """INSERT INTO runs_v4 SELECT r.*, c.algorithm FROM runs r
               LEFT JOIN configurations c USING (config_id)
               ORDER BY c.algorithm, r.metric, r.dataset_id, r.config_id""",
            "DROP TABLE runs",
            "ALTER TABLE runs_v4 RENAME TO runs",
        ),
    ),
    Migration(
        5,
        "surrogate_bank: a cache of fitted base GPs (metabo.surrogates.bank), not exported",
        (
            """CREATE TABLE surrogate_bank (
                task VARCHAR NOT NULL,
                algorithm VARCHAR NOT NULL,
                metric VARCHAR NOT NULL,
                settings VARCHAR NOT NULL,
                fingerprint VARCHAR NOT NULL,
                n INTEGER NOT NULL,
                state BLOB NOT NULL,
                created_at TIMESTAMP NOT NULL,
                PRIMARY KEY (task, algorithm, metric, settings)
            )""",
        ),
    ),
    Migration(
        6,
        "runs.protocol: how each run was measured, from its session's settings or its source",
        ("ALTER TABLE runs ADD COLUMN protocol VARCHAR", *FILL_RUN_PROTOCOLS),
    ),
)

#: Re-orders ``runs`` (algorithm, metric, dataset, configuration) in place: see
#: :meth:`metabo.kb.store.KnowledgeBase.optimize`.
CLUSTER_RUNS: tuple[str, ...] = (
    f"CREATE TABLE runs_sorted ({_RUNS_V6_COLUMNS})",
    "INSERT INTO runs_sorted SELECT * FROM runs ORDER BY algorithm, metric, dataset_id, config_id",
    "DROP TABLE runs",
    "ALTER TABLE runs_sorted RENAME TO runs",
)

SCHEMA_VERSION = MIGRATIONS[-1].version

# Columns of each table in schema order, for export/import and validation.
TABLES: tuple[str, ...] = (
    "datasets",
    "meta_features",
    "algorithms",
    "configurations",
    "runs",
    "predictions",
    "sessions",
    "ingest_state",
    "source_ids",
)

# The schema version that introduced each table after the first (older exports lack it).
TABLE_SINCE: dict[str, int] = {"source_ids": 3}

# The primary identity of each table's rows, used to import idempotently.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "datasets": ("dataset_id",),
    "meta_features": ("dataset_id", "name"),
    "algorithms": ("name",),
    "configurations": ("config_id",),
    "runs": ("run_id",),
    "predictions": ("run_id", "split"),
    "sessions": ("session_id",),
    "ingest_state": ("key",),
    "source_ids": ("source", "kind", "original_id"),
}

RUN_STATUSES: tuple[str, ...] = ("ok", "crash", "timeout", "memout")


def check_outcome(status: str, **values: float | None) -> None:
    """One trial's outcome is consistent: ``status`` is one of :data:`RUN_STATUSES`, ``ok``
    carries a finite ``value``, and a failure (crash, timeout, memout) carries no value at all
    (None or NaN): a number beside a failure would be stored as if measured. The one rule for
    :meth:`metabo.optimizer.Optimizer.tell` and the service's requests (which answer 422)."""
    from metabo.exceptions import InputDataError

    if status not in RUN_STATUSES:
        raise InputDataError(f"status must be one of {RUN_STATUSES}, got {status!r}")
    finite = {name: v for name, v in values.items() if v is not None and math.isfinite(v)}
    if status == "ok" and "value" in values and "value" not in finite:
        raise InputDataError(f"status 'ok' needs a finite value, got {values['value']}; "
                             "report a failure with status crash/timeout/memout")
    if status != "ok" and finite:
        given = " and ".join(f"{name}={v}" for name, v in finite.items())
        raise InputDataError(f"a {status} has no value, got {given}: send it as null (or status 'ok' "
                             "with the value measured)")

# SQL expression of a run's identity hash over a relation with the runs' columns.
# Positions are fixed; fidelity is appended only when present, so the ids of runs
# written before migration 2 stay valid.
RUN_ID_SQL = (
    "md5(concat_ws('|', dataset_id, config_id, metric, CAST(fold AS VARCHAR), "
    "CAST(repeat AS VARCHAR), coalesce(CAST(split_seed AS VARCHAR), ''), source) "
    "|| coalesce('|f=' || CAST(CAST(fidelity AS DOUBLE) AS VARCHAR), ''))"
)
