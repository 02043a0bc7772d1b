"""Does a portfolio chosen for the ensemble it forms give a better model than the portfolio
chosen for its single best? Leave-one-task-out on a build's stored out-of-fold predictions.

    python scripts/bench_ensemble_portfolio.py extract --kb build/shipped.duckdb --cache CACHE_DIR
    python scripts/bench_ensemble_portfolio.py run --kb build/shipped.duckdb --cache CACHE_DIR \\
        [--ks 1 2 3 5 8 10 15 20 25] [--out reports/ensemble-portfolio]

``extract`` reads, for every dataset of the build session (``kb build --predictions``), each
configuration's out-of-fold probabilities on the selection rows (the folds' validation parts
in fold order, as ``tune`` keeps them; up to ``--valid-rows`` of them, seeded) and its test
probabilities (the fold models' average on the shared test part, up to ``--test-rows``), with
the labels rebuilt from the dataset and the build's splits. One ``.npz`` per dataset.

``run`` holds each task out in turn. The past is every other task (less any with the same
content fingerprint); the candidates are the configurations recorded on at least 80% of the
past tasks. Three portfolios, under the same task weights (the warm start's meta-feature
prior, :func:`metabo.strategies.portfolio.prior_weights`):

- ``single``: the warm start's rule today (:meth:`PortfolioWarmStart._gains`: the weighted
  past best-so-far regret, each pick of an algorithm not tried while one is left);
- ``ensemble``: :func:`metabo.strategies.ensemble_portfolio.ensemble_portfolio`;
- ``ensemble-distinct``: the same, each pick of an algorithm not tried while one gains;
- ``ensemble-cost``: the ensemble objective, gain per predicted second (``cost_power`` 0.5, the seconds
  from :func:`metabo.kb.costs.predicted_fit_seconds` on the other tasks).

For each ``k``, the held-out task's model is what ``tune`` would return from the first ``k``
picks: :class:`~metabo.ensembles.library.OutOfFoldLibrary` chooses on the held-out task's
out-of-fold predictions (guarded ensemble or single best), and its test error is measured on
the test part, which no choice saw. The held-out task's predictions are never used to pick.
Printed, for the first k picks and for the picks whose fit seconds recorded on the held-out
task (summed over folds, plus ``--overhead`` seconds per pick for what a trial costs beyond
its fits) fit in a budget (the first pick always counts): mean test error over
the tasks where every method has a model, wins/ties/losses and the Wilcoxon p of each method
against ``single``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from metabo.ensembles.combine import combined_codes
from metabo.ensembles.library import OutOfFoldLibrary
from metabo.ensembles.search import selection_rows
from metabo.evaluation.protocols import class_codes
from metabo.ingest.build import BuildSettings, load_for_training
from metabo.kb import KnowledgeBase
from metabo.kb.costs import predicted_fit_seconds, recorded_fit_seconds
from metabo.kb.past import PastRuns
from metabo.kb.predictions import decode
from metabo.strategies.ensemble_portfolio import TaskPredictions, ensemble_portfolio
from metabo.strategies.portfolio import PortfolioWarmStart, RegretMatrix, prior_weights


def extract(kb_file: str, cache: Path, valid_rows: int, test_rows: int, seed: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    kb = KnowledgeBase(kb_file, read_only=True)
    sessions = kb.query("SELECT session_id, settings FROM sessions WHERE strategy = 'build'")
    for _, row in sessions.iterrows():
        settings = json.loads(row["settings"])
        if settings.get("cv") is None:  # the builds measured as tune measures (kb build --cv)
            continue
        build = BuildSettings(n_configs=settings["n_configs"], seed=settings["seed"], cv=settings["cv"])
        if repr(build.protocol) != settings["protocol"]:
            raise SystemExit(f"{row['session_id']}: protocol {settings['protocol']} is not the default's")
        datasets = kb.query(
            "SELECT DISTINCT d.dataset_id, d.name, d.source FROM runs r JOIN datasets d USING (dataset_id) "
            "WHERE r.source = ?", [f"session:{row['session_id']}"])
        for _, d in datasets.iterrows():
            out = cache / f"{d['dataset_id']}.npz"
            if out.exists():
                continue
            spec = next(s for s in settings["datasets"] if s.split(":", 1)[-1] == d["name"])
            loaded = load_for_training(spec)
            if loaded.trainable is None:
                continue
            splits = build.protocol_for(loaded.trainable.n_instances).splits(loaded.trainable, build.seed)
            codes = class_codes(loaded.trainable)
            K = int(codes.max()) + 1
            sel = selection_rows(splits)
            test = splits[0].test_idx
            rng = np.random.default_rng(seed)
            keep_v = np.sort(rng.choice(len(sel), size=min(valid_rows, len(sel)), replace=False))
            keep_t = np.sort(rng.choice(len(test), size=min(test_rows, len(test)), replace=False))
            runs = kb.query(
                "SELECT r.config_id, c.algorithm, r.fold, r.fit_seconds, r.value, p.split, p.n_rows, p.n_cols, "
                "p.data FROM runs r JOIN predictions p USING (run_id) JOIN configurations c USING (config_id) "
                "WHERE r.dataset_id = ? AND r.metric = 'error_rate' AND r.status = 'ok' AND r.source = ?",
                [d["dataset_id"], f"session:{row['session_id']}"])
            ids, algos, V, T, secs = [], [], [], [], []
            for cid, group in runs.groupby("config_id", sort=True):
                valid = group[group["split"] == "valid"].sort_values("fold")
                tests = group[group["split"] == "test"]
                if sorted(valid["fold"]) != list(range(len(splits))) or len(tests) != len(splits):
                    continue
                oof = np.concatenate([decode(r.n_rows, r.n_cols, r.data) for r in valid.itertuples()])
                if oof.shape != (len(sel), K):
                    continue
                tp = np.mean([decode(r.n_rows, r.n_cols, r.data) for r in tests.itertuples()], axis=0)
                ids.append(cid)
                algos.append(group["algorithm"].iloc[0])
                V.append(oof[keep_v].astype(np.float16))
                T.append(tp[keep_t].astype(np.float16))
                secs.append(float(valid["fit_seconds"].sum()))
            np.savez_compressed(out, ids=np.array(ids), algorithms=np.array(algos), valid=np.array(V),
                                test=np.array(T), y_valid=codes[sel][keep_v], y_test=codes[test][keep_t],
                                seconds=np.array(secs), rows=loaded.trainable.n_instances,
                                features=loaded.trainable.n_features)
            print(f"{d['name']}: {len(ids)} configurations, {len(keep_v)} selection rows, {len(keep_t)} test rows",
                  flush=True)


def _single_portfolio(Q: np.ndarray, w: np.ndarray, algorithms: list[str], n: int) -> list[int]:
    """The warm start's static portfolio rule on a regret matrix (distinct algorithms first)."""
    m = RegretMatrix(tasks=tuple(map(str, range(Q.shape[0]))), configs=tuple((a, {}) for a in algorithms),
                     ids=tuple(map(str, range(Q.shape[1]))), Q=Q)
    taken = np.zeros(Q.shape[1], dtype=bool)
    tried: set[str] = set()
    out = []
    for _ in range(n):
        gain = PortfolioWarmStart._gains(m, w, taken)
        fresh = np.array([a not in tried for a in algorithms])
        if (fresh & np.isfinite(gain) & (gain > 0)).any():
            gain = np.where(fresh, gain, -np.inf)
        j = int(np.argmax(gain))
        if not np.isfinite(gain[j]):
            break
        out.append(j)
        taken[j] = True
        tried.add(algorithms[j])
    return out


def _model_error(task: dict, picks: list[int], seed: int) -> tuple[float, str]:
    """Test error of what ``tune`` keeps from ``picks`` (indices into the task's arrays)."""
    picks = [p for p in picks if p >= 0]
    if not picks:
        return np.nan, "none"
    y, K = task["y_valid"], task["K"]
    values = [float(np.mean(task["valid"][p].argmax(1) != y)) for p in picks]
    if len(picks) == 1:
        return float(np.mean(task["test"][picks[0]].argmax(1) != task["y_test"])), "single"
    library = OutOfFoldLibrary(y, K, seed=seed)
    for i, p in enumerate(picks):
        library.add(i, values[i], task["valid"][p].astype(float))
    choice = library.choose(None)
    if choice is None:
        return np.nan, "none"
    codes = combined_codes(choice.weights, {i: task["test"][p].astype(float) for i, p in enumerate(picks)},
                           choice.combine, K)
    return float(np.mean(codes != task["y_test"])), choice.kept


def run(kb_file: str, cache: Path, ks: list[int], budgets: list[float], out: Path | None, seed: int,
        cost_power: float, overhead: float) -> None:
    files = sorted(cache.glob("*.npz"))
    tasks = {}
    for f in files:
        z = np.load(f)
        K = int(max(z["y_valid"].max(), z["y_test"].max()) + 1)
        K = max(K, z["valid"].shape[2]) if z["valid"].ndim == 3 else K
        tasks[f.stem] = {k: z[k] for k in z.files} | {"K": K}
    kb = KnowledgeBase(kb_file, read_only=True)
    past_all = PastRuns.from_kb(kb)
    fingerprints = kb.query("SELECT dataset_id, fingerprint FROM datasets").set_index("dataset_id")["fingerprint"]
    records = recorded_fit_seconds(kb, list(tasks))
    rows = []
    n = max(*ks, 25)
    for target in tasks:
        same = {d for d, fp in fingerprints.items() if fp and fp == fingerprints.get(target)}
        past_ids = [t for t in tasks if t not in same and t != target]
        counts = pd.Series(np.concatenate([tasks[t]["ids"] for t in past_ids])).value_counts()
        cand = sorted(counts[counts >= 0.8 * len(past_ids)].index)
        algos = {}
        for t in past_ids:
            algos.update(zip(tasks[t]["ids"], tasks[t]["algorithms"]))
        idx = {t: pd.Index(tasks[t]["ids"]) for t in tasks}
        preds, Q = [], np.full((len(past_ids), len(cand)), np.nan)
        for i, t in enumerate(past_ids):
            pos = idx[t].get_indexer(cand)
            rec = pos >= 0
            V = tasks[t]["valid"]
            P = np.zeros((len(cand), V.shape[1], V.shape[2]), dtype=np.float32)
            P[rec] = V[pos[rec]]
            preds.append(TaskPredictions(P, rec, tasks[t]["y_valid"]))
            err = np.array([np.mean(V[j].argmax(1) != tasks[t]["y_valid"]) for j in pos[rec]])
            lo, hi = err.min(), err.max()
            Q[i, rec] = (err - lo) / (hi - lo) if hi > lo else 0.0
        meta = past_all.meta_features.loc[target].dropna().to_dict() if target in past_all.meta_features.index else None
        w = prior_weights(past_all.without([target, *same]), past_ids, meta)
        predicted = predicted_fit_seconds(records[~records["dataset_id"].isin([target, *same])],
                                          int(tasks[target]["rows"]), int(tasks[target]["features"]))
        seconds = np.array([predicted.get(c, np.nan) for c in cand])
        seconds = np.where(np.isfinite(seconds) & (seconds > 0), seconds, np.nanmedian(seconds))
        portfolios = {
            "single": _single_portfolio(Q, w, [algos[c] for c in cand], n),
            "ensemble": ensemble_portfolio(preds, n, weights=w),
            "ensemble-distinct": ensemble_portfolio(preds, n, weights=w, groups=[algos[c] for c in cand]),
            "ensemble-cost": ensemble_portfolio(preds, n, weights=w, seconds=seconds, cost_power=cost_power),
        }
        tpos = idx[target].get_indexer(cand)
        secs = tasks[target]["seconds"]
        for method, picks in portfolios.items():
            mine = [int(tpos[j]) for j in picks]
            spent = np.cumsum([(secs[p] if p >= 0 else 0.0) + overhead for p in mine])
            # the picks that finish within each budget (the first always: a search has a model)
            fits = {b: max(1, int(np.searchsorted(spent, b, side="right"))) for b in budgets}
            memo: dict[int, tuple[float, str]] = {}
            for k in sorted({*ks, *fits.values()}):
                memo[k] = _model_error(tasks[target], mine[:k], seed)
            for kind, sizes in (("k", {k: k for k in ks}), ("seconds", fits)):
                for x, k in sizes.items():
                    error, kept = memo[k]
                    rows.append({"task": target, "method": method, "by": kind, "x": x, "k": k, "test_error": error,
                                 "kept": kept, "seconds": float(spent[k - 1]), "first": algos[cand[picks[0]]]})
        print(f"{target}: " + "  ".join(f"{r['method']} {r['test_error']:.4f}" for r in rows[-len(rows):]
                                         if r["task"] == target and r["by"] == "k" and r["x"] == 10), flush=True)
    frame = pd.DataFrame(rows)
    report = summarize(frame)
    print(report)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out / "results.csv", index=False)
        (out / "summary.txt").write_text(report + "\n")


def summarize(frame: pd.DataFrame) -> str:
    """Mean test error per method over the tasks every method has a model on, and each
    method against ``single``: wins/ties/losses and the Wilcoxon signed-rank p."""
    methods = list(dict.fromkeys(frame["method"]))
    lines = [(f"{frame['task'].nunique()} held-out tasks; test error of the model tune keeps from the picks "
              "(guarded ensemble or single best); each method against single: wins/ties/losses, Wilcoxon p")]
    for kind, title in (("k", "first k picks"), ("seconds", "the picks whose recorded fit seconds fit in x")):
        sub_frame = frame[frame["by"] == kind]
        lines += ["", f"{title}:", f"{'x':>5} " + " ".join(f"{m:>18}" for m in methods) + "   mean picks"]
        for x, group in sub_frame.groupby("x"):
            wide = group.pivot_table(index="task", columns="method", values="test_error").dropna()
            parts = []
            for other in methods[1:]:
                d = wide[other] - wide["single"]
                w, t, l_ = int((d < -1e-12).sum()), int((abs(d) <= 1e-12).sum()), int((d > 1e-12).sum())
                p = wilcoxon(d[abs(d) > 1e-12]).pvalue if (abs(d) > 1e-12).sum() >= 5 else float("nan")
                parts.append(f"{other} {w}/{t}/{l_} p {p:.3f}")
            picks = group.groupby("method")["k"].mean()
            lines.append(f"{x:>5g} " + " ".join(f"{wide[m].mean():>18.4f}" for m in methods) + "   "
                         + "/".join(f"{picks[m]:.1f}" for m in methods) + f"   (n={len(wide)})  " + "; ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("extract", "run"):
        p = sub.add_parser(name)
        p.add_argument("--kb", required=True)
        p.add_argument("--cache", type=Path, required=True)
        p.add_argument("--seed", type=int, default=0)
    sub.choices["extract"].add_argument("--valid-rows", type=int, default=600)
    sub.choices["extract"].add_argument("--test-rows", type=int, default=2000)
    sub.choices["run"].add_argument("--ks", type=int, nargs="+", default=[1, 3, 5, 10, 25])
    sub.choices["run"].add_argument("--budgets", type=float, nargs="+", default=[2, 5, 10, 20, 40])
    sub.choices["run"].add_argument("--out", type=Path)
    sub.choices["run"].add_argument("--cost-power", type=float, default=0.5)
    sub.choices["run"].add_argument("--overhead", type=float, default=0.0,
                                    help="seconds each pick costs beyond its recorded fits (a trial's own set-up)")
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(args.kb, args.cache, args.valid_rows, args.test_rows, args.seed)
    else:
        run(args.kb, args.cache, args.ks, args.budgets, args.out, args.seed, args.cost_power, args.overhead)
    return 0


if __name__ == "__main__":
    sys.exit(main())
