"""Adaptive portfolio warm start, then GP-BO: the project's default warm start (``warm``).

Notation: past tasks ``p = 1..P`` and recorded configurations ``c = 1..C`` (every
configuration of :class:`~metabo.kb.past.PastRuns` valid in the CASH space, one column per
canonical id); ``y_{p,c}`` the mean value of ``c`` on ``p`` (lower is better, missing
where ``c`` was not run on ``p``). Each task's values are put on one scale, its normalized
regret ``Q_{p,c} = (y_{p,c} - min_c y_{p,c}) / (max_c y_{p,c} - min_c y_{p,c})`` in [0, 1]
(0 for a task whose values are all equal): the scale the transfer benchmarks score on,
and one that makes an error of 0.30 on a hard task and 0.01 on an easy one comparable.

Task weights ``w_p`` (a posterior over "which past task is the new one like"):

- prior ``w0_p ∝ exp(-d_p / h)`` from the meta-feature distance ``d_p`` of the new task
  to task ``p`` (:func:`metabo.kb.queries.nearest_from_matrix`, z-scored Euclidean),
  ``h`` the median distance (uniform when the new task has no meta-features; a task whose
  distance is unknown gets the median weight); times the task's coverage ``r_p``
  (:func:`coverage_weights`: a task that recorded fewer than half the configurations of
  the best-covered one, such as a tuning session beside a dense build, counts in proportion);
- evidence: the target's completed trials at recorded configurations ``c_1..c_n`` with
  values ``v_i`` (failures at the worst observed value, as :attr:`History.y`); Kendall's
  ``tau_p = (A_p - D_p) / (A_p + D_p)`` over the pairs ``v_i < v_j`` that task ``p`` orders
  the same way (``A_p``, ``Q_{p,c_i} < Q_{p,c_j}``) or the other way (``D_p``), ties and
  missing values left out; ``log w_p = log w0_p + beta n tau_p``. This is the pairwise
  agreement of RLGP's relative landmarks (Manolache & Vanschoren 2019, eqs. 2 and 5),
  computed on recorded values instead of GP samples (the portfolio's configurations are
  recorded on the past tasks), and turned into a tempered likelihood instead of an arg max
  count: the weights sharpen with ``n`` but no single lucky ordering takes all of them.

Design phase (the first ``n_design`` trials, of which the first ``n_portfolio`` come from
the portfolio): the greedy portfolio step of Wistuba, Schilling & Schmidt-Thieme 2015
(sequential model-free tuning) and auto-sklearn 2.0's portfolio (Feurer et al. 2022), made
adaptive: with ``b_p = min`` of ``Q_{p,c}`` over the recorded configurations asked so far
(1 before any), the next configuration is

    c* = argmax_c sum_p w_p (b_p - min(Q_{p,c}, b_p))

the one that most lowers the weighted past tasks' best-so-far regret if the new task is
like them: the expected improvement in regret under the mixture "the new task is task
``p`` with probability ``w_p``". A configuration missing on task ``p`` gains nothing there,
so one seen on few tasks cannot win by its absences. With ``distinct`` (default) each pick
is of an algorithm not tried yet while one with recorded configurations is left: the
algorithm choice matters most early, and a cold search's random design owes its strength
at a few evaluations to spanning algorithms; here each algorithm is represented by its
best-covering configuration instead of a random one. The first ``n_spread`` portfolio picks are
made so; the later ones by the column model (:mod:`metabo.strategies.column_model`): the new
task's row of the matrix as a conditional Gaussian given its results so far, the next pick
the recorded configuration of largest expected improvement under it (held-out tasks of the
lookup benchmark, ``reports/warm/column-model``). Design trials after the portfolio's
are uniform configurations of algorithms not tried yet (for instance ones the past never
ran). The first pick (no evidence) is the configuration with the lowest prior-weighted
regret; the weights move towards the tasks that order the new one's results alike.

Search phase: GP-BO (:class:`~metabo.strategies.gp.GPBO`, the cold strategy's model and
acquisition search, no random initial design) on every observation so far, its local
search also started from the ``n_transfer_starts`` configurations of largest portfolio gain
under the current weights, so the past still says where to look while the target's own
model decides. Algorithms the past never ran keep the GP's prior amplitude under the
conditional kernel (zero covariance across algorithms), so they stay open to EI.

Variants measured in ``reports/warm`` (the "Ablations" of its README and the ``oboe``
reports) that did not beat this default live in ``benchmarks/warm_variants.py``: another
prior bandwidth, weight of tasks without a distance or balance of sources, portfolio picks
that return to a tried algorithm, pre-trained GP priors and a transferred prior mean in the
search phase. They subclass this class through :meth:`PortfolioWarmStart.prior`,
:meth:`~PortfolioWarmStart._pick` and the search phase's :meth:`~PortfolioWarmStart.search_suggest`
and :meth:`~PortfolioWarmStart.search_acquisition`.

Deviations: Wistuba et al. fix the portfolio offline and rank tasks by meta-features only;
here the weights adapt to the new task's results. The portfolio's objective is normalized
regret averaged over tasks, not the papers' average rank or misclassification; it is
bounded per task and needs no extra scale.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.strategies.gp import GPBO

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RegretMatrix:
    """The past tasks' normalized regrets ``Q`` (P, C) of the recorded configurations
    valid in a space (module notation; NaN where a configuration was not run)."""

    tasks: tuple[str, ...]
    configs: tuple[Config, ...]
    ids: tuple[str, ...]
    Q: np.ndarray
    #: stored configuration id -> its column (ids the space normalized to another)
    aliases: Mapping[str, int] = field(default_factory=dict)
    #: the recorded values ``y_{p,c}`` themselves (P, C), NaN where not run
    values: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_past(cls, past: PastRuns, space: CASHSpace) -> RegretMatrix:
        """Every recorded configuration of ``past`` whose algorithm is in ``space`` and that
        ``space`` accepts, one column per canonical id."""
        column: dict[str, int] = {}
        configs: list[Config] = []
        normalized: dict[tuple[str, str], str | None] = {}  # (algorithm, stored id) -> canonical id
        tasks = [t for t in past.tasks if any(a in space for a in past.task_runs(t))]
        cells: list[tuple[int, int, float]] = []
        for i, task in enumerate(tasks):
            for algorithm, runs in past.task_runs(task).items():
                if algorithm not in space:
                    continue
                for stored, params, value in zip(runs.config_ids, runs.params, runs.values):
                    key = (algorithm, stored)
                    if key not in normalized:
                        try:
                            a, p = space.normalize(algorithm, params)
                        except (InvalidConfigurationError, UnknownAlgorithmError, InputDataError):
                            normalized[key] = None
                            continue
                        cid = config_id(a, p)
                        normalized[key] = cid
                        if cid not in column:
                            column[cid] = len(configs)
                            configs.append((a, p))
                    canonical = normalized[key]
                    if canonical is not None:
                        cells.append((i, column[canonical], float(value)))
        if not cells:
            raise InputDataError(f"no past run of the algorithms {list(space.algorithms)} is valid in the space: "
                                 "nothing to build a portfolio from")
        Y = np.full((len(tasks), len(configs)), np.nan)
        rows, cols, vals = (np.array(x) for x in zip(*cells))
        Y[rows.astype(int), cols.astype(int)] = vals
        lo, hi = np.nanmin(Y, axis=1, keepdims=True), np.nanmax(Y, axis=1, keepdims=True)
        span = np.where(hi - lo > 0, hi - lo, 1.0)
        Q = (Y - lo) / span
        ids = [""] * len(configs)
        for cid, j in column.items():
            ids[j] = cid
        aliases = {stored: column[cid] for (_, stored), cid in normalized.items() if cid is not None}
        return cls(tuple(tasks), tuple(configs), tuple(ids), Q, aliases, Y)


#: A task's meta-feature distance counts when it was computed on at least this share of
#: the features of the best-described task; otherwise the task gets the median weight.
MIN_FEATURE_SHARE = 0.5
#: A task counts fully in the prior when it recorded at least this share of the
#: configurations the best-covered task recorded; below it, in proportion
#: (:func:`coverage_weights`).
MIN_COVERAGE_SHARE = 0.5


def coverage_weights(Q: np.ndarray) -> np.ndarray:
    """``r_p = min(1, n_p / (s max_q n_q))``, ``n_p`` the configurations task ``p``
    recorded (finite entries of its row of ``Q``), ``s`` :data:`MIN_COVERAGE_SHARE`.

    A task's row ranks only what it recorded, normalized over it: a tuning session's 25
    searched configurations, mostly good ones, spread on ``[0, 1]`` the differences that a
    dense build of random configurations puts near 0, and its best configuration is what
    won its own validation noise: on new tasks preceded by a tuned task of the same family,
    that session's best configuration did worse than the portfolio's first pick more often
    than not (``reports/warm/flywheel-tune``). So a thinly covered task is a
    weaker witness, in proportion to its coverage (as a distance on few meta-features is,
    :data:`MIN_FEATURE_SHARE`), while every task of a dense build counts fully: the
    weights of a knowledge base without thinly covered tasks are unchanged."""
    n = np.isfinite(np.asarray(Q, dtype=float)).sum(axis=1).astype(float)
    if len(n) == 0 or n.max() <= 0:
        return np.ones(len(n))
    return np.minimum(1.0, n / (MIN_COVERAGE_SHARE * n.max()))


def prior_weights(past: PastRuns, tasks: Sequence[str], meta_features: Mapping[str, float] | None
                  ) -> np.ndarray:
    """``w0_p ∝ exp(-d_p / h)`` (module docstring), ``h`` the median known distance; uniform
    without meta-features, and for tasks whose distance is unknown (:func:`task_distances`)
    the median weight."""
    d = task_distances(past, tasks, meta_features)
    if d is None:
        return np.full(len(tasks), 1.0 / len(tasks))
    finite = np.isfinite(d)
    h = float(np.median(np.sort(d[finite]))) or 1.0
    logw = np.where(finite, -d / h, np.nan)
    logw[~finite] = np.nanmedian(logw)
    w = np.exp(logw - np.nanmax(logw))
    return w / w.sum()


def task_distances(past: PastRuns, tasks: Sequence[str], meta_features: Mapping[str, float] | None
                   ) -> np.ndarray | None:
    """The meta-feature distance ``d_p`` of the new task to each of ``tasks``
    (:func:`metabo.kb.queries.nearest_from_matrix`), NaN where unknown or computed on fewer
    than :data:`MIN_FEATURE_SHARE` of the features the best-described task shares with the
    new one (an OpenML task known only by its size, say); None when no distance is known
    (no meta-features: uniform weights)."""
    if not meta_features or past.meta_features.empty:
        return None
    from metabo.kb.queries import nearest_from_matrix

    matrix = past.meta_features.loc[[t for t in tasks if t in past.meta_features.index]]
    if matrix.empty:
        return None
    try:
        near = nearest_from_matrix(matrix, meta_features, k=len(matrix))
    except InputDataError as e:
        logger.warning("task weights without meta-features: %s", e)
        return None
    # a distance on a few shared features (a task known by its size alone) says little
    used = near["n_features_used"].to_numpy(float)
    dist = np.where(used >= MIN_FEATURE_SHARE * used.max(), near["distance"].to_numpy(float), np.nan)
    d = pd.Series(dist, index=near["dataset_id"]).reindex(list(tasks)).to_numpy()
    return d if np.isfinite(d).any() else None


def rank_agreement(Q: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's ``tau_p`` of each task against the target's ``values`` at the same
    columns (Q: (P, n), values: (n,)) and the number of pairs it was computed on."""
    v = np.asarray(values, dtype=float)
    worse = v[:, None] > v[None, :]  # (n, n): target says i worse than j
    dq = Q[:, :, None] - Q[:, None, :]  # (P, n, n)
    with np.errstate(invalid="ignore"):
        agree = np.nansum(np.where(worse[None], dq > 0, False), axis=(1, 2))
        disagree = np.nansum(np.where(worse[None], dq < 0, False), axis=(1, 2))
    pairs = agree + disagree
    tau = np.divide(agree - disagree, pairs, out=np.zeros(len(Q)), where=pairs > 0)
    return tau, pairs


def _recorded_results(m: RegretMatrix, history: History) -> tuple[np.ndarray, np.ndarray]:
    """The columns of ``m`` the completed trials asked, in order, and their values
    (:attr:`History.y`: failures at the worst observed value); trials at configurations the
    matrix does not record are left out."""
    index = {cid: j for j, cid in enumerate(m.ids)}
    cols = np.array([index.get(r.config_id, -1) for r in history.completed], dtype=int)
    keep = cols >= 0
    return cols[keep], history.y[keep]


class PortfolioWarmStart:
    """Adaptive greedy portfolio from the past tasks, then GP-BO (module docstring).

    Args:
        past: the past runs (other tasks only) and their meta-features.
        meta_features: the new task's meta-features (None or empty: uniform prior weights).
        n_portfolio: design trials taken from the portfolio.
        n_design: design trials in all (the ones after the portfolio's: untried algorithms).
        n_spread: portfolio picks by greatest gain (of distinct algorithms with ``distinct``);
            the rest of the portfolio's by the column model (``n_spread >= n_portfolio``:
            every pick by gain).
        distinct: each portfolio pick of an algorithm not tried yet (while one is left).
        beta: evidence temperature of the task weights (``log w += beta n tau``).
        n_transfer_starts: portfolio configurations the GP's local search also starts from.
        costs: stored configuration id -> predicted fit seconds on this task
            (:func:`metabo.kb.costs.predicted_fit_seconds`).
        max_cost: with ``costs``, portfolio picks are limited to configurations predicted
            to fit within this many seconds (the predictions rescaled by the observed fit
            times, :func:`metabo.kb.costs.observed_scale`); configurations without a
            prediction are allowed. A time budget sets it, so that the warm start does not
            open with configurations that cannot finish.
        then: the search-phase strategy (default: :class:`~metabo.strategies.gp.GPBO` with
            no random design, the settings of the cold ``gp`` strategy otherwise; another
            strategy, RGPE say, is asked without the transfer starts).
        seed: seeds the search phase's GP.
    """

    name = "warm"

    def __init__(self, past: PastRuns, meta_features: Mapping[str, float] | pd.Series | None = None, *,
                 n_portfolio: int = 10, n_design: int = 10, n_spread: int = 2, distinct: bool = True,
                 beta: float = 1.0,
                 n_transfer_starts: int = 5, then: GPBO | Any | None = None,
                 costs: Mapping[str, float] | None = None, max_cost: float | None = None, seed: int = 0) -> None:
        if min(n_portfolio, n_design, n_spread, n_transfer_starts, beta) < 0:
            raise InputDataError("n_portfolio, n_design, n_spread, n_transfer_starts and beta must be >= 0")
        if not past.tasks:
            raise InputDataError("no past task to warm-start from")
        from metabo.strategies.gp import GPBO

        self.past, self.n_portfolio, self.n_design, self.beta = past, n_portfolio, max(n_design, n_portfolio), beta
        self.n_transfer_starts, self.seed, self.distinct = n_transfer_starts, seed, distinct
        self.n_spread = n_spread
        if max_cost is not None and not max_cost > 0:
            raise InputDataError(f"max_cost must be a positive number of seconds, got {max_cost!r}")
        self.costs, self.max_cost = (None if costs is None else dict(costs)), max_cost
        self._column_costs: tuple[CASHSpace, dict[str, float]] | None = None
        self.meta_features = None if meta_features is None else {
            str(k): float(v) for k, v in dict(meta_features).items() if v == v}
        self.then = then if then is not None else GPBO(n_init=0, seed=seed)
        self._matrix: tuple[CASHSpace, RegretMatrix, np.ndarray] | None = None
        self._scores: tuple[RegretMatrix, np.ndarray] | None = None

    def __repr__(self) -> str:
        return (f"PortfolioWarmStart(tasks={len(self.past.tasks)}, n_portfolio={self.n_portfolio}, "
                f"n_design={self.n_design}, n_spread={self.n_spread}, beta={self.beta}, "
                f"n_transfer_starts={self.n_transfer_starts}, then={self.then!r}, seed={self.seed})")

    # ------------------------------------------------------------------ transfer
    def matrix(self, space: CASHSpace) -> tuple[RegretMatrix, np.ndarray]:
        """The regret matrix of ``space`` and the prior task weights (built once per space)."""
        if self._matrix is None or self._matrix[0] is not space:
            m = RegretMatrix.from_past(self.past, space)
            self._matrix = (space, m, self.prior(m))
        return self._matrix[1], self._matrix[2]

    def prior(self, m: RegretMatrix) -> np.ndarray:
        """The prior task weights ``w0`` over ``m.tasks``: :func:`prior_weights` times
        :func:`coverage_weights` (renormalized)."""
        w = prior_weights(self.past, m.tasks, self.meta_features) * coverage_weights(m.Q)
        return w / w.sum()

    def column_costs(self, space: CASHSpace) -> dict[str, float]:
        """Canonical configuration id -> predicted fit seconds (the median over its stored
        ids), built once per space like :meth:`matrix`."""
        if self._column_costs is None or self._column_costs[0] is not space:
            m, _ = self.matrix(space)
            by_column: dict[int, list[float]] = {}
            for stored, seconds in (self.costs or {}).items():
                if stored in m.aliases:
                    by_column.setdefault(m.aliases[stored], []).append(seconds)
            self._column_costs = (space, {m.ids[j]: float(np.median(v)) for j, v in by_column.items()})
        return self._column_costs[1]

    def affordable(self, history: History, space: CASHSpace) -> np.ndarray:
        """Which columns fit within ``max_cost`` (all without a cost limit; all when none does)."""
        m, _ = self.matrix(space)
        if self.costs is None or self.max_cost is None:
            return np.ones(len(m.ids), dtype=bool)
        from metabo.kb.costs import observed_scale

        predicted = self.column_costs(space)
        scale = observed_scale(history, predicted)
        cost = np.array([predicted.get(cid, 0.0) for cid in m.ids]) * scale
        ok = cost <= self.max_cost
        return ok if ok.any() else np.ones(len(m.ids), dtype=bool)

    def weights(self, history: History, space: CASHSpace) -> np.ndarray:
        """``w_p`` after the target's completed trials at recorded configurations."""
        m, w0 = self.matrix(space)
        cols, values = _recorded_results(m, history)
        if len(cols) < 2 or self.beta == 0:
            return w0
        tau, _ = rank_agreement(m.Q[:, cols], values)
        with np.errstate(divide="ignore"):  # a zero prior weight stays zero
            logw = np.log(w0) + self.beta * len(cols) * tau
        w = np.exp(logw - logw.max())
        return w / w.sum()

    def gains(self, history: History, space: CASHSpace) -> np.ndarray:
        """Each recorded configuration's portfolio gain ``sum_p w_p (b_p - min(Q_pc, b_p))``
        (-inf for configurations already asked)."""
        m, _ = self.matrix(space)
        asked = history.config_ids
        gain = self._gains(m, self.weights(history, space), np.array([cid in asked for cid in m.ids], dtype=bool))
        return np.where(self.affordable(history, space), gain, -np.inf)

    @staticmethod
    def _gains(m: RegretMatrix, w: np.ndarray, taken: np.ndarray) -> np.ndarray:
        b = np.ones(len(m.tasks))
        if taken.any():
            b = np.minimum(b, np.nan_to_num(np.nanmin(np.where(taken[None, :], m.Q, np.nan), axis=1,
                                                      initial=np.inf), nan=1.0, posinf=1.0))
        improvement = np.nan_to_num(b[:, None] - np.minimum(m.Q, b[:, None]), nan=0.0)
        gain = w @ improvement
        gain[taken] = -np.inf
        return gain

    def _pick(self, m: RegretMatrix, gain: np.ndarray, tried: set[str], picked: int = 0) -> int | None:
        """The column of largest gain (of an untried algorithm with ``distinct``, while one
        with a positive gain is left); None when nothing gains. ``picked``: the portfolio
        picks made before this one (unused here; a variant's rule may depend on it)."""
        if self.distinct:
            fresh = np.array([a not in tried for a, _ in m.configs])
            if (fresh & np.isfinite(gain) & (gain > 0)).any():
                gain = np.where(fresh, gain, -np.inf)
        j = int(np.argmax(gain))
        return j if np.isfinite(gain[j]) and gain[j] > 0 else None

    def _column_pick(self, history: History, space: CASHSpace) -> int | None:
        """The unasked affordable column of largest expected improvement under the column
        model (:mod:`metabo.strategies.column_model`) given the completed trials at recorded
        configurations; None with fewer than two of them or nothing left to ask."""
        from metabo.acquisition.ei import log_expected_improvement
        from metabo.strategies.column_model import column_posterior

        m, _ = self.matrix(space)
        cols, values = _recorded_results(m, history)
        cols, first = np.unique(cols, return_index=True)  # a column told twice: its first result
        open_ = self.affordable(history, space) & np.array([cid not in history for cid in m.ids], dtype=bool)
        if len(cols) < 2 or not open_.any():
            return None
        mean, var, best = column_posterior(self.scores(space), self.weights(history, space), cols, values[first])
        score = np.where(open_, log_expected_improvement(mean, var, best), -np.inf)
        j = int(np.argmax(score))
        return j if np.isfinite(score[j]) else None

    def scores(self, space: CASHSpace) -> np.ndarray:
        """The past tasks' normal scores of the regret matrix (built once per space,
        :func:`metabo.strategies.column_model.normal_scores`)."""
        m, _ = self.matrix(space)
        if self._scores is None or self._scores[0] is not m:
            from metabo.strategies.column_model import normal_scores

            self._scores = (m, normal_scores(m.Q))
        return self._scores[1]

    def portfolio(self, space: CASHSpace, n: int | None = None) -> list[Config]:
        """The static portfolio: the first ``n`` (default ``n_portfolio``) greedy picks under
        the prior weights alone, as if every pick's result were still unknown (for tools
        that take a fixed list of first trials, such as Optuna's enqueued trials)."""
        m, w0 = self.matrix(space)
        taken = np.zeros(len(m.ids), dtype=bool)
        tried: set[str] = set()
        out: list[Config] = []
        for i in range(self.n_portfolio if n is None else n):
            j = self._pick(m, self._gains(m, w0, taken), tried, i)
            if j is None:
                break
            taken[j] = True
            tried.add(m.configs[j][0])
            out.append((m.configs[j][0], dict(m.configs[j][1])))
        return out

    # ------------------------------------------------------------------ strategy
    def _next_design(self, history: History, space: CASHSpace, rng: np.random.Generator | None = None
                     ) -> Config | None:
        """The next design configuration, None once the design is over. The portfolio's
        picks so far are the asked configurations it records (a trial it did not choose,
        such as ``tune``'s opening, neither takes a pick nor makes its algorithm tried)."""
        m, _ = self.matrix(space)
        recorded = set(m.ids)
        own = [r for r in history if r.config_id in recorded]
        if len(own) >= self.n_portfolio:
            if len(history) >= self.n_design:
                return None
            if rng is None:  # asked whether the design goes on (acquisition): it does
                return ("", {})
            return self._explore(history, space, rng)
        j = self._column_pick(history, space) if len(own) >= self.n_spread else None
        if j is None:
            j = self._pick(m, self.gains(history, space), {r.algorithm for r in own}, len(own))
        if j is None:
            return None
        a, p = m.configs[j]
        return a, dict(p)

    def _explore(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """A uniform configuration of an algorithm not tried yet (any when all were)."""
        from metabo.strategies.base import random_configuration

        tried = {r.algorithm for r in history}
        fresh = [a for a in space.algorithms if a not in tried] or list(space.algorithms)
        return random_configuration(space, rng, history.config_ids, algorithm=fresh[int(rng.integers(len(fresh)))])

    def transfer_starts(self, history: History, space: CASHSpace) -> list[Config]:
        """The ``n_transfer_starts`` unasked configurations of largest gain."""
        if self.n_transfer_starts == 0:
            return []
        gain = self.gains(history, space)
        m, _ = self.matrix(space)
        order = [j for j in np.argsort(-gain, kind="stable")[: self.n_transfer_starts] if np.isfinite(gain[j])]
        return [(m.configs[j][0], dict(m.configs[j][1])) for j in order]

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next portfolio configuration during the design, then the search phase's."""
        config = self._next_design(history, space, rng)
        if config is not None:
            return config
        return self.search_suggest(history, space, rng)

    def search_suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The search phase's suggestion: GP-BO's, its local search also started from the
        transfer starts (another ``then`` is asked as it is)."""
        from metabo.strategies.gp import GPSettings

        if isinstance(self.then, GPSettings):
            return self.then.suggest(history, space, rng, extra_starts=self.transfer_starts(history, space))
        return self.then.suggest(history, space, rng)

    def acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Any:
        """None during the design, then the search phase's (for the ensemble searches)."""
        if self._next_design(history, space) is not None:
            return None
        return self.search_acquisition(history, space, rng)

    def search_acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Any:
        """The search phase's acquisition: the GP's log EI."""
        return self.then.acquisition(history, space, rng)

    def posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """The search-phase GP's posterior mean (thesis 3.4 selection)."""
        return self.then.posterior_mean(history, space, configs)


__all__ = ["PortfolioWarmStart", "RegretMatrix", "coverage_weights", "prior_weights", "rank_agreement",
           "task_distances"]
