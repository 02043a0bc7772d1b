"""Does the store get better with use? New tasks tuned one after another into one store
(as a user does), each scored against the same warm start from the shipped knowledge only
(benchmarks.flywheel).

    python scripts/bench_flywheel.py [--kb FILE] [--n-tasks 20] [--per-family 2] [--task-seed 0]
        [--seeds 1] [--budget 25] [--jobs 2] [--resume] [--out reports/warm/flywheel] [--scratch DIR]
    python scripts/bench_flywheel.py --report [--out ...]   (the report of the runs so far)
    python scripts/bench_flywheel.py --incumbents [--out ...] [--kb FILE]   (the incumbent check)

Tasks: KEEL's imbalanced datasets (none of them is in the shipped knowledge base), two of
each of ten families by default, in a seeded order. The two arms run side by side
(``--jobs 2``: one process per arm); runs are appended to ``<out>/runs-<arm>.jsonl`` as they
finish, so a killed run resumes with ``--resume``. Writes ``summary.txt``,
``summary.json`` and ``curves.png``. ``--incumbents``: is the best configuration of the
earlier task of the same family good on the later one (what a user would carry over by
hand)? Each is scored on its later task as ``tune`` scores a trial, against the
``shipped`` arm's first pick (``incumbents.txt``).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)

logger = logging.getLogger("bench_flywheel")


def _arm(arm: str, kb_path: str, specs: list[str], seeds: int, budget: int, out: Path, scratch: Path,
         done: set[tuple[str, int, int]]) -> int:
    """One arm, every seed: records appended to ``out/runs-<arm>.jsonl`` (merged by the report)."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("metabo").setLevel(logging.WARNING)
    from benchmarks.flywheel import run_arm

    n = 0
    for seed in range(seeds):
        for record in run_arm(arm, Path(kb_path), specs, seed=seed, budget=budget, work=scratch, done=done):
            with open(out / f"runs-{arm}.jsonl", "a") as f:
                f.write(json.dumps(record, default=float) + "\n")
            n += 1
            logger.info(f"{arm} seed {seed} [{record['position'] + 1}/{len(specs)}] {record['spec']}: best "
                        f"{min((v for v in record['values'] if v == v), default=float('nan')):.4f}, test "
                        f"{record['test_error']}, {record['seconds']:.0f} s; {record['strategy'][:90]}")
    return n


def _report(out: Path, budget: int, command: str) -> None:
    from benchmarks.flywheel import ARMS, load_records, plot, summarize

    records = [r for arm in ARMS for r in load_records(out / f"runs-{arm}.jsonl")]
    if not records:
        raise SystemExit(f"no runs in {out}")
    summary, text = summarize(records, budget)
    head = (f"Flywheel: new tasks tuned one after another into one store, against the shipped knowledge only\n"
            f"Command: {command}\nRuns: {len(records)}; tasks both arms finished: {len(summary['tasks'])}\n"
            "Similar = an earlier task of the sequence is of the same KEEL family\n\n")
    order = sorted({(r["position"], r["spec"], r["similar_before"]) for r in records})
    head += "Order: " + ", ".join(f"{s}{' (similar before)' if sim else ''}" for _, s, sim in order) + "\n\n"
    (out / "summary.txt").write_text(head + text)
    (out / "summary.json").write_text(json.dumps({"command": command, "summary": summary}, indent=1, default=float))
    plot(records, budget, out / "curves.png")
    print(head + text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", help="the base knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--n-tasks", type=int, default=20)
    p.add_argument("--per-family", type=int, default=2)
    p.add_argument("--task-seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--budget", type=int, default=25)
    p.add_argument("--jobs", type=int, default=2, help="1: the arms one after the other; 2: side by side")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--report", action="store_true", help="only the report of the runs so far")
    p.add_argument("--incumbents", action="store_true",
                   help="only the incumbent check of the runs so far: each task preceded by a similar one, scored "
                        "on the best configuration of that earlier task (writes incumbents.txt)")
    p.add_argument("--out", type=Path, default=Path("reports/warm/flywheel"))
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "metabo-flywheel",
                   help="where the stores the tasks are tuned into live (kept for --resume)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    command = "python scripts/bench_flywheel.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report:
        _report(args.out, args.budget, command)
        return 0
    if args.incumbents:
        from benchmarks.flywheel import ARMS, incumbent_check, load_records
        from benchmarks.transfer_methods import shipped_kb_file

        records = [r for arm in ARMS for r in load_records(args.out / f"runs-{arm}.jsonl")]
        args.scratch.mkdir(parents=True, exist_ok=True)
        _, text = incumbent_check(records, Path(shipped_kb_file(args.kb)), args.scratch)
        (args.out / "incumbents.txt").write_text(f"Command: {command}\n\n{text}\n")
        print(text)
        return 0
    from benchmarks.flywheel import ARMS, choose_tasks, load_records
    from benchmarks.transfer_methods import shipped_kb_file
    from metabo.data.keel import fetch_keel, list_keel

    fetch_keel()
    specs = [f"keel:imbalanced/{n}" for n in choose_tasks(list_keel("imbalanced"), n=args.n_tasks,
                                                          per_family=args.per_family, seed=args.task_seed)]
    if not args.resume:
        for arm in ARMS:
            (args.out / f"runs-{arm}.jsonl").unlink(missing_ok=True)
        for store in args.scratch.glob("*.duckdb*"):
            store.unlink()
    done = {(r["arm"], r["seed"], r["position"]) for arm in ARMS for r in load_records(args.out / f"runs-{arm}.jsonl")}
    kb_path = shipped_kb_file(args.kb)
    logger.info(f"{len(specs)} tasks x {args.seeds} seeds x {len(ARMS)} arms, budget {args.budget}; "
                f"{len(done)} runs kept; order: {specs}")
    start = time.perf_counter()
    if args.jobs >= 2:
        # tune's evaluations fork their own children: the workers must not be daemonic
        with ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as pool:
            futures = [pool.submit(_arm, arm, kb_path, specs, args.seeds, args.budget, args.out, args.scratch, done)
                       for arm in ARMS]
            n = sum(f.result() for f in futures)
    else:
        n = sum(_arm(arm, kb_path, specs, args.seeds, args.budget, args.out, args.scratch, done) for arm in ARMS)
    logger.info(f"{n} runs in {time.perf_counter() - start:.0f} s")
    _report(args.out, args.budget, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
