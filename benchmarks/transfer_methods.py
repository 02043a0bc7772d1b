"""The methods of the transfer benchmarks (scripts/bench_transfer.py and its protocols
:mod:`benchmarks.scot_cv`, :mod:`benchmarks.transfer_live`): each method's
strategy for a held-out task (:func:`make_method`), one lookup run (:func:`run_one`,
:class:`~benchmarks.lookup.LookupTask`), the runs' JSONL file (:func:`load_runs`)
and the knowledge base benchmarked (:func:`shipped_kb_file`).

Methods: ``random``, ``gp`` (GP-BO, 3 random first), ``knn`` (kNN warm start), ``rgpe``,
``rlgp`` (the RLGP paper's protocol: 3 random first), ``rlgp-warm`` (RLGP as the project
runs it by default: the first pick from the base GPs), ``rgpe-warm`` (RGPE started the same way), ``scot``,
``global-default``,
``collab-default`` (SCoT's first pick), ``warm`` (the default warm start,
:class:`~metabo.strategies.portfolio.PortfolioWarmStart`) and ``optuna-tpe`` (Optuna's TPE, each proposal
snapped to the nearest recorded candidate). ``shared`` holds the CASH ``space``, the tasks'
``meta_features`` and, for rgpe/rlgp, the surrogate ``bank`` of every past task.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lookup import LookupTask
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns

#: The SCoT paper's non-tuning baselines: one configuration each, their curve flat after it.
SINGLE_PICK = ("global-default", "collab-default")
#: SCoT made cheaper for a benchmark of thousands of suggestions (each retrains the ranker).
SCOT_SETTINGS = {"max_points_per_task": 50, "max_gp_points": 150,
                 "ranker": {"n_components": 150, "max_pairs_per_group": 150}}
ALL_METHODS = ("random", "gp", "knn", "warm", "rgpe", "rgpe-warm", "rlgp", "rlgp-warm", "scot", "global-default",
               "collab-default", "optuna-tpe")
#: The methods that need the surrogate bank.
TRANSFER_ENSEMBLES = ("rgpe", "rgpe-warm", "rlgp", "rlgp-warm")


# ----------------------------------------------------------------- methods
def make_method(name: str, past: PastRuns, task: str, seed: int, bank: Any) -> Any:
    """The strategy of method ``name`` for held-out ``task`` (``past`` excludes it)."""
    from metabo.strategies import GPBO, RandomSearch

    if name == "random":
        return RandomSearch()
    if name == "gp":
        return GPBO(n_init=3, seed=seed)
    if name == "optuna-tpe":
        from benchmarks.lookup import OptunaOnCandidates

        return OptunaOnCandidates(sampler="tpe", seed=seed)
    meta = dict(_meta_features(bank, task))
    if name == "knn":
        from metabo.strategies.knn import KNNWarmStart

        return KNNWarmStart(past, meta, k=5, then=GPBO(n_init=0, seed=seed), seed=seed)
    if name == "warm":
        from metabo.strategies.portfolio import PortfolioWarmStart

        return PortfolioWarmStart(past, meta, seed=seed)
    if name in TRANSFER_ENSEMBLES:
        from metabo.strategies.rgpe import RGPE
        from metabo.strategies.rlgp import RLGP

        cls = RGPE if name.startswith("rgpe") else RLGP
        # rgpe/rlgp: the paper's protocol (3 random picks first); -warm: the default, no random start
        return cls(bank["bank"].without(task), n_init=0 if name.endswith("-warm") else 3, seed=seed)
    if name in ("scot", "collab-default"):  # collab-default: SCoT's first pick only (SINGLE_PICK)
        from metabo.strategies.scot import SCoT

        return SCoT(past, meta, **SCOT_SETTINGS, seed=seed)
    if name == "global-default":
        from metabo.strategies.scot import GlobalDefault

        return GlobalDefault(past)
    raise ValueError(f"unknown method {name!r}")


def _meta_features(bank: Any, task: str) -> dict[str, float]:
    mf = bank["meta_features"]
    return {} if task not in mf.index else {k: float(v) for k, v in mf.loc[task].items() if np.isfinite(v)}


# ----------------------------------------------------------------- one run
def run_one(method: str, task: str, seed: int, iterations: int, past_all: PastRuns, shared: Any) -> dict[str, Any]:
    space = shared["space"]
    lookup = LookupTask.from_past(past_all, task, space)
    past = past_all.without(task)
    strategy = make_method(method, past, task, seed, shared)
    values, seconds, _ = lookup.play(strategy, seed=seed, n=1 if method in SINGLE_PICK else iterations)
    return {"method": method, "task": task, "seed": seed, "values": values, "seconds": seconds,
            "regret": lookup.regret(values).tolist()}


def load_runs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a killed run
            continue
    return out


def shipped_kb_file(arg: str | None) -> str:
    """``arg``, or the shipped knowledge base imported once into a temporary store named
    by a digest of the export's files, so that a refreshed export (new meta-features, say)
    is imported again rather than read from a stale copy."""
    if arg:
        return arg
    import hashlib

    from metabo.kb.parquet_io import import_parquet
    from metabo.kb.shipped import shipped_kb_path

    source = Path(shipped_kb_path())
    digest = hashlib.sha256()
    for f in sorted(source.iterdir()):
        digest.update(f.name.encode() + f.read_bytes())
    path = Path(tempfile.gettempdir()) / f"metabo-bench-transfer-shipped-{digest.hexdigest()[:12]}.duckdb"
    if not path.exists():
        with KnowledgeBase(path) as kb:
            import_parquet(kb, shipped_kb_path())
    return str(path)


__all__ = ["ALL_METHODS", "SCOT_SETTINGS", "SINGLE_PICK", "load_runs", "make_method", "run_one", "shipped_kb_file"]
