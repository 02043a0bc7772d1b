"""The RLGP paper's own protocol on the PMF meta-dataset (Manolache & Vanschoren 2019,
sec. 4; issue 6 item 4): ``bench_transfer.py pmf``.

Notation: the PMF matrix ``Y`` (T tasks, C pipelines) of balanced error rates, NaN where
a pipeline was not run (:class:`MetaMatrix`, read from the store once); pipelines as
configurations of the :class:`~metabo.metadatasets.inferred_space.InferredSpace` of the recorded ones
(their vectors flattened into scalar hyperparameters). The protocol, defaults as in the
paper:

- held-out tasks: the first ``--datasets`` (50) of a permutation drawn by ``default_rng(seed)``;
  each is left out in turn, every other task (552) is the knowledge;
- knowledge ``K``: per (task, algorithm) at most ``--base-points`` (50) of the task's
  recorded pipelines, drawn by a generator seeded from (seed, task, algorithm), so that one
  subsample serves every held-out task ("Base GPs are fitted to a set of 50 randomly
  selected configurations"). One :class:`~metabo.surrogates.bank.SurrogateBank` is fitted
  on ``K`` (all tasks); a held-out task sees ``bank.without(task)`` and ``K.without(task)``;
- candidates of held-out task ``t`` in repetition ``r``: its recorded pipelines, or (with
  ``--max-candidates m``) ``m`` of them drawn by a generator seeded from (seed, t, r), a
  deviation from the paper for speed; normalized regret (:mod:`benchmarks.lookup`)
  is over that pool;
- each method tunes ``t`` for ``--iterations`` (20) evaluations, repetition ``r`` running with
  seed ``r`` (so GP, RGPE, RLGP and SCoT draw the same 3 random initial pipelines);
  iterations count every evaluation, the 3 random ones included;
- methods: ``gp`` (GP-BO), ``rgpe``, ``rlgp`` (3 random first, the paper's protocol), ``scot``
  (3 random first, then the ranker, with lighter settings: :data:`SCOT_SETTINGS`; a task
  without meta-features gets the past tasks' mean rescaled features, SCoT's own imputation),
  ``knn`` (the best pipeline of each of the 3 nearest past tasks among the candidates, then
  GP-BO: its design takes the place of the 3 random points). kNN ranks only the past tasks with meta-features;
  a held-out task
  without meta-features is given the past tasks' mean meta-features (the imputation SCoT
  uses), so its neighbours are the most typical datasets;
- report: mean normalized regret and average rank at iterations 1, 3, 5, 10, 20, Friedman
  and Nemenyi, Wilcoxon against GP (:func:`benchmarks.compare.summarize`), the
  curves, and what the paper's Figure 2 shows beside them.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.lookup import LookupTask
from benchmarks.transfer_methods import load_runs
from metabo.exceptions import InputDataError
from metabo.kb.past import PastRuns, TaskAlgorithmRuns
from metabo.metadatasets.inferred_space import InferredSpace

logger = logging.getLogger(__name__)

HELP = "the RLGP paper's protocol on the PMF meta-dataset (50 held-out datasets, 20 iterations, 20 repetitions)"
METHODS = ("gp", "rgpe", "rlgp", "scot", "knn")
REPORT_AT = (1, 3, 5, 10, 20)
#: SCoT made cheaper: it retrains its ranker at every suggestion, and with 552 past tasks the
#: lookup protocol's settings (50 points and 150 pairs per task, 150 centres) cost ~9 s per
#: suggestion on one shared core; 20 points and 50 pairs per task, 100 centres, here.
SCOT_SETTINGS = {"max_points_per_task": 20, "max_gp_points": 150,
                 "ranker": {"n_components": 100, "max_pairs_per_group": 50}}
N_INIT = 3
KNN_K = 3
FIGURE_2 = """\
What the paper's Figure 2 shows (Manolache & Vanschoren 2019, sec. 4, Table 2), to read
beside pmf_curves.png: average rank and regret against the iteration (error bars +-1 sd)
of GP, RGPE and RLGP, leave-one-dataset-out on 50 randomly chosen OpenML datasets of the
meta-dataset of Fusi et al. 2018 (the text: 553 datasets, "11 classification algorithms",
42,000 configurations; the caption says "11 WEKA classification algorithms"), base GPs on
50 random configurations, 3 random initial configurations, 20 iterations, 20 repetitions.
RLGP has the best average rank throughout, learns good configurations "in fewer than five
iterations", and is significantly better than RGPE and GP (Friedman, then Nemenyi,
p < 0.001). GP and RGPE are run per algorithm (11 runs, one per algorithm, averaged) while
RLGP picks among all algorithms. The figure's numbers are not given in the text, it has
no kNN or SCoT curve, and it reports regret as "the distance to the global minimum"
(not said to be normalized).
"""
#: How this run differs from the paper's protocol (written into the report).
DEVIATIONS = """\
Differences from the paper's protocol, beyond the scale actually run (above):
- Every method searches the CASH space of all 8 estimator blocks at once (the paper runs GP
  and RGPE per algorithm, one run per algorithm); the PMF file as shipped by deeppipe-api
  groups the estimators into 8 unnamed blocks, not 11 named algorithms.
- Pipelines are the flat configurations of metabo.metadatasets.inferred_space (each vector entry a Float
  over its observed range; encodings = the vectors min-max scaled); GP hyperparameters by
  MAP (L-BFGS-B), not NUTS; RLGP/RGPE as metabo implements them (Matern 5/2 ARD).
- Iterations count every evaluation, the 3 random initial ones included; the knowledge
  (50 seeded pipelines per past (task, algorithm)) is the same for the bank and SCoT.
- kNN: the best pipeline, among the held-out dataset's candidates, of each of the 3
  nearest past datasets with meta-features (about 114 of 553 PMF datasets have them), then
  GP-BO; a held-out dataset without meta-features is given the past datasets' mean
  meta-features, so its neighbours are the most typical ones. SCoT imputes a missing
  feature by the past tasks' mean (its own rule) and runs with lighter settings
  (SCOT_SETTINGS), after 3 random initial points like GP, RGPE and RLGP.
- With --max-candidates, each (dataset, repetition) draws a seeded pool of the dataset's
  recorded pipelines; normalized regret is over that pool (min and max of the pool).
- Regret is normalized, (best so far - min) / (max - min), averaged over repetitions then
  datasets; ranks share ties.
"""


def _seed(*parts: Any) -> int:
    """A seed from ints and strings (strings by CRC32), stable across runs and processes."""
    words = [int(p) & 0xFFFFFFFF if isinstance(p, (int, np.integer)) else zlib.crc32(str(p).encode()) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


# ----------------------------------------------------------------- the meta-dataset
@dataclass(frozen=True)
class MetaMatrix:
    """A meta-dataset as a matrix: ``Y[i, j]`` the mean value of pipeline ``j`` on task ``i``."""

    metric: str
    tasks: tuple[str, ...]
    inferred: InferredSpace
    configs: tuple[tuple[str, dict[str, Any]], ...]  # flat (space algorithm, params)
    config_ids: tuple[str, ...]  # stored ids
    algorithm_index: np.ndarray  # (C,) position of each pipeline's algorithm in space.algorithms
    Y: np.ndarray  # (T, C), NaN where not run
    meta_features: pd.DataFrame

    @classmethod
    def from_kb(cls, kb: Any, *, metric: str = "balanced_error_rate", prefix: str = "pmf:") -> MetaMatrix:
        """The successful runs of ``metric`` of the algorithms named ``prefix...``, averaged
        per (task, pipeline), in one query."""
        from metabo.kb.queries import meta_feature_matrix

        cf = kb.query("SELECT config_id, algorithm, params FROM configurations WHERE starts_with(algorithm, ?) "
                      "ORDER BY config_id", [prefix])
        if cf.empty:
            raise InputDataError(f"no configuration of an algorithm named {prefix}...; ingest the meta-dataset "
                                 "first (metabo ingest pmf)")
        res = kb.connection.execute(
            "WITH c AS (SELECT config_id, row_number() OVER (ORDER BY config_id) - 1 AS j FROM configurations "
            "WHERE starts_with(algorithm, ?)), "
            "r AS (SELECT r.dataset_id, c.j, avg(r.value) AS v FROM runs r JOIN c USING (config_id) "
            "WHERE r.metric = ? AND r.status = 'ok' AND isfinite(r.value) GROUP BY r.dataset_id, c.j), "
            "d AS (SELECT dataset_id, row_number() OVER (ORDER BY dataset_id) - 1 AS i FROM "
            "(SELECT DISTINCT dataset_id FROM r)) "
            "SELECT d.i, r.j, r.v, d.dataset_id FROM r JOIN d USING (dataset_id)", [prefix, metric]).fetchnumpy()
        n_tasks = int(res["i"].max()) + 1 if len(res["i"]) else 0
        if n_tasks == 0:
            raise InputDataError(f"no successful run of {metric!r} for the algorithms {prefix}...")
        tasks = [""] * n_tasks
        for i, d in zip(res["i"], res["dataset_id"]):
            tasks[int(i)] = str(d)
        Y = np.full((n_tasks, len(cf)), np.nan)
        Y[res["i"].astype(np.int64), res["j"].astype(np.int64)] = res["v"]
        stored = [(str(a), json.loads(p)) for a, p in zip(cf["algorithm"], cf["params"])]
        inferred = InferredSpace.from_configurations(stored)
        configs = tuple(inferred.to_flat(a, p) for a, p in stored)
        algs = inferred.space.algorithms
        index = np.array([algs.index(a) for a, _ in configs])
        mf = meta_feature_matrix(kb)
        mf = mf.reindex(index=[t for t in tasks if t in mf.index])
        return cls(metric, tuple(tasks), inferred, configs, tuple(cf["config_id"]), index, Y, mf)

    @property
    def space(self) -> Any:
        return self.inferred.space

    def row(self, task: str) -> int:
        return self.tasks.index(task)

    def past(self, rows: Sequence[tuple[int, np.ndarray]]) -> PastRuns:
        """PastRuns of the pipelines ``cols`` of task row ``i`` for each ``(i, cols)``."""
        groups = {}
        for i, cols in rows:
            cols = np.asarray(cols, dtype=np.int64)
            for k, a in enumerate(self.space.algorithms):
                sel = np.sort(cols[self.algorithm_index[cols] == k])
                if len(sel):
                    groups[(self.tasks[i], a)] = TaskAlgorithmRuns(
                        tuple(self.config_ids[j] for j in sel), tuple(self.configs[j][1] for j in sel),
                        self.Y[i, sel].copy())
        tasks = {self.tasks[i] for i, _ in rows}
        return PastRuns(self.metric, groups, self.meta_features.loc[[t for t in self.meta_features.index
                                                                      if t in tasks]])


def knowledge(matrix: MetaMatrix, *, n_base: int = 50, seed: int = 0) -> PastRuns:
    """Per (task, algorithm), at most ``n_base`` recorded pipelines drawn by a generator
    seeded from (seed, task, algorithm) (module docstring), every task."""
    rows = []
    for i, task in enumerate(matrix.tasks):
        observed = np.isfinite(matrix.Y[i])
        cols = []
        for k, a in enumerate(matrix.space.algorithms):
            mine = np.flatnonzero(observed & (matrix.algorithm_index == k))
            if len(mine) > n_base:
                mine = np.random.default_rng(_seed(seed, task, a)).choice(mine, n_base, replace=False)
            cols.append(mine)
        rows.append((i, np.concatenate(cols)))
    return matrix.past(rows)


def held_out_tasks(matrix: MetaMatrix, n: int, seed: int = 0) -> list[str]:
    """The first ``n`` tasks of a permutation drawn by ``default_rng(seed)`` (so a larger ``n``
    extends a smaller one's draw)."""
    if not 1 <= n <= len(matrix.tasks):
        raise InputDataError(f"--datasets must be in 1..{len(matrix.tasks)}, got {n}")
    pick = np.random.default_rng(seed).permutation(len(matrix.tasks))[:n]
    return [matrix.tasks[int(i)] for i in pick]


def candidate_pool(matrix: MetaMatrix, task: str, repetition: int, *, max_candidates: int | None,
                   seed: int = 0) -> np.ndarray:
    """The recorded pipelines of ``task`` (column indices), at most ``max_candidates`` of them
    drawn by a generator seeded from (seed, task, repetition)."""
    cols = np.flatnonzero(np.isfinite(matrix.Y[matrix.row(task)]))
    if max_candidates is not None and len(cols) > max_candidates:
        cols = np.sort(np.random.default_rng(_seed(seed, task, repetition, "pool")).choice(
            cols, max_candidates, replace=False))
    return cols


def knn_past(matrix: MetaMatrix, task: str, pool: np.ndarray) -> PastRuns:
    """For every other task with meta-features, per algorithm, its best pipeline among the
    candidates ``pool`` that it has run: what kNN warm start reads (its design must be
    among the held-out task's candidates)."""
    mf = set(matrix.meta_features.index)
    rows = []
    for i, t in enumerate(matrix.tasks):
        if t == task or t not in mf:
            continue
        y = matrix.Y[i, pool]
        best = []
        for k in range(len(matrix.space.algorithms)):
            ok = np.flatnonzero(np.isfinite(y) & (matrix.algorithm_index[pool] == k))
            if len(ok):
                best.append(pool[ok[np.argmin(y[ok])]])
        if best:
            rows.append((i, np.array(best)))
    return matrix.past(rows)


# ----------------------------------------------------------------- one run
@dataclass
class Context:
    """What every run shares: the matrix, the knowledge, the bank, the settings."""

    matrix: MetaMatrix
    knowledge: PastRuns
    bank: Any
    max_candidates: int | None
    seed: int


def _meta(ctx: Context, task: str, past: PastRuns) -> dict[str, float]:
    """The task's meta-features, or (none stored) the past tasks' means."""
    mf = ctx.matrix.meta_features
    if task in mf.index:
        row = mf.loc[task]
        return {k: float(v) for k, v in row.items() if np.isfinite(v)}
    mean = past.meta_features.mean(axis=0, skipna=True)
    return {k: float(v) for k, v in mean.items() if np.isfinite(v)}


def make_method(name: str, ctx: Context, task: str, pool: np.ndarray, seed: int) -> Any:
    """The strategy of method ``name`` for held-out ``task``: it is given the knowledge
    without ``task`` only."""
    from metabo.strategies import GPBO

    if name == "gp":
        return GPBO(n_init=N_INIT, seed=seed)
    if name in ("rgpe", "rlgp"):
        from metabo.strategies.rgpe import RGPE
        from metabo.strategies.rlgp import RLGP

        return (RGPE if name == "rgpe" else RLGP)(ctx.bank.without(task), n_init=N_INIT, seed=seed)
    if name == "scot":
        from metabo.strategies.scot import SCoT

        past = ctx.knowledge.without(task)
        return SCoT(past, _meta(ctx, task, past), n_init=N_INIT, **SCOT_SETTINGS, seed=seed)
    if name == "knn":
        from metabo.strategies.knn import KNNWarmStart

        past = knn_past(ctx.matrix, task, pool)
        if past.meta_features.empty:
            raise InputDataError("kNN warm start needs meta-features of past tasks; none is stored "
                                 "(leave knn out of --methods)")
        return KNNWarmStart(past, _meta(ctx, task, past), k=KNN_K, then=GPBO(n_init=0, seed=seed), seed=seed)
    raise InputDataError(f"unknown method {name!r}; use some of {list(METHODS)}")


def run_one(ctx: Context, method: str, task: str, repetition: int, iterations: int) -> dict[str, Any]:
    """Method ``method`` tuning held-out ``task`` in repetition ``repetition`` (seed = repetition)."""
    pool = candidate_pool(ctx.matrix, task, repetition, max_candidates=ctx.max_candidates, seed=ctx.seed)
    lookup = LookupTask.from_past(ctx.matrix.past([(ctx.matrix.row(task), pool)]), task, ctx.matrix.space)
    strategy = make_method(method, ctx, task, pool, repetition)
    values, seconds, picks = lookup.play(strategy, seed=repetition, n=iterations)
    return {"method": method, "task": task, "seed": repetition, "values": values, "seconds": seconds,
            "regret": lookup.regret(values).tolist(), "picks": picks, "n_candidates": len(lookup.values)}


def build_context(kb_path: str, *, n_base: int, max_candidates: int | None, seed: int,
                  bank: bool, bank_cache: str | None = None, progress: Any = None) -> Context:
    """Read the matrix, draw the knowledge and fit the bank (when ``bank``); with
    ``bank_cache``, a store file (created if missing) caching the bank's GPs, so that a
    resumed run does not refit them (the meta-dataset's store is opened read-only)."""
    from metabo.kb import KnowledgeBase

    with KnowledgeBase(kb_path, read_only=True) as kb:
        matrix = MetaMatrix.from_kb(kb)
    past = knowledge(matrix, n_base=n_base, seed=seed)
    fitted = None
    if bank:
        from metabo.surrogates.bank import SurrogateBank, space_encoder

        encode = space_encoder(matrix.space)
        if bank_cache is None:
            fitted = SurrogateBank.fit(past, encode, max_points=n_base, seed=seed, progress=progress)
        else:
            with KnowledgeBase(bank_cache) as cache:
                fitted = SurrogateBank.fit(past, encode, max_points=n_base, seed=seed, kb=cache, progress=progress)
    return Context(matrix, past, fitted, max_candidates, seed)


# ----------------------------------------------------------------- the CLI protocol
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kb", required=True, help="knowledge base with PMF ingested (metabo ingest pmf)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS))
    p.add_argument("--datasets", type=int, default=50, help="held-out datasets (paper: 50)")
    p.add_argument("--repetitions", type=int, default=20, help="repetitions per dataset (paper: 20)")
    p.add_argument("--iterations", type=int, default=20, help="evaluations per run, 3 random ones included")
    p.add_argument("--base-points", type=int, default=50, help="pipelines per base GP (paper: 50)")
    p.add_argument("--max-candidates", type=int, default=None,
                   help="a seeded subsample of each held-out dataset's pipelines (default: all)")
    p.add_argument("--bank-cache", help="a writable store file caching the base GPs (resumed runs reuse them)")
    p.add_argument("--seed", type=int, default=0, help="draws the held-out datasets, knowledge and pools")
    p.add_argument("--jobs", type=int, default=1, help="threads running runs at once")
    p.add_argument("--resume", action="store_true", help="keep the runs already in pmf_runs.jsonl")
    p.add_argument("--report-only", action="store_true",
                   help="recompute the summary from pmf_runs.jsonl (the runs finished so far) and stop")
    p.add_argument("--out", type=Path, default=Path("reports/transfer/pmf"))


def report(args: argparse.Namespace, command: str, tasks: Sequence[str]) -> str:
    """Recompute the summary files from pmf_runs.jsonl (the runs finished so far)."""
    from benchmarks.compare import format_table, plot_curves, regret_table, summarize

    runs = [r for r in load_runs(args.out / "pmf_runs.jsonl") if r["task"] in set(tasks)
            and r["method"] in args.methods and r["seed"] < args.repetitions]
    # only (task, repetition) pairs every method finished, so that methods are compared on the same runs
    done: dict[tuple[str, int], set[str]] = {}
    for r in runs:
        done.setdefault((r["task"], r["seed"]), set()).add(r["method"])
    full = {k for k, v in done.items() if v >= set(args.methods)}
    runs = [r for r in runs if (r["task"], r["seed"]) in full]
    task_list, R = regret_table(runs, args.methods, args.iterations)
    if not task_list:
        return "no task finished by every method yet\n"
    summary = summarize(R, args.methods, report_at=[i for i in REPORT_AT if i <= args.iterations],
                        references=("gp",))
    reps = {t: sum(1 for (tt, _) in full if tt == t) for t in task_list}
    text = format_table(summary, args.methods, "RLGP protocol on PMF (leave-one-dataset-out)")
    seconds = {m: float(np.mean([s for r in runs if r["method"] == m for s in r["seconds"]])) for m in args.methods}
    text += "Mean seconds per suggestion: " + ", ".join(f"{m} {s:.3f}" for m, s in seconds.items()) + "\n"
    text += (f"Runs: {len(task_list)} of the {args.datasets} held-out datasets asked, repetitions per dataset "
             f"{min(reps.values())}-{max(reps.values())} (asked {args.repetitions}), {args.iterations} iterations, "
             f"base GPs on {args.base_points} pipelines per (task, algorithm), candidates "
             f"{'all recorded pipelines' if args.max_candidates is None else f'<= {args.max_candidates} per run'}\n")
    text += ("Summary recomputed from pmf_runs.jsonl by" if args.report_only else "Command:") + f" {command}\n\n"
    text += DEVIATIONS + "\n" + FIGURE_2
    (args.out / "pmf_summary.json").write_text(json.dumps(
        {"command": command, "held_out": list(tasks), "tasks": task_list, "repetitions": reps,
         "methods": args.methods, "iterations": args.iterations, "base_points": args.base_points,
         "max_candidates": args.max_candidates, "summary": summary, "seconds_per_suggestion": seconds}, indent=1))
    (args.out / "pmf_summary.txt").write_text(text)
    plot_curves(R, args.methods, args.out / "pmf_curves.png",
                title=f"RLGP protocol on PMF, {len(task_list)} held-out datasets")
    (args.out / "FIGURE_2.txt").write_text(FIGURE_2)
    return text


def run(args: argparse.Namespace, command: str) -> int:
    """The protocol (module docstring): runs appended to ``--out``/pmf_runs.jsonl as they
    finish, the summary recomputed from them at the end (or alone, ``--report-only``)."""
    if bad := set(args.methods) - set(METHODS):
        raise InputDataError(f"unknown methods {sorted(bad)}; use some of {list(METHODS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "pmf_runs.jsonl"
    if args.report_only:  # the held-out datasets: those of the runs so far, in their order
        tasks = list(dict.fromkeys(r["task"] for r in load_runs(runs_path)))
        logger.info(report(args, command, tasks))
        return 0
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    start = time.perf_counter()
    ctx = build_context(args.kb, n_base=args.base_points, max_candidates=args.max_candidates, seed=args.seed,
                        bank=bool({"rgpe", "rlgp"} & set(args.methods)), bank_cache=args.bank_cache)
    tasks = held_out_tasks(ctx.matrix, args.datasets, args.seed)
    logger.info(f"PMF: {len(ctx.matrix.tasks)} tasks x {len(ctx.matrix.config_ids)} pipelines, knowledge "
          f"{ctx.knowledge.n_runs()} runs, bank {ctx.bank!r}, ready in {time.perf_counter() - start:.0f} s")
    have = {(r["method"], r["task"], r["seed"]) for r in load_runs(runs_path)}
    # repetition-major: every dataset gets a first repetition before any gets a second
    keys = [(m, t, s) for s in range(args.repetitions) for t in tasks for m in args.methods if (m, t, s) not in have]
    logger.info(f"{len(keys)} runs to do ({len(have)} kept)")

    def one(key: tuple[str, str, int]) -> dict[str, Any]:
        return run_one(ctx, key[0], key[1], key[2], args.iterations)

    start = time.perf_counter()
    if args.jobs > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.jobs, prefer="threads", return_as="generator_unordered")(
            delayed(one)(k) for k in keys)
    else:
        results = (one(k) for k in keys)
    for n, result in enumerate(results, 1):
        with open(runs_path, "a") as f:
            f.write(json.dumps(result) + "\n")
        logger.info(f"  {n}/{len(keys)} {result['method']} {result['task']} rep {result['seed']}: regret "
              f"{result['regret'][-1]:.4f}, {np.mean(result['seconds']):.2f} s/suggestion "
              f"({time.perf_counter() - start:.0f} s)")
    logger.info("\n" + report(args, command, tasks))
    return 0


__all__ = ["FIGURE_2", "HELP", "METHODS", "Context", "MetaMatrix", "add_arguments", "build_context",
           "candidate_pool", "held_out_tasks", "knn_past", "knowledge", "make_method", "report", "run", "run_one"]
