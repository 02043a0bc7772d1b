"""Leave-one-dataset-out benchmarks of the warm-start methods (issue 6), one protocol per
subcommand, each writing its report (text, JSON, plots) under ``--out``.

An optimistic check only: the lookup protocol's candidates are the very configurations
every base model was fitted on, which flatters every transfer method. The warm start is
judged by scripts/bench_warm.py (a surrogate objective queried anywhere, and live runs).

``lookup`` (the default): for every task of the knowledge base (the shipped one by
default), hide it: each method gets the other tasks as its past (``PastRuns.without``, the
surrogate bank's ``without``) and tunes the hidden task for ``--iterations`` picks among
its recorded configurations (:class:`benchmarks.lookup.LookupTask`), ``--seeds``
times. Reports (:mod:`benchmarks.compare`) mean normalized regret and average rank
(ties shared) per method at iterations 1, 3, 5, 10, 25 and 50, a Friedman test over tasks
with the Nemenyi critical difference, pairwise Wilcoxon p-values of every method against
GP-BO and random search, the iteration at which cold GP-BO first reaches RLGP's median
regret at iteration 5, and the regret and rank curves (``lookup_curves.png``). Runs are
appended to ``lookup_runs.jsonl`` as they finish, so an interrupted run resumes
(``--resume``; the same seed gives the same picks).

Methods: ``random``, ``gp`` (GP-BO, 3 random first), ``knn`` (kNN warm start), ``rgpe``,
``rlgp`` (the RLGP paper's protocol: 3 random first), ``rlgp-warm`` (RLGP as the project
runs it by default: the first pick from the base GPs), ``rgpe-warm`` (RGPE started the same way), ``scot``,
``global-default``,
``collab-default`` and ``optuna-tpe`` (Optuna's TPE, each proposal snapped to the nearest
recorded candidate: :class:`benchmarks.lookup.OptunaOnCandidates`).

Usage:
    python scripts/bench_transfer.py [lookup] [--kb PATH] [--methods random,gp,knn,...]
        [--seeds 3] [--iterations 50] [--jobs 2] [--tasks N] [--resume]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np

from benchmarks.compare import first_reach, format_table, plot_curves, regret_table, summarize
from benchmarks.transfer_methods import (  # noqa: F401 - SCOT_SETTINGS, make_method, run_one: the script's API
    ALL_METHODS,
    SCOT_SETTINGS,
    SINGLE_PICK,
    TRANSFER_ENSEMBLES,
    load_runs,
    make_method,
    run_one,
    shipped_kb_file,
)
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.space.algorithms import default_cash_space


# ----------------------------------------------------------------- workers
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


# ----------------------------------------------------------------- lookup protocol
def add_lookup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(ALL_METHODS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--tasks", type=int, help="only the first N tasks (a quick look)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true", help="keep the runs already in lookup_runs.jsonl")
    p.add_argument("--out", type=Path, default=Path("reports/transfer"))


def run_lookup(args: argparse.Namespace, command: str) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "lookup_runs.jsonl"
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    kb_path = shipped_kb_file(args.kb)
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    tasks = list(past.tasks)[: args.tasks] if args.tasks else list(past.tasks)
    shared: dict[str, Any] = {"space": space, "meta_features": past.meta_features}
    if set(TRANSFER_ENSEMBLES) & set(args.methods):
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
    runs = [r for r in load_runs(runs_path)
            if r["task"] in set(tasks) and r["method"] in args.methods and r["seed"] < args.seeds]
    task_list, R = regret_table(runs, args.methods, args.iterations)
    summary = summarize(R, args.methods)
    reach = first_reach(R, args.methods, "gp", "rlgp-warm" if "rlgp-warm" in args.methods else "rlgp", 5)
    text = format_table(summary, args.methods, "Leave-one-task-out lookup benchmark")
    if reach:
        summary["gp_reaches_rlgp_at_5"] = reach
        text += (f"Cold GP-BO first reaches {reach['fast']}'s median regret at iteration 5 "
                 f"({reach['target_regret']:.4f}) at iteration: "
                 f"{reach['slow_iteration'] or 'never (within the budget)'}\n")
    seconds = {m: float(np.mean([s for r in runs if r["method"] == m for s in r["seconds"]])) for m in args.methods}
    text += "Mean seconds per suggestion: " + ", ".join(f"{m} {s:.3f}" for m, s in seconds.items()) + "\n"
    print("\n" + text)
    (args.out / "lookup_summary.json").write_text(json.dumps(
        {"command": command, "tasks": task_list, "methods": args.methods, "seeds": args.seeds,
         "iterations": args.iterations, "summary": summary, "seconds_per_suggestion": seconds}, indent=1))
    (args.out / "lookup_summary.txt").write_text(text)
    plot_curves(R, args.methods, args.out / "lookup_curves.png", title="leave-one-task-out, lookup")
    print(f"wrote {args.out}/lookup_summary.txt, lookup_summary.json, lookup_curves.png")
    return 0


# ----------------------------------------------------------------- main
#: protocol name -> (help, add arguments, run).
PROTOCOLS: dict[str, tuple[str, Any, Any]] = {
    "lookup": ("leave-one-task-out among recorded runs (the default)", add_lookup_arguments, run_lookup),
}
#: protocols kept in their own module of benchmarks, each with ``HELP``,
#: ``add_arguments(parser)`` and ``run(args, command) -> int``.
PROTOCOL_MODULES = {"live": "benchmarks.transfer_live", "pmf": "benchmarks.pmf_protocol",
                    "scot-cv": "benchmarks.scot_cv"}
for _name, _module in PROTOCOL_MODULES.items():
    if importlib.util.find_spec(_module) is not None:
        _m = importlib.import_module(_module)
        PROTOCOLS[_name] = (_m.HELP, _m.add_arguments, _m.run)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in PROTOCOLS and argv[0] not in ("-h", "--help"):
        argv = ["lookup", *argv]  # the default protocol
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="protocol", required=True)
    for name, (help_, add, _) in PROTOCOLS.items():
        add(sub.add_parser(name, help=help_))
    args = parser.parse_args(argv)
    # the protocols report their progress and tables by logging (library code does not print)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    bench_logger = logging.getLogger("benchmarks")
    bench_logger.addHandler(handler)
    bench_logger.setLevel(logging.INFO)
    return PROTOCOLS[args.protocol][2](args, " ".join(["bench_transfer.py", *argv]))


if __name__ == "__main__":
    sys.exit(main())
