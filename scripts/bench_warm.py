"""Warm start against cold, on tasks the knowledge base has never seen (issue 16): every
method in one run, under the protocols of :mod:`benchmarks.warm_bench`.

    python scripts/bench_warm.py surrogate [--seeds 5] [--iterations 50] [--jobs 2]
        [--methods random,gp,...] [--tasks N] [--task-ids a,b,...] [--resume] [--out reports/warm]
    python scripts/bench_warm.py live [--n-datasets 20] [--seeds 3] [--iterations 50] [--jobs 2] [--resume]
        [--evaluation tune|kb]   (trials scored as `metabo tune` does, the default, or as the
        earlier hold-out knowledge base was measured)
    python scripts/bench_warm.py report surrogate|live   (the report of the runs so far)
    python scripts/bench_warm.py bounds [--runs reports/warm/live5] [--out reports/warm/bounds]
        (what proposing recorded configurations can reach on the live runs' held-out tasks:
        benchmarks.recorded_bounds, computed on recorded values, no model trained)

Runs are appended to ``<out>/<protocol>_runs.jsonl`` as they finish (ordered seed, task,
method, so that a partial file holds whole task x seed blocks), so a killed run resumes
with ``--resume``; the report (``<protocol>_summary.txt``, ``.json``, ``<protocol>_curves.png``)
covers the tasks every method finished. The lookup protocol (candidates = the recorded
grid the base models were fitted on) is kept in scripts/bench_transfer.py as an optimistic
check only.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)

logger = logging.getLogger("bench_warm")
_STATE: dict[str, Any] = {}


def _load(kb_path: str, protocol: str, methods: list[str], evaluation: str = "tune") -> None:
    """Worker state: the past, the same-content groups, the space, the bank if needed."""
    from benchmarks.warm_bench import BANK_METHODS
    from metabo.kb import KnowledgeBase
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from benchmarks.warm_bench import same_content_groups
    from metabo.evaluation.metrics import transfer_metrics

    with KnowledgeBase(kb_path, read_only=True) as kb:
        # tasks that recorded only another error rate (OBOE's) are knowledge too
        past = PastRuns.from_kb(kb, also=transfer_metrics("error_rate")[1:])
        datasets = kb.query("SELECT dataset_id, fingerprint, source, n_instances, n_classes, n_features FROM datasets")
    groups = same_content_groups(datasets, past.meta_features)
    sources = dict(zip(datasets["dataset_id"], datasets["source"]))
    kb_space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    shared: dict[str, Any] = {"space": kb_space if protocol == "surrogate" else default_cash_space(),
                              "same_content": groups, "kb_path": kb_path, "sources": sources}
    if any(b in m for m in methods for b in BANK_METHODS):  # a bank method, or a variant using one
        from metabo.surrogates.bank import SurrogateBank, space_encoder

        shared["bank"] = SurrogateBank.fit(past, space_encoder(kb_space), seed=0)
    from benchmarks.warm_bench import measured_of, measured_protocols

    pasts = {}
    for how in sorted({m for m in (measured_of(name)[1] for name in methods) if m is not None}):
        with KnowledgeBase(kb_path, read_only=True) as kb:
            pasts[how] = PastRuns.from_kb(kb, also=transfer_metrics("error_rate")[1:],
                                          protocols=measured_protocols(how))
    _STATE.update(past=past, pasts=pasts, shared=shared, protocol=protocol, evaluation=evaluation)


def _past_of(method: str) -> tuple[str, Any]:
    """The method's name without ``measured=``, and the past it transfers from."""
    from benchmarks.warm_bench import measured_of

    name, how = measured_of(method)
    return name, (_STATE["past"] if how is None else _STATE["pasts"][how])


def _run(job: tuple[str, str, int, int, str]) -> dict[str, Any]:
    method, task, seed, iterations, scratch = job
    from benchmarks.warm_bench import surrogate_run

    shared = _STATE["shared"]
    start = time.perf_counter()
    try:
        name, past = _past_of(method)
        if _STATE["protocol"] == "surrogate" and name != method:
            raise ValueError("measured= is for the live protocol: the surrogate objective is fitted on the "
                             "held-out task's runs, which would then differ between methods")
        if _STATE["protocol"] == "surrogate":
            record = surrogate_run(name, task, seed, iterations, past, shared)
        else:
            record = _live(name, task, seed, iterations, past, shared, scratch)
        record["method"] = method
    except Exception as e:  # one failed run is reported, not the end of the benchmark
        import traceback

        return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(), "method": method,
                "task": task, "seed": seed}
    record["wall_seconds"] = time.perf_counter() - start
    return record


def _live(method: str, task: str, seed: int, iterations: int, past_all: Any, shared: dict[str, Any],
          scratch: str) -> dict[str, Any]:
    from benchmarks.transfer_live import dataset_spec, live_run
    from benchmarks.warm_bench import make_method, meta_of, space_of
    from metabo.kb import KnowledgeBase

    drop = [task, *shared["same_content"].get(task, ())]
    past = past_all.without(drop)
    name, space = space_of(method, shared["space"])
    strategy = make_method(name, past, meta_of(past_all, task), seed, shared.get("bank"), task, drop,
                           shared["sources"])
    with KnowledgeBase(shared["kb_path"], read_only=True) as kb:
        spec = dataset_spec(kb, task)
    with KnowledgeBase(f"{scratch}-{os.getpid()}.duckdb") as store:
        record = live_run(method, task, seed, iterations, past_all, shared, store, spec, strategy=strategy,
                          space=space, evaluation=_STATE["evaluation"])
    record["protocol"] = "live"
    record["algorithms"] = [a for a, _ in record["configs"]]
    record["seconds"] = []
    return record


def _recorded_ranges(past: Any, tasks: Any) -> dict[str, tuple[float, float]]:
    """Each task's least and largest recorded value (tasks without runs left out): the
    recorded part of the live protocol's normalization."""
    out = {}
    for t in tasks:
        vals = [v for g in past.task_runs(t).values() for v in g.values]
        if vals:
            out[t] = (min(vals), max(vals))
    return out


def _report(protocol: str, out: Path, methods: list[str], iterations: int, kb_path: str, command: str,
            references: Sequence[str] = ("gp", "knn")) -> None:
    from benchmarks.transfer_methods import load_runs
    from benchmarks.warm_bench import live_regret, report

    runs = [r for r in load_runs(out / f"{protocol}_runs.jsonl") if r["method"] in methods]
    if protocol == "live":
        from metabo.kb import KnowledgeBase
        from metabo.kb.past import PastRuns

        with KnowledgeBase(kb_path, read_only=True) as kb:
            past = PastRuns.from_kb(kb)
        live_regret(runs, _recorded_ranges(past, {r["task"] for r in runs}))
    title = {"surrogate": "Surrogate protocol (held-out task's objective = RF on its runs)",
             "live": "Live protocol (held-out tasks trained for real)"}[protocol]
    summary, text = report(runs, methods, iterations, out / f"{protocol}_curves.png", title, references)
    seeds = sorted({r["seed"] for r in runs})
    head = (f"{title}\nCommand: {command}\nRuns: {len(runs)}; seeds {seeds}; tasks every method finished: "
            f"{len(summary['tasks'])}\n\n")
    (out / f"{protocol}_summary.txt").write_text(head + text)
    (out / f"{protocol}_summary.json").write_text(json.dumps({"command": command, "summary": summary}, indent=1,
                                                             default=float))
    print(head + text)


def _bounds(runs_dir: Path, out: Path, kb_path: str, command: str) -> None:
    from benchmarks.recorded_bounds import bounds_table, recorded_curves
    from benchmarks.transfer_live import reproduced
    from benchmarks.transfer_methods import load_runs
    from benchmarks.warm_bench import live_ranges, live_regret, meta_of, same_content_groups
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb import KnowledgeBase
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space

    live = load_runs(runs_dir / "live_runs.jsonl")
    if not live:
        raise SystemExit(f"no live runs in {runs_dir / 'live_runs.jsonl'}")
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb, also=transfer_metrics("error_rate")[1:])
        datasets = kb.query("SELECT dataset_id, fingerprint, source, n_instances, n_classes, n_features FROM datasets")
    groups = same_content_groups(datasets, past.meta_features)
    space = default_cash_space()
    tasks = sorted({r["task"] for r in live})
    recorded = _recorded_ranges(past, tasks)
    lo, hi = live_ranges(live, recorded)
    curves, missing = recorded_curves(past, space, tasks, groups, lambda t: meta_of(past, t),
                                      ranges={t: (lo[t], hi[t]) for t in tasks})
    pseudo = [{"method": name, "task": t, "seed": 0, "values": values}
              for name, by_task in curves.items() for t, values in by_task.items()]
    everything = [*live, *pseudo]
    live_regret(everything, recorded)  # the live runs' normalization: pseudo-runs' values are recorded ones
    methods = [m for m in ("gp", "warm") if any(r["method"] == m for r in live)] + list(curves)
    summary, text = bounds_table(everything, methods)
    agree = reproduced(live, past, space)
    head = (f"References on recorded values (benchmarks.recorded_bounds) beside the live runs of {runs_dir}\n"
            f"Command: {command}\n"
            f"Live trials at recorded configurations: {agree['n_at_recorded']}; equal to the recorded value: "
            f"{agree['equal_share']:.3f}; absolute difference median {agree['median_abs_diff']:.4f}, "
            f"90th percentile {agree['p90_abs_diff']:.4f}\n"
            f"Picks the held-out task had not recorded (scored as failures): "
            + ", ".join(f"{k} {v}" for k, v in missing.items()) + "\n\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "bounds_summary.txt").write_text(head + text)
    (out / "bounds_summary.json").write_text(json.dumps({"command": command, "agreement": agree, "missing": missing,
                                                         "summary": summary, "curves": curves}, indent=1,
                                                        default=float))
    print(head + text)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.warm_bench import METHODS

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("protocol", choices=["surrogate", "live", "report", "bounds"])
    p.add_argument("which", nargs="?", choices=["surrogate", "live"], help="report: the protocol to report")
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--tasks", type=int, default=None, help="only the first N tasks (surrogate)")
    p.add_argument("--task-ids", type=lambda s: s.split(","), default=None,
                   help="exactly these held-out tasks (comma-separated ids), instead of every task (surrogate) "
                        "or the drawn ones (live): one task list across knowledge bases of different sizes")
    p.add_argument("--n-datasets", type=int, default=20, help="live: held-out datasets, drawn with --dataset-seed")
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--evaluation", choices=["tune", "kb"], default="tune",
                   help="live: score trials as `metabo tune` does (default: 5-fold CV of the 80%% not kept for "
                        "test up to 3,000 rows, else the 60/20/20 hold-out; the knowledge base's split seed 0), "
                        "or as the earlier hold-out knowledge base was measured (kb: 60/20/20, at most 2,000 "
                        "training rows)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--scratch", default=str(Path(tempfile.gettempdir()) / "metabo-bench-warm-live"))
    p.add_argument("--out", type=Path, default=None, help="default: reports/warm (reports/warm/bounds for bounds)")
    p.add_argument("--runs", type=Path, default=Path("reports/warm/live5"), help="bounds: the live runs' folder")
    p.add_argument("--references", default="gp,knn",
                   help="report: the methods every other one is tested against (Wilcoxon), comma-separated")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    for name in ("metabo", "benchmarks", "optuna", "distributed"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from benchmarks.transfer_methods import load_runs, shipped_kb_file
    from metabo.kb import KnowledgeBase
    from metabo.kb.past import PastRuns

    command = "python scripts/bench_warm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    kb_path = shipped_kb_file(args.kb)
    if args.protocol == "bounds":
        _bounds(args.runs, args.out or Path("reports/warm/bounds"), kb_path, command)
        return 0
    args.out = args.out or Path("reports/warm")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.protocol == "report":
        if not args.which:
            p.error("report needs the protocol: report surrogate|live")
        _report(args.which, args.out, args.methods, args.iterations, kb_path, command, args.references.split(","))
        return 0
    runs_path = args.out / f"{args.protocol}_runs.jsonl"
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    with KnowledgeBase(kb_path, read_only=True) as kb:
        tasks = list(PastRuns.from_kb(kb).tasks)
        if args.task_ids:
            unknown = [t for t in args.task_ids if t not in set(tasks)]
            if unknown:
                p.error(f"--task-ids: no runs of {unknown} in {kb_path}")
            tasks = list(args.task_ids)
        elif args.protocol == "live":
            from benchmarks.transfer_live import choose_datasets

            tasks = choose_datasets(kb, tasks, n=args.n_datasets, seed=args.dataset_seed)
    if args.tasks:
        tasks = tasks[: args.tasks]
    have = {(r["method"], r["task"], r["seed"]) for r in load_runs(runs_path)}
    jobs = [(m, t, s, args.iterations, args.scratch) for s in range(args.seeds) for t in tasks for m in args.methods
            if (m, t, s) not in have]
    logger.info(f"{args.protocol}: {len(jobs)} runs to do ({len(have)} kept) on {len(tasks)} tasks, {args.jobs} jobs")
    start = time.perf_counter()
    # evaluations fork their own children (limits): workers must not be daemonic, as a
    # multiprocessing.Pool's are; a ProcessPoolExecutor's are not
    with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("fork"), initializer=_load,
                             initargs=(kb_path, args.protocol, args.methods, args.evaluation)) as pool:
        futures = [pool.submit(_run, job) for job in jobs]
        for i, future in enumerate(as_completed(futures)):
            record = future.result()
            if "error" in record:
                logger.error(f"[{i + 1}/{len(jobs)}] {record['task']} {record['method']} seed {record['seed']} "
                             f"failed (not recorded; --resume runs it again): {record['traceback']}")
                continue
            with open(runs_path, "a") as f:
                f.write(json.dumps(record) + "\n")
            r = record.get("regret") or []
            score = f"final regret {r[-1]:.3f}" if r else f"best valid {record.get('valid_error', float('nan')):.4f}"
            logger.info(f"[{i + 1}/{len(jobs)}] {record['task']} {record['method']} seed {record['seed']}: {score}, "
                        f"{record['wall_seconds']:.0f} s (elapsed {time.perf_counter() - start:.0f} s)")
    _report(args.protocol, args.out, args.methods, args.iterations, kb_path, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
