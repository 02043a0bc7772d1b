"""Benchmark of the ensemble searches, live on real datasets held out from the knowledge
base (issues 7 and 20); see :mod:`benchmarks.ensembles` for the protocol.

Datasets: ``--n-datasets`` (15) tasks of the knowledge base (the shipped one by default:
KEEL and scikit-learn datasets) of at most ``--max-instances`` rows, drawn with
``--dataset-seed``, or ``--datasets``; each is held out from what the warm searches
transfer, with the tasks that may hold the same data. Every (dataset, seed, search) run is appended to
``<out>/runs.jsonl`` when it finishes; ``--resume`` keeps them (the same seed gives the
same run). Runs go seed by seed, so a partial benchmark covers every dataset first. The
report (``summary.txt``, ``summary.json``, ``ranks.png``) is written from whatever runs
are there.

Usage:
    python scripts/bench_ensembles.py [--kb PATH] [--budget 100] [--seeds 3] [--jobs 2]
        [--searches bo,esmbo,...] [--n-datasets 15] [--resume] [--report-only] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np

from benchmarks.compare import summarize
from benchmarks.ensembles import EVALUATION, SEARCHES, outputs_of, run_search, table
from benchmarks.transfer_live import choose_datasets, dataset_spec
from benchmarks.transfer_methods import load_runs, shipped_kb_file
from benchmarks.warm_bench import same_content_groups
from metabo.evaluation.protocols import parse_cv
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.space.algorithms import default_cash_space

#: (method, reference) pairs of the seeds' headline comparisons: ESMBO vs SMBO (Lacoste et al.
#: 2014 Tables 2-3), EO per loss vs BO-best and BO-post (thesis Table 4.6), DivBO vs BO-post
#: (BO-ES in Shen et al. 2022 Table 1)
PAPER_PAIRS = [("esmbo", "bo-best"), ("eo-sigmoid", "bo-best"), ("eo-sigmoid", "bo-post"),
               ("eo-squared_margin", "bo-best"), ("eo-squared_margin", "bo-post"), ("eo-c_bound", "bo-best"),
               ("eo-c_bound", "bo-post"), ("divbo", "bo-post"), ("divbo", "divbo-best")]


def _job(search: str, spec: str, task: str, seed: int, budget: int, past: Any, shared: Any) -> dict[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.getLogger("metabo").setLevel(logging.WARNING)
    return run_search(search, spec, task, seed, budget, past, shared)


def _protocols(runs: list[dict[str, Any]]) -> str:
    """How the runs searched: ``"5-fold cross-validation (40 runs), a hold-out (20 runs)"``."""
    counts: dict[Any, int] = {}
    for r in runs:
        counts[r.get("cv")] = counts.get(r.get("cv"), 0) + 1
    return ", ".join(f"{'a hold-out' if k is None else f'{k}-fold cross-validation'} ({v} runs)"
                     for k, v in sorted(counts.items(), key=lambda kv: -1 if kv[0] is None else kv[0]))


def report(runs: list[dict[str, Any]], tasks: list[str], specs: dict[str, str], searches: list[str],
           args: argparse.Namespace, out: Path) -> str:
    outputs = [o for s in searches for o in outputs_of(s)]
    E, done = table(runs, outputs, tasks)
    lines = [f"Ensemble benchmark: {len(done)} of {len(tasks)} datasets finished by every method, "
             f"budget {args.budget}, seeds {sorted({r['seed'] for r in runs})}; test error of the deployed model "
             f"(members refitted on the 80% searched by {_protocols(runs)}, scored on the 20% test part), "
             "mean over seeds", ""]
    if not done:
        return "\n".join(lines + ["no dataset finished by every method yet"])
    summary = summarize(E[:, :, None], outputs, report_at=(1,), references=("bo-best", "bo-guarded"))
    entry = summary["at"]["1"]
    width = max(len(o) for o in outputs) + 1
    lines.append(f"{'dataset':22s}" + "".join(f"{o[:11]:>12s}" for o in outputs))
    for j, t in enumerate(done):
        lines.append(f"{specs[t][:22]:22s}" + "".join(f"{E[i, j]:>12.4f}" for i in range(len(outputs))))
    lines.append("")
    div: dict[str, float] = {}
    size: dict[str, float] = {}
    for o in outputs:
        vals = [(r["outputs"][o]["diversity"], len(r["outputs"][o]["members"])) for r in runs
                if o in r["outputs"] and r["task"] in done]
        div[o] = float(np.mean([v[0] for v in vals])) if vals else float("nan")
        size[o] = float(np.mean([v[1] for v in vals])) if vals else float("nan")
    lines.append(f"{'method':{width}s} {'mean test':>10s} {'avg rank':>9s} {'p vs bo-best':>13s} "
                 f"{'p vs bo-guard':>13s} {'w/t/l best':>11s} {'diversity':>10s} {'members':>8s}")
    best = E[outputs.index("bo-best")] if "bo-best" in outputs else None
    for i, o in sorted(enumerate(outputs), key=lambda x: entry["mean_rank"][x[1]]):
        pw = entry["wilcoxon"].get(o, {})
        wtl = ("" if best is None
               else f"{int((E[i] < best).sum())}/{int((E[i] == best).sum())}/{int((E[i] > best).sum())}")
        lines.append(f"{o:{width}s} {E[i].mean():>10.4f} {entry['mean_rank'][o]:>9.2f} "
                     f"{pw.get('vs_bo-best', float('nan')):>13.3g} {pw.get('vs_bo-guarded', float('nan')):>13.3g} "
                     f"{wtl:>11s} {div[o]:>10.3f} {size[o]:>8.1f}")
    lines.append(f"Friedman p {entry['friedman_p']:.3g}; Nemenyi critical difference (alpha 0.05, "
                 f"{len(outputs)} methods, {len(done)} datasets) {entry['nemenyi_cd']}")
    # the aims: every ensemble against the single best of its own search (issue 20)
    from benchmarks.compare import wilcoxon_p

    lines.append("Each output against the single best configuration of the same search (mean deployed test "
                 "error, wins/ties/losses over datasets, Wilcoxon p):")
    for o in outputs:
        search = next((s for s in searches if o == s or o.startswith(s + "-")), None)
        ref = f"{search}-best" if search and f"{search}-best" in outputs else "bo-best"
        if o == ref or ref not in outputs:
            continue
        a, b = E[outputs.index(o)], E[outputs.index(ref)]
        lines.append(f"  {o} vs {ref}: {a.mean():.4f} vs {b.mean():.4f}, {int((a < b).sum())}/"
                     f"{int((a == b).sum())}/{int((a > b).sum())}, p {wilcoxon_p(a, b):.3g}")
    lines.append("The papers' headline comparisons (mean deployed test error, wins/ties/losses, Wilcoxon p; the "
                 "papers' figures in reports/ensembles-v2/README.md):")
    for a_name, b_name in PAPER_PAIRS:
        if a_name in outputs and b_name in outputs:
            a, b = E[outputs.index(a_name)], E[outputs.index(b_name)]
            lines.append(f"  {a_name} vs {b_name}: {a.mean():.4f} vs {b.mean():.4f}, {int((a < b).sum())}/"
                         f"{int((a == b).sum())}/{int((a > b).sum())}, p {wilcoxon_p(a, b):.3g}")
    kept = [r["guard"]["kept"] for r in runs if r.get("guard") and r["task"] in done]
    if kept:
        lines.append(f"The guard kept the ensemble in {kept.count('ensemble')} of {len(kept)} searches")
    cold = {"warm": "bo", "esmbo-warm": "esmbo", "divbo-warm": "divbo"}
    for w, c in cold.items():
        for suffix in ("-guarded", "-best"):
            if w + suffix in outputs and c + suffix in outputs:
                a, b = E[outputs.index(w + suffix)], E[outputs.index(c + suffix)]
                lines.append(f"  warm {w}{suffix} vs cold {c}{suffix}: {a.mean():.4f} vs {b.mean():.4f}, "
                             f"{int((a < b).sum())}/{int((a == b).sum())}/{int((a > b).sum())}, p "
                             f"{wilcoxon_p(a, b):.3g}")
    T, _ = table(runs, outputs, done, key="test_error")
    lines.append("Members as trained (mean of their fold models, no refit), mean test error: "
                 + ", ".join(f"{o} {T[i].mean():.4f}" for i, o in enumerate(outputs)))
    taus = [r["kendall_tau"] for r in runs if "kendall_tau" in r and r["task"] in done]
    if taus:
        lines.append(f"DivBO diversity surrogate, Kendall tau on held-out pairs (20% of each run's models held "
                     f"out): mean {np.mean(taus):.3f}, median {np.median(taus):.3f} over {len(taus)} runs")
    secs = {s: float(np.mean([r["seconds"] for r in runs if r["search"] == s])) for s in searches
            if any(r["search"] == s for r in runs)}
    lines.append("Mean seconds per search (budget trials, each fold fitted): " + ", ".join(
        f"{s} {v:.0f}" for s, v in secs.items()))
    refit = [r.get("refit_seconds", 0.0) for r in runs]
    if refit:
        lines.append(f"Mean seconds to refit every output's members of a search: {np.mean(refit):.1f}")
    text = "\n".join(lines) + "\n"
    (out / "summary.json").write_text(json.dumps(
        {"command": " ".join(sys.argv), "datasets": {t: specs[t] for t in done}, "outputs": outputs,
         "budget": args.budget, "evaluation": EVALUATION, "test_error": E.round(6).tolist(), "summary": summary,
         "diversity": div, "members": size, "kendall_tau": taus, "seconds": secs}, indent=1))
    plot(E, outputs, entry, div, out / "ranks.png", len(done))
    return text


def plot(E: np.ndarray, outputs: list[str], entry: dict[str, Any], div: dict[str, float], path: Path,
         n_tasks: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = sorted(outputs, key=lambda o: entry["mean_rank"][o])
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    ranks = [entry["mean_rank"][o] for o in order]
    a.barh(range(len(order)), ranks, color=["tab:orange" if "warm" in o else "tab:blue" for o in order])
    a.set_yticks(range(len(order)), order)
    a.invert_yaxis()
    cd = entry["nemenyi_cd"]
    a.axvline(min(ranks) + cd, color="k", ls="--", lw=1, label=f"best + Nemenyi CD ({cd:.2f})")
    a.set_xlabel(f"average rank of test error over {n_tasks} datasets (lower is better)")
    a.legend(loc="lower right")
    means = E.mean(axis=1)
    for i, o in enumerate(outputs):
        b.scatter(div[o], means[i], color="tab:orange" if "warm" in o else "tab:blue")
        b.annotate(o, (div[o], means[i]), fontsize=7)
    b.set_xlabel("mean pairwise diversity of the final ensemble (DivBO eq. 3)")
    b.set_ylabel("mean test error")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file)")
    p.add_argument("--searches", type=lambda s: s.split(","),
                   default=["bo", "esmbo", "divbo", "eo-sigmoid", "warm"])
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--datasets", type=lambda s: s.split(","), help="knowledge-base task ids")
    p.add_argument("--n-datasets", type=int, default=15)
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-instances", type=int, default=2000)
    p.add_argument("--min-instances", type=int, default=0, help="draw among tasks of at least this many rows")
    p.add_argument("--cv", default=str(EVALUATION["cv"]),
                   help="the searches' cross-validation: folds, 'auto' (tune_ensemble's default: 5 folds up "
                        "to 3,000 rows, the hold-out above) or 'none' (the hold-out)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true", help="keep the runs already in runs.jsonl")
    p.add_argument("--report-only", action="store_true", help="write the report from runs.jsonl, run nothing")
    p.add_argument("--out", type=Path, default=Path("reports/ensembles-v2"))
    args = p.parse_args(argv)
    unknown = [s for s in args.searches if s not in SEARCHES]
    if unknown:
        p.error(f"unknown searches {unknown}; choose among {list(SEARCHES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "runs.jsonl"
    if not (args.resume or args.report_only) and runs_path.exists():
        runs_path.unlink()
    kb_path = shipped_kb_file(args.kb)
    start = time.perf_counter()
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
        datasets = kb.query("SELECT dataset_id, fingerprint, n_instances, n_classes, n_features FROM datasets")
        tasks = choose_datasets(kb, past.tasks, names=args.datasets, n=args.n_datasets, seed=args.dataset_seed,
                                max_instances=args.max_instances, min_instances=args.min_instances)
        specs = {t: dataset_spec(kb, t) for t in tasks}
    try:
        cv = parse_cv(args.cv)
    except InputDataError as e:
        p.error(str(e))
    shared = {"space": default_cash_space(), "same_content": same_content_groups(datasets, past.meta_features),
              "cv": cv}
    print(f"{len(tasks)} datasets: {', '.join(specs.values())} ({time.perf_counter() - start:.0f} s to load the "
          "past)", flush=True)
    have = {(r["search"], r["task"], r["seed"]) for r in load_runs(runs_path) if r["budget"] == args.budget}
    keys = [(s, t, seed) for seed in range(args.seeds) for t in tasks for s in args.searches
            if (s, t, seed) not in have]
    if not args.report_only and keys:
        from joblib import Parallel, delayed

        print(f"{len(keys)} runs to do ({len(have)} kept)", flush=True)
        for i, record in enumerate(Parallel(n_jobs=args.jobs, return_as="generator_unordered")(
                delayed(_job)(s, specs[t], t, seed, args.budget, past, shared) for s, t, seed in keys)):
            with open(runs_path, "a") as f:
                f.write(json.dumps(record) + "\n")
            best = {o: round(v["test_error"], 4) for o, v in record["outputs"].items()}
            print(f"  [{i + 1}/{len(keys)}] {record['spec']} seed {record['seed']} {record['search']}: test {best} "
                  f"({record['seconds']:.0f} s; {time.perf_counter() - start:.0f} s in all)", flush=True)
    runs = [r for r in load_runs(runs_path) if r["budget"] == args.budget and r["task"] in specs
            and r["search"] in args.searches and r["seed"] < args.seeds]
    text = report(runs, tasks, specs, args.searches, args, args.out)
    (args.out / "summary.txt").write_text(text)
    print("\n" + text)
    print(f"wrote {args.out}/summary.txt, summary.json, ranks.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
