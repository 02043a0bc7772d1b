"""Knowledge-base benchmark: bulk ingestion speed and query latency on 1,000,000 runs.

Prints (no assertions; the aims are in the issue):
- bulk ingestion rows/s of N synthetic runs through ``KnowledgeBase.add_runs`` into a
  DuckDB file (configurations referenced by id; and, separately, given as JSON params),
- rows/s of re-ingesting the same batch (idempotent: 0 new rows),
- median latency of the performance-matrix, mean-rank and nearest-tasks queries.

Usage: python scripts/bench_kb.py [--runs 1000000] [--datasets 1000] [--kb PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metabo.kb import KnowledgeBase
from metabo.kb import queries as q

ALGORITHMS = [f"algo{i}" for i in range(10)]


def synthetic(n_runs: int, n_datasets: int, n_configs: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Configurations (algorithm, params) and runs referencing them by position."""
    rng = np.random.default_rng(seed)
    algos = rng.choice(ALGORITHMS, n_configs)
    params = [json.dumps({"C": float(c), "k": int(k)})
              for c, k in zip(rng.lognormal(size=n_configs), rng.integers(1, 100, n_configs))]
    configs = pd.DataFrame({"algorithm": algos, "params": params})
    # each (dataset, config) pair once per fold, so rows are distinct runs
    pairs = rng.choice(n_datasets * n_configs, size=n_runs // 5, replace=False)
    ds = np.repeat(pairs // n_configs, 5)
    cfg = np.repeat(pairs % n_configs, 5)
    runs = pd.DataFrame({
        "dataset_id": pd.Series([f"bench-d{i:04d}" for i in ds], dtype="string"),
        "config_pos": cfg,
        "metric": "error_rate",
        "value": rng.random(len(ds)),
        "fold": np.tile(np.arange(5, dtype=np.int32), n_runs // 5),
        "fit_seconds": rng.exponential(size=len(ds)),
        "source": "bench",
    })
    return configs, runs


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--datasets", type=int, default=1000)
    ap.add_argument("--configs", type=int, default=10_000)
    ap.add_argument("--meta-features", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--kb", help="DuckDB file to use (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.kb) if args.kb else Path(tmp) / "bench.duckdb"
        if path.exists():
            raise SystemExit(f"{path} exists; the benchmark needs a fresh file")
        configs, runs = synthetic(args.runs, args.datasets, args.configs, args.seed)
        rng = np.random.default_rng(args.seed + 1)
        with KnowledgeBase(path) as kb:
            kb.add_algorithms(ALGORITHMS)
            t = time.perf_counter()
            with kb.transaction():
                for i in range(args.datasets):
                    kb.register_dataset(name=f"d{i:04d}", source="bench")
            mf = pd.DataFrame(rng.normal(size=(args.datasets, args.meta_features)),
                              columns=[f"mf{j}" for j in range(args.meta_features)])
            mf.index = [f"bench-d{i:04d}" for i in range(args.datasets)]
            kb.add_meta_features_frame(
                mf.rename_axis("dataset_id").reset_index().melt("dataset_id", var_name="name")
            )
            setup_s = time.perf_counter() - t

            t = time.perf_counter()
            ids = kb.add_configurations(configs["algorithm"], configs["params"])
            cfg_s = time.perf_counter() - t

            batch = runs.assign(config_id=np.asarray(ids)[runs["config_pos"].to_numpy()]).drop(columns="config_pos")
            t = time.perf_counter()
            new = kb.add_runs(batch)
            ingest_s = time.perf_counter() - t
            t = time.perf_counter()
            again = kb.add_runs(batch)
            reingest_s = time.perf_counter() - t

            # the JSON-params path (configurations resolved inside the batch), on a 100k slice
            part = runs.iloc[:100_000]
            json_batch = part.assign(
                algorithm=configs["algorithm"].to_numpy()[part["config_pos"]],
                params=configs["params"].to_numpy()[part["config_pos"]],
                source="bench-json",
            ).drop(columns="config_pos")
            t = time.perf_counter()
            kb.add_runs(json_batch)
            json_s = time.perf_counter() - t

            algo = ALGORITHMS[0]
            target = {f"mf{j}": float(v) for j, v in enumerate(rng.normal(size=args.meta_features))}
            shape = q.performance_matrix(kb, algo).shape
            matrix_ms = median_ms(lambda: q.performance_matrix(kb, algo), args.repeats)
            ranks_ms = median_ms(lambda: q.mean_ranks(kb, algo), args.repeats)
            nearest_ms = median_ms(lambda: q.nearest_tasks(kb, target, k=10), args.repeats)
            nearest_id_ms = median_ms(lambda: q.nearest_tasks(kb, "bench-d0000", k=10), args.repeats)
            stats = kb.stats()
        size_mb = path.stat().st_size / 1e6

    print(f"store: {stats['runs']:,} runs, {stats['configurations']:,} configurations, "
          f"{stats['datasets']:,} datasets x {args.meta_features} meta-features ({size_mb:.0f} MB on disk)")
    print(f"setup (datasets + meta-features): {setup_s:.2f} s; {args.configs:,} configurations: {cfg_s:.2f} s")
    print(f"bulk ingestion ({len(batch):,} runs by config id): {ingest_s:.2f} s = "
          f"{len(batch) / ingest_s:,.0f} rows/s ({new:,} new)")
    print(f"re-ingestion of the same batch: {reingest_s:.2f} s = {len(batch) / reingest_s:,.0f} rows/s ({again:,} new)")
    print(f"bulk ingestion with JSON params ({len(json_batch):,} runs): {len(json_batch) / json_s:,.0f} rows/s")
    print(f"performance matrix ({algo}, {shape[0]} x {shape[1]}): median {matrix_ms:.1f} ms")
    print(f"mean ranks ({algo}): median {ranks_ms:.1f} ms")
    print(f"nearest tasks (meta-feature dict, {args.datasets} tasks): median {nearest_ms:.1f} ms")
    print(f"nearest tasks (stored dataset id): median {nearest_id_ms:.1f} ms")


if __name__ == "__main__":
    main()
