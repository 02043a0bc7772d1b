"""Which trial to deploy after many trials: the lowest validation error (``argmin``) or the
lowest GP posterior mean at the evaluated configurations (``posterior_mean``, thesis 3.4,
:meth:`metabo.optimizer.Optimizer.best`), scored by the test error of each pick.

An arg min over hundreds of noisy validation errors picks up the noise (the winner's curse,
Cawley & Talbot 2010); a GP's posterior mean pools neighbouring configurations. Which
matters when a time budget lets ``metabo tune`` run hundreds of trials on a small
validation part (reports/automl-v2: 351 trials in 120 s).

A third rule, ``cv_top5``: the five lowest validation errors re-scored by 5-fold
cross-validation on the training and validation rows (more rows than the validation part
alone, never the test rows), the lowest kept.

Protocol: the knowledge base's tasks drawn as ``scripts/bench_automl.py`` draws them (at
most 5,000 rows, ``--dataset-seed``); each tuned by ``tune`` (its default strategy, the
task and its same-content tasks held out of the knowledge base, ``--budget`` trials,
60/20/20 hold-out, every trial's test error recorded); then, at each prefix of ``--at``
trials, the trial each rule selects and its test error. Both rules see the same trials,
so the comparison is paired. One JSON line per (task, seed) in ``<out>/runs.jsonl``
(``--resume`` keeps them); ``summary.txt`` is the report.

Usage: python scripts/bench_select.py [--n-datasets 20] [--seeds 1] [--budget 300]
    [--at 25 50 100 200 300] [--jobs 1] [--resume] [--out reports/select]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np

from benchmarks.automl import held_out_kb
from benchmarks.compare import wilcoxon_p
from benchmarks.transfer_live import choose_datasets, dataset_spec
from benchmarks.transfer_methods import load_runs, shipped_kb_file
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns

RULES = ("argmin", "posterior_mean", "cv_top5")
TOP_K, FOLDS = 5, 5


def cv_error(data: Any, rows: np.ndarray, algorithm: str, params: dict[str, Any], seed: int) -> float:
    """``FOLDS``-fold stratified cross-validated error rate of one configuration on ``rows``
    (the training and validation rows of the search; never its test rows)."""
    from sklearn.model_selection import StratifiedKFold

    from metabo.ensembles.model import EnsembleModel

    y = np.asarray(data.y)
    wrong = 0
    for fit, held in StratifiedKFold(FOLDS, shuffle=True, random_state=seed).split(rows, y[rows]):
        model = EnsembleModel([(algorithm, params)], None, "average", seed).fit_dataset(data, rows[fit])
        wrong += int((np.asarray(model.predict(data.X.iloc[rows[held]])).astype(str) != y[rows[held]]).sum())
    return wrong / len(rows)


def picks(history: Any, space: Any, at: list[int], seed: int, data: Any, rows: np.ndarray
          ) -> dict[str, dict[str, Any]]:
    """Per rule and prefix length: the selected trial number and its test error.
    ``cv_top5``: of the ``TOP_K`` lowest validation errors, the lowest cross-validated error
    on ``rows`` (training + validation), ties to the lower validation error."""
    from metabo.optimizer.history import History
    from metabo.strategies.gp import GPBO

    out: dict[str, dict[str, Any]] = {r: {} for r in RULES}
    records = list(history.completed)
    cv: dict[int, float] = {}
    for m in at:
        prefix = records[:m]
        ok = [r for r in prefix if r.ok and r.test_value is not None]
        if len(prefix) < m or len(ok) < 2:
            continue
        ranked = sorted(ok, key=lambda r: (r.value, r.number))
        mean = GPBO(seed=seed).posterior_mean(History(prefix), space, [(r.algorithm, r.params) for r in ok])
        smooth = ok[int(np.argmin(mean))]
        for r in ranked[:TOP_K]:
            if r.number not in cv:
                try:
                    cv[r.number] = cv_error(data, rows, r.algorithm, dict(r.params), seed)
                except Exception:  # noqa: BLE001 - a configuration that fails to refit is not chosen
                    cv[r.number] = float("inf")
        rescored = min(ranked[:TOP_K], key=lambda r: (cv[r.number], r.value, r.number))
        for rule, r in (("argmin", ranked[0]), ("posterior_mean", smooth), ("cv_top5", rescored)):
            out[rule][str(m)] = {"trial": r.number, "valid": r.value, "test": r.test_value}
    return out


def one(task: str, spec: str, seed: int, args: argparse.Namespace, kb_file: str) -> dict[str, Any]:
    from metabo.ingest.build import load_for_training
    from metabo.optimizer import tune
    from metabo.space.algorithms import default_cash_space

    scratch = Path(tempfile.mkdtemp(prefix="bench-select-"))
    try:
        copy = scratch / "kb.duckdb"
        removed = held_out_kb(kb_file, copy, task)
        data = load_for_training(spec).trainable
        space = default_cash_space()
        start = time.perf_counter()
        with KnowledgeBase(copy) as kb:
            result = tune(data, budget=args.budget, space=space, kb=kb, seed=seed, refit=False,
                          keep_predictions=False, time_limit=30.0, memory_limit_mb=4096)
        seconds = time.perf_counter() - start
        from metabo.evaluation.protocols import Holdout

        split = Holdout(0.6, 0.2, 0.2).splits(data, seed)[0]  # tune's split under this seed
        rows = np.sort(np.concatenate([split.train_idx, split.valid_idx]))
        chosen = picks(result.history, space, args.at, seed, data, rows)
        trials = [{"algorithm": r.algorithm, "params": dict(r.params), "valid": r.value, "test": r.test_value,
                   "status": r.status} for r in result.history.completed]
        return {"task": task, "spec": spec, "seed": seed, "budget": args.budget, "strategy": result.strategy,
                "held_out": removed, "seconds": seconds, "picks": chosen, "trials": trials}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(runs: list[dict[str, Any]], at: list[int]) -> str:
    rules = [k for k in RULES if all(k in r["picks"] for r in runs)]
    lines = [f"{len(runs)} runs (task x seed); test error of the selected trial, mean over runs; each rule "
             "against argmin: wins/ties/losses and Wilcoxon p (two-sided)"]
    lines.append(f"{'trials':>7s} " + " ".join(f"{k:>30s}" for k in rules) + f" {'best test':>10s} {'n':>4s}")
    for m in at:
        both = [r for r in runs if all(str(m) in r["picks"][k] for k in rules)]
        if not both:
            continue
        a = np.array([r["picks"]["argmin"][str(m)]["test"] for r in both])
        cells = []
        for k in rules:
            b = np.array([r["picks"][k][str(m)]["test"] for r in both])
            wtl = f"{int((b < a).sum())}/{int((b == a).sum())}/{int((b > a).sum())}"
            cells.append(f"{b.mean():.4f}" if k == "argmin" else f"{b.mean():.4f} {wtl} p {wilcoxon_p(b, a):.2g}")
        oracle = np.mean([min(t["test"] for t in r["trials"][:m] if t["test"] is not None) for r in both])
        lines.append(f"{m:>7d} " + " ".join(f"{c:>30s}" for c in cells) + f" {oracle:>10.4f} {len(both):>4d}")
    lines.append("best test: the lowest test error among the trials, for scale only: a minimum over hundreds of "
                 "noisy test errors is biased low, and no rule could reach it")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--n-datasets", type=int, default=20)
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-instances", type=int, default=5000)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--at", type=int, nargs="+", default=[25, 50, 100, 200, 300])
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out", type=Path, default=Path("reports/select"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "runs.jsonl"
    if not args.resume and path.exists():
        path.unlink()
    kb_file = shipped_kb_file(args.kb)
    with KnowledgeBase(kb_file, read_only=True) as kb:
        tasks = choose_datasets(kb, PastRuns.from_kb(kb).tasks, n=args.n_datasets, seed=args.dataset_seed,
                                max_instances=args.max_instances)
        specs = {t: dataset_spec(kb, t) for t in tasks}
    have = {(r["task"], r["seed"]) for r in load_runs(path) if r["budget"] == args.budget}
    todo = [(t, s) for s in range(args.seeds) for t in tasks if (t, s) not in have]
    print(f"{len(tasks)} datasets, {len(todo)} runs to do ({len(have)} kept)", flush=True)
    from joblib import Parallel, delayed

    start = time.perf_counter()
    for i, row in enumerate(Parallel(n_jobs=args.jobs, return_as="generator_unordered")(
            delayed(one)(t, specs[t], s, args, kb_file) for t, s in todo)):
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
        last = {k: v.get(str(args.budget), {}).get("test") for k, v in row["picks"].items()}
        print(f"  [{i + 1}/{len(todo)}] {row['spec']} seed {row['seed']}: {last} ({row['seconds']:.0f} s; "
              f"{time.perf_counter() - start:.0f} s in all)", flush=True)
    runs = [r for r in load_runs(path) if r["budget"] == args.budget and r["task"] in specs]
    text = f"Command: python {' '.join(sys.argv)}\n" + report(runs, args.at)
    (args.out / "summary.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
