"""Benchmark of the ensemble searches, live on real datasets (issue 7); see
:mod:`metabo.benchmarks.ensembles` for the protocol.

Datasets: ``--n-datasets`` (15) tasks of the knowledge base (the shipped one by default:
KEEL and scikit-learn datasets) of at most ``--max-instances`` rows, drawn with
``--dataset-seed``, or ``--datasets``. Every (dataset, seed, search) run is appended to
``<out>/runs.jsonl`` when it finishes; ``--resume`` keeps them (the same seed gives the
same run). Runs go seed by seed, so a partial benchmark covers every dataset first. The
report (``summary.txt``, ``summary.json``, ``ranks.png``) is written from whatever runs
are there.

Usage:
    python scripts/bench_ensembles.py [--kb PATH] [--budget 100] [--seeds 3] [--jobs 2]
        [--searches bo,rs,esmbo,...] [--n-datasets 15] [--resume] [--report-only]
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

import numpy as np

from metabo.benchmarks.compare import format_table, summarize
from metabo.benchmarks.ensembles import EVALUATION, SEARCHES, WARM, outputs_of, run_search, table
from metabo.benchmarks.transfer_live import choose_datasets, dataset_spec, prepare
from metabo.benchmarks.transfer_methods import load_runs, shipped_kb_file
from metabo.kb import KnowledgeBase


def _job(search: str, spec: str, task: str, seed: int, budget: int, past: Any, shared: Any) -> dict[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.getLogger("metabo").setLevel(logging.WARNING)
    return run_search(search, spec, task, seed, budget, past, shared)


def report(runs: list[dict[str, Any]], tasks: list[str], specs: dict[str, str], searches: list[str],
           args: argparse.Namespace, out: Path) -> str:
    outputs = [o for s in searches for o in outputs_of(s)]
    E, done = table(runs, outputs, tasks)
    lines = [f"Ensemble benchmark: {len(done)} of {len(tasks)} datasets finished by every method, "
             f"budget {args.budget}, seeds {sorted({r['seed'] for r in runs})}; test error of the members trained "
             "on the training part (60/20/20 hold-out), mean over seeds", ""]
    if not done:
        return "\n".join(lines + ["no dataset finished by every method yet"])
    summary = summarize(E[:, :, None], outputs, report_at=(1,), references=("bo-best", "bo-post"))
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
                 f"{'p vs bo-post':>13s} {'diversity':>10s} {'members':>8s}")
    for i, o in sorted(enumerate(outputs), key=lambda x: entry["mean_rank"][x[1]]):
        pw = entry["wilcoxon"].get(o, {})
        lines.append(f"{o:{width}s} {E[i].mean():>10.4f} {entry['mean_rank'][o]:>9.2f} "
                     f"{pw.get('vs_bo-best', float('nan')):>13.3g} {pw.get('vs_bo-post', float('nan')):>13.3g} "
                     f"{div[o]:>10.3f} {size[o]:>8.1f}")
    lines.append(f"Friedman p {entry['friedman_p']:.3g}; Nemenyi critical difference (alpha 0.05, "
                 f"{len(outputs)} methods, {len(done)} datasets) {entry['nemenyi_cd']}")
    # the aims: ahead of bo-best / bo-post in average rank; warm variants against their cold selves
    aims = []
    for o in outputs:
        if o in ("bo-best", "bo-post", "rs-best", "rs-post", "divbo-best"):
            continue
        aims.append(f"  {o}: rank {entry['mean_rank'][o]:.2f} vs bo-best {entry['mean_rank']['bo-best']:.2f}, "
                    f"bo-post {entry['mean_rank']['bo-post']:.2f}")
    lines += ["Average ranks against the references:"] + aims
    cold = {"esmbo-rlgp": "esmbo", "eo-rlgp": "eo-squared_margin", "divbo-rlgp": "divbo"}
    from metabo.benchmarks.compare import wilcoxon_p

    for w, c in cold.items():
        if w in outputs and c in outputs:
            a, b = E[outputs.index(w)], E[outputs.index(c)]
            lines.append(f"  warm {w} vs cold {c}: mean test {a.mean():.4f} vs {b.mean():.4f}, wins/ties/losses "
                         f"{int((a < b).sum())}/{int((a == b).sum())}/{int((a > b).sum())}, Wilcoxon p "
                         f"{wilcoxon_p(a, b):.3g}")
    taus = [r["kendall_tau"] for r in runs if "kendall_tau" in r and r["task"] in done]
    if taus:
        lines.append(f"DivBO diversity surrogate, Kendall tau on held-out pairs (20% of each run's models held "
                     f"out): mean {np.mean(taus):.3f}, median {np.median(taus):.3f} over {len(taus)} runs")
    secs = {s: float(np.mean([r["seconds"] for r in runs if r["search"] == s])) for s in searches
            if any(r["search"] == s for r in runs)}
    lines.append("Mean seconds per run: " + ", ".join(f"{s} {v:.0f}" for s, v in secs.items()))
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
    a.barh(range(len(order)), ranks, color=["tab:orange" if o.endswith("rlgp") else "tab:blue" for o in order])
    a.set_yticks(range(len(order)), order)
    a.invert_yaxis()
    cd = entry["nemenyi_cd"]
    a.axvline(min(ranks) + cd, color="k", ls="--", lw=1, label=f"best + Nemenyi CD ({cd:.2f})")
    a.set_xlabel(f"average rank of test error over {n_tasks} datasets (lower is better)")
    a.legend(loc="lower right")
    means = E.mean(axis=1)
    for i, o in enumerate(outputs):
        b.scatter(div[o], means[i], color="tab:orange" if o.endswith("rlgp") else "tab:blue")
        b.annotate(o, (div[o], means[i]), fontsize=7)
    b.set_xlabel("mean pairwise diversity of the final ensemble (DivBO eq. 3)")
    b.set_ylabel("mean test error")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file)")
    p.add_argument("--searches", type=lambda s: s.split(","), default=list(SEARCHES))
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--datasets", type=lambda s: s.split(","), help="knowledge-base task ids")
    p.add_argument("--n-datasets", type=int, default=15)
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-instances", type=int, default=2000)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true", help="keep the runs already in runs.jsonl")
    p.add_argument("--report-only", action="store_true", help="write the report from runs.jsonl, run nothing")
    p.add_argument("--out", type=Path, default=Path("reports/ensembles"))
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
    past, shared = prepare(kb_path, ["rlgp-warm"] if set(WARM) & set(args.searches) else [])
    with KnowledgeBase(kb_path, read_only=True) as kb:
        tasks = choose_datasets(kb, past.tasks, names=args.datasets, n=args.n_datasets, seed=args.dataset_seed,
                                max_instances=args.max_instances)
        specs = {t: dataset_spec(kb, t) for t in tasks}
    print(f"{len(tasks)} datasets: {', '.join(specs.values())} ({time.perf_counter() - start:.0f} s to load the "
          "past and fit the bank)", flush=True)
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
