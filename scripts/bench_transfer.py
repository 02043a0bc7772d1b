"""Leave-one-dataset-out benchmark of the warm-start methods, lookup mode.

For every task of the knowledge base (the shipped one by default), hide it: each method
gets the other tasks as its past (``PastRuns.without``, the surrogate bank's ``without``)
and tunes the hidden task for ``--iterations`` picks among its recorded configurations
(:class:`metabo.benchmarks.lookup.LookupTask`), ``--seeds`` times. Prints and writes to
``--out`` (reports/transfer):

- mean normalized regret and average rank (ties shared) per method at iterations
  1, 3, 5, 10, 25 and 50 (each task's regret averaged over seeds first);
- a Friedman test over tasks at each of those iterations, with the Nemenyi critical
  difference of the average ranks (Demsar 2006), and pairwise Wilcoxon signed-rank
  p-values of every method against GP-BO and random search;
- the iteration at which cold GP-BO first reaches RLGP's median regret at iteration 5;
- plots of the regret and rank curves (``lookup_curves.png``).

Runs are appended to ``lookup_runs.jsonl`` as they finish, so an interrupted run resumes
(``--resume`` keeps them; the same seed gives the same picks).

Usage:
    python scripts/bench_transfer.py [--kb PATH] [--methods random,gp,knn,rgpe,rlgp,...]
        [--seeds 5] [--iterations 50] [--jobs 2] [--tasks N] [--resume]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metabo.benchmarks.lookup import LookupTask
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.kb.queries import average_ranks
from metabo.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space

REPORT_AT = (1, 3, 5, 10, 25, 50)
#: The SCoT paper's non-tuning baselines: one configuration each, their curve flat after it.
SINGLE_PICK = ("global-default", "collab-default")
#: SCoT made cheaper for a benchmark of thousands of suggestions (each retrains the ranker).
SCOT_SETTINGS = {"max_points_per_task": 50, "max_gp_points": 150,
                 "ranker": {"n_components": 150, "max_pairs_per_group": 150}}
ALL_METHODS = ("random", "gp", "knn", "rgpe", "rlgp", "scot", "global-default", "collab-default")


# ----------------------------------------------------------------- methods
def make_method(name: str, past: PastRuns, task: str, seed: int, bank: Any) -> Any:
    """The strategy of method ``name`` for held-out ``task`` (``past`` excludes it)."""
    from metabo.strategies import GPBO, RandomSearch

    if name == "random":
        return RandomSearch()
    if name == "gp":
        return GPBO(n_init=3, seed=seed)
    meta = dict(_meta_features(bank, task))
    if name == "knn":
        from metabo.strategies.knn import KNNWarmStart

        return KNNWarmStart(past, meta, k=5, then=GPBO(n_init=0, seed=seed), seed=seed)
    if name in ("rgpe", "rlgp", "rlgp-warm"):
        from metabo.strategies.rgpe import RGPE
        from metabo.strategies.rlgp import RLGP

        cls = RGPE if name == "rgpe" else RLGP
        # rlgp: the paper's protocol (3 random picks first); rlgp-warm: the default, no random start
        return cls(bank["bank"].without(task), n_init=0 if name == "rlgp-warm" else 3, seed=seed)
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
    opt = Optimizer(lookup.space, strategy, seed=seed)
    values, seconds = [], []
    n = min(1 if method in SINGLE_PICK else iterations, len(lookup.values))
    for _ in range(n):
        start = time.perf_counter()
        trial = opt.ask()
        seconds.append(time.perf_counter() - start)
        value = lookup(trial.algorithm, trial.params)
        opt.tell(trial, value)
        values.append(value)
    return {"method": method, "task": task, "seed": seed, "values": values, "seconds": seconds,
            "regret": lookup.regret(values).tolist()}


def _worker(keys: Sequence[tuple[str, str, int]], iterations: int, kb_path: str, out: str, shared: Any) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past_all = PastRuns.from_kb(kb)
    done = 0
    for method, task, seed in keys:
        result = run_one(method, task, seed, iterations, past_all, shared)
        with open(out, "a") as f:
            f.write(json.dumps(result) + "\n")
        done += 1
    return done


# ----------------------------------------------------------------- summary
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


def regret_table(runs: list[dict[str, Any]], methods: Sequence[str], iterations: int) -> tuple[list[str], np.ndarray]:
    """Tasks every method finished, and regret (methods, tasks, iterations) averaged over seeds."""
    by: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for r in runs:
        by[r["method"], r["task"]].append(r["regret"])
    tasks = sorted({t for (m, t) in by} )
    tasks = [t for t in tasks if all((m, t) in by for m in methods)]
    R = np.full((len(methods), len(tasks), iterations), np.nan)
    for i, m in enumerate(methods):
        for j, t in enumerate(tasks):
            curves = [c + [c[-1]] * (iterations - len(c)) for c in by[m, t]]  # a task with fewer candidates
            R[i, j] = np.mean(np.array(curves)[:, :iterations], axis=0)
    return tasks, R


def summarize(R: np.ndarray, methods: Sequence[str]) -> dict[str, Any]:
    from scipy.stats import friedmanchisquare, studentized_range, wilcoxon

    k, n_tasks, iters = R.shape
    ranks = np.stack([average_ranks(R[:, :, it].T) for it in range(iters)], axis=-1)  # (tasks, methods, iters)
    out: dict[str, Any] = {"n_tasks": n_tasks, "at": {}}
    q = float(studentized_range.ppf(0.95, k, np.inf)) / math.sqrt(2) if k >= 2 else math.nan
    cd = q * math.sqrt(k * (k + 1) / (6 * n_tasks)) if n_tasks else math.nan
    for it in REPORT_AT:
        if it > iters:
            continue
        x = R[:, :, it - 1]
        entry: dict[str, Any] = {
            "mean_regret": dict(zip(methods, x.mean(axis=1).round(5).tolist())),
            "median_regret": dict(zip(methods, np.median(x, axis=1).round(5).tolist())),
            "mean_rank": dict(zip(methods, ranks[:, :, it - 1].mean(axis=0).round(3).tolist())),
            "nemenyi_cd": round(cd, 3),
        }
        try:
            entry["friedman_p"] = float(friedmanchisquare(*x).pvalue) if k >= 3 else math.nan
        except ValueError:
            entry["friedman_p"] = math.nan
        pw: dict[str, dict[str, float]] = {}
        for ref in ("gp", "random"):
            if ref not in methods:
                continue
            r = methods.index(ref)
            for i, m in enumerate(methods):
                if m == ref:
                    continue
                d = x[i] - x[r]
                p = 1.0 if np.allclose(d, 0) else float(wilcoxon(x[i], x[r], zero_method="zsplit").pvalue)
                pw.setdefault(m, {})[f"vs_{ref}"] = p
        entry["wilcoxon"] = pw
        out["at"][str(it)] = entry
    if "gp" in methods and "rlgp" in methods and iters >= 5:  # RLGP as the paper runs it
        target = float(np.median(R[methods.index("rlgp"), :, 4]))
        gp_med = np.median(R[methods.index("gp")], axis=0)
        hit = np.flatnonzero(gp_med <= target)
        out["gp_reaches_rlgp_at_5"] = {"rlgp_median_regret_at_5": target,
                                       "gp_iteration": int(hit[0]) + 1 if len(hit) else None}
    return out


def table(summary: dict[str, Any], methods: Sequence[str]) -> str:
    lines = [f"Leave-one-task-out lookup benchmark over {summary['n_tasks']} tasks: mean normalized regret "
             "(mean rank) at iteration"]
    its = list(summary["at"])
    lines.append(f"{'method':10s}" + "".join(f"{'@' + it:>16s}" for it in its))
    for m in methods:
        lines.append(f"{m:10s}" + "".join(
            f"{summary['at'][it]['mean_regret'][m]:>9.4f} ({summary['at'][it]['mean_rank'][m]:4.2f})" for it in its))
    lines.append("Friedman p: " + ", ".join(f"@{it} {summary['at'][it]['friedman_p']:.2g}" for it in its)
                 + f"; Nemenyi CD (alpha 0.05) {summary['at'][its[-1]]['nemenyi_cd']}")
    for ref in ("gp", "random"):
        rows = [f"  {m:8s}" + "".join(f"{summary['at'][it]['wilcoxon'].get(m, {}).get('vs_' + ref, math.nan):>10.2g}"
                                      for it in its) for m in methods if m != ref and ref in methods]
        if rows:
            lines.append(f"Wilcoxon p vs {ref} at " + ", ".join(its))
            lines += rows
    if "gp_reaches_rlgp_at_5" in summary:
        g = summary["gp_reaches_rlgp_at_5"]
        lines.append(f"Cold GP-BO first reaches RLGP's median regret at iteration 5 "
                     f"({g['rlgp_median_regret_at_5']:.4f}) at iteration: {g['gp_iteration'] or 'never (within budget)'}")
    return "\n".join(lines) + "\n"


def plot(R: np.ndarray, methods: Sequence[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iters = np.arange(1, R.shape[2] + 1)
    ranks = np.stack([average_ranks(R[:, :, it].T) for it in range(R.shape[2])], axis=-1).mean(axis=0)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for i, m in enumerate(methods):
        a1.plot(iters, R[i].mean(axis=0), label=m)
        a2.plot(iters, ranks[i], label=m)
    a1.set_yscale("symlog", linthresh=1e-3)
    a1.set(xlabel="iteration", ylabel="mean normalized regret", title="regret (lower is better)")
    a2.set(xlabel="iteration", ylabel="average rank", title="average rank over tasks")
    a1.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ----------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(ALL_METHODS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--tasks", type=int, help="only the first N tasks (a quick look)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true", help="keep the runs already in lookup_runs.jsonl")
    p.add_argument("--out", type=Path, default=Path("reports/transfer"))
    return p.parse_args(argv)


def _kb_path(arg: str | None) -> str:
    if arg:
        return arg
    from metabo.kb.parquet_io import import_parquet
    from metabo.kb.shipped import shipped_kb_path

    path = Path(tempfile.gettempdir()) / "metabo-bench-transfer-shipped.duckdb"
    if not path.exists():
        with KnowledgeBase(path) as kb:
            import_parquet(kb, shipped_kb_path())
    return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "lookup_runs.jsonl"
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    kb_path = _kb_path(args.kb)
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    tasks = list(past.tasks)[: args.tasks] if args.tasks else list(past.tasks)
    shared: dict[str, Any] = {"space": space, "meta_features": past.meta_features}
    if {"rgpe", "rlgp", "rlgp-warm"} & set(args.methods):
        from metabo.surrogates.bank import SurrogateBank, space_encoder

        start = time.perf_counter()
        shared["bank"] = SurrogateBank.fit(past, space_encoder(space), seed=0)
        print(f"surrogate bank: {len(shared['bank'].tasks)} tasks, fitted in {time.perf_counter() - start:.1f} s",
              flush=True)
    have = {(r["method"], r["task"], r["seed"]) for r in load_runs(runs_path)}
    keys = [(m, t, s) for t in tasks for s in range(args.seeds) for m in args.methods if (m, t, s) not in have]
    print(f"{len(keys)} runs to do ({len(have)} kept), {len(tasks)} tasks, methods {args.methods}", flush=True)
    if keys:
        from joblib import Parallel, delayed

        chunks = [keys[i:: max(1, args.jobs * 4)] for i in range(max(1, args.jobs * 4))]
        start = time.perf_counter()
        done = 0
        for n in Parallel(n_jobs=args.jobs, return_as="generator_unordered")(
            delayed(_worker)(c, args.iterations, kb_path, str(runs_path), shared) for c in chunks if c
        ):
            done += n
            print(f"  {done}/{len(keys)} runs ({time.perf_counter() - start:.0f} s)", flush=True)
    runs = [r for r in load_runs(runs_path) if r["task"] in set(tasks) and r["method"] in args.methods]
    task_list, R = regret_table(runs, args.methods, args.iterations)
    summary = summarize(R, args.methods)
    text = table(summary, args.methods)
    print("\n" + text)
    seconds = {m: float(np.mean([s for r in runs if r["method"] == m for s in r["seconds"]])) for m in args.methods}
    text += "Mean seconds per suggestion: " + ", ".join(f"{m} {s:.3f}" for m, s in seconds.items()) + "\n"
    (args.out / "lookup_summary.json").write_text(json.dumps(
        {"command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
         "tasks": task_list, "methods": args.methods, "seeds": args.seeds, "iterations": args.iterations,
         "summary": summary, "seconds_per_suggestion": seconds}, indent=1))
    (args.out / "lookup_summary.txt").write_text(text)
    plot(R, args.methods, args.out / "lookup_curves.png")
    print(f"wrote {args.out}/lookup_summary.txt, lookup_summary.json, lookup_curves.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
