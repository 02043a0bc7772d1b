"""Algorithms and configurations in the knowledge base.

An algorithm is a registered name; a configuration is an algorithm with its
hyperparameters as canonical JSON, identified by a hash of both
(:mod:`metabo.kb.canonical`), so the same configuration is stored once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb._time import utcnow
from metabo.kb.canonical import canonical_json, config_id_of_canonical

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


def add_configurations(kb: KnowledgeBase, algorithms: Iterable[str], params: Iterable[Any]) -> list[str]:
    """Store configurations (canonical JSON + hash); return their ids in input order.

    Unknown algorithms raise :class:`UnknownAlgorithmError`; a params value that is
    not a JSON object raises :class:`InputDataError`; nothing is written then.
    """
    algos = algorithms if isinstance(algorithms, pd.Series) else pd.Series(list(algorithms), dtype=object)
    plist = params if isinstance(params, pd.Series) else pd.Series(list(params), dtype=object)
    algos, plist = algos.reset_index(drop=True), plist.reset_index(drop=True)
    if len(algos) != len(plist):
        raise InputDataError("algorithms and params differ in length")
    missing = sorted(set(algos.unique()) - set(kb.algorithms()))
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
    with kb.transaction() as tx:
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


def get_configuration(kb: KnowledgeBase, cid: str) -> tuple[str, dict[str, Any]]:
    """The ``(algorithm, params)`` of a stored configuration id."""
    row = kb.connection.execute(
        "SELECT algorithm, params FROM configurations WHERE config_id = ?", [cid]
    ).fetchone()
    if row is None:
        raise InputDataError(f"unknown configuration id {cid!r}")
    return row[0], json.loads(row[1])
