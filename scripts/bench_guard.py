"""How long does the ensemble guard's answer take, by selection rows, models and classes?

    python scripts/bench_guard.py [--rows 2000 10000] [--models 4 8 20] [--classes 2 5]
        [--repeats 3] [--seed 0]

``tune`` asks the guard (:meth:`metabo.ensembles.library.OutOfFoldLibrary.choose`: bagged
ensemble selection on five folds of the selection rows, and once on all of them) during the
search, to measure it and to decide whether to reserve the members' fits, and once after it;
on a large table its selection rows are the 10,000 validation rows of the hold-out
(:data:`metabo.optimizer.halving.EVAL_ROWS`). Each library is synthetic and seeded: models
that call the true class with a share of 0.75 to 0.85 of the rows, the rest spread at random.
Printed: the median seconds of ``--repeats`` answers per (rows, models, classes).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from metabo.ensembles.library import OutOfFoldLibrary


def library(rows: int, models: int, classes: int, seed: int) -> OutOfFoldLibrary:
    """A library of ``models`` noisy classifiers' probabilities on ``rows`` selection rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, rows)
    lib = OutOfFoldLibrary(y, classes, seed=seed)
    for m in range(models):
        P = rng.dirichlet(np.ones(classes), rows) * 0.5
        right = rng.random(rows) < rng.uniform(0.75, 0.85)
        P[np.arange(rows), y] += 0.5 * right
        lib.add(m, 0.2, P / P.sum(axis=1, keepdims=True))
    return lib


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[2000, 10000])
    p.add_argument("--models", type=int, nargs="+", default=[4, 8, 20])
    p.add_argument("--classes", type=int, nargs="+", default=[2, 5])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    print(f"{'rows':>6} {'models':>6} {'classes':>7} {'seconds':>8}  kept")
    for rows in args.rows:
        for classes in args.classes:
            for models in args.models:
                lib = library(rows, models, classes, args.seed)
                times, kept = [], ""
                for _ in range(args.repeats):
                    began = time.perf_counter()
                    choice = lib.choose(0)
                    times.append(time.perf_counter() - began)
                    kept = "" if choice is None else choice.kept
                print(f"{rows:>6} {models:>6} {classes:>7} {statistics.median(times):>8.2f}  {kept}")


if __name__ == "__main__":
    main()
