"""What a rung-0 trial costs on a large table with and without the cap on the rows it predicts
(``Holdout.max_eval``, :data:`metabo.optimizer.halving.EVAL_ROWS`), and what the cap does to
its validation error:

    python scripts/bench_eval_rows.py [--rows 1000000] [--features 50] [--repeats 2]
        [--algorithms svm_rbf knn lightgbm random_forest] [--out reports/large-table/eval-rows.txt]

The table is ``reports/large-table``'s: standard normal features, a noisy linear label,
seeded. Each algorithm's default configuration is evaluated as ``tune``'s first rung
evaluates a trial (the 60/20/20 hold-out, 2,000 training rows), once predicting the whole
validation and test parts and once a stratified sample of ``EVAL_ROWS`` of each, alternating
``--repeats`` times (so a loaded machine slows both alike). Printed per algorithm: the
median seconds of the trial (fit + predictions, ``evaluate``'s wall clock), their ratio, and
the validation error on the sample against the whole part.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.evaluation.evaluate import evaluate
from metabo.evaluation.protocols import Holdout
from metabo.optimizer.halving import EVAL_ROWS, FIRST_RUNG
from metabo.space.algorithms import ALGORITHMS


def table(rows: int, features: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    w = rng.normal(size=features)
    y = ((X @ w + rng.normal(size=rows) * 2) > 0).astype(int)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(features)]).assign(y=y)
    return Dataset.from_frame(frame, target="y", name=f"normal-{rows}x{features}", source="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--algorithms", nargs="+", default=["svm_rbf", "knn", "lightgbm", "random_forest"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    data = table(args.rows, args.features)
    arms = {"whole": Holdout(max_train=FIRST_RUNG), "capped": Holdout(max_train=FIRST_RUNG, max_eval=EVAL_ROWS)}
    lines = [f"{args.rows:,} x {args.features}, rung 0 ({FIRST_RUNG:,} training rows), EVAL_ROWS = {EVAL_ROWS:,}, "
             f"{args.repeats} alternating repeats, median seconds",
             f"{'algorithm':<15}{'whole s':>10}{'capped s':>10}{'ratio':>8}{'valid err whole':>17}"
             f"{'valid err capped':>18}"]
    for algorithm in args.algorithms:
        params = dict(ALGORITHMS[algorithm].space.default_configuration())
        seconds: dict[str, list[float]] = {arm: [] for arm in arms}
        errors: dict[str, float] = {}
        for _ in range(args.repeats):
            for arm, protocol in arms.items():
                start = time.perf_counter()
                (ev,) = evaluate(algorithm, params, data, protocol=protocol, seed=0, keep_predictions=False)
                seconds[arm].append(time.perf_counter() - start)
                errors[arm] = ev.valid["error_rate"]
        whole, capped = statistics.median(seconds["whole"]), statistics.median(seconds["capped"])
        lines.append(f"{algorithm:<15}{whole:>10.2f}{capped:>10.2f}{whole / capped:>8.1f}"
                     f"{errors['whole']:>17.4f}{errors['capped']:>18.4f}")
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
