"""Comparing methods across tasks: regret tables, average ranks, Friedman/Nemenyi, Wilcoxon.

Notation (Demsar 2006, the protocol of DESIGN.md "How results are judged"): ``R`` (k, N, T)
holds the regret of ``k`` methods on ``N`` tasks after each of ``T`` iterations (each
task's regret averaged over repetitions first). At iteration ``t``:

- ``r_ij`` the rank of method ``j`` on task ``i`` among the ``k`` methods (1 = lowest
  regret, ties share the average rank, :func:`metabo.kb.queries.average_ranks`), and
  ``R_j = mean_i r_ij`` its average rank;
- the Friedman test of equal average ranks (scipy's ``friedmanchisquare``);
- the Nemenyi critical difference ``CD = q_alpha sqrt(k (k + 1) / (6 N))`` with
  ``q_alpha`` the studentized range quantile at ``alpha = 0.05`` over ``sqrt 2`` (two
  methods differ when their average ranks differ by more than ``CD``);
- pairwise Wilcoxon signed-rank p-values (two-sided, zero differences split) of every
  method against the reference methods, over the tasks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.queries import average_ranks

#: The iterations the reports show (the issue's 1, 3, 5, 10, 25, 50).
REPORT_AT = (1, 3, 5, 10, 25, 50)


def regret_table(runs: Iterable[Mapping[str, Any]], methods: Sequence[str], iterations: int, *,
                 key: str = "task") -> tuple[list[str], np.ndarray]:
    """Tasks every method finished, and ``R`` (methods, tasks, iterations): each run's
    ``regret`` curve (a run that stopped early, e.g. a task with fewer candidates, keeps its
    last value) averaged over the runs of the same (method, task)."""
    by: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for r in runs:
        if r["regret"]:
            by[r["method"], r[key]].append(list(r["regret"]))
    tasks = sorted({t for (_, t) in by})
    tasks = [t for t in tasks if all((m, t) in by for m in methods)]
    R = np.full((len(methods), len(tasks), iterations), np.nan)
    for i, m in enumerate(methods):
        for j, t in enumerate(tasks):
            curves = [c[:iterations] + [c[-1]] * (iterations - len(c)) for c in by[m, t]]
            R[i, j] = np.mean(np.array(curves), axis=0)
    return tasks, R


def nemenyi_cd(k: int, n_tasks: int, alpha: float = 0.05) -> float:
    """The Nemenyi critical difference of average ranks (module docstring)."""
    from scipy.stats import studentized_range

    if k < 2 or n_tasks < 1:
        return math.nan
    q = float(studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n_tasks))


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired samples (1 when they are equal)."""
    from scipy.stats import wilcoxon

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or np.allclose(a - b, 0):
        return 1.0
    return float(wilcoxon(a, b, zero_method="zsplit").pvalue)


def summarize(R: np.ndarray, methods: Sequence[str], *, report_at: Sequence[int] = REPORT_AT,
              references: Sequence[str] = ("gp", "random")) -> dict[str, Any]:
    """Mean and median regret, average rank, Friedman p, Nemenyi CD and Wilcoxon p-values
    against ``references`` (those among ``methods``) at each iteration of ``report_at``."""
    from scipy.stats import friedmanchisquare

    R = np.asarray(R, dtype=float)
    if R.ndim != 3 or R.shape[0] != len(methods):
        raise InputDataError(f"R must be (methods={len(methods)}, tasks, iterations), got {R.shape}")
    k, n_tasks, iters = R.shape
    out: dict[str, Any] = {"n_tasks": n_tasks, "at": {}}
    cd = nemenyi_cd(k, n_tasks)
    for it in report_at:
        if it > iters or n_tasks == 0:
            continue
        x = R[:, :, it - 1]
        ranks = average_ranks(x.T)  # (tasks, methods)
        entry: dict[str, Any] = {
            "mean_regret": dict(zip(methods, x.mean(axis=1).round(5).tolist())),
            "median_regret": dict(zip(methods, np.median(x, axis=1).round(5).tolist())),
            "mean_rank": dict(zip(methods, ranks.mean(axis=0).round(3).tolist())),
            "nemenyi_cd": round(cd, 3),
        }
        try:
            entry["friedman_p"] = float(friedmanchisquare(*x).pvalue) if k >= 3 and n_tasks >= 2 else math.nan
        except ValueError:  # every method equal on every task
            entry["friedman_p"] = math.nan
        pw: dict[str, dict[str, float]] = {}
        for ref in references:
            if ref not in methods:
                continue
            r = methods.index(ref)
            for i, m in enumerate(methods):
                if m != ref:
                    pw.setdefault(m, {})[f"vs_{ref}"] = wilcoxon_p(x[i], x[r])
        entry["wilcoxon"] = pw
        out["at"][str(it)] = entry
    return out


def first_reach(R: np.ndarray, methods: Sequence[str], slow: str, fast: str, at: int, *,
                statistic: Callable[..., np.ndarray] = np.median) -> dict[str, Any] | None:
    """The iteration at which ``slow``'s regret over tasks (``statistic``: median, or
    ``np.mean``) first reaches ``fast``'s at iteration ``at`` (None when a method is missing
    or ``at`` is past the budget; ``slow_iteration`` None when never within the budget).
    Both curves are computed alike, so a method reaches its own regret at ``at``."""
    if slow not in methods or fast not in methods or R.shape[2] < at:
        return None
    target = float(statistic(R[methods.index(fast)], axis=0)[at - 1])
    hit = np.flatnonzero(statistic(R[methods.index(slow)], axis=0) <= target)
    return {"slow": slow, "fast": fast, "at": at, "target_regret": target,
            "slow_iteration": int(hit[0]) + 1 if len(hit) else None}


def format_table(summary: Mapping[str, Any], methods: Sequence[str], title: str) -> str:
    """The summary as text: regret (rank) per method and iteration, the tests below."""
    its = list(summary["at"])
    width = max(10, *(len(m) + 1 for m in methods))
    lines = [f"{title} over {summary['n_tasks']} tasks: mean normalized regret (average rank) at iteration",
             f"{'method':{width}s}" + "".join(f"{'@' + it:>17s}" for it in its)]
    for m in methods:
        lines.append(f"{m:{width}s}" + "".join(
            f"{summary['at'][it]['mean_regret'][m]:>10.4f} ({summary['at'][it]['mean_rank'][m]:4.2f})" for it in its))
    if its:
        lines.append("Friedman p: " + ", ".join(f"@{it} {summary['at'][it]['friedman_p']:.2g}" for it in its)
                     + f"; Nemenyi CD (alpha 0.05) {summary['at'][its[-1]]['nemenyi_cd']}")
    refs = sorted({key[3:] for it in its for pw in summary["at"][it]["wilcoxon"].values() for key in pw})
    for ref in refs:
        rows = [f"  {m:{width}s}" + "".join(
            f"{summary['at'][it]['wilcoxon'].get(m, {}).get('vs_' + ref, math.nan):>10.2g}" for it in its)
            for m in methods if m != ref]
        lines.append(f"Wilcoxon p vs {ref} at " + ", ".join(its))
        lines += rows
    return "\n".join(lines) + "\n"


def plot_curves(R: np.ndarray, methods: Sequence[str], path: Path, *, title: str = "") -> None:
    """Mean regret (symlog) and average rank against the iteration, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iters = np.arange(1, R.shape[2] + 1)
    ranks = np.stack([average_ranks(R[:, :, it].T).mean(axis=0) for it in range(R.shape[2])], axis=-1)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for i, m in enumerate(methods):
        style = "--" if i >= 10 else "-"
        a1.plot(iters, R[i].mean(axis=0), style, label=m)
        a2.plot(iters, ranks[i], style, label=m)
    a1.set_yscale("symlog", linthresh=1e-3)
    a1.set(xlabel="iteration", ylabel="mean normalized regret", title="regret (lower is better)")
    a2.set(xlabel="iteration", ylabel="average rank", title=f"average rank over {R.shape[1]} tasks")
    a1.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


__all__ = ["REPORT_AT", "first_reach", "format_table", "nemenyi_cd", "plot_curves", "regret_table", "summarize",
           "wilcoxon_p"]
