"""The published meta-datasets at full size: ingestion speed, memory, store size, query latency.

Prints (no assertions; the aims are in the issue):
- per source (PMF, Tensor-OBOE; optionally LCDB and auto-sklearn): wall time, runs and
  rows per second of the ingestion, and the process's peak resident memory so far;
- wall time and rows added by re-running each ingestion (idempotence: 0 new rows);
- with ``--kill-test``: a Tensor-OBOE ingestion into a second store SIGKILLed after
  ``--kill-after`` seconds, then re-run; whether the result equals the uninterrupted one;
- the size of the DuckDB file;
- median latency (ms) over ``--repeats`` of: the task x configuration matrix of one
  algorithm; the 10 nearest tasks of a new dataset by meta-features (scikit-learn's
  breast_cancer, meta-features computed here) and by ranking agreement (20 observed
  configurations of a held-out task); mean rank of every configuration of one algorithm
  across all tasks; a 5-configuration greedy portfolio of one algorithm.

Usage: python scripts/bench_metadatasets.py [--kb PATH] [--sources pmf tensor-oboe lcdb autosklearn]
       [--phase all|ingest|queries] [--kill-test] [--repeats 5]
A figures file is written next to the store (``<kb>.bench.json``) and, with
``--report``, to that path.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from metabo.kb import KnowledgeBase
from metabo.kb import queries as q
from metabo.metadatasets import get_source
from metabo.metadatasets.ingest import ingest_metadataset

QUERY_ALGORITHMS = ("pmf:estimator-7", "tensor-oboe:RF")


def peak_rss_mb() -> float:
    """Peak resident set size of this process (and its finished children), MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return own / 1024  # Linux reports KiB


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def ingest_phase(path: Path, sources: list[str], figures: dict) -> None:
    for name in sources:
        src = get_source(name)
        with KnowledgeBase(path) as kb:
            t = time.perf_counter()
            report = ingest_metadataset(kb, src)
            wall = time.perf_counter() - t
            t = time.perf_counter()
            again = ingest_metadataset(kb, src, force=True)
            rewall = time.perf_counter() - t
        fig = {
            "seconds": round(wall, 1), "runs_seen": report.runs_seen, "runs_added": report.runs_added,
            "rows_per_s": round(report.runs_seen / wall) if wall else None,
            "datasets": report.datasets, "joined_datasets": report.joined_datasets,
            "configurations": report.configurations, "meta_features": report.meta_features,
            "peak_rss_mb": round(peak_rss_mb()), "rerun_seconds": round(rewall, 1),
            "rerun_runs_seen": again.runs_seen, "rerun_runs_added": again.runs_added,
        }
        figures.setdefault("ingest", {})[name] = fig
        print(f"{name}: {report.runs_seen:,} runs in {wall:.1f} s = {fig['rows_per_s']:,} rows/s "
              f"({report.runs_added:,} new; {report.datasets} datasets, {report.joined_datasets} joined "
              f"with another source; {report.configurations:,} configurations); peak RSS so far "
              f"{fig['peak_rss_mb']:,} MB")
        print(f"{name} re-run (every chunk read again): {again.runs_seen:,} runs read, "
              f"{again.runs_added:,} new, {rewall:.1f} s")
    figures["db_file_mb"] = round(path.stat().st_size / 1e6)
    print(f"DuckDB file: {figures['db_file_mb']:,} MB")
    with KnowledgeBase(path) as kb:
        figures["optimize_seconds"] = round(kb.optimize(), 1)
    figures["db_file_mb_after_optimize"] = round(path.stat().st_size / 1e6)
    print(f"runs re-ordered by (algorithm, metric, dataset, configuration) in {figures['optimize_seconds']} s; "
          f"file {figures['db_file_mb_after_optimize']:,} MB (the old blocks stay allocated in the file "
          "and are reused by later writes; a Parquet export/import compacts it)")


_CHILD = """
import sys
from metabo.kb import KnowledgeBase
from metabo.metadatasets import get_source
from metabo.metadatasets.ingest import ingest_metadataset
with KnowledgeBase(sys.argv[1]) as kb:
    ingest_metadataset(kb, get_source("tensor-oboe"))
"""


def kill_test(path: Path, kill_after: float, figures: dict) -> None:
    """SIGKILL a Tensor-OBOE ingestion half way, re-run it, compare with the full count."""
    killed = path.with_name(path.stem + "-killed.duckdb")
    killed.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(killed)])
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with KnowledgeBase(killed) as kb:
        before = int(kb.query("SELECT count(*) AS n FROM runs")["n"][0])
        state = kb.get_state("metadataset:tensor-oboe", {})
        report = ingest_metadataset(kb, get_source("tensor-oboe"))
        after = int(kb.query("SELECT count(*) AS n FROM runs")["n"][0])
    with KnowledgeBase(path, read_only=True) as kb:
        full = int(kb.query("SELECT count(*) AS n FROM runs WHERE source = 'tensor-oboe'")["n"][0])
    figures["kill_test"] = {"killed_after_s": kill_after, "runs_when_killed": before,
                            "cursor_when_killed": state, "resumed_from_chunk": report.first_chunk,
                            "runs_after_rerun": after, "uninterrupted_runs": full, "equal": after == full}
    print(f"kill test: SIGKILL after {kill_after:.0f} s with {before:,} runs stored (cursor {state}); "
          f"re-run resumed at chunk {report.first_chunk} and ended with {after:,} runs; uninterrupted: "
          f"{full:,} -> {'equal' if after == full else 'DIFFERENT'}")
    for p in (killed, killed.with_name(killed.name + ".wal")):
        p.unlink(missing_ok=True)


def queries_phase(path: Path, repeats: int, figures: dict) -> None:
    from sklearn.datasets import load_breast_cancer

    from metabo.data.dataset import Dataset
    from metabo.data.meta_features import compute_meta_features
    from metabo.kb import transfer

    bc = load_breast_cancer(as_frame=True)
    new = Dataset.from_frame(bc.frame, target="target", name="breast_cancer", source="sklearn")
    target = compute_meta_features(new, seed=0)
    lat: dict[str, float] = {}
    with KnowledgeBase(path, read_only=True) as kb:
        n_runs = int(kb.query("SELECT count(*) AS n FROM runs")["n"][0])
        print(f"store: {n_runs:,} runs")
        for algo in QUERY_ALGORITHMS:
            metric = "balanced_error_rate"
            shape = q.performance_matrix(kb, algo, metric=metric).shape
            lat[f"matrix {algo} {shape[0]}x{shape[1]}"] = median_ms(
                lambda algo=algo, metric=metric: q.performance_matrix(kb, algo, metric=metric), repeats)
            lat[f"mean ranks {algo}"] = median_ms(
                lambda algo=algo, metric=metric: q.mean_ranks(kb, algo, metric=metric), repeats)
            lat[f"greedy portfolio k=5 {algo}"] = median_ms(
                lambda algo=algo, metric=metric: transfer.greedy_portfolio(kb, algo, 5, metric=metric), repeats)
            # a held-out task's first 20 observed configurations, as a new task would have them
            matrix = q.performance_matrix(kb, algo, metric=metric)
            held = matrix.index[0]
            row = matrix.loc[held].dropna()
            obs = row.sample(20, random_state=0).to_dict()
            lat[f"10 nearest by ranking {algo} (20 observations)"] = median_ms(
                lambda algo=algo, obs=obs, metric=metric: transfer.nearest_tasks_by_ranking(
                    kb, algo, obs, k=10, metric=metric), repeats)
        n_mf = int(kb.query("SELECT count(DISTINCT dataset_id) AS n FROM meta_features")["n"][0])
        near = None
        if n_mf:  # PMF and Tensor-OBOE ship none: LCDB and auto-sklearn bring them
            lat[f"10 nearest by meta-features ({n_mf} tasks with meta-features)"] = median_ms(
                lambda: q.nearest_tasks(kb, target, k=10), repeats)
            near = q.nearest_tasks(kb, target, k=10)
    figures["latency_ms"] = {k: round(v, 1) for k, v in lat.items()}
    for k, v in lat.items():
        print(f"{k}: median {v:.1f} ms")
    if near is None:
        print("nearest tasks by meta-features: skipped, no stored task has meta-features "
              "(ingest lcdb or autosklearn too)")
    else:
        print("nearest tasks of breast_cancer:", ", ".join(near["dataset_id"].head(10)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", help="DuckDB file (default: a temporary one, deleted at the end)")
    ap.add_argument("--sources", nargs="+", default=["pmf", "tensor-oboe"])
    ap.add_argument("--phase", choices=["all", "ingest", "queries"], default="all")
    ap.add_argument("--kill-test", action="store_true")
    ap.add_argument("--kill-after", type=float, default=45.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--report", help="also write the figures (JSON) here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.kb) if args.kb else Path(tmp) / "metadatasets.duckdb"
        figures: dict = {"kb": str(path), "cpus": os.cpu_count()}
        if args.phase in ("all", "ingest"):
            ingest_phase(path, args.sources, figures)
            if args.kill_test:
                kill_test(path, args.kill_after, figures)
        if args.phase in ("all", "queries"):
            queries_phase(path, args.repeats, figures)
        figures["peak_rss_mb"] = round(peak_rss_mb())
        print(f"peak RSS of the whole benchmark: {figures['peak_rss_mb']:,} MB")
        text = json.dumps(figures, indent=2, default=str)
        if args.kb:
            Path(str(path) + ".bench.json").write_text(text)
        if args.report:
            Path(args.report).write_text(text)


if __name__ == "__main__":
    main()
