"""How far the warm start's first evaluations are from what the knowledge holds.

On ``bench_warm.py live --evaluation tune``'s tasks, a portfolio pick is a configuration the
knowledge base recorded on every task, measured by ``metabo tune``'s protocol on the splits
of seed 0, the very ones the live benchmark uses: its value on the held-out task is the one
recorded there. So the first ``--n`` evaluations of a portfolio-only warm start are read
from the store, not trained (the held-out task, and any copy of its data, is removed from
the knowledge it picks from; its own records are only looked up). Regret is normalized as
the live report normalizes it (the least and largest error of any live run or record of the
task), so the rows compare with cold GP-BO's live curve from ``--live-runs``.

With ``--tasks all`` every task of the store is held out in turn (regret normalized over its
records). Each method after the first is compared with the first, task by task: wins, ties
and losses and the Wilcoxon signed-rank p at each budget.

Printed per number of rounds of the build kept as knowledge (the first ``r`` configurations
of every algorithm, by when they were first measured, or ``r`` rounds drawn at random with
``--round-seed``): the mean regret after 1, 3, 5 and 10 picks of each variant, and the
oracle (the best configuration the store recorded on the task, among the kept ones): what a
perfect choice among the knowledge would reach. A method name ending in ``#uniform`` is
given no meta-features (uniform prior task weights); ``hindsight[@temperature=T]`` is the
reference :class:`_Hindsight` (task weights from the held-out task's whole row, which no
method can know).

    python scripts/bench_portfolio_ceiling.py --kb /tmp/kb.duckdb --rounds 3 5 7 10 \\
        --methods warm warm@distinct=false --live-runs reports/warm/live-tune/live_runs.jsonl
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np

from metabo.strategies.portfolio import PortfolioWarmStart


def main() -> None:
    from benchmarks.lookup import LookupTask
    from benchmarks.warm_bench import measured_protocols, meta_of, method_options, same_content_groups
    from benchmarks.warm_variants import warm_start
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb import KnowledgeBase
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True)
    ap.add_argument("--live-runs", type=Path, default=Path("reports/warm/live-tune/live_runs.jsonl"))
    ap.add_argument("--rounds", type=int, nargs="+", default=[0], help="0: every configuration")
    ap.add_argument("--methods", nargs="+", default=["warm"])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--round-seed", type=int, default=None,
                    help="keep r rounds drawn at random with this seed (the same draw for every algorithm) instead "
                         "of the first r: whether fewer configurations help, or only those first ones")
    ap.add_argument("--tasks", choices=["live", "all"], default="live",
                    help="held-out tasks: the live runs' (regret normalized with their runs too), or every task of "
                         "the store (normalized over its records only; no cold row)")
    args = ap.parse_args()

    protocols = measured_protocols("tune")
    with KnowledgeBase(args.kb, read_only=True) as kb:
        every = PastRuns.from_kb(kb, also=transfer_metrics("error_rate")[1:], protocols=protocols)
        datasets = kb.query("SELECT dataset_id, fingerprint, source, n_instances, n_classes, n_features FROM datasets")
        first = kb.query("SELECT algorithm, config_id, min(created_at) AS t FROM runs "
                         "WHERE protocol IN (SELECT unnest(?)) GROUP BY 1, 2", [protocols])
    first["round"] = first.groupby("algorithm")["t"].rank(method="first").astype(int)
    if args.round_seed is not None:  # relabel the rounds by one seeded permutation
        n_rounds = int(first["round"].max())
        order = np.random.default_rng(args.round_seed).permutation(n_rounds) + 1
        first["round"] = first["round"].map(dict(zip(range(1, n_rounds + 1), order.tolist())))
    groups = same_content_groups(datasets, every.meta_features)
    space = default_cash_space()

    live = [json.loads(line) for line in args.live_runs.open()]
    lo: dict[str, float] = collections.defaultdict(lambda: np.inf)
    hi: dict[str, float] = collections.defaultdict(lambda: -np.inf)
    for r in live:
        v = [x for x in r["values"] if x == x]
        lo[r["task"]], hi[r["task"]] = min(lo[r["task"]], *v), max(hi[r["task"]], *v)
    tasks = sorted(lo) if args.tasks == "live" else sorted(every.tasks)
    for t in tasks:
        v = [x for g in every.task_runs(t).values() for x in g.values]
        lo[t], hi[t] = min(lo[t], *v), max(hi[t], *v)

    def regret(t: str, values: list[float]) -> np.ndarray:
        return (np.minimum.accumulate(values) - lo[t]) / (hi[t] - lo[t])

    ks = [k for k in (1, 3, 5, 8, 10, 15, 20) if k <= args.n]
    print(f"{len(tasks)} held-out tasks; mean normalized regret after k evaluations")
    print(f"{'knowledge':>22s} {'method':30s} " + " ".join(f"{'@' + str(k):>6s}" for k in ks))
    if args.tasks == "live":
        cold = np.array([np.mean([regret(r["task"], r["values"][:args.n]) for r in live
                                  if r["task"] == t and r["method"] == "gp"], axis=0) for t in tasks])
        print(f"{'':>22s} {'cold GP-BO (live)':30s} " + " ".join(f"{cold[:, k - 1].mean():6.3f}" for k in ks))
    for rounds in args.rounds:
        if rounds:
            kept = set(first.loc[first["round"] <= rounds, "config_id"])

            def cut(g, kept=kept):  # noqa: ANN001, ANN202 - a TaskAlgorithmRuns of the kept configurations
                idx = [i for i, c in enumerate(g.config_ids) if c in kept]
                return dataclasses.replace(g, config_ids=tuple(g.config_ids[i] for i in idx),
                                           params=tuple(g.params[i] for i in idx), values=g.values[idx])

            past_all = dataclasses.replace(every, groups={k: cut(g) for k, g in every.groups.items()
                                                          if any(c in kept for c in g.config_ids)})
        else:
            past_all = every
        n_configs = len({c for g in past_all.groups.values() for c in g.config_ids})
        label = f"{rounds or 'all'} rounds, {n_configs} configs"
        oracle = []
        for t in tasks:
            mine = [x for g in past_all.task_runs(t).values() for x in g.values]
            oracle.append((min(mine) - lo[t]) / (hi[t] - lo[t]))
        for method in args.methods:
            name, uniform = method.removesuffix("#uniform"), method.endswith("#uniform")
            curves = []
            for t in tasks:
                past = past_all.without({t, *groups.get(t, ())})
                target = LookupTask.from_past(every, t, space)
                options = {"n_portfolio": args.n, "n_design": args.n, **method_options(name)}
                if name.startswith("hindsight"):
                    options.pop("hindsight", None)
                    strategy = _Hindsight(target, past, {}, seed=0, n_spread=args.n, **options)
                else:
                    strategy = warm_start(past, {} if uniform else meta_of(every, t), seed=0, **options)
                values, _, _ = _play(target, strategy, args.n)
                curves.append(regret(t, values))
            c = np.array(curves)
            print(f"{label:>22s} {method:30s} " + " ".join(f"{c[:, k - 1].mean():6.3f}" for k in ks))
            if method == args.methods[0]:
                reference = c
            else:
                print(f"{'':>22s} {'  vs ' + args.methods[0] + ': W/T/L p':30s} " + " ".join(
                    _versus(reference[:, k - 1], c[:, k - 1]) for k in ks))
        print(f"{label:>22s} {'oracle (best recorded)':30s} " + " ".join(f"{np.mean(oracle):6.3f}" for _ in ks))


class _Hindsight(PortfolioWarmStart):
    """A reference no method can be: the default's portfolio picks by gain, with task
    weights from each past task's Spearman correlation with the held-out task's *whole*
    recorded row, ``w_p ∝ exp(temperature rho_p)`` (``hindsight@temperature=T``, default 20),
    instead of meta-features and the results so far: how far perfect knowledge of which past
    tasks are alike would take the portfolio."""

    def __init__(self, target, past, meta, *, temperature: float = 20.0, **options):  # noqa: ANN001, ANN204
        super().__init__(past, meta, **options)
        self.target, self.temperature = target, temperature

    def weights(self, history, space):  # noqa: ANN001, ANN201
        from scipy.stats import spearmanr

        m, _ = self.matrix(space)
        own = np.array([self.target.values.get(cid, np.nan) for cid in m.ids])
        rho = []
        for row in m.Q:
            both = np.isfinite(row) & np.isfinite(own)
            rho.append(spearmanr(row[both], own[both])[0] if both.sum() > 2 else 0.0)
        logw = self.temperature * np.nan_to_num(np.array(rho))
        w = np.exp(logw - logw.max())
        return w / w.sum()


def _versus(a: np.ndarray, b: np.ndarray) -> str:
    """Tasks where ``b`` is below / level with / above ``a``, and the Wilcoxon signed-rank p."""
    from scipy.stats import wilcoxon

    d = a - b
    p = wilcoxon(a, b).pvalue if np.any(d != 0) else 1.0
    return f"{(d > 0).sum()}/{(d == 0).sum()}/{(d < 0).sum()} {p:.3f}"


def _play(target, strategy, n):  # noqa: ANN001, ANN202
    """The strategy's ``n`` picks on the held-out task's records; a configuration the task
    has no record of (its evaluation failed in the build) counts as its worst value."""
    from metabo.exceptions import InputDataError

    worst = target.worst

    def objective(algorithm, params):  # noqa: ANN001, ANN202
        try:
            return target(algorithm, params)
        except InputDataError:
            return worst

    from benchmarks.loop import play

    played = play(target.space, strategy, objective, n, seed=0)
    return played.values, played.seconds, played.config_ids


if __name__ == "__main__":
    main()
