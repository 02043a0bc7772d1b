"""The live transfer benchmark (subcommand ``live`` of scripts/bench_transfer.py): a few
datasets of the knowledge base hidden and tuned with models really trained, to check that
the lookup benchmark (:mod:`benchmarks.transfer_methods`, runs among recorded
configurations) tells the same story.

Notation: for a hidden dataset ``t`` (its runs removed from the past, ``PastRuns.without``,
the surrogate bank's ``without``) a method ``m`` tunes ``t`` over the continuous CASH space
of the knowledge base's algorithms for ``n`` trials with
:func:`metabo.tuning.tune`, each trial trained and scored as the knowledge base's
runs were (:data:`KB_EVALUATION`: a stratified 60/20/20 holdout whose split is the
knowledge base's own, seed 0 whatever the run's seed, :class:`KBSplit`; training capped at
2000 rows; 30 s and 4096 MB per evaluation; metric error rate). ``v_i`` is the validation
error of trial ``i`` (failed trials excluded), ``b_k = min_{i <= k} v_i`` the best found
after ``k`` evaluations, and the selected configuration is the argmin of ``v`` over the
``n`` trials; its test error is that trial's model scored on the common test part.

The trials are recorded in a scratch knowledge base (``--scratch``), one session per
(dataset, method, seed), never in the knowledge base the past comes from, which is
opened read-only. A killed run resumes: finished (dataset, method, seed) runs are kept in
``live_runs.jsonl`` and an unfinished session continues in the scratch store.

Agreement with lookups: the same methods' lookup runs on the same datasets (read from the
lookup benchmark's ``lookup_runs.jsonl`` when it has them, run here otherwise), ``b_k`` the
best recorded validation error after ``k`` picks. At each ``k`` of :data:`CHECKPOINTS`,
per dataset: Kendall's tau and Spearman's rho between the methods' ``b_k`` live and in
lookup mode (1: the same ordering); over datasets: each method's mean rank (ties shared)
in both modes, and the Spearman correlation of those mean ranks.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.transfer_methods import TRANSFER_ENSEMBLES, load_runs, make_method, run_one, shipped_kb_file
from metabo.data.dataset import Dataset
from metabo.evaluation.protocols import EvaluationProtocol, Holdout, Split, search_protocol
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.kb.queries import average_ranks
from metabo.space.algorithms import default_cash_space

logger = logging.getLogger(__name__)

HELP = "a few datasets hidden and tuned live (models really trained), compared with their lookup runs"
METHODS = ("random", "gp", "knn", "rlgp-warm", "scot")
CHECKPOINTS = (1, 3, 5, 10, 20)
#: The knowledge base's evaluation settings (scripts/build_shipped_kb.sh).
KB_EVALUATION = {"max_train": 2000, "split_seed": 0, "time_limit": 30.0, "memory_limit_mb": 4096,
                 "metric": "error_rate"}


@dataclass(frozen=True)
class KBSplit:
    """``protocol`` with its split drawn from ``split_seed`` whatever seed the trial gets, so
    every run of the live benchmark trains and scores on the knowledge base's split."""

    protocol: Holdout = field(default_factory=lambda: Holdout(max_train=KB_EVALUATION["max_train"]))
    split_seed: int = 0

    @property
    def max_train(self) -> int | None:
        return self.protocol.max_train

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        return self.protocol.splits(dataset, self.split_seed)


@dataclass(frozen=True)
class TuneSplit:
    """``metabo tune``'s protocol (:func:`~metabo.evaluation.protocols.search_protocol` with
    ``cv`` at the dataset's size: 5-fold CV of the 80% not kept for test up to 3,000 rows,
    else the 60/20/20 hold-out, every row trained on) with its splits drawn from
    ``split_seed`` whatever seed the trial gets: the splits ``kb build --cv auto`` measured
    the knowledge base's runs on (seed 0), so a trial at a recorded configuration
    reproduces the recorded value, and every method and seed of a task sees the same rows."""

    cv: int | str | None = "auto"
    split_seed: int = 0
    max_train: int | None = None

    def at_size(self, n_rows: int) -> EvaluationProtocol:
        return search_protocol(self.cv, n_rows, max_train=self.max_train)

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        return self.at_size(dataset.n_instances).splits(dataset, self.split_seed)


#: How ``live_run`` scores trials: as ``metabo tune`` does (the default), or as the hold-out
#: knowledge base of the earlier benchmarks was measured (60/20/20, at most 2,000 training rows)
EVALUATIONS = ("tune", "kb")


def evaluation_protocol(evaluation: str) -> EvaluationProtocol:
    """The protocol of ``evaluation`` (:data:`EVALUATIONS`)."""
    if evaluation == "tune":
        return TuneSplit(split_seed=KB_EVALUATION["split_seed"])
    if evaluation == "kb":
        return KBSplit(split_seed=KB_EVALUATION["split_seed"])
    raise InputDataError(f"unknown evaluation {evaluation!r}; use one of {EVALUATIONS}")


# ----------------------------------------------------------------- datasets
def dataset_spec(kb: KnowledgeBase, task: str) -> str:
    """The loader spec (``keel:bupa``) of a knowledge-base dataset."""
    info = kb.get_dataset(task)
    if info is None or not info.get("source") or not info.get("name"):
        raise InputDataError(f"dataset {task!r} has no source and name in the knowledge base to load it from")
    return f"{info['source']}:{info['name']}"


def choose_datasets(kb: KnowledgeBase, tasks: Sequence[str], *, names: Sequence[str] | None = None, n: int = 3,
                    seed: int = 0, max_instances: int | None = 5000, min_instances: int = 0) -> list[str]:
    """``names`` (checked against ``tasks``), or ``n`` of ``tasks`` drawn with ``seed`` among
    those of ``min_instances`` to ``max_instances`` rows (None: no upper limit)."""
    if names:
        missing = [t for t in names if t not in tasks]
        if missing:
            raise InputDataError(f"{missing} are not tasks of the knowledge base; choose among {list(tasks)}")
        return list(names)
    def rows(t: str) -> float:
        return (kb.get_dataset(t) or {}).get("n_instances", math.inf)

    pool = sorted(t for t in tasks if (max_instances is None or rows(t) <= max_instances)
                  and rows(t) >= min_instances)
    if len(pool) < n:
        raise InputDataError(f"only {len(pool)} datasets have {min_instances} to {max_instances} rows; "
                             "lower --n-datasets")
    rng = np.random.default_rng(seed)
    return sorted(pool[i] for i in rng.choice(len(pool), n, replace=False))


# ----------------------------------------------------------------- one live run
def live_run(method: str, task: str, seed: int, iterations: int, past_all: PastRuns, shared: Mapping[str, Any],
             scratch: KnowledgeBase, spec: str | Dataset, *, strategy: Any = None,
             space: Any = None, evaluation: str = "kb") -> dict[str, Any]:
    """``method`` tunes hidden ``task`` live for ``iterations`` trials recorded in ``scratch``
    (``strategy``: the method's strategy if already made; ``space``: instead of the shared one;
    ``evaluation``: how trials are scored, :data:`EVALUATIONS`)."""
    from metabo.tuning.tune import tune

    if strategy is None:
        strategy = make_method(method, past_all.without(task), task, seed, shared)
    start = time.perf_counter()
    result = tune(spec, budget=iterations, space=space if space is not None else shared["space"], strategy=strategy,
                  kb=scratch, seed=seed,
                  protocol=evaluation_protocol(evaluation), metric=KB_EVALUATION["metric"],
                  time_limit=KB_EVALUATION["time_limit"], memory_limit_mb=KB_EVALUATION["memory_limit_mb"],
                  keep_predictions=False, meta_features=False, session_id=f"live-{task}-{method}-s{seed}")
    done = result.history.completed
    values = [float(r.value) if r.ok else math.nan for r in done]
    return {"method": method, "task": task, "seed": seed, "spec": spec if isinstance(spec, str) else spec.name,
            "session_id": result.session_id, "values": values,
            "best_so_far": best_so_far(values).tolist(),
            "configs": [[r.algorithm, dict(r.params)] for r in done],
            "selected": [result.algorithm, result.params], "valid_error": float(result.validation_error),
            "test_error": None if result.test_error is None else float(result.test_error),
            "n_failed": int(sum(not r.ok for r in done)), "seconds": time.perf_counter() - start,
            "evaluation": evaluation}


def best_so_far(values: Sequence[float]) -> np.ndarray:
    """``b_k``: the lowest finite value among the first ``k`` (nan before any)."""
    v = np.asarray(values, dtype=float)
    return np.fmin.accumulate(np.where(np.isfinite(v), v, np.nan)) if len(v) else v


def at(curve: Sequence[float], k: int) -> float:
    """``b_k`` of a best-so-far curve (its last value when it is shorter)."""
    return float(curve[min(k, len(curve)) - 1]) if len(curve) else math.nan


def reproduced(live_runs: Sequence[Mapping[str, Any]], past: PastRuns, space: Any) -> dict[str, Any]:
    """The live trials at configurations the knowledge base recorded on their dataset, and
    how far the live validation error is from the recorded one: the largest difference, the
    share of exact reproductions, the median and 90th percentile (0 when the live evaluation
    reproduces the knowledge base's)."""
    from metabo.kb.canonical import config_id

    recorded: dict[str, dict[str, float]] = {}
    diffs = []
    for r in live_runs:
        if r["task"] not in recorded:
            recorded[r["task"]] = {cid: float(v) for runs in past.task_runs(r["task"]).values()
                                   for cid, v in zip(runs.config_ids, runs.values)}
        for (a, p), v in zip(r["configs"], r["values"]):
            cid = config_id(*space.normalize(a, p))
            if cid in recorded[r["task"]] and v is not None and math.isfinite(v):
                diffs.append(abs(v - recorded[r["task"]][cid]))
    d = np.array(diffs)
    return {"n_trials": int(sum(len(r["values"]) for r in live_runs)), "n_at_recorded": len(diffs),
            "max_abs_diff": float(d.max()) if len(d) else math.nan,
            "equal_share": float(np.mean(d < 1e-12)) if len(d) else math.nan,
            "median_abs_diff": float(np.median(d)) if len(d) else math.nan,
            "p90_abs_diff": float(np.percentile(d, 90)) if len(d) else math.nan}


# ----------------------------------------------------------------- agreement
def agreement(live: Mapping[tuple[str, str], float], lookup: Mapping[tuple[str, str], float],
              tasks: Sequence[str], methods: Sequence[str]) -> dict[str, Any]:
    """Per-dataset Kendall/Spearman of the methods' scores live vs lookup, mean ranks over
    datasets in both modes and their Spearman correlation (module docstring)."""
    from scipy.stats import kendalltau, spearmanr

    per_task, L, K = {}, [], []
    for t in tasks:
        a = np.array([live[t, m] for m in methods])
        b = np.array([lookup[t, m] for m in methods])
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            continue
        L.append(a)
        K.append(b)
        same = np.ptp(a) == 0 or np.ptp(b) == 0  # a constant ordering: undefined correlation
        per_task[t] = {"kendall": math.nan if same else float(kendalltau(a, b).statistic),
                       "spearman": math.nan if same else float(spearmanr(a, b).statistic)}
    out: dict[str, Any] = {"per_task": per_task, "n_tasks": len(L)}
    if L:
        rl, rk = average_ranks(np.array(L)).mean(axis=0), average_ranks(np.array(K)).mean(axis=0)
        out["mean_rank_live"] = dict(zip(methods, rl.round(3).tolist()))
        out["mean_rank_lookup"] = dict(zip(methods, rk.round(3).tolist()))
        both = np.ptp(rl) > 0 and np.ptp(rk) > 0
        out["rank_spearman"] = float(spearmanr(rl, rk).statistic) if both else math.nan
        vals = [v["kendall"] for v in per_task.values() if math.isfinite(v["kendall"])]
        out["mean_kendall"] = float(np.mean(vals)) if vals else math.nan
        vals = [v["spearman"] for v in per_task.values() if math.isfinite(v["spearman"])]
        out["mean_spearman"] = float(np.mean(vals)) if vals else math.nan
    return out


# ----------------------------------------------------------------- the protocol
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kb", help="knowledge base file (default: the shipped export, imported to a temporary file); "
                   "opened read-only")
    p.add_argument("--datasets", type=lambda s: s.split(","), help="task ids (default: --n-datasets seeded)")
    p.add_argument("--n-datasets", type=int, default=3)
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-instances", type=int, default=5000, help="seeded choice among datasets this small")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS))
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--lookup-runs", type=Path, default=Path("reports/transfer/lookup_runs.jsonl"),
                   help="the lookup benchmark's runs (read only; missing ones are run into --out)")
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "metabo-transfer-live.duckdb",
                   help="the store the live trials are recorded in (never the source knowledge base)")
    p.add_argument("--resume", action="store_true", help="keep the runs already in live_runs.jsonl")
    p.add_argument("--out", type=Path, default=Path("reports/transfer/live"))


def prepare(kb_path: str, methods: Sequence[str]) -> tuple[PastRuns, dict[str, Any]]:
    """The past and what :func:`make_method` needs (space, meta-features, surrogate bank)."""
    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    shared: dict[str, Any] = {"space": space, "meta_features": past.meta_features}
    if set(TRANSFER_ENSEMBLES) & set(methods):
        from metabo.surrogates.bank import SurrogateBank, space_encoder

        shared["bank"] = SurrogateBank.fit(past, space_encoder(space), seed=0)
    return past, shared


def run(args: argparse.Namespace, command: str) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path, lookup_path = args.out / "live_runs.jsonl", args.out / "lookup_runs.jsonl"
    if not args.resume and runs_path.exists():
        runs_path.unlink()
    kb_path = shipped_kb_file(args.kb)
    if Path(args.scratch).resolve() == Path(kb_path).resolve():
        raise InputDataError("--scratch must not be the source knowledge base: the live runs go to another store")
    start = time.perf_counter()
    past, shared = prepare(kb_path, args.methods)
    logger.info(f"past: {len(past.tasks)} tasks ({time.perf_counter() - start:.0f} s to load and fit the bank)")
    with KnowledgeBase(kb_path, read_only=True) as kb:
        tasks = choose_datasets(kb, past.tasks, names=args.datasets, n=args.n_datasets, seed=args.dataset_seed,
                                max_instances=args.max_instances)
        specs = {t: dataset_spec(kb, t) for t in tasks}
    logger.info(f"live datasets: {specs}")
    have = {(r["method"], r["task"], r["seed"]) for r in load_runs(runs_path)}
    keys = [(t, s, m) for t in tasks for s in range(args.seeds) for m in args.methods if (m, t, s) not in have]
    logger.info(f"{len(keys)} live runs to do ({len(have)} kept), scratch store {args.scratch}")
    with KnowledgeBase(args.scratch) as scratch:
        for i, (t, s, m) in enumerate(keys):
            record = live_run(m, t, s, args.iterations, past, shared, scratch, specs[t])
            with open(runs_path, "a") as f:
                f.write(json.dumps(record) + "\n")
            logger.info(f"  [{i + 1}/{len(keys)}] {t} {m} seed {s}: best valid {record['valid_error']:.4f}, test "
                  f"{record['test_error']}, {record['n_failed']} failed, {record['seconds']:.0f} s "
                  f"(total {time.perf_counter() - start:.0f} s)")
    live_runs = [r for r in load_runs(runs_path) if r["task"] in tasks and r["method"] in args.methods
                 and r["seed"] < args.seeds]
    lookup_runs = lookup_for(args, tasks, past, shared, lookup_path)
    summary, text = summarize_live(live_runs, lookup_runs, tasks, args.methods, args.iterations)
    summary["reproduced"] = rep = reproduced(live_runs, past, shared["space"])
    text += (f"Live trials at configurations the knowledge base recorded on the same dataset: {rep['n_at_recorded']} "
             f"of {rep['n_trials']}, largest |live - recorded| validation error {rep['max_abs_diff']:.2g} "
             "(0: the live evaluation reproduces the knowledge base's runs)\n")
    text = protocol_note(args, specs, lookup_runs) + "\n" + text
    logger.info("\n" + text)
    (args.out / "summary.txt").write_text(text)
    (args.out / "summary.json").write_text(json.dumps(
        {"command": command, "datasets": specs, "methods": args.methods, "seeds": args.seeds,
         "iterations": args.iterations, "evaluation": KB_EVALUATION, "summary": summary}, indent=1))
    plot_live(live_runs, lookup_runs, tasks, args.methods, args.iterations, args.out / "curves.png")
    logger.info(f"wrote {args.out}/summary.txt, summary.json, curves.png")
    return 0


def lookup_for(args: argparse.Namespace, tasks: Sequence[str], past: PastRuns, shared: Mapping[str, Any],
               own_path: Path) -> list[dict[str, Any]]:
    """The lookup runs of (method, task, seed < --seeds): from --lookup-runs when it has them
    with at least --iterations picks, else run here into ``own_path``."""
    want = {(m, t, s) for m in args.methods for t in tasks for s in range(args.seeds)}
    pool = [r for r in load_runs(Path(args.lookup_runs)) + load_runs(own_path)
            if (r["method"], r["task"], r["seed"]) in want and len(r["values"]) >= args.iterations]
    found = {(r["method"], r["task"], r["seed"]): r for r in pool}
    missing = sorted(want - set(found))
    if missing:
        logger.info(f"running {len(missing)} lookup runs not in {args.lookup_runs}")
    for m, t, s in missing:
        r = run_one(m, t, s, args.iterations, past, shared)
        with open(own_path, "a") as f:
            f.write(json.dumps(r) + "\n")
        found[m, t, s] = r
    return [found[k] for k in sorted(found)]


def summarize_live(live_runs: Sequence[Mapping[str, Any]], lookup_runs: Sequence[Mapping[str, Any]],
                   tasks: Sequence[str], methods: Sequence[str], iterations: int) -> tuple[dict[str, Any], str]:
    """Tables per dataset and method (live ``b_k``, test error, lookup ``b_k``) and the
    agreement at each checkpoint (module docstring); scores averaged over seeds."""
    checkpoints = [k for k in CHECKPOINTS if k <= iterations]

    def mean_at(runs: Sequence[Mapping[str, Any]], key: str, k: int | None) -> dict[tuple[str, str], float]:
        out: dict[tuple[str, str], list[float]] = {}
        for r in runs:
            curve = r[key] if key != "values" else best_so_far(r["values"]).tolist()
            v = at(curve, k) if k is not None else r[key]
            out.setdefault((r["task"], r["method"]), []).append(math.nan if v is None else float(v))
        return {key_: float(np.mean(v)) for key_, v in out.items()}

    live_b = {k: mean_at(live_runs, "best_so_far", k) for k in checkpoints}
    look_b = {k: mean_at(lookup_runs, "values", k) for k in checkpoints}
    test = mean_at(live_runs, "test_error", None)
    nan = math.nan
    summary: dict[str, Any] = {"per_task": {}, "agreement": {}}
    lines = ["Per dataset and method: best validation error after k evaluations, live | lookup (recorded), "
             "and the live selected configuration's test error"]
    head = "".join(f"{'@' + str(k):>16s}" for k in checkpoints)
    for t in tasks:
        lines.append(f"{t}:")
        lines.append(f"  {'method':10s}{head}{'test':>9s}")
        summary["per_task"][t] = {}
        for m in methods:
            row = {str(k): {"live": live_b[k].get((t, m), nan), "lookup": look_b[k].get((t, m), nan)}
                   for k in checkpoints}
            summary["per_task"][t][m] = {"best": row, "test_error": test.get((t, m), nan)}
            lines.append(f"  {m:10s}" + "".join(f"{row[str(k)]['live']:>8.4f}|{row[str(k)]['lookup']:<7.4f}"
                                                for k in checkpoints) + f"{test.get((t, m), nan):>9.4f}")
    lines.append("")
    lines.append("Agreement live vs lookup at k evaluations: mean rank over datasets (live | lookup), "
                 "Spearman of the mean ranks, mean per-dataset Kendall tau and Spearman rho")
    lines.append(f"  {'method':10s}" + "".join(f"{'@' + str(k):>14s}" for k in checkpoints))
    for k in checkpoints:
        summary["agreement"][str(k)] = agreement(live_b[k], look_b[k], tasks, methods)
    for m in methods:
        lines.append(f"  {m:10s}" + "".join(
            f"{summary['agreement'][str(k)].get('mean_rank_live', {}).get(m, nan):>7.2f}|"
            f"{summary['agreement'][str(k)].get('mean_rank_lookup', {}).get(m, nan):<6.2f}" for k in checkpoints))
    for name, key in (("rank Spearman", "rank_spearman"), ("mean Kendall", "mean_kendall"),
                      ("mean Spearman", "mean_spearman")):
        lines.append(f"  {name:14s}" + "".join(f"{summary['agreement'][str(k)].get(key, nan):>10.2f}    "
                                               for k in checkpoints))
    test_rank = agreement(test, {key: 0.0 for key in test}, tasks, methods)
    summary["test_mean_rank"] = test_rank.get("mean_rank_live", {})
    lines.append("Mean rank of the live selected configuration's test error: " + ", ".join(
        f"{m} {v:.2f}" for m, v in summary["test_mean_rank"].items()))
    return summary, "\n".join(lines) + "\n"


def plot_live(live_runs: Sequence[Mapping[str, Any]], lookup_runs: Sequence[Mapping[str, Any]],
              tasks: Sequence[str], methods: Sequence[str], iterations: int, path: Path) -> None:
    """Best validation error so far, live (solid) and lookup (dashed), one panel per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.8), squeeze=False)
    for ax, t in zip(axes[0], tasks):
        for i, m in enumerate(methods):
            color = f"C{i}"
            for runs, style in ((live_runs, "-"), (lookup_runs, "--")):
                curves = [best_so_far(r["values"])[:iterations] for r in runs if r["task"] == t and r["method"] == m]
                if curves:
                    n = min(len(c) for c in curves)
                    ax.plot(np.arange(1, n + 1), np.nanmean([c[:n] for c in curves], axis=0), style, color=color,
                            label=m if style == "-" else None)
        ax.set(title=t, xlabel="evaluations", ylabel="best validation error")
    axes[0][0].legend(fontsize=7, title="solid live, dashed lookup", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def protocol_note(args: argparse.Namespace, specs: Mapping[str, str], lookup_runs: Sequence[Mapping[str, Any]]) -> str:
    return (
        "What was run:\n"
        f"- Live: {len(specs)} datasets hidden from the past ({', '.join(f'{t} = {s}' for t, s in specs.items())}), "
        f"methods {', '.join(args.methods)}, {args.iterations} evaluations each, {args.seeds} seed(s); every trial "
        "trained and scored as the knowledge base's runs (60/20/20 stratified holdout on the knowledge base's split, "
        "seed 0; training capped at 2000 rows; 30 s and 4096 MB per evaluation; error rate), over the continuous "
        "CASH space of the knowledge base's 12 algorithms; trials recorded in a scratch store, not the knowledge "
        "base.\n"
        f"- Lookup: the same methods, datasets and seeds among the ~500 recorded configurations of each dataset "
        f"({len(lookup_runs)} runs, from {args.lookup_runs} or run here).\n"
        "- Both modes report validation error on the same split, so the numbers compare directly; live methods can "
        "find configurations the knowledge base never recorded (lower than its best) or fail (timeouts).\n"
    )


__all__ = ["CHECKPOINTS", "HELP", "KBSplit", "KB_EVALUATION", "METHODS", "add_arguments", "agreement",
           "best_so_far", "choose_datasets", "dataset_spec", "live_run", "reproduced", "run", "summarize_live"]
