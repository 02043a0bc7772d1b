"""SCoT's own protocol (Bardenet et al. 2013, sec. 4.1.2-4.1.3): 5-fold meta-cross-validation
over the datasets of a knowledge base, each meta-test fold tuned collaboratively against the
same datasets tuned separately (subcommand ``scot-cv`` of scripts/bench_transfer.py).

Notation: the datasets ``T`` of the knowledge base are split into ``K`` meta-folds
``F_1..F_K`` (a seeded permutation cut into near-equal parts, :func:`meta_folds`). For fold
``k`` the past (meta-train) is every run of ``T \\ F_k`` (``PastRuns.without(F_k)``), and
each dataset ``t`` of ``F_k`` (meta-test) is tuned among the candidates ``C_k`` recorded on
every dataset of ``F_k`` (:func:`fold_lookups`; the shipped knowledge base evaluates the
same seeded configurations on every dataset, so ``C_k`` is the dense part of its matrix),
its objective the recorded validation error ``y_t(c)``
(:class:`~benchmarks.lookup.LookupTask`), for ``n`` picks without replacement.
Normalized regret after ``i`` picks: ``(min_{j <= i} y_t(c_j) - min_{C_k} y_t) /
(max_{C_k} y_t - min_{C_k} y_t)``.

Methods (the paper's five experiments, plus SCoT without collaboration):

- ``scot-collab``: SCoT on all of ``F_k`` at once (Figure 4,
  :func:`~metabo.strategies.scot.collaborative_tune`): one pick per dataset per round, each
  suggestion retrained on the past and every fold dataset's picks so far;
- ``scot-separate``: SCoT on each dataset of ``F_k`` alone with the same past (Figure 3),
  the same optimizer seed per dataset as in the collaborative run, so the two differ only by
  the peers' observations;
- ``gp``: separate surrogate tuning, GP-BO alone, the paper's four random picks first;
- ``random``: uniform random search among ``C_k``;
- ``global-default``: the configuration of lowest mean error over the past (one pick);
- ``collab-default``: SCoT's first pick with no observation of the new dataset (one pick).

One-pick methods keep their regret flat after the pick (the paper's Figure 7). Reports (at
the iterations of :data:`~benchmarks.compare.REPORT_AT` within the budget): mean
normalized regret and average rank (ties shared) over the datasets, Friedman + Nemenyi,
Wilcoxon signed-rank p-values against ``scot-separate`` and ``gp`` over the datasets
(:func:`~benchmarks.compare.summarize`), the regret and rank curves.

Budget: the paper's Figure 7 runs to its 108-point grid (``PAPER_ITERATIONS``), where
every strategy without replacement has seen every point; ``--iterations`` caps it. SCoT is
run with the lookup benchmark's cheaper settings
(:data:`~benchmarks.transfer_methods.SCOT_SETTINGS`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.compare import REPORT_AT, format_table, plot_curves, regret_table, summarize, wilcoxon_p
from benchmarks.lookup import LookupTask
from benchmarks.transfer_methods import SCOT_SETTINGS, load_runs, shipped_kb_file
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space
from metabo.space.cash import CASHSpace
from metabo.space.finite import FiniteCASHSpace
from metabo.strategies import GPBO, RandomSearch
from metabo.strategies.scot import GlobalDefault, SCoT, collaborative_tune

logger = logging.getLogger(__name__)

HELP = "SCoT's 5-fold meta-cross-validation: each meta-test fold tuned collaboratively vs separately"
METHODS = ("scot-collab", "scot-separate", "gp", "random", "global-default", "collab-default")
ONE_PICK = ("global-default", "collab-default")
#: The paper's AdaBoost grid size (sec. 4.1.1): its Figure 7 can run to the whole grid.
PAPER_ITERATIONS = 108
#: The paper's separate surrogate tuning starts with four random picks (sec. 4.1.2).
GP_RANDOM_START = 4


# ----------------------------------------------------------------- folds and candidates
def meta_folds(tasks: Sequence[str], n_folds: int = 5, seed: int = 0) -> list[list[str]]:
    """``tasks`` in ``n_folds`` near-equal meta-folds (a seeded permutation, each fold sorted)."""
    tasks = sorted(set(tasks))
    if n_folds < 2 or n_folds > len(tasks):
        raise InputDataError(f"meta-cross-validation needs 2 <= folds <= {len(tasks)} datasets, got {n_folds}")
    order = np.random.default_rng(seed).permutation(len(tasks))
    return [sorted(tasks[i] for i in part) for part in np.array_split(order, n_folds)]


def fold_lookups(past: PastRuns, fold: Sequence[str],
                 space: CASHSpace) -> tuple[FiniteCASHSpace, dict[str, LookupTask]]:
    """The candidates recorded on every dataset of ``fold`` (one finite space shared by all
    methods) and each dataset's lookup objective restricted to them."""
    full = {t: LookupTask.from_past(past, t, space) for t in fold}
    common = set.intersection(*(set(lk.values) for lk in full.values()))
    if not common:
        raise InputDataError(f"no configuration was recorded on every dataset of the fold {list(fold)}")
    first = full[fold[0]].space
    candidates = [c for c, cid in zip(first.candidates, first.candidate_ids()) if cid in common]
    fspace = FiniteCASHSpace(space, candidates)
    lookups = {t: LookupTask(t, fspace, {cid: v for cid, v in lk.values.items() if cid in common})
               for t, lk in full.items()}
    return fspace, lookups


def candidates_digest(space: FiniteCASHSpace) -> str:
    return hashlib.sha256("\n".join(sorted(space.candidate_ids())).encode()).hexdigest()[:16]


def task_meta(past: PastRuns, task: str) -> dict[str, float]:
    mf = past.meta_features
    return {} if task not in mf.index else {k: float(v) for k, v in mf.loc[task].items() if np.isfinite(v)}


# ----------------------------------------------------------------- one fold, one method
def run_fold(method: str, fold_index: int, fold: Sequence[str], seed: int, iterations: int, past_all: PastRuns,
             space: CASHSpace, *, scot_settings: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """``method`` on every dataset of ``fold`` (module docstring): one run record per dataset."""
    settings = dict(SCOT_SETTINGS if scot_settings is None else scot_settings)
    fold = sorted(fold)
    past = past_all.without(fold)
    fspace, lookups = fold_lookups(past_all, fold, space)
    n = min(1 if method in ONE_PICK else iterations, len(fspace.candidates))
    metas = {t: task_meta(past_all, t) for t in fold}
    # the optimizer seeds collaborative_tune gives the fold's datasets, in its order
    opt_seeds = dict(zip(fold, (int(s) for s in np.random.SeedSequence(seed).generate_state(len(fold)))))
    start = time.perf_counter()
    if method == "scot-collab":
        histories = collaborative_tune(past, {t: (metas[t], lookups[t]) for t in fold}, fspace, budget=n, seed=seed,
                                       **settings)
        picks = {t: [(r.algorithm, dict(r.params), r.value) for r in histories[t].completed] for t in fold}
        seconds = {t: (time.perf_counter() - start) / max(1, n * len(fold)) for t in fold}
    else:
        picks, seconds = {}, {}
        for t in fold:
            t0 = time.perf_counter()
            strategy = _separate_strategy(method, past, metas[t], seed, settings)
            opt = Optimizer(fspace, strategy, seed=opt_seeds[t])
            picks[t] = []
            for _ in range(n):
                trial = opt.ask()
                value = lookups[t](trial.algorithm, trial.params)
                opt.tell(trial, value)
                picks[t].append((trial.algorithm, dict(trial.params), value))
            seconds[t] = (time.perf_counter() - t0) / max(1, n)
    digest = candidates_digest(fspace)
    out = []
    for t in fold:
        values = [float(v) for _, _, v in picks[t]]
        out.append({"method": method, "task": t, "fold": fold_index, "seed": seed, "values": values,
                    "regret": lookups[t].regret(values).tolist(), "configs": [[a, p] for a, p, _ in picks[t]],
                    "n_candidates": len(fspace.candidates), "candidates": digest,
                    "past_tasks": len(past.tasks), "seconds_per_suggestion": seconds[t]})
    return out


def _separate_strategy(method: str, past: PastRuns, meta: Mapping[str, float], seed: int,
                       settings: Mapping[str, Any]) -> Any:
    if method in ("scot-separate", "collab-default"):
        return SCoT(past, meta, seed=seed, **settings)
    if method == "gp":
        return GPBO(n_init=GP_RANDOM_START, seed=seed)
    if method == "random":
        return RandomSearch()
    if method == "global-default":
        return GlobalDefault(past)
    raise InputDataError(f"unknown scot-cv method {method!r}; choose among {', '.join(METHODS)}")


# ----------------------------------------------------------------- the protocol
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS))
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--fold-seed", type=int, default=0, help="seeds the split of the datasets into meta-folds")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--iterations", type=int, default=PAPER_ITERATIONS,
                   help=f"picks per dataset (default {PAPER_ITERATIONS}, the paper's grid size)")
    p.add_argument("--only-folds", type=lambda s: [int(k) for k in s.split(",")],
                   help="run these meta-folds only (another process can run the others into the same runs.jsonl)")
    p.add_argument("--resume", action="store_true", help="keep the runs already in runs.jsonl")
    p.add_argument("--out", type=Path, default=Path("reports/transfer/scot_cv"))


def run(args: argparse.Namespace, command: str) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "runs.jsonl"
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    unknown = set(args.methods) - set(METHODS)
    if unknown:
        raise InputDataError(f"unknown scot-cv methods {sorted(unknown)}; choose among {', '.join(METHODS)}")
    kb_path = shipped_kb_file(args.kb)
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    folds = meta_folds(past.tasks, args.folds, args.fold_seed)
    logger.info(f"{len(past.tasks)} datasets in {len(folds)} meta-folds of sizes {[len(f) for f in folds]}")
    have = {(r["method"], r["fold"], r["seed"]) for r in load_runs(runs_path)}
    only = set(range(len(folds)) if getattr(args, "only_folds", None) is None else args.only_folds)
    keys = [(s, k, m) for s in range(args.seeds) for k in range(len(folds)) for m in args.methods
            if (m, k, s) not in have and k in only]
    logger.info(f"{len(keys)} (seed, fold, method) units to do ({len(have)} kept)")
    start = time.perf_counter()
    for i, (s, k, m) in enumerate(keys):
        t0 = time.perf_counter()
        records = run_fold(m, k, folds[k], s, args.iterations, past, space)
        with open(runs_path, "a") as f:  # one line per dataset, the unit's lines written together
            f.write("".join(json.dumps(r) + "\n" for r in records))
        logger.info(f"  [{i + 1}/{len(keys)}] seed {s} fold {k} {m}: {time.perf_counter() - t0:.0f} s "
              f"(total {time.perf_counter() - start:.0f} s)")
    runs = [r for r in load_runs(runs_path) if r["method"] in args.methods and r["seed"] < args.seeds]
    summary, text = summarize_runs(runs, args.methods, args.iterations)
    text = protocol_note(args, folds, past) + "\n" + text
    logger.info("\n" + text)
    (args.out / "summary.txt").write_text(text)
    (args.out / "summary.json").write_text(json.dumps(
        {"command": command, "folds": folds, "methods": args.methods, "seeds": args.seeds,
         "iterations": args.iterations, "scot_settings": SCOT_SETTINGS, "summary": summary}, indent=1))
    if summary.get("R_shape", [0, 0])[1]:
        _, R = regret_table(runs, args.methods, args.iterations)
        plot_curves(R, args.methods, args.out / "curves.png",
                    title=f"SCoT {len(folds)}-fold meta-cross-validation, lookup")
    logger.info(f"wrote {args.out}/summary.txt, summary.json, curves.png")
    return 0


def summarize_runs(runs: Sequence[Mapping[str, Any]], methods: Sequence[str],
                   iterations: int) -> tuple[dict[str, Any], str]:
    """The comparison (module docstring) and its text; collaborative vs separate spelled out."""
    tasks, R = regret_table(runs, methods, iterations)
    report_at = [it for it in REPORT_AT if it <= iterations]
    if iterations not in report_at:
        report_at.append(iterations)
    summary = summarize(R, list(methods), report_at=report_at, references=("scot-separate", "gp"))
    summary["R_shape"] = list(R.shape)
    summary["tasks"] = tasks
    text = format_table(summary, list(methods), "SCoT meta-cross-validation")
    if "scot-collab" in methods and "scot-separate" in methods and tasks:
        c, s = methods.index("scot-collab"), methods.index("scot-separate")
        rows = {}
        lines = ["Collaborative vs separate SCoT over the datasets (regret averaged over seeds):",
                 f"{'iter':>5s} {'collab':>9s} {'separate':>9s} {'collab<sep':>10s} {'collab>sep':>10s} "
                 f"{'Wilcoxon p':>10s}"]
        for it in report_at:
            a, b = R[c, :, it - 1], R[s, :, it - 1]
            rows[str(it)] = {"collab": float(a.mean()), "separate": float(b.mean()),
                             "collab_better": int((a < b).sum()),
                             "separate_better": int((a > b).sum()), "wilcoxon_p": wilcoxon_p(a, b)}
            r = rows[str(it)]
            lines.append(f"{it:5d} {r['collab']:9.4f} {r['separate']:9.4f} {r['collab_better']:10d} "
                         f"{r['separate_better']:10d} {r['wilcoxon_p']:10.3g}")
        summary["collab_vs_separate"] = rows
        text += "\n".join(lines) + "\n"
    secs = {m: float(np.mean([r["seconds_per_suggestion"] for r in runs if r["method"] == m] or [np.nan]))
            for m in methods}
    summary["seconds_per_suggestion"] = secs
    text += "Mean seconds per suggestion: " + ", ".join(f"{m} {v:.3f}" for m, v in secs.items()) + "\n"
    return summary, text


def protocol_note(args: argparse.Namespace, folds: Sequence[Sequence[str]], past: PastRuns) -> str:
    """What was run, against the paper's protocol (sec. 4.1)."""
    return (
        "What was run vs the paper (Bardenet et al. 2013, sec. 4.1):\n"
        f"- {len(past.tasks)} datasets of the knowledge base (paper: 29 UCI/WEKA datasets), {len(folds)}-fold "
        f"meta-cross-validation (folds seeded {args.fold_seed}, sizes {[len(f) for f in folds]}; paper: 5 folds).\n"
        f"- Lookup objectives: each meta-test dataset tuned among the configurations recorded on every dataset of "
        f"its fold (CASH over {len(past.algorithms)} algorithms, ~450-500 candidates; paper: AdaBoost.MH's 2 "
        "hyperparameters on a 108-point grid), validation error of a 60/20/20 holdout, training capped at 2000 rows.\n"
        f"- {args.iterations} picks per dataset (paper: up to its 108-point grid), {args.seeds} seed(s) "
        "(the paper shows one run per fold); picks without replacement as in the paper.\n"
        f"- SCoT with the lookup benchmark's cheaper settings {SCOT_SETTINGS} (ranker on at most 50 runs per past "
        "dataset, GP on at most 150 points); dataset features: the paper's K, log d, log(n/d), rho rescaled to "
        "[0, 1]. Separate surrogate tuning: GP-BO with 4 random picks first, as the paper.\n"
        "- Regret and average rank per iteration (the paper reports average rank, Figure 7).\n"
    )


__all__ = ["HELP", "METHODS", "PAPER_ITERATIONS", "add_arguments", "fold_lookups", "meta_folds", "run",
           "run_fold", "summarize_runs"]
