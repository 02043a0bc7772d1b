"""What proposing the knowledge base's configurations can reach on the live protocol's
held-out tasks: references computed on recorded values (``scripts/bench_warm.py bounds``).

The live protocol (:mod:`benchmarks.warm_bench`) evaluates a configuration as the
knowledge base recorded it (same split, same seed), so a held-out task's recorded value of
a configuration is what a live trial of it returns
(:func:`benchmarks.transfer_live.reproduced` measures how often exactly). Every method that opens with recorded
configurations (a portfolio, a
nearest task's best) is therefore bounded by what the recorded values allow, and these
references can be computed without training a model:

- ``oracle``: the held-out task's own recorded configurations, best first (a perfect
  transfer of the recorded grid).
- ``hindsight``: one list of configurations for every held-out task together, the greedy
  portfolio (Wistuba et al. 2015; auto-sklearn 2.0) fitted on the held-out tasks' own
  normalized regrets: in-sample, what the best single static portfolio scores on them.
  A method that does not see the held-out tasks generalizes from the other tasks, so it
  is not expected to reach it (the cross-validated gap of a portfolio is its price).
- ``static``: the same greedy portfolio fitted on the other tasks (the past without the
  held-out task and its copies), on their recorded regrets: the cross-validated
  counterpart of ``hindsight``, its gap the price of generalizing from the past.
- ``portfolio``: the default warm start's design phase
  (:class:`~metabo.strategies.portfolio.PortfolioWarmStart`, the past without the task)
  run on the recorded values: a check that these references match the live runs.
- ``similarity-k``: the same adaptive portfolio with the prior weights of an oracle
  similarity, uniform over the ``k`` past tasks whose recorded regrets rank the
  configurations most like the held-out task's (Spearman over the configurations both
  recorded): the ceiling of any better meta-feature distance or learned task similarity
  for this portfolio.

All curves are raw recorded values of the picks in order; the report normalizes them with
the live runs (:func:`benchmarks.warm_bench.live_regret`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.portfolio import PortfolioWarmStart, RegretMatrix

logger = logging.getLogger(__name__)

Curves = dict[str, dict[str, list[float]]]  # reference -> task -> recorded values of its picks in order


def recorded_lookup(past: PastRuns, space: CASHSpace, task: str) -> dict[str, float]:
    """``task``'s recorded mean value of each configuration, by canonical id in ``space``."""
    m = RegretMatrix.from_past(past.only(tasks=[task]), space)
    assert m.values is not None
    return {cid: float(v) for cid, v in zip(m.ids, m.values[0]) if math.isfinite(v)}


def oracle_curve(lookup: Mapping[str, float], n: int) -> list[float]:
    """The task's own ``n`` best recorded values, in increasing order."""
    return sorted(lookup.values())[:n]


def hindsight_portfolio(Q: np.ndarray, n: int) -> list[int]:
    """Greedy static portfolio minimizing the mean over rows of ``min`` over the picks of
    ``Q`` (tasks x configurations, regret in [0, 1], NaN where not recorded, taken as 1):
    at each step the column that lowers the mean best-so-far regret most."""
    Q = np.nan_to_num(np.asarray(Q, dtype=float), nan=1.0)
    if Q.ndim != 2 or Q.shape[1] == 0:
        raise InputDataError(f"Q must be (tasks, configurations) with configurations, got {Q.shape}")
    best = np.ones(len(Q))
    picks: list[int] = []
    for _ in range(min(n, Q.shape[1])):
        score = np.minimum(best[:, None], Q).mean(axis=0)
        score[picks] = np.inf
        j = int(np.argmin(score))
        picks.append(j)
        best = np.minimum(best, Q[:, j])
    return picks


def similarity_weights(m: RegretMatrix, own: np.ndarray, k: int) -> np.ndarray:
    """Uniform weights over the ``k`` rows of ``m.Q`` whose Spearman correlation with
    ``own`` (the held-out task's regrets at ``m``'s columns) is largest; a tiny floor
    elsewhere so that the portfolio's evidence can still move them."""
    from scipy.stats import spearmanr

    rho = np.full(len(m.tasks), -np.inf)
    for i, row in enumerate(m.Q):
        ok = np.isfinite(row) & np.isfinite(own)
        if ok.sum() >= 3 and np.ptp(row[ok]) > 0 and np.ptp(own[ok]) > 0:
            rho[i] = float(spearmanr(row[ok], own[ok])[0])
    w = np.full(len(m.tasks), 1e-9)
    w[np.argsort(-rho, kind="stable")[:k]] = 1.0
    return w / w.sum()


class _FixedPrior(PortfolioWarmStart):
    """The portfolio with given prior weights over its regret matrix's tasks."""

    def __init__(self, past: PastRuns, prior: Callable[[RegretMatrix], np.ndarray], **kwargs: Any) -> None:
        super().__init__(past, None, **kwargs)
        self._prior = prior

    def prior(self, m: RegretMatrix) -> np.ndarray:
        return self._prior(m)


def run_on_recorded(strategy: Any, space: CASHSpace, lookup: Mapping[str, float], n: int, seed: int = 0
                    ) -> tuple[list[float], int]:
    """``strategy``'s first ``n`` picks scored by ``lookup`` (a configuration the task did
    not record scores NaN and is told as a failed trial); returns the values and the
    number of unrecorded picks."""
    from benchmarks.loop import play

    played = play(space, strategy, lambda a, p: lookup.get(config_id(*space.normalize(a, p)), math.nan), n, seed=seed)
    return played.values, sum(not math.isfinite(v) for v in played.values)


def recorded_curves(past_all: PastRuns, space: CASHSpace, tasks: Sequence[str],
                    same_content: Mapping[str, Sequence[str]], meta: Callable[[str], Mapping[str, float]], *,
                    n: int = 8, ks: Sequence[int] = (1, 3, 5, 10),
                    ranges: Mapping[str, tuple[float, float]] | None = None) -> tuple[Curves, dict[str, int]]:
    """The module's references on each held-out task of ``tasks`` (``n`` picks each;
    ``meta(task)``: its meta-features, for the default's prior; ``ranges``: task -> (least,
    largest) value the benchmark normalizes by, which ``hindsight`` is fitted on, the
    recorded range when None). Returns the curves and, per reference, the number of picks
    the held-out task had not recorded."""
    lookups = {t: recorded_lookup(past_all, space, t) for t in tasks}
    curves: Curves = {"oracle": {t: oracle_curve(lookups[t], n) for t in tasks}}
    missing = {"oracle": 0}
    # hindsight: one static list fitted on the held-out tasks' own regrets, on the scored scale
    full = RegretMatrix.from_past(past_all.only(tasks=list(tasks)), space)
    assert full.values is not None
    Q = full.Q
    if ranges is not None:
        lo = np.array([ranges[t][0] for t in full.tasks])[:, None]
        span = np.array([ranges[t][1] - ranges[t][0] for t in full.tasks])[:, None]
        Q = (full.values - lo) / np.where(span > 0, span, 1.0)
    picks = hindsight_portfolio(Q, n)
    curves["hindsight"] = {t: [lookups[t].get(full.ids[j], math.nan) for j in picks] for t in tasks}
    missing["hindsight"] = sum(not math.isfinite(v) for c in curves["hindsight"].values() for v in c)
    for t in tasks:
        past = past_all.without([t, *same_content.get(t, ())])
        other = RegretMatrix.from_past(past, space)
        curves.setdefault("static", {})[t] = [lookups[t].get(other.ids[j], math.nan)
                                              for j in hindsight_portfolio(other.Q, n)]
        missing["static"] = missing.get("static", 0) + sum(not math.isfinite(v) for v in curves["static"][t])
        strategies: dict[str, Any] = {"portfolio": PortfolioWarmStart(past, meta(t), seed=0)}
        for k in ks:
            def prior(m: RegretMatrix, t: str = t, k: int = k) -> np.ndarray:
                own = np.array([lookups[t].get(cid, math.nan) for cid in m.ids])
                return similarity_weights(m, own, k)

            strategies[f"similarity-{k}"] = _FixedPrior(past, prior, seed=0)
        for name, strategy in strategies.items():
            values, miss = run_on_recorded(strategy, space, lookups[t], n)
            curves.setdefault(name, {})[t] = values
            missing[name] = missing.get(name, 0) + miss
        logger.info("bounds: %s done", t)
    return curves, missing


def bounds_table(runs: Sequence[Mapping[str, Any]], methods: Sequence[str], at: Sequence[int] = (1, 3, 5, 8)
                 ) -> tuple[dict[str, Any], str]:
    """Mean normalized regret (:func:`~benchmarks.compare.regret_table`: each task's
    runs averaged over seeds, a shorter curve keeping its last value, then the mean over the
    tasks every method has) of ``runs`` (with ``regret``,
    :func:`~benchmarks.warm_bench.live_regret`) at ``at``, and the evaluation at which
    cold GP-BO's (``gp``) mean regret first reaches each method's regret at 5 (None: not
    within its runs)."""
    from benchmarks.compare import first_reach, regret_table

    iterations = max((len(r["regret"]) for r in runs if r["method"] in methods and r.get("regret")), default=0)
    tasks, R = regret_table([r for r in runs if r["method"] in methods and r.get("regret")], methods, iterations)
    if not tasks:
        raise InputDataError("no task has runs of every method")
    curves = dict(zip(methods, R.mean(axis=1)))
    out: dict[str, Any] = {"tasks": tasks, "at": {m: {str(k): float(curves[m][k - 1]) for k in at} for m in methods}}
    lines = [f"Mean normalized regret over {len(tasks)} tasks at evaluation",
             f"{'':28s}" + "".join(f"{'@' + str(k):>9s}" for k in at)]
    lines += [f"{m:28s}" + "".join(f"{out['at'][m][str(k)]:>9.4f}" for k in at) for m in methods]
    if "gp" in methods:
        gp_runs = max(len(r["regret"]) for r in runs if r["method"] == "gp" and r.get("regret"))
        reach = {m: first_reach(R[:, :, :gp_runs], methods, "gp", m, 5, statistic=np.mean)["slow_iteration"]
                 for m in methods}
        out["gp_reaches_regret_at_5"] = reach
        out["gp_curve"] = curves["gp"][:gp_runs].tolist()
        lines.append(f"Evaluation at which cold GP-BO's mean regret first reaches each one's regret at 5 "
                     f"(None: not within {gp_runs}): " + ", ".join(f"{m} {reach[m]}" for m in methods))
    return out, "\n".join(lines) + "\n"


__all__ = ["bounds_table", "hindsight_portfolio", "oracle_curve", "recorded_curves",
           "recorded_lookup", "run_on_recorded", "similarity_weights"]
