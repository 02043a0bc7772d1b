"""SMBO benchmark: this project's GP-BO against random search and peer optimizers.

Prints (no assertions; the aims are in issue 5) and writes to ``--out`` (reports/smbo):

1. Quality: over ``--seeds`` seeds, the median best value after 25 and ``--budget``
   evaluations on Branin, Hartmann-6 and the 4-branch conditional function
   (:mod:`benchmarks.functions`) for every optimizer installed here
   (:mod:`benchmarks.peers`: random, metabo-gp, optuna-tpe, optuna-gp, skopt-gp,
   smac; metabo-gp-nowarp is GP-BO without output warping, the ablation of
   :mod:`metabo.surrogates.warping`). Runs go over ``--jobs`` processes (joblib), each single-threaded (BLAS and torch).
2. Speed (:func:`benchmarks.peers.suggestion_seconds`), after 50 and 200 uniform
   random observations, one optimizer at a time in this process, single-threaded
   (``--timing-seeds`` repetitions per function): ``steady``, the mean seconds of tell +
   ask over the next 10 suggestions of the loop (the figure the aim compares), and
   ``first``, the first suggestion from a cold start. Medians over functions and seeds.
3. ``--live``: tuning the CASH space (cheap algorithms by default) on 5 KEEL datasets for
   50 evaluations with GP-BO and random search through :func:`metabo.tuning.tune`;
   the test error of the selected configuration, mean rank over datasets x seeds.

Outputs: ``smbo.json`` (every trace, timing and summary), ``smbo.txt`` (the printed
tables) and ``smbo_curves.png`` (median best-so-far regret per function, with the
interquartile band). ``--reuse`` keeps the traces/timings of a previous ``smbo.json`` and
runs only what is missing (e.g. the metabo optimizers after a change).

Usage:
    python scripts/bench_smbo.py [--seeds 20] [--budget 50] [--jobs 2]
        [--optimizers random,metabo-gp,optuna-tpe,optuna-gp,skopt-gp,smac]
        [--timing-seeds 3] [--reuse [--redo metabo-gp]] [--live [--live-seeds 5] [--live-budget 50]]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
from joblib import Parallel, delayed

from benchmarks import FUNCTIONS, get_function, peers

ALL_OPTIMIZERS = ("random", "metabo-gp", "metabo-gp-nowarp", "optuna-tpe", "optuna-gp", "skopt-gp", "smac")
GP = "metabo-gp"
TIMING_WINDOW = 10  # suggestions averaged for the steady-state seconds
LIVE_DATASETS = ("keel:pima", "keel:sonar", "keel:ionosphere", "keel:bupa", "keel:german")
LIVE_ALGORITHMS = (
    "knn", "svm_rbf", "linear_svm", "decision_tree", "adaboost", "gaussian_nb", "lda", "qda", "logistic_regression",
)


# ----------------------------------------------------------------- single-threaded
@contextlib.contextmanager
def single_threaded(optimizer: str = "") -> Iterator[None]:
    """BLAS/OpenMP pools at one thread (and torch's, for Optuna's GP sampler)."""
    from threadpoolctl import threadpool_limits

    if optimizer == "optuna-gp":
        import torch

        torch.set_num_threads(1)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _quality_task(optimizer: str, function: str, budget: int, seed: int) -> dict[str, Any]:
    with single_threaded(optimizer):
        trace = peers.run(optimizer, get_function(function), budget, seed)
    return {"optimizer": optimizer, "function": function, "seed": seed, "budget": budget,
            "values": list(trace.values), "seconds": list(trace.seconds)}


def quality(tasks: Sequence[tuple[str, str, int, int]], jobs: int) -> list[dict[str, Any]]:
    """Run ``(optimizer, function, budget, seed)`` tasks over ``jobs`` processes."""
    out: list[dict[str, Any]] = []
    if not tasks:
        return out
    start = time.perf_counter()
    results = Parallel(n_jobs=jobs, return_as="generator_unordered")(delayed(_quality_task)(*t) for t in tasks)
    for i, r in enumerate(results, start=1):
        out.append(r)
        if i % max(1, len(tasks) // 20) == 0 or i == len(tasks):
            print(f"  quality {i}/{len(tasks)} runs ({time.perf_counter() - start:.0f} s)", flush=True)
    return out


def timing(keys: Sequence[tuple[str, str, int, int]]) -> list[dict[str, Any]]:
    """Seconds of one suggestion for ``(optimizer, function, n_observations, seed)``, one
    at a time in this process."""
    out = []
    for optimizer, function, n, seed in keys:
        with single_threaded(optimizer):
            t = peers.suggestion_seconds(optimizer, get_function(function), n, seed, window=TIMING_WINDOW)
        out.append({"optimizer": optimizer, "function": function, "n_observations": n, "seed": seed,
                    "seconds": t["steady"], "first_seconds": t["first"], "window": TIMING_WINDOW})
        print(f"  timing {optimizer:11s} {function:11s} n={n:3d} seed={seed}: steady {t['steady']:.3f} s, "
              f"first {t['first']:.3f} s", flush=True)
    return out


# ----------------------------------------------------------------- summary
def summarize(traces: list[dict[str, Any]], timings: list[dict[str, Any]], optimizers: Sequence[str],
              functions: Sequence[str], report_at: Sequence[int], seeds: Sequence[int]) -> dict[str, Any]:
    """Medians (and quartiles) of the best value at each ``report_at`` and of the seconds."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for t in traces:
        if t["seed"] in seeds:
            by[t["optimizer"], t["function"]].append(t)
    best: dict[str, Any] = {}
    for o in optimizers:
        for f in functions:
            runs = by.get((o, f), [])
            for b in report_at:
                vals = [min(r["values"][:b]) for r in runs if len(r["values"]) >= b]
                if vals:
                    q1, med, q3 = np.percentile(vals, [25, 50, 75])
                    best.setdefault(o, {}).setdefault(f, {})[str(b)] = {
                        "median": float(med), "q1": float(q1), "q3": float(q3), "n_seeds": len(vals)}
            secs = [s for r in runs for s in r["seconds"]]
            if secs:
                best.setdefault(o, {}).setdefault(f, {})["in_run_seconds_mean"] = float(np.mean(secs))
    speed: dict[str, Any] = {}
    for o in optimizers:
        for n in sorted({t["n_observations"] for t in timings}):
            rows = [t for t in timings if t["optimizer"] == o and t["n_observations"] == n]
            if not rows:
                continue
            entry = speed.setdefault(o, {}).setdefault(str(n), {})
            entry["all"] = float(np.median([t["seconds"] for t in rows]))
            entry["first_all"] = float(np.median([t["first_seconds"] for t in rows]))
            for f in functions:
                fs = [t["seconds"] for t in rows if t["function"] == f]
                if fs:
                    entry[f] = float(np.median(fs))
    return {"best": best, "seconds_per_suggestion": speed, "vs_gp": _vs_gp(by, optimizers, functions, report_at)}


def _vs_gp(by: dict[tuple[str, str], list[dict[str, Any]]], optimizers: Sequence[str], functions: Sequence[str],
           report_at: Sequence[int]) -> dict[str, Any]:
    """Two-sided Mann-Whitney U p-value of GP-BO's best values against each optimizer's
    (the seeds are independent draws, so the samples are taken as unpaired)."""
    from scipy.stats import mannwhitneyu

    out: dict[str, Any] = {}
    for f in functions:
        for b in report_at:
            gp = [min(r["values"][:b]) for r in by.get((GP, f), []) if len(r["values"]) >= b]
            for o in optimizers:
                other = [min(r["values"][:b]) for r in by.get((o, f), []) if len(r["values"]) >= b]
                if o != GP and len(gp) >= 3 and len(other) >= 3:
                    p = float(mannwhitneyu(gp, other, alternative="two-sided").pvalue)
                    out.setdefault(f, {}).setdefault(str(b), {})[o] = p
    return out


def aims(summary: dict[str, Any], optimizers: Sequence[str], functions: Sequence[str],
         report_at: Sequence[int]) -> list[str]:
    """The issue's aims, each as a line ending in yes/NO."""
    best, speed = summary["best"], summary["seconds_per_suggestion"]
    lines: list[str] = []
    if GP not in best:
        return ["metabo-gp was not run: no aims to check"]

    def med(o: str, f: str, b: int) -> float:
        return best.get(o, {}).get(f, {}).get(str(b), {}).get("median", math.nan)

    if "random" in best:
        for b in report_at:
            ok = all(med(GP, f, b) < med("random", f, b) for f in functions)
            lines.append(f"GP-BO ahead of random search on all functions after {b}: {'yes' if ok else 'NO'}")
    cond = "four_branch"
    if cond in functions:
        others = [o for o in optimizers if o != "random" and not o.startswith("metabo-") and o in best]
        for b in report_at:
            behind = [o for o in others if med(GP, cond, b) > med(o, cond, b)]
            pvals = summary.get("vs_gp", {}).get(cond, {}).get(str(b), {})
            lines.append(f"GP-BO not behind any peer on {cond} after {b}: " + (
                "yes" if not behind else "NO (behind " + ", ".join(
                    f"{o} {_fmt(med(o, cond, b))} vs {_fmt(med(GP, cond, b))}, "
                    f"Mann-Whitney p={pvals.get(o, math.nan):.2g}"
                    for o in behind) + ")"))
    if "optuna-gp" in speed and GP in speed:
        for n in speed[GP]:
            if n in speed["optuna-gp"]:
                a, g = speed[GP][n]["all"], speed["optuna-gp"][n]["all"]
                lines.append(f"GP-BO per suggestion (steady) at {n} observations {a:.3f} s vs Optuna "
                             f"GPSampler {g:.3f} s: {'yes' if a <= g else 'NO'}")
    return lines


def _fmt(x: float) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.4g}"


def tables(summary: dict[str, Any], optimizers: Sequence[str], functions: Sequence[str],
           report_at: Sequence[int], n_seeds: int) -> str:
    best, speed = summary["best"], summary["seconds_per_suggestion"]
    out = io.StringIO()
    out.write(f"Median best value over {n_seeds} seeds (optimum: "
              + ", ".join(f"{f} {get_function(f).optimum:g}" for f in functions) + ")\n")
    head = f"{'optimizer':12s}" + "".join(f"{f + '@' + str(b):>17s}" for f in functions for b in report_at)
    out.write(head + "\n" + "-" * len(head) + "\n")
    for o in optimizers:
        row = f"{o:12s}"
        for f in functions:
            for b in report_at:
                row += f"{_fmt(best.get(o, {}).get(f, {}).get(str(b), {}).get('median', math.nan)):>17s}"
        out.write(row + "\n")
    ns = sorted({n for o in speed for n in speed[o]}, key=int)
    out.write(f"\nSeconds per suggestion, single-threaded, after n random observations: steady = mean of the "
              f"next {TIMING_WINDOW} tell+ask, median over functions and seeds, then per function; first = "
              "the cold first suggestion; 'run': mean over the runs above\n")
    head = f"{'optimizer':12s}" + "".join(f"{'n=' + n:>10s}" for n in ns) + "".join(
        f"{'first n=' + n:>14s}" for n in ns) + "".join(
        f"{f + '@' + n:>16s}" for n in ns for f in functions) + "".join(f"{'run ' + f:>16s}" for f in functions)
    out.write(head + "\n" + "-" * len(head) + "\n")
    for o in optimizers:
        row = f"{o:12s}"
        row += "".join(f"{_fmt(speed.get(o, {}).get(n, {}).get('all', math.nan)):>10s}" for n in ns)
        row += "".join(f"{_fmt(speed.get(o, {}).get(n, {}).get('first_all', math.nan)):>14s}" for n in ns)
        row += "".join(f"{_fmt(speed.get(o, {}).get(n, {}).get(f, math.nan)):>16s}" for n in ns for f in functions)
        row += "".join(f"{_fmt(best.get(o, {}).get(f, {}).get('in_run_seconds_mean', math.nan)):>16s}"
                       for f in functions)
        out.write(row + "\n")
    return out.getvalue()


def plot(traces: list[dict[str, Any]], optimizers: Sequence[str], functions: Sequence[str],
         seeds: Sequence[int], path: Path) -> None:
    """Median best-so-far regret (value - optimum) per function, interquartile band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(functions), figsize=(5 * len(functions), 4), squeeze=False)
    for ax, f in zip(axes[0], functions, strict=True):
        optimum = get_function(f).optimum
        for o in optimizers:
            runs = [t["values"] for t in traces if t["optimizer"] == o and t["function"] == f and t["seed"] in seeds]
            if not runs:
                continue
            n = min(len(r) for r in runs)
            regret = np.maximum(np.minimum.accumulate(np.array([r[:n] for r in runs]), axis=1) - optimum, 1e-6)
            q1, med, q3 = np.percentile(regret, [25, 50, 75], axis=0)
            x = np.arange(1, n + 1)
            (line,) = ax.plot(x, med, label=o, lw=2 if o == GP else 1.2)
            ax.fill_between(x, q1, q3, color=line.get_color(), alpha=0.12)
        ax.set_yscale("log")
        ax.set_title(f"{f} (f* = {optimum:g})")
        ax.set_xlabel("evaluations")
        ax.set_ylabel("best-so-far regret (median, IQR)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------- live tuning
def _live_task(dataset: str, strategy: str, seed: int, budget: int, algorithms: Sequence[str]) -> dict[str, Any]:
    from metabo.space.algorithms import default_cash_space
    from metabo.tuning.tune import tune

    start = time.perf_counter()
    with single_threaded():
        result = tune(dataset, budget=budget, space=default_cash_space(algorithms), strategy=strategy, seed=seed,
                      keep_predictions=False, meta_features=False)
    return {"dataset": dataset, "strategy": strategy, "seed": seed, "budget": budget,
            "algorithm": result.algorithm, "validation_error": result.validation_error,
            "test_error": result.test_error, "seconds": time.perf_counter() - start}


def live(datasets: Sequence[str], seeds: Sequence[int], budget: int, algorithms: Sequence[str],
         jobs: int) -> dict[str, Any]:
    """GP-BO vs random search: test error of the selected configuration, mean rank."""
    from scipy.stats import rankdata

    strategies = ("gp", "random")
    tasks = [(d, s, seed, budget, tuple(algorithms)) for d in datasets for seed in seeds for s in strategies]
    rows = []
    start = time.perf_counter()
    for i, r in enumerate(Parallel(n_jobs=jobs, return_as="generator_unordered")(
            delayed(_live_task)(*t) for t in tasks), start=1):
        rows.append(r)
        print(f"  live {i}/{len(tasks)}: {r['dataset']} {r['strategy']} seed {r['seed']}: test error "
              f"{_fmt(r['test_error'] if r['test_error'] is not None else math.nan)} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
    ranks: dict[str, list[float]] = defaultdict(list)
    per_dataset: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for d in datasets:
        for seed in seeds:
            cell = {r["strategy"]: r["test_error"] for r in rows if r["dataset"] == d and r["seed"] == seed}
            errs = [cell.get(s) for s in strategies]
            if any(e is None for e in errs):
                continue
            for s, rank in zip(strategies, rankdata(errs), strict=True):
                ranks[s].append(float(rank))
                per_dataset[d][s].append(float(cell[s]))
    return {
        "datasets": list(datasets), "seeds": list(seeds), "budget": budget, "algorithms": list(algorithms),
        "runs": rows,
        "mean_rank": {s: float(np.mean(v)) for s, v in ranks.items()},
        "mean_test_error": {d: {s: float(np.mean(v)) for s, v in by.items()} for d, by in per_dataset.items()},
    }


def live_table(result: dict[str, Any]) -> str:
    out = io.StringIO()
    out.write(f"Live tuning, {result['budget']} evaluations, {len(result['seeds'])} seeds: mean test error of "
              f"the selected configuration (algorithms: {', '.join(result['algorithms'])})\n")
    out.write(f"{'dataset':18s}{'gp':>10s}{'random':>10s}\n")
    for d, by in result["mean_test_error"].items():
        out.write(f"{d:18s}{_fmt(by.get('gp', math.nan)):>10s}{_fmt(by.get('random', math.nan)):>10s}\n")
    ranks = result["mean_rank"]
    out.write(f"{'mean rank':18s}{_fmt(ranks.get('gp', math.nan)):>10s}{_fmt(ranks.get('random', math.nan)):>10s}"
              "  (1 = better; ties share)\n")
    return out.getvalue()


# ----------------------------------------------------------------- main
def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1 per optimizer and function")
    p.add_argument("--budget", type=int, default=50, help="evaluations per run (reported at 25 and here)")
    p.add_argument("--functions", type=_csv, default=list(FUNCTIONS))
    p.add_argument("--optimizers", type=_csv, default=list(ALL_OPTIMIZERS))
    p.add_argument("--jobs", type=int, default=2, help="processes for the quality runs")
    p.add_argument("--timing-obs", type=lambda s: [int(x) for x in _csv(s)], default=[50, 200])
    p.add_argument("--timing-seeds", type=int, default=3, help="timed suggestions per optimizer, function, n")
    p.add_argument("--skip-quality", action="store_true")
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--reuse", action="store_true", help="keep results of a previous smbo.json, run the rest")
    p.add_argument("--redo", type=_csv, default=[], help="with --reuse: optimizers to run again (after a change)")
    p.add_argument("--live", action="store_true", help="also tune real datasets (slow)")
    p.add_argument("--live-only", action="store_true", help="only the live part")
    p.add_argument("--live-datasets", type=_csv, default=list(LIVE_DATASETS))
    p.add_argument("--live-algorithms", type=_csv, default=list(LIVE_ALGORITHMS))
    p.add_argument("--live-seeds", type=int, default=5)
    p.add_argument("--live-budget", type=int, default=50)
    p.add_argument("--out", type=Path, default=Path("reports/smbo"))
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "smbo.json"
    previous: dict[str, Any] = json.loads(json_path.read_text()) if (args.reuse or args.live_only) and \
        json_path.exists() else {}
    skipped = {o: why for o in args.optimizers if (why := peers.available(o)) is not None}
    optimizers = [o for o in args.optimizers if o not in skipped]
    for o, why in skipped.items():
        print(f"skipping {o}: {why}")
    seeds = list(range(args.seeds))
    report_at = sorted({min(25, args.budget), args.budget})
    functions = args.functions
    print(f"optimizers {optimizers}; versions {peers.versions(optimizers)}", flush=True)

    reuse = args.reuse or args.live_only
    traces = list(previous.get("traces", [])) if reuse else []
    # timings of the current protocol only; --redo drops an optimizer's earlier results
    timings = [t for t in previous.get("timings", []) if t.get("window") == TIMING_WINDOW] if reuse else []
    traces = [t for t in traces if t["optimizer"] not in args.redo]
    timings = [t for t in timings if t["optimizer"] not in args.redo]
    run_only = args.live_only
    if not run_only and not args.skip_quality:
        have = {(t["optimizer"], t["function"], t["budget"], t["seed"]) for t in traces}
        # slow optimizers first, so the two workers finish together
        order = {o: i for i, o in enumerate(("skopt-gp", "optuna-gp", "smac", "metabo-gp", "optuna-tpe", "random"))}
        tasks = sorted(
            ((o, f, args.budget, s) for o in optimizers for f in functions for s in seeds
             if (o, f, args.budget, s) not in have),
            key=lambda t: (order.get(t[0], 0), t[3]),
        )
        print(f"quality: {len(tasks)} runs to do, {len(have)} reused", flush=True)
        traces += quality(tasks, args.jobs)
    if not run_only and not args.skip_timing:
        have_t = {(t["optimizer"], t["function"], t["n_observations"], t["seed"]) for t in timings}
        # optimizers interleaved, so that load changes during the run hit them alike
        keys = [(o, f, n, s) for n in args.timing_obs for f in functions for s in range(args.timing_seeds)
                for o in optimizers if (o, f, n, s) not in have_t]
        print(f"timing: {len(keys)} suggestions to time", flush=True)
        timings += timing(keys)

    measured = {t["optimizer"] for t in traces + timings}
    shown = [o for o in ALL_OPTIMIZERS if o in measured] + sorted(measured - set(ALL_OPTIMIZERS))
    summary = summarize(traces, timings, shown, functions, report_at, seeds)
    text = tables(summary, shown, functions, report_at, len(seeds))
    text += "\n" + "\n".join(aims(summary, shown, functions, report_at)) + "\n"

    live_result = previous.get("live") if reuse else None
    if args.live or args.live_only:
        try:
            live_result = live(args.live_datasets, list(range(args.live_seeds)), args.live_budget,
                               args.live_algorithms, args.jobs)
        except ImportError as e:
            print(f"live part not run: {e}")
    if live_result:
        text += "\n" + live_table(live_result)
    print("\n" + text)

    report = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "versions": peers.versions(shown), "skipped": skipped, "seeds": seeds, "budget": args.budget,
        "report_at": report_at, "functions": functions, "optimizers": shown, "summary": summary,
        "aims": aims(summary, shown, functions, report_at), "live": live_result,
        "traces": traces, "timings": timings,
    }
    if reuse and previous:  # the commands whose results were reused
        report["earlier_commands"] = previous.get("earlier_commands", []) + [previous.get("command")]
        if live_result and "live_command" in previous and not (args.live or args.live_only):
            report["live_command"] = previous["live_command"]
    if args.live_only and previous:  # keep the quality/timing run's metadata
        report = {**previous, "live": live_result, "live_command": report["command"]}
    json_path.write_text(json.dumps(report, indent=1))
    (args.out / "smbo.txt").write_text(text)
    if traces:
        plot(traces, shown, functions, seeds, args.out / "smbo_curves.png")
    print(f"wrote {json_path}, {args.out / 'smbo.txt'}, {args.out / 'smbo_curves.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
