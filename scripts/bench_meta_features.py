"""Time compute_meta_features: a synthetic 10,000 x 100 mixed dataset, then the KEEL
balanced datasets when metabo.data.keel can load them.

    python scripts/bench_meta_features.py [--threads 1] [--repeats 3] [--no-keel]

BLAS/OpenMP threads are limited with threadpoolctl (default 1: "one core"). Prints
figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from metabo.data.dataset import Dataset
from metabo.data.meta_features import GROUPS, compute_meta_features


def synthetic(n: int = 10_000, n_numeric: int = 70, n_nominal: int = 30, seed: int = 0) -> Dataset:
    """n x (n_numeric + n_nominal), 5% missing cells in every column, 3 classes."""
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {}
    for j in range(n_numeric):
        x = rng.standard_normal(n) * (j + 1) + j
        if j % 3 == 0:
            x = np.exp(x / (j + 1))  # skewed
        x[rng.random(n) < 0.05] = np.nan
        cols[f"num{j}"] = x
    for j in range(n_nominal):
        levels = np.array([f"L{k}" for k in range(2 + j % 9)], dtype=object)
        v = rng.choice(levels, n)
        v[rng.random(n) < 0.05] = np.nan
        cols[f"nom{j}"] = pd.Categorical(v)
    X = pd.DataFrame(cols)
    score = np.nan_to_num(X["num1"].to_numpy()) + 2.0 * (X["nom0"] == "L1").to_numpy()
    score += rng.standard_normal(n)
    y = pd.Series(pd.Categorical(np.digitize(score, [0.0, 2.0]).astype(str)), name="class")
    return Dataset(name="synthetic", X=X, y=y, source="synthetic")


def time_call(ds: Dataset, **kwargs: object) -> float:
    start = time.perf_counter()
    compute_meta_features(ds, **kwargs)  # type: ignore[arg-type]
    return time.perf_counter() - start


def bench_synthetic(repeats: int) -> None:
    ds = synthetic()
    kinds = ds.feature_kinds
    print(
        f"synthetic: n={ds.n_instances}, d={ds.n_features} "
        f"({kinds.count('numeric')} numeric, {kinds.count('nominal')} nominal), "
        f"{int(ds.X.isna().to_numpy().sum())} missing cells, {ds.n_classes} classes"
    )
    times = [time_call(ds) for _ in range(repeats)]
    print(f"  all meta-features: median {statistics.median(times):.2f} s over {repeats} runs "
          f"(min {min(times):.2f}, max {max(times):.2f})")
    for group in GROUPS:
        print(f"  group {group:<12} {time_call(ds, groups=[group]):6.2f} s")


def _load_for_timing(load_keel: Callable[..., Dataset], name: str) -> tuple[Dataset, str]:
    """The dataset as the knowledge base stores it: repaired where a clean sibling file
    exists, otherwise flagged (its meta-features then leave the flagged columns out of
    every value-dependent quantity, ``flagged="exclude"``)."""
    ds = load_keel(name, kind="balanced", lost_decimals="repair")
    if not ds.flags:
        return ds, ""
    return ds, f"flagged columns excluded: {', '.join(ds.flags['lost_decimals'])}"


def bench_keel() -> None:
    try:
        from metabo.data.keel import list_keel, load_keel
    except ImportError as e:
        print(f"KEEL: skipped (metabo.data.keel not importable: {e})")
        return
    try:
        names = list_keel("balanced")
    except Exception as e:  # noqa: BLE001 - no files and no network: report and skip
        print(f"KEEL: skipped (the KEEL files are not available: {e})")
        return
    if not names:
        print("KEEL: skipped (no balanced datasets found)")
        return
    logging.getLogger("metabo.data.keel").setLevel(logging.ERROR)  # notes go in the table
    rows = []
    for name in tqdm(names, desc="KEEL balanced", unit="dataset"):
        ds, note = _load_for_timing(load_keel, name)
        seconds = time_call(ds, flagged="exclude")
        rows.append((name, ds.n_instances, ds.n_features, ds.n_classes, seconds, note))
    table = pd.DataFrame(rows, columns=["dataset", "n", "d", "K", "seconds", "note"])
    with pd.option_context("display.max_rows", None, "display.width", 120):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    slowest = table.loc[table["seconds"].idxmax()]
    print(f"KEEL balanced: {len(table)} datasets, total {table['seconds'].sum():.1f} s; "
          f"slowest {slowest['dataset']} (n={slowest['n']}, d={slowest['d']}) "
          f"{slowest['seconds']:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-keel", action="store_true", help="only the synthetic part")
    args = parser.parse_args()
    with threadpool_limits(limits=args.threads):
        print(f"threads: {args.threads}")
        bench_synthetic(args.repeats)
        if not args.no_keel:
            bench_keel()


if __name__ == "__main__":
    main()
