"""``metabo suggest DATA`` (warm-start configurations for a new dataset) and ``metabo
transfer ALGO`` (what transfers across tasks: mean ranks, a greedy portfolio, task
similarity with an optional heatmap)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metabo.cli._args import count
from metabo.cli.kb_cmds import open_kb


def cmd_suggest(args: argparse.Namespace) -> int:
    """``metabo suggest``: warm-start configurations for a new dataset: the default warm start's portfolio, or the
    nearest stored tasks' best (--method knn); returns the exit code."""
    from metabo.data.loaders import load_dataset
    from metabo.data.meta_features import compute_meta_features
    from metabo.kb.datasets import dataset_ids_with_fingerprint
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies.knn import warm_start_suggestions

    dataset = load_dataset(args.data, target=args.target)
    meta = compute_meta_features(dataset, seed=args.seed, landmarkers=not args.no_landmarkers)
    with open_kb(args, read_only=True) as kb:
        past = PastRuns.from_kb(kb, metric=args.metric)
        names = {d: kb.get_dataset(d).get("name", d) for d in past.tasks}
        same = dataset_ids_with_fingerprint(kb, dataset.fingerprint)
    if args.exclude_same and len(same):
        past = past.without(same)
    space = default_cash_space(args.algorithms)
    if args.method == "warm":
        return _print_portfolio(args, dataset.name, past, meta, space)
    rows = [{"algorithm": r["algorithm"], "params": r["params"], "from_task": r["from_task"],
             "task_name": names.get(r["from_task"], r["from_task"]), "distance": round(r["distance"], 4),
             f"{args.metric}_there": round(r["value"], 6)}
            for r in warm_start_suggestions(past, meta, space, k=args.k)]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print(f"warm-start configurations for {dataset.name} ({len(rows)} from the {args.k} nearest tasks "
          f"of {len(past.tasks)}, by meta-features):")
    for i, r in enumerate(rows, 1):
        print(f"{i:2d}. {r['algorithm']} {json.dumps(r['params'], sort_keys=True)}\n"
              f"    from {r['task_name']} (distance {r['distance']}), {args.metric} there {r[f'{args.metric}_there']}")
    return 0


def _print_portfolio(args: argparse.Namespace, name: str, past: Any, meta: dict[str, float], space: Any) -> int:
    """The default warm start's first ``k`` configurations (its static portfolio), each with
    the prior-weighted mean normalized regret of the past tasks that ran it."""
    import numpy as np

    from metabo.kb.canonical import config_id
    from metabo.strategies.portfolio import PortfolioWarmStart

    warm = PortfolioWarmStart(past, meta)
    configs = warm.portfolio(space, args.k)
    m, w = warm.matrix(space)
    rows = []
    for a, params in configs:
        j = m.ids.index(config_id(a, params))
        ran = np.isfinite(m.Q[:, j])
        rows.append({"algorithm": a, "params": params, "n_tasks": int(ran.sum()),
                     "mean_regret": round(float(w[ran] @ m.Q[ran, j] / w[ran].sum()), 4)})
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print(f"warm-start configurations for {name}: the default warm start's first {len(rows)} (a portfolio over "
          f"{len(past.tasks)} stored tasks, weighted by meta-feature similarity; each adds the most where the "
          "earlier ones do worst):")
    for i, r in enumerate(rows, 1):
        print(f"{i:2d}. {r['algorithm']} {json.dumps(r['params'], sort_keys=True)}\n"
              f"    run on {r['n_tasks']} tasks, weighted mean normalized regret there {r['mean_regret']}")
    return 0


def cmd_transfer(args: argparse.Namespace) -> int:
    """``metabo transfer``: what transfers across tasks for an algorithm: ranks, portfolio, task similarity;
    returns the exit code."""
    from metabo.kb import queries as q
    from metabo.kb import transfer as tr

    with open_kb(args, read_only=True) as kb:
        ranks = q.mean_ranks(kb, args.algorithm, metric=args.metric, min_tasks=args.min_tasks)
        portfolio = tr.greedy_portfolio(kb, args.algorithm, args.k, metric=args.metric)
        similarity = tr.task_similarity(kb, args.algorithm, metric=args.metric, min_shared=args.min_shared)
        names = {d: kb.get_dataset(d).get("name", d) for d in similarity.index}
    pairs = similarity.where(~similarity.isna()).stack()
    pairs = pairs[[a < b for a, b in pairs.index]].sort_values(ascending=False)
    if args.json:
        print(json.dumps({
            "mean_ranks": ranks.head(args.top).to_dict(orient="records"),
            "portfolio": portfolio.to_dict(orient="records"),
            "similar_pairs": [{"task_a": a, "task_b": b, "tau": float(t)}
                              for (a, b), t in pairs.head(args.top).items()],
        }, indent=2, default=str))
    else:
        print(f"{args.algorithm}: {len(ranks)} configurations ranked over the tasks ({args.metric}); "
              "best by mean rank:")
        print(ranks.head(args.top).to_string(index=False))
        print(f"\ngreedy portfolio of {len(portfolio)} (mean normalized regret of the best member per task):")
        print(portfolio.to_string(index=False))
        print(f"\nmost similar task pairs (Kendall tau-b over shared configurations, {len(pairs)} pairs defined):")
        for (a, b), t in pairs.head(args.top).items():
            print(f"  {t:+.3f}  {names.get(a, a)} ~ {names.get(b, b)}")
    if args.heatmap:
        labels = _labels(list(similarity.index), names)
        _heatmap(similarity.rename(index=labels, columns=labels), args.algorithm, Path(args.heatmap))
        print(f"heatmap written to {args.heatmap}")
    return 0


def _heatmap(similarity, algorithm: str, path: Path) -> None:  # type: ignore[no-untyped-def]
    """The task x task Kendall tau heatmap, tasks ordered by average-linkage clustering on
    ``1 - tau`` (so that alike tasks sit together); tasks that share no ranked
    configuration with any other (an empty row) are left out and counted in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    values = similarity.to_numpy(float)
    off = values.copy()
    np.fill_diagonal(off, np.nan)
    keep = ~np.isnan(off).all(axis=1)
    dropped = int((~keep).sum())
    sim = similarity.iloc[keep, keep]
    n = len(sim)
    if n >= 3:
        dist = 1.0 - np.nan_to_num(sim.to_numpy(float), nan=0.0)  # no shared configurations: tau 0
        dist = (dist + dist.T) / 2.0
        np.fill_diagonal(dist, 0.0)
        order = leaves_list(linkage(squareform(np.clip(dist, 0.0, 2.0), checks=False), method="average"))
        sim = sim.iloc[order, order]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.22 * n + 2), max(4.0, 0.22 * n + 1.5)))
    image = ax.imshow(sim.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n), list(sim.columns), rotation=90, fontsize=6)
    ax.set_yticks(range(n), list(sim.index), fontsize=6)
    ax.set_title(f"{algorithm}: Kendall tau-b between tasks' rankings"
                 + (f"\n({dropped} tasks sharing no configuration left out)" if dropped else ""), fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _labels(ids: list[str], names: dict[str, str]) -> dict[str, str]:
    """Task id -> a short label: its name, with the id where two tasks share a name."""
    short = {i: str(names.get(i, i))[:24] for i in ids}
    seen = pd.Series(list(short.values())).value_counts()
    return {i: (f"{s} ({i})"[:40] if seen[s] > 1 else s) for i, s in short.items()}


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo suggest and metabo transfer`` command(s) to the CLI's subparsers."""
    p = sub.add_parser("suggest", parents=[common],
                       help="warm-start configurations for a new dataset: the default warm start's portfolio, "
                            "or the nearest stored tasks' best (--method knn)")
    p.add_argument("data", help="a CSV/Parquet/ARFF path (with --target) or a spec: sklearn:iris, keel:..., openml:ID")
    p.add_argument("--target", help="the target column of a file")
    p.add_argument("-k", type=count(), default=5,
                   help="configurations (warm); nearest tasks, one configuration each (knn)")
    p.add_argument("--method", choices=("warm", "knn"), default="warm",
                   help="warm (default): the portfolio the default warm start opens with; knn: the k nearest "
                        "tasks' best configurations")
    p.add_argument("--algorithms", nargs="+", metavar="NAME", help="restrict to these algorithms")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--seed", type=int, default=0, help="seeds the landmarker meta-features")
    p.add_argument("--no-landmarkers", action="store_true", help="faster meta-features, without landmarkers")
    p.add_argument("--exclude-same", action="store_true", help="leave out a stored task holding the same data")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suggest)

    t = sub.add_parser("transfer", parents=[common],
                       help="what transfers across tasks for an algorithm: ranks, portfolio, task similarity")
    t.add_argument("algorithm")
    t.add_argument("-k", type=count(), default=5, help="portfolio size")
    t.add_argument("--top", type=count(), default=10, help="rows of the rank and similarity lists")
    t.add_argument("--metric", default="error_rate")
    t.add_argument("--min-tasks", type=count(), default=None,
                   help="configurations evaluated on at least this many tasks (default: half as many as the "
                        "best-supported one)")
    t.add_argument("--min-shared", type=count(2), default=5, help="shared configurations for a task pair's tau")
    t.add_argument("--heatmap", metavar="PNG", help="write the task x task similarity heatmap")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_transfer)
