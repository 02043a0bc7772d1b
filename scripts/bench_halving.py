"""Successive halving on training rows against its two ends, on large tables, by trials:

- ``halving``: ``tune``'s default on a large table (the search on 2,000 training rows, its
  best trials again on 6,000, 18,000, ..., the best of the largest rung fitted on every row);
- ``first rung only``: the same search on 2,000 rows, its best fitted on every row (no
  promotions: ``max_train=2000``);
- ``every row``: every trial on every training row (``halving="none"``).

    python scripts/bench_halving.py [--datasets keel:letter synthetic:60000] [--seeds 0 1] [--budget 15]
        [--algorithms lightgbm knn random_forest decision_tree lda] [--arms halving ...] [--out reports/halving]

``synthetic:N`` is scikit-learn's ``make_classification`` with N rows, 20 features (10
informative), 4 classes, seeded. Each run: cold GP-BO (the same strategy in every arm, so
only the fidelity differs), ``--budget`` trials, the model's test error on the default
hold-out's 20% test part (``refit_test_error``), the selected algorithm and the seconds of
the whole call. Rows go to ``<out>/runs.jsonl`` (a finished run is skipped when run again),
the table to ``<out>/summary.txt``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space

ARMS = {"halving": {}, "first rung only": {"max_train": 2000}, "every row": {"halving": "none"}}


def load(spec: str, seed: int) -> tuple[object, str | None]:
    """The dataset (a loader spec, or a synthetic frame) and its target column."""
    if spec.startswith("synthetic:"):
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=int(spec.split(":")[1]), n_features=20, n_informative=10, n_classes=4,
                                   random_state=seed)
        return pd.DataFrame(X, columns=[f"x{j}" for j in range(20)]).assign(target=y), "target"
    return spec, None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["keel:letter", "synthetic:60000"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--budget", type=int, default=15)
    p.add_argument("--algorithms", nargs="+", default=["lightgbm", "knn", "random_forest", "decision_tree", "lda"])
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    p.add_argument("--out", default="reports/halving")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    done = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    keys = {(r["dataset"], r["seed"], r["arm"]) for r in done}
    space = default_cash_space(args.algorithms)
    for spec in args.datasets:
        for seed in args.seeds:
            data, target = load(spec, seed)
            for arm, options in ARMS.items():
                if arm not in args.arms or (spec, seed, arm) in keys:
                    continue
                start = time.monotonic()
                result = tune(data, target=target, budget=args.budget, space=space, strategy="gp", seed=seed,
                              meta_features=False, **options)
                row = {"dataset": spec, "seed": seed, "arm": arm, "test_error": result.refit_test_error,
                       "algorithm": result.algorithm, "seconds": time.monotonic() - start,
                       "rungs": [[r.rows, len(r.values)] for r in result.rungs]}
                print(json.dumps(row), flush=True)
                with open(runs, "a") as f:
                    f.write(json.dumps(row) + "\n")
                done.append(row)
    frame = pd.DataFrame(done)
    table = frame.pivot_table(index=["dataset", "seed"], columns="arm", values="test_error")
    seconds = frame.pivot_table(index="dataset", columns="arm", values="seconds")
    text = ("test error (refitted model, the hold-out's 20% test part)\n"
            + table.to_string(float_format="{:.4f}".format)
            + "\n\nmean test error\n" + table.groupby(level=0).mean().to_string(float_format="{:.4f}".format)
            + "\n\nmean seconds per call\n" + seconds.to_string(float_format="{:.1f}".format))
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
