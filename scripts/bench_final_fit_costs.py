"""How well a search under a time budget predicts its final fits on a large table: the
seconds :func:`metabo.optimizer.budget.final_fit_seconds` reserves for fitting a trial on
the training + validation rows, against the seconds that fit takes.

    python scripts/bench_final_fit_costs.py --kb FILE rdata:diamonds rdata:insteval ... \
        [--budget 30] [--seed 0] [--top 12] [--out reports/final-fit-costs]

For each dataset: the knowledge base copied without it (and the tasks of the same content),
``tune(time_budget=BUDGET, halving="auto")`` on the 75% training part of the benchmark's
outer split (:func:`benchmarks.automl.write_cell`), then the ``--top`` trials of lowest
validation error each fitted as the final model is (:func:`metabo.tuning.final.final_model`,
one at a time, timed). Printed per trial: its fit seconds in the search (on the first
rung's rows), the prediction without the margin (``final_fit_seconds / FINAL_FIT_MARGIN``:
the recorded rows exponents, :class:`metabo.kb.costs.RowsScaling`), the linear prediction,
and the measured seconds (a fit killed after ``--fit-limit`` seconds counts as that
long: a lower bound); then the share within a factor 2 and the extremes of
predicted / measured (above 1: the search reserved more than it needed, and stopped early;
below: a fit that can run past the budget). Rows go to ``<out>/fits.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
import pandas as pd

from benchmarks import automl
from metabo.data.loaders import load_dataset
from metabo.kb import KnowledgeBase
from metabo.kb.datasets import dataset_ids_with_fingerprint
from metabo.optimizer.budget import FINAL_FIT_MARGIN, final_fit_seconds
from metabo.space.algorithms import default_cash_space
from metabo.tuning import tune
from metabo.tuning.final import final_model
from metabo.tuning.session import prepare, search_costs


def timed_fit(record, setup, *, seed: int, limit: float) -> tuple[float, bool]:
    """The seconds of ``record``'s final fit (:func:`final_model`) in a forked process, and
    whether it ended: a fit still running after ``limit`` seconds is killed (a compiled fit
    cannot be cut in-process) and counts as at least ``limit``."""
    context = multiprocessing.get_context("fork")
    process = context.Process(target=final_model, args=(record, setup), kwargs={"seed": seed, "metric": "error_rate"})
    began = time.monotonic()
    process.start()
    process.join(limit)
    measured = time.monotonic() - began
    if process.is_alive():
        process.kill()
        process.join()
        return measured, False
    return measured, process.exitcode == 0


def one(spec: str, kb_file: str, *, budget: float, seed: int, top: int, scratch: Path, limit: float) -> list[dict]:
    data = load_dataset(spec)
    copy = scratch / "kb.duckdb"
    with KnowledgeBase(kb_file, read_only=True) as kb:
        same = dataset_ids_with_fingerprint(kb, data.fingerprint)
    if same:
        automl.held_out_kb(kb_file, copy, same[0])
    else:
        shutil.copyfile(kb_file, copy)
    automl.write_cell(data, seed, scratch / "cell")
    train = load_dataset(str(scratch / "cell" / "train.csv"), target=automl.TARGET)  # read once, used twice
    with KnowledgeBase(copy) as kb:
        result = tune(train, time_budget=budget, kb=kb, seed=seed, halving="auto")
        setup = prepare(train, kb=kb, seed=seed, halving="auto")
        costs = search_costs(kb, setup, default_cash_space())
    train_rows, fits, refit_rows = setup.split_rows(seed)
    scaling = None if costs is None else costs.scaling
    rows = []
    for record in sorted((r for r in result.history.completed if r.ok), key=lambda r: (r.value, r.number))[:top]:
        kw = {"train_rows": train_rows, "final_rows": refit_rows, "fits": fits}
        predicted = final_fit_seconds(record, scaling=scaling, **kw) / FINAL_FIT_MARGIN
        linear = final_fit_seconds(record, **kw) / FINAL_FIT_MARGIN
        measured, ok = timed_fit(record, setup, seed=seed, limit=limit)
        rows.append({"dataset": spec, "seed": seed, "trial": record.number, "algorithm": record.algorithm,
                     "train_rows": train_rows, "final_rows": refit_rows, "trial_fit": record.fit_seconds,
                     "predicted": predicted, "linear": linear, "measured": measured, "ok": ok})
        print(f"  {record.algorithm:24s} trial fit {record.fit_seconds:6.2f}  predicted {predicted:7.2f}  "
              f"linear {linear:7.2f}  measured {'>=' if not ok else '  '}{measured:7.2f}  "
              f"ratio {predicted / measured:5.2f}", flush=True)
    return rows


def summary(rows: list[dict]) -> str:
    frame = pd.DataFrame(rows)
    lines = []
    for name in ("predicted", "linear"):
        ratio = frame[name] / frame["measured"]
        log2 = np.log2(ratio)
        lines.append(f"{name:9s}: {len(frame)} fits, within a factor 2 {np.mean(np.abs(log2) <= 1):.0%}, median "
                     f"predicted/measured {float(np.median(ratio)):.2f}, min {float(ratio.min()):.2f} "
                     f"({frame.loc[ratio.idxmin(), 'algorithm']}), max {float(ratio.max()):.2f} "
                     f"({frame.loc[ratio.idxmax(), 'algorithm']}); under-predicted by more than 2x: "
                     f"{int((log2 < -1).sum())}")
    by_algorithm = frame.assign(log2=np.log2(frame["predicted"] / frame["measured"])).groupby("algorithm")["log2"]
    lines.append("median log2(predicted / measured) by algorithm: " + ", ".join(
        f"{a} {v:+.1f}" for a, v in by_algorithm.median().sort_values().items() if math.isfinite(v)))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", help="loader specs (rdata:diamonds, keel:magic, ...)")
    parser.add_argument("--kb", required=True, help="the knowledge base (copied; each dataset held out of the copy)")
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--fit-limit", type=float, default=120.0, help="seconds after which a final fit is killed "
                        "(counted as at least that long)")
    parser.add_argument("--out", default="reports/final-fit-costs")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for spec in args.datasets:
        print(spec, flush=True)
        with tempfile.TemporaryDirectory(prefix="final-fit-") as scratch:
            rows += one(spec, args.kb, budget=args.budget, seed=args.seed, top=args.top, scratch=Path(scratch),
                        limit=args.fit_limit)
    with open(out / "fits.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    text = summary(rows)
    (out / "summary.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
