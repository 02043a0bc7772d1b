"""OBOE's knowledge against the project's own, on one grid (issue 19): the portfolio warm
start's first picks on the live protocol's held-out tasks, scored on recorded values.

Needs a knowledge base holding the shipped runs, OBOE's 203 distinct configurations
evaluated on the KEEL tasks the project's way (``metabo ingest oboe --export-grid`` then
``metabo kb build --configs-from``), and OBOE's meta-dataset (``metabo ingest oboe``,
``metabo kb join-qualities``); reports/warm/oboe/README.md has the commands.

    python scripts/bench_oboe_grid.py --kb STORE --keel-session build-c1dbb51445bb \\
        --grid-session build-df8e9f670376 [--runs reports/warm/live5] [--picks 10]
        [--agreement-only] [--measured TEXT] [--csv FILE] [--previous FILE]

Prints (1) for the datasets both OBOE and the project measured on the same 203
configurations, the rank agreement of the two measurements (``--previous``: against the
agreement another measurement of the grid reached, dataset by dataset, for instance
``reports/warm/oboe-grid/agreement.csv``, the hold-out's); (2) the mean normalized
regret at 1, 3, 5, 8, 10 of the default warm start's portfolio (no search phase) with
several knowledges, every pick a configuration the held-out task recorded (its KEEL grid or
OBOE's grid measured on it), normalized as the live runs of ``--runs`` are
(:func:`benchmarks.warm_bench.live_ranges`), with the Wilcoxon p over tasks against
the shipped knowledge.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", required=True)
    p.add_argument("--keel-session", required=True, help="the build session of the shipped KEEL grid")
    p.add_argument("--grid-session", required=True, help="the build session of OBOE's grid on the KEEL tasks")
    p.add_argument("--runs", type=Path, default=Path("reports/warm/live5"))
    p.add_argument("--picks", type=int, default=10)
    p.add_argument("--agreement-only", action="store_true",
                   help="only (1): the grid was measured on the datasets OBOE shares, not on the held-out tasks")
    p.add_argument("--measured", default="60/20/20, at most 2,000 training rows",
                   help="how the grid session measured, for the printout")
    p.add_argument("--csv", type=Path, help="write (1)'s per-dataset table here")
    p.add_argument("--previous", type=Path,
                   help="another measurement's (1) table (--csv of an earlier run): paired comparison over datasets")
    args = p.parse_args(argv)

    import pandas as pd
    from scipy.stats import spearmanr

    from benchmarks.compare import wilcoxon_p
    from benchmarks.recorded_bounds import recorded_lookup, run_on_recorded
    from benchmarks.transfer_methods import load_runs
    from benchmarks.warm_bench import live_ranges, meta_of, same_content_groups
    from benchmarks.warm_variants import warm_start
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb import KnowledgeBase
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space

    keel_s, grid_s = f"session:{args.keel_session}", f"session:{args.grid_session}"
    also = transfer_metrics("error_rate")[1:]
    with KnowledgeBase(args.kb, read_only=True) as kb:
        datasets = kb.query("SELECT dataset_id, fingerprint, source, n_instances, n_classes, n_features FROM datasets")
        knowledge = {
            "KEEL tasks, KEEL grid (shipped)": (PastRuns.from_kb(kb, sources=[keel_s]), {}),
            "KEEL tasks (KEEL grid) + OBOE tasks": (PastRuns.from_kb(kb, sources=[keel_s, "oboe"], also=also), {}),
            "KEEL tasks, KEEL + OBOE grids": (PastRuns.from_kb(kb, sources=[keel_s, grid_s]), {}),
            "OBOE grid: KEEL tasks": (PastRuns.from_kb(kb, sources=[grid_s]), {}),
            "OBOE grid: KEEL + OBOE tasks": (PastRuns.from_kb(kb, sources=[grid_s, "oboe"], also=also), {}),
        }
        grid_oboe = knowledge["OBOE grid: KEEL + OBOE tasks"][0]
        knowledge["OBOE grid: KEEL + described OBOE tasks"] = (grid_oboe, {"unknown_prior": "zero"})
        knowledge["OBOE grid: KEEL + OBOE, equal sources"] = (grid_oboe, {"source_prior": "equal"})
        everything = PastRuns.from_kb(kb, also=also)
        ours = kb.query("SELECT dataset_id, config_id, avg(value) AS v FROM runs WHERE source = ? AND status = 'ok' "
                        "AND metric = 'balanced_error_rate' GROUP BY 1, 2 ORDER BY 1, 2", [grid_s])
        theirs = kb.query("SELECT dataset_id, config_id, avg(value) AS v FROM runs WHERE source = 'oboe' "
                          "AND status = 'ok' GROUP BY 1, 2 ORDER BY 1, 2")

    # (1) one dataset, one grid, two measurements
    rows = []
    for d in sorted(set(ours["dataset_id"]) & set(theirs["dataset_id"])):
        a = ours[ours["dataset_id"] == d].set_index("config_id")["v"]
        b = theirs[theirs["dataset_id"] == d].set_index("config_id")["v"]
        j = a.index.intersection(b.index)
        # ties among the 10 best are broken by configuration id (the rows come sorted by it)
        rows.append((d, len(j), float(spearmanr(a[j], b[j])[0]),
                     len(set(a[j].nsmallest(10).index) & set(b[j].nsmallest(10).index))))
    same = pd.DataFrame(rows, columns=["dataset", "configurations", "spearman", "shared of the 10 best"])
    print(f"Balanced error of OBOE's configurations on the same datasets: the project's measurement "
          f"({args.measured}) against OBOE's (5-fold CV)")
    print(same.to_string(index=False))
    if len(same):
        print(f"median Spearman {same['spearman'].median():.2f}, median shared of the 10 best "
              f"{same['shared of the 10 best'].median():.0f}\n")
    if args.csv:
        same.to_csv(args.csv, index=False)
    if args.previous:
        before = pd.read_csv(args.previous)
        both = same.merge(before, on="dataset", suffixes=("", " before"))
        for col in ("spearman", "shared of the 10 best"):
            now, old = both[col], both[f"{col} before"]
            print(f"{col} on {len(both)} datasets: median {now.median():.2f} now against {old.median():.2f} "
                  f"before (mean {now.mean():.3f} against {old.mean():.3f}); higher now on {(now > old).sum()}, "
                  f"lower on {(now < old).sum()}; Wilcoxon p {wilcoxon_p(now.to_numpy(), old.to_numpy()):.3g}")
        print()
    if args.agreement_only:
        return 0

    # (2) the portfolio with each knowledge, on recorded values
    groups = same_content_groups(datasets, everything.meta_features)
    space = default_cash_space()
    live = load_runs(args.runs / "live_runs.jsonl")
    tasks = sorted({r["task"] for r in live})
    lookups = {t: recorded_lookup(everything, space, t) for t in tasks}
    lo, hi = live_ranges(live, {t: (min(v.values()), max(v.values())) for t, v in lookups.items()})

    def regret(t: str, values: list[float]) -> np.ndarray:
        v = np.array([x if x is not None and math.isfinite(x) else hi[t] for x in values])
        return (np.minimum.accumulate(v) - lo[t]) / (hi[t] - lo[t])

    curves: dict[str, np.ndarray] = {}
    for name, (past, options) in knowledge.items():
        per_task = []
        for t in tasks:
            held = past.without([t, *groups.get(t, ())])
            strategy = warm_start(held, meta_of(everything, t), seed=0, **options)
            values, _ = run_on_recorded(strategy, space, lookups[t], args.picks)
            per_task.append(regret(t, values))
        curves[name] = np.array(per_task)
    for method in ("gp", "warm"):
        mine = [r for r in live if r["method"] == method]
        if mine:
            curves[f"live {method}"] = np.array([np.mean([regret(t, r["values"])[: args.picks] for r in mine
                                                          if r["task"] == t], axis=0) for t in tasks])
    at = [k for k in (1, 3, 5, 8, 10) if k <= args.picks]
    base = curves["KEEL tasks, KEEL grid (shipped)"]
    print(f"Portfolio picks on {len(tasks)} held-out tasks, mean normalized regret; Wilcoxon p over tasks against "
          "the shipped knowledge at 1 / 5 / 10")
    print(f"{'':42s}" + "".join(f"{'@' + str(k):>8s}" for k in at))
    for name, R in curves.items():
        ps = "" if name.startswith("live") or R is base else "   " + " / ".join(
            f"{wilcoxon_p(R[:, k - 1], base[:, k - 1]):.2g}" for k in (1, 5, 10) if k <= args.picks)
        print(f"{name:42s}" + "".join(f"{R[:, k - 1].mean():8.4f}" for k in at) + ps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
