"""Latency of the transfer queries on a knowledge base of realistic size.

Builds a synthetic store (default: 550 tasks x 5,000 configurations of one algorithm
at 80% density, ~2.2M runs, plus a second algorithm of 2,500 configurations so the
algorithm filter has something to skip) in a temporary DuckDB file, or opens an
existing store read-only with ``--kb PATH``, and prints the median latency (ms) of:
performance_matrix, mean_ranks, greedy_portfolio (k=5), task_similarity and
nearest_tasks_by_ranking (20 observations of one stored task, which is excluded).

Synthetic values: y_tc = a_t + s_t * (q_c + 0.7 u_t . v_c) + 0.01 e_tc, clipped to
[0, 1] (per-task offset a_t and scale s_t, config quality q_c, a rank-3 task x config
interaction u_t . v_c), so rankings agree across tasks partly, as in real data.

Usage:
    python scripts/bench_transfer_queries.py [--tasks 550] [--configs 5000] [--density 0.8]
    python scripts/bench_transfer_queries.py --save /tmp/transfer.duckdb   # keep the built store
    python scripts/bench_transfer_queries.py --kb store.duckdb --algorithm NAME [--metric M]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from metabo.kb import KnowledgeBase
from metabo.kb import queries as q
from metabo.kb import transfer as tr

ALGORITHM, OTHER = "bench_algo", "bench_other"
CHUNK_ROWS = 500_000


def build(path: Path, *, tasks: int, configs: int, other_configs: int, density: float,
          folds: int, metric: str, seed: int) -> None:
    """Write the synthetic store into ``path`` (a new file)."""
    rng = np.random.default_rng(seed)
    with KnowledgeBase(path, load_shipped=False) as kb:
        kb.connection.execute("SET enable_progress_bar = false")
        kb.add_algorithms([ALGORITHM, OTHER])
        with kb.transaction():
            ds_ids = [kb.register_dataset(name=f"t{i:04d}", source="bench") for i in range(tasks)]
        for algo, n_cfg in ((ALGORITHM, configs), (OTHER, other_configs)):
            if n_cfg == 0:
                continue
            params = [json.dumps({"x": float(a), "n": int(b)})
                      for a, b in zip(rng.random(n_cfg), rng.integers(1, 1000, n_cfg))]
            cids = np.asarray(kb.add_configurations([algo] * n_cfg, params), dtype=object)
            quality = rng.normal(size=n_cfg)
            v = rng.normal(size=(n_cfg, 3))
            per_chunk = max(1, CHUNK_ROWS // max(1, int(n_cfg * density * folds)))
            for start in range(0, tasks, per_chunk):
                stop = min(tasks, start + per_chunk)
                n_t = stop - start
                offset = rng.uniform(0.05, 0.4, size=(n_t, 1))
                scale = rng.uniform(0.02, 0.1, size=(n_t, 1))
                u = rng.normal(size=(n_t, 3))
                mean = offset + scale * (quality + 0.7 * u @ v.T)
                ti, ci = np.nonzero(rng.random((n_t, n_cfg)) < density)
                ti, ci = np.repeat(ti, folds), np.repeat(ci, folds)
                value = np.clip(mean[ti, ci] + 0.01 * rng.normal(size=len(ti)), 0.0, 1.0)
                kb.add_runs(pd.DataFrame({
                    "dataset_id": np.asarray(ds_ids, dtype=object)[start + ti],
                    "config_id": cids[ci],
                    "metric": metric,
                    "value": value,
                    "fold": np.tile(np.arange(folds, dtype=np.int32), len(ti) // folds),
                    "source": "bench",
                }))


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (DuckDB caches, imports)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def measure(kb: KnowledgeBase, algorithm: str, metric: str, repeats: int, n_obs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    kb.connection.execute("SET enable_progress_bar = false")
    matrix = q.performance_matrix(kb, algorithm, metric=metric)
    if matrix.empty:
        raise SystemExit(f"no {metric!r} runs of {algorithm!r}")
    row = matrix.iloc[int(rng.integers(len(matrix)))]
    seen = row.dropna()
    pick = seen.sample(min(n_obs, len(seen)), random_state=seed)
    observations = pick.to_dict()
    stats = kb.stats()
    print(f"store {kb.path}: {stats['runs']:,} runs, {stats['configurations']:,} configurations, "
          f"{stats['datasets']:,} datasets")
    print(f"{algorithm} / {metric}: {matrix.shape[0]} tasks x {matrix.shape[1]} configurations, "
          f"{matrix.notna().to_numpy().mean():.1%} observed; median of {repeats} (ms):")
    timings = {
        "performance_matrix": lambda: q.performance_matrix(kb, algorithm, metric=metric),
        "mean_ranks": lambda: q.mean_ranks(kb, algorithm, metric=metric),
        "greedy_portfolio k=5": lambda: tr.greedy_portfolio(kb, algorithm, 5, metric=metric),
        "task_similarity": lambda: tr.task_similarity(kb, algorithm, metric=metric),
        f"nearest_tasks_by_ranking ({len(observations)} obs)": lambda: tr.nearest_tasks_by_ranking(
            kb, algorithm, observations, k=10, metric=metric, exclude=[str(row.name)]),
    }
    for name, fn in timings.items():
        print(f"  {name:<40} {median_ms(fn, repeats):>9.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", help="an existing store to measure (opened read-only; needs --algorithm)")
    ap.add_argument("--algorithm", help="algorithm to query (default: the synthetic one)")
    ap.add_argument("--metric", default="error_rate")
    ap.add_argument("--save", help="build the synthetic store into this new file and keep it")
    ap.add_argument("--tasks", type=int, default=550)
    ap.add_argument("--configs", type=int, default=5000)
    ap.add_argument("--other-configs", type=int, default=2500, help="configurations of the second algorithm")
    ap.add_argument("--density", type=float, default=0.8)
    ap.add_argument("--folds", type=int, default=1, help="runs per (task, configuration)")
    ap.add_argument("--observations", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.kb:
        if not Path(args.kb).exists():
            raise SystemExit(f"{args.kb} does not exist")
        with KnowledgeBase(args.kb, read_only=True) as kb:
            algorithm = args.algorithm or _largest_algorithm(kb, args.metric)
            measure(kb, algorithm, args.metric, args.repeats, args.observations, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.save) if args.save else Path(tmp) / "transfer.duckdb"
        if path.exists():
            raise SystemExit(f"{path} exists; measure it with --kb {path}")
        t = time.perf_counter()
        build(path, tasks=args.tasks, configs=args.configs, other_configs=args.other_configs,
              density=args.density, folds=args.folds, metric=args.metric, seed=args.seed)
        print(f"built the synthetic store in {time.perf_counter() - t:.1f} s")
        with KnowledgeBase(path, read_only=True) as kb:
            measure(kb, args.algorithm or ALGORITHM, args.metric, args.repeats, args.observations, args.seed)


def _largest_algorithm(kb: KnowledgeBase, metric: str) -> str:
    row = kb.connection.execute(
        "SELECT c.algorithm FROM runs r JOIN configurations c USING (config_id) WHERE r.metric = ? "
        "GROUP BY c.algorithm ORDER BY count(*) DESC, c.algorithm LIMIT 1", [metric]).fetchone()
    if row is None:
        raise SystemExit(f"no {metric!r} runs in the store")
    return str(row[0])


if __name__ == "__main__":
    main()
