"""A portfolio chosen for the ensemble it forms: greedy forward selection of configurations
whose post-hoc ensemble improves most across the past tasks.

Notation: past tasks ``p = 1..P`` with weights ``w_p`` (a distribution over "which past task
the new one is like", as :mod:`metabo.strategies.portfolio`'s), candidate configurations
``c = 1..C``, and on task ``p`` the out-of-fold class probabilities ``P_pc`` (n_p, K_p) of
the candidates it recorded, on one set of rows with true codes ``y_p``. ``L`` is the metric
(lower is better), ``lo_p`` and ``hi_p`` the best and worst single-candidate loss on ``p``,
and the normalized loss of any prediction ``Z`` is ``q_p(Z) = (L(y_p, Z) - lo_p) / (hi_p -
lo_p)`` (the portfolio's normalized-regret scale; below 0 when an ensemble beats every single
candidate).

Each task follows the ensemble path of the portfolio so far, ``E_p``, the average of the
``m_p`` picks it recorded (forward selection with replacement, Caruana et al. 2004, sec. 2.1,
in portfolio order), and keeps ``l_p``, the lowest normalized loss of any prefix of that path
or of any pick alone (what post-hoc selection would return; ``l_p = 1``, the worst
candidate's, before any pick). Adding ``c`` to the path, or keeping it alone, gains on ``p``

    g_pc = max(0, l_p - min(q_p((m_p E_p + P_pc) / (m_p + 1)), q_p(P_pc)))

(0 where ``p`` did not record ``c``: a configuration seen on few tasks cannot win by its
absences), and the next pick is ``c* = argmax_c sum_p w_p g_pc / s_c^gamma`` over the
candidates not picked yet, ``s_c`` the predicted fit seconds of ``c`` on the new table
(``gamma = 0``: cost ignored). When nothing gains (a pair of equally good members can tie
where three would not), the pick is the one of lowest weighted ``min(...)``, the path that
loses least. Each task that recorded ``c*`` then adds it to its path and lowers ``l_p``.

This is the greedy portfolio that TabRepo (Salinas & Erickson 2024, "zero-shot portfolio")
and auto-sklearn 2.0 (Feurer et al. 2022, portfolio building) describe, with the objective
the ensemble rather than each configuration alone (auto-sklearn 2.0's objective is the
portfolio's single best on each task; :mod:`metabo.strategies.portfolio` follows it). The
papers are not in ``shared/seeds``; this follows their published descriptions. Deviations:
tasks are weighted by similarity to the new one instead of counted equally; the objective
is normalized loss, not average rank (bounded per task, as the single-best portfolio's);
each task's ensemble is the greedy path in portfolio order, not a fresh ensemble selection
over the whole portfolio at every pick (``C`` selections per task and pick would cost ``C``
times more); and the cost discount, as in FLAML's cost-frugal search (Wang et al. 2021),
favours what is cheap when the clock is the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metabo.evaluation.metrics import get_metric, library_losses
from metabo.exceptions import InputDataError


@dataclass(frozen=True)
class TaskPredictions:
    """One past task's candidates on the same rows: ``probas`` (C, n, K) out-of-fold class
    probabilities (any values where ``recorded`` is False), ``recorded`` (C,) which
    candidates ran on the task, ``labels`` (n,) the true class codes."""

    probas: np.ndarray
    recorded: np.ndarray
    labels: np.ndarray

    def __post_init__(self) -> None:
        P, r, y = np.asarray(self.probas), np.asarray(self.recorded, dtype=bool), np.asarray(self.labels)
        if P.ndim != 3 or r.shape != (P.shape[0],) or y.shape != (P.shape[1],):
            raise InputDataError(f"a task's probas must be (C, n, K) with recorded (C,) and labels (n,); got "
                                 f"{P.shape}, {r.shape}, {y.shape}")
        if r.any() and not np.all(np.isfinite(P[r])):
            raise InputDataError("a task's recorded predictions hold non-finite values")


def ensemble_portfolio(tasks: Sequence[TaskPredictions], n: int, *, weights: Sequence[float] | None = None,
                       seconds: Sequence[float] | None = None, cost_power: float = 0.0,
                       metric: str = "error_rate", groups: Sequence[str] | None = None) -> list[int]:
    """The first ``n`` candidates (indices into the tasks' shared candidate axis) of the greedy
    ensemble portfolio (module docstring).

    Args:
        tasks: the past tasks, each with the same candidate axis ``C``.
        n: how many picks.
        weights: ``w_p`` (None: equal); normalized here.
        seconds: ``s_c``, the candidates' predicted fit seconds (needed when
            ``cost_power > 0``).
        cost_power: ``gamma``, how strongly gain per second is preferred.
        metric: ``L``, a name of :mod:`metabo.evaluation.metrics`.
        groups: each candidate's group (its algorithm): while a candidate of a group not
            picked yet gains, the pick is of such a group (the single-best portfolio's
            ``distinct`` rule, :class:`~metabo.strategies.portfolio.PortfolioWarmStart`).
    """
    if not tasks:
        raise InputDataError("the ensemble portfolio needs at least one past task")
    C = np.asarray(tasks[0].probas).shape[0]
    if any(np.asarray(t.probas).shape[0] != C for t in tasks):
        raise InputDataError("every task must hold the same candidates (axis 0 of probas)")
    if groups is not None and len(groups) != C:
        raise InputDataError(f"groups must name the group of each of the {C} candidates")
    w = np.full(len(tasks), 1.0) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(tasks),) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise InputDataError(f"weights must be {len(tasks)} non-negative numbers, not all 0")
    w = w / w.sum()
    discount = np.ones(C)
    if cost_power:
        if seconds is None or len(seconds) != C:
            raise InputDataError("a cost discount needs the predicted seconds of every candidate")
        s = np.asarray(seconds, dtype=float)
        if not np.all(np.isfinite(s)) or (s <= 0).any():
            raise InputDataError("predicted seconds must be positive and finite")
        discount = s ** -float(cost_power)
    loss = get_metric(metric)
    states = [_TaskState.start(t, metric, loss) for t in tasks]
    picked: list[int] = []
    free = np.ones(C, dtype=bool)
    for _ in range(min(int(n), C)):
        options = [s.options(metric, loss) for s in states]
        outcome = np.array([s.outcome(*o) for s, o in zip(states, options)])  # (P, C)
        level = np.array([s.level for s in states])
        gain = w @ np.maximum(0.0, level[:, None] - outcome)
        score = np.where(free, gain * discount, -np.inf)
        if groups is not None:
            tried = {groups[p] for p in picked}
            fresh = np.array([g not in tried for g in groups])
            if (fresh & (score > 0)).any():
                score = np.where(fresh, score, -np.inf)
        c = int(np.argmax(score))  # ties: the lowest index
        if not score[c] > 0:  # nothing gains now: the one whose ensemble path loses least
            c = int(np.argmin(np.where(free, w @ outcome, np.inf)))
        picked.append(c)
        free[c] = False
        for state, (added, alone) in zip(states, options):
            state.take(c, added, alone)
    return picked


class _TaskState:
    """One task's ensemble path of the picks so far (``E_p``, ``m_p``) and the best
    normalized loss on it (``l_p``)."""

    def __init__(self, P: np.ndarray, recorded: np.ndarray, y: np.ndarray, single: np.ndarray) -> None:
        self.P, self.recorded, self.y = P, recorded, y
        lo, hi = (float(np.nanmin(single)), float(np.nanmax(single))) if recorded.any() else (0.0, 1.0)
        self.lo, self.span = lo, (hi - lo if hi > lo else 1.0)
        self.single = (single - self.lo) / self.span  # each candidate alone, normalized
        self.E: np.ndarray | None = None
        self.m = 0
        self.level = 1.0

    @classmethod
    def start(cls, task: TaskPredictions, metric: str, loss) -> _TaskState:  # type: ignore[no-untyped-def]
        P = np.asarray(task.probas, dtype=np.float32)
        recorded = np.asarray(task.recorded, dtype=bool)
        y = np.asarray(task.labels)
        single = np.full(P.shape[0], np.nan)
        if recorded.any():
            single[recorded] = library_losses(metric, loss, y, P[recorded])
        return cls(P, recorded, y, single)

    def options(self, metric: str, loss) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
        """Normalized losses of every candidate added to ``E_p`` and alone (NaN: not recorded)."""
        alone = self.single
        if self.E is None:
            return alone, alone
        added = np.full(len(alone), np.nan)
        if self.recorded.any():
            blend = (self.m * self.E[None] + self.P[self.recorded]) / (self.m + 1)
            added[self.recorded] = (library_losses(metric, loss, self.y, blend) - self.lo) / self.span
        return added, alone

    def outcome(self, added: np.ndarray, alone: np.ndarray) -> np.ndarray:
        """Each candidate's best normalized loss, added to the path or alone (``l_p`` where
        the task did not record it)."""
        best = np.fmin(added, alone)
        return np.where(np.isfinite(best), best, self.level)

    def take(self, c: int, added: np.ndarray, alone: np.ndarray) -> None:
        if not self.recorded[c]:
            return
        self.level = float(min(self.level, added[c], alone[c]))
        Pc = self.P[c].astype(np.float32)
        self.E = Pc if self.E is None else (self.m * self.E + Pc) / (self.m + 1)
        self.m += 1


__all__ = ["TaskPredictions", "ensemble_portfolio"]
