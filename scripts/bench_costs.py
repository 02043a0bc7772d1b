"""Cost awareness under a time budget, measured on tables larger than most of the knowledge
base's: ``metabo tune``'s default warm start with its portfolio kept to configurations
predicted to fit in a tenth of the budget (:data:`metabo.tuning.registry.OPENING_SHARE`,
:mod:`metabo.kb.costs`) against the same warm start without that limit.

    python scripts/bench_costs.py [--datasets keel:letter keel:magic big.csv --target y] [--seeds 0 1]
        [--time-budget 60] [--out reports/costs]

Each dataset is held out from the knowledge base (its runs and same-content tasks removed,
:func:`benchmarks.automl.held_out_kb`) and gets a seeded 75/25 outer split; both arms
tune the 75% within the same wall-clock budget. Printed per run: trials, trials cut at their
time limit (``timeout``), seconds to the first successful trial, the selected algorithm, and
the deployed model's error on the 25%. Rows go to ``<out>/runs.jsonl`` (a finished
(dataset, seed, arm) is skipped when run again) and the table to ``<out>/summary.txt``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
import pandas as pd

from benchmarks import automl
from benchmarks.transfer_live import dataset_spec
from benchmarks.transfer_methods import shipped_kb_file
from metabo.ingest.build import load_for_training
from metabo.kb import KnowledgeBase
from metabo.tuning import registry
from metabo.tuning.tune import tune

ARMS = {"cost-aware (default)": registry.OPENING_SHARE, "no cost limit": math.inf}


def one(train: pd.DataFrame, kb_file: Path, *, seed: int, budget: float, share: float) -> dict:
    with mock.patch.object(registry, "OPENING_SHARE", share), KnowledgeBase(kb_file) as kb:
        result = tune(train, target=automl.TARGET, kb=kb, seed=seed, time_budget=budget)
    trials = result.history.completed
    return {"trials": len(trials), "timeouts": sum(t.status == "timeout" for t in trials),
            "first_model": result.time_to_first_model, "algorithm": result.best.algorithm,
            "seconds": result.total_seconds, "model": result.model}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["keel:letter", "keel:magic"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--time-budget", type=float, default=60.0)
    p.add_argument("--target", help="the class column of datasets given as CSV files")
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--out", default="reports/costs")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()] \
        if (out / "runs.jsonl").exists() else []
    keys = {(r["dataset"], r["seed"], r["arm"]) for r in done}
    source = shipped_kb_file(args.kb)
    with KnowledgeBase(source, read_only=True) as kb:
        ids = {dataset_spec(kb, t): t for t in kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"]}
    scratch = Path(tempfile.mkdtemp(prefix="bench-costs-"))
    try:
        for spec in args.datasets:
            data = load_for_training(spec, args.target).trainable
            held = scratch / "held.duckdb"
            if spec in ids:
                automl.held_out_kb(source, held, ids[spec])
            else:
                shutil.copyfile(source, held)
            y = data.y.astype(str).to_numpy()
            for seed in args.seeds:
                train_rows, test_rows = automl.outer_split(y, seed)
                frame = data.X.assign(**{automl.TARGET: y})
                train, test = frame.iloc[train_rows], frame.iloc[test_rows].drop(columns=automl.TARGET)
                for arm, share in ARMS.items():
                    if (spec, seed, arm) in keys:
                        continue
                    shutil.copyfile(held, scratch / "kb.duckdb")
                    res = one(train, scratch / "kb.duckdb", seed=seed, budget=args.time_budget, share=share)
                    error = float(np.mean(res.pop("model").predict(test).astype(str) != y[test_rows]))
                    row = {"dataset": spec, "rows": len(train), "seed": seed, "arm": arm, "budget": args.time_budget,
                           "test_error": error, **res}
                    print(json.dumps(row), flush=True)
                    with open(out / "runs.jsonl", "a") as f:
                        f.write(json.dumps(row) + "\n")
                    done.append(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = pd.DataFrame(done).set_index(["dataset", "seed", "arm"]).sort_index()
    text = table[["rows", "trials", "timeouts", "first_model", "algorithm", "seconds", "test_error"]].to_string(
        float_format=lambda v: f"{v:.3f}")
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
