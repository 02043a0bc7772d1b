"""Surrogate bank timings on the shipped knowledge base.

1. Build: one GP per (task, algorithm) of the knowledge base (``PastRuns.from_kb``, the
   default CASH space's encoding, at most 50 points each), cached into a fresh DuckDB
   file, timed.
2. Cached re-build: the same fit again against that file (every member loaded and
   checked, nothing fitted), timed.
3. Latency of ``predict`` (mean and latent variance of every member of one algorithm)
   and ``sample`` (``--samples`` joint posterior samples) at M uniform candidates of the
   algorithm's unit cube, for M in ``--candidates``: the median of ``--repeats`` calls
   (after one untimed call that builds the precomputed arrays), per algorithm.

The knowledge base comes from ``--kb`` (a DuckDB file, opened read-only) or, without it,
from the Parquet export ``data/kb`` imported into a temporary file. BLAS threads are
limited to one (``threadpoolctl``) so figures are single-core.

Usage:
    python scripts/bench_bank.py [--kb /work/kbship/shipped.duckdb] [--candidates 100 1000]
        [--samples 100] [--repeats 7] [--out reports/bank.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import import_parquet
from metabo.kb.past import PastRuns
from metabo.space.algorithms import default_cash_space
from metabo.surrogates.bank import SurrogateBank, space_encoder


def _past(kb_path: str | None, tmp: Path) -> PastRuns:
    if kb_path:
        with KnowledgeBase(kb_path, read_only=True) as kb:
            return PastRuns.from_kb(kb)
    with KnowledgeBase(tmp / "shipped.duckdb") as kb:
        import_parquet(kb, Path("data/kb"))
        return PastRuns.from_kb(kb)


def _median_ms(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # untimed: precomputed arrays built, caches warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", help="a DuckDB knowledge base (default: import data/kb into a temporary file)")
    p.add_argument("--candidates", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = p.parse_args(argv)
    report: dict[str, object] = {"kb": args.kb or "data/kb", "machine": platform.processor() or platform.machine()}
    with threadpool_limits(limits=1, user_api="blas"), tempfile.TemporaryDirectory() as tmp:
        past = _past(args.kb, Path(tmp))
        space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
        encode = space_encoder(space)
        with KnowledgeBase(Path(tmp) / "cache.duckdb") as cache:
            bank = SurrogateBank.fit(past, encode, kb=cache)
            again = SurrogateBank.fit(past, encode, kb=cache)
        if again.n_fitted_ != 0 or again.n_loaded_ != len(bank.members_):
            raise SystemExit(f"the cached re-build fitted {again.n_fitted_} GPs; expected none")
        report.update(tasks=len(bank.tasks), algorithms=len(bank.algorithms), gps=len(bank.members_),
                      runs=past.n_runs(), build_seconds=bank.fit_seconds_, cached_build_seconds=again.fit_seconds_)
        print(f"knowledge base {report['kb']}: {past.n_runs()} (task, configuration) values, {len(bank.tasks)} tasks, "
              f"{len(bank.algorithms)} algorithms")
        print(f"build: {len(bank.members_)} GPs fitted and stored in {bank.fit_seconds_:.1f} s; "
              f"cached re-build (loaded and checked, 0 fitted) in {again.fit_seconds_:.2f} s")
        rng = np.random.default_rng(0)
        rows = []
        print(f"{'algorithm':<20} {'T':>3} {'d':>2} {'n':>3} " + " ".join(
            f"{'predict@' + str(m):>12} {'sample@' + str(m):>12}" for m in args.candidates) + "   (ms)")
        for a in bank.algorithms:
            d, T = bank.dims(a), len(bank.members(a))
            n = max(len(bank.members_[(t, a)].alpha) for t in bank.members(a))
            row: dict[str, object] = {"algorithm": a, "tasks": T, "dims": d, "max_n": n}
            for m in args.candidates:
                X = rng.random((m, d))
                row[f"predict_ms_{m}"] = _median_ms(lambda a=a, X=X: bank.predict(a, X), args.repeats)
                row[f"sample_ms_{m}"] = _median_ms(lambda a=a, X=X: bank.sample(a, X, args.samples, seed=0),
                                                   max(1, args.repeats // 3))
            rows.append(row)
            print(f"{a:<20} {T:>3} {d:>2} {n:>3} " + " ".join(
                f"{row[f'predict_ms_{m}']:>12.1f} {row[f'sample_ms_{m}']:>12.1f}" for m in args.candidates))
        for m in args.candidates:
            big = [r for r in rows if r["max_n"] > 1]
            print(f"median over algorithms with n > 1, M = {m}: predict "
                  f"{statistics.median(r[f'predict_ms_{m}'] for r in big):.1f} ms, sample ({args.samples} joint "
                  f"samples) {statistics.median(r[f'sample_ms_{m}'] for r in big):.1f} ms")
        report["latency"] = rows
        report["samples"] = args.samples
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
