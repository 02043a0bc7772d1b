"""Algorithms and configurations in the knowledge base.

An algorithm is a registered name; a configuration is an algorithm with its
hyperparameters as canonical JSON, identified by a hash of both
(:mod:`metabo.kb.canonical`), so the same configuration is stored once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb._sql import SMALL_BATCH, in_list
from metabo.kb.canonical import canonical_json, config_id_of_canonical
from metabo.kb.timestamps import utcnow

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase


def add_algorithms(kb: KnowledgeBase, names: Iterable[str], *, family: str = "", description: str = "") -> int:
    """Register algorithm names (existing ones are kept); returns how many were new."""
    new = [n for n in dict.fromkeys(names)]
    for n in new:
        if not isinstance(n, str) or not n.strip():
            raise InputDataError(f"invalid algorithm name {n!r}")
    with kb.transaction() as tx:
        known = {r[0] for r in tx.execute("SELECT name FROM algorithms").fetchall()}
        fresh = [n for n in new if n not in known]
        now = utcnow()
        if fresh:
            tx.executemany(
                "INSERT INTO algorithms VALUES (?, ?, ?, ?)",
                [(n, family, description, now) for n in fresh],
            )
    return len(fresh)


def algorithms(kb: KnowledgeBase) -> list[str]:
    """The names of all registered algorithms, sorted."""
    return [r[0] for r in kb.connection.execute("SELECT name FROM algorithms ORDER BY name").fetchall()]


def _as_list(values: Iterable[Any]) -> list[Any]:
    """A column as a list of Python objects (``tolist`` when there is one: much faster
    than iterating an Arrow-backed pandas array element by element)."""
    tolist = getattr(values, "tolist", None)
    return tolist() if callable(tolist) else list(values)


def add_configurations(kb: KnowledgeBase, algorithms: Iterable[str], params: Iterable[Any]) -> list[str]:
    """Store configurations (canonical JSON + hash); return their ids in input order.

    Unknown algorithms raise :class:`UnknownAlgorithmError`; a params value that is
    not a JSON object raises :class:`InputDataError`; nothing is written then.
    """
    algos, plist = _as_list(algorithms), _as_list(params)
    if len(algos) != len(plist):
        raise InputDataError("algorithms and params differ in length")
    distinct = list(dict.fromkeys(algos))
    sql, args = in_list([str(a) for a in distinct])
    known = {r[0] for r in kb.connection.execute(f"SELECT name FROM algorithms WHERE name IN {sql}", args).fetchall()}  # noqa: S608
    missing = sorted(set(distinct) - known)
    if missing:
        raise UnknownAlgorithmError(
            f"unknown algorithm(s) {missing[:5]}; register them first with add_algorithms"
        )
    # Canonicalize each distinct (algorithm, params) once: JSON texts are compared as
    # given, mappings by their canonical text (they are not hashable). Factorized as an
    # object array, not a Series: no per-call pandas overhead on one-row batches.
    keys = np.empty(len(algos), dtype=object)
    keys[:] = [f"{a}\x00{p if isinstance(p, str) else canonical_json(p)}" for a, p in zip(algos, plist, strict=True)]
    codes, uniques = pd.factorize(keys)
    rows: dict[str, tuple[str, str]] = {}
    unique_ids = np.empty(len(uniques), dtype=object)
    for i, key in enumerate(uniques):
        algo, _, raw = key.partition("\x00")
        text = canonical_json(raw)
        unique_ids[i] = cid = config_id_of_canonical(algo, text)
        rows.setdefault(cid, (algo, text))
    ids = unique_ids[codes].tolist()
    with kb.transaction() as tx:
        _insert_new(tx, rows)
    return ids


def _insert_new(con: duckdb.DuckDBPyConnection, rows: dict[str, tuple[str, str]]) -> None:
    """Insert the configurations ``{config_id: (algorithm, params)}`` not yet stored
    (anti-joined in one statement; a small batch comes as list parameters, a large one
    as a registered Arrow table, see :mod:`metabo.kb._sql`)."""
    columns = {"config_id": list(rows), "algorithm": [r[0] for r in rows.values()],
               "params": [r[1] for r in rows.values()]}
    insert = ("INSERT INTO configurations SELECT b.config_id, b.algorithm, b.params, ?::TIMESTAMP "
              "FROM {source} b ANTI JOIN configurations c ON c.config_id = b.config_id")
    if len(rows) <= SMALL_BATCH:
        source = "(SELECT " + ", ".join(f"unnest(?::VARCHAR[]) AS {c}" for c in columns) + ")"
        con.execute(insert.format(source=source), [utcnow(), *columns.values()])
        return
    con.register("_cfg_batch", pa.table({c: pa.array(v, pa.string()) for c, v in columns.items()}))
    try:
        con.execute(insert.format(source="_cfg_batch"), [utcnow()])
    finally:
        con.unregister("_cfg_batch")


def get_configuration(kb: KnowledgeBase, cid: str) -> tuple[str, dict[str, Any]]:
    """The ``(algorithm, params)`` of a stored configuration id."""
    row = kb.connection.execute(
        "SELECT algorithm, params FROM configurations WHERE config_id = ?", [cid]
    ).fetchone()
    if row is None:
        raise InputDataError(f"unknown configuration id {cid!r}")
    return row[0], json.loads(row[1])
