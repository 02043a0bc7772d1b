"""SCoT, surrogate-based collaborative tuning (Bardenet, Brendel, Kégl and Sebag 2013), and
its baselines, the global default and the collaborative default (sec. 4.1.2).

Notation (sec. 3, Figures 3 and 4):

- ``O = (D_i, x_i, R_i)``: observations; ``D`` (q,) the dataset features, ``x`` (D_x,) the
  encoded configuration, ``R`` the validation error (lower is better); ``z = (D, x)``
  (q + D_x,) a point of the joint space ``D x H``.
- ``D``: by default the paper's features of sec. 4.1.1, ``K``, ``log d``, ``log(n/d)`` and
  ``rho`` (meta-features ``scot_K``, ``scot_log_d``, ``scot_log_n_over_d``,
  ``scot_pca_rho95``), each rescaled to [0, 1] by its minimum and maximum over the past
  tasks (as the paper rescales its features; with no past task, over the datasets being
  tuned). A missing feature is imputed by the mean rescaled value of the past tasks; a
  feature no past task has is dropped.
- ``x``: the joint CASH encoding ``CASHSpace.encode(a, params)``, the one-hot algorithm
  and every algorithm's block in [0, 1] (log-scaled where the space says so), the blocks
  of the algorithms not chosen imputed with their default. The paper tunes one algorithm
  (``x`` = its hyperparameters); over a CASH space the ranker compares configurations of
  different algorithms on a task like any two configurations.
- ``f^``: the latent ranker ``B(P)`` (:class:`~metabo.surrogates.ranker.RankSVM`, isotropic
  squared-exponential kernel) trained on the pairs ``P`` of eq. (2) within every task,
  higher for worse points; ``M``: the GP posterior of ``f^`` (SE-ARD kernel, hyperparameters
  by maximum a posteriori marginal likelihood, :class:`~metabo.surrogates.gp.GaussianProcess`);
  ``m_N``: the lowest ``f^`` among the new task's own observations.

Each suggestion on a new task ``D_new`` (Figure 3, lines 2-5, and Figure 4, lines 3-6):

1. ``P`` from ``O``: the past tasks', the new task's and, in collaborative mode, the other
   new tasks' observations (failed trials ranked below every success of their task);
2. ``f^ = B(P)``, evaluated at the observed points;
3. ``M`` regressed on ``((D, x), f^)``;
4. the next ``x`` maximizes ``log EI(D_new, x; M)`` against ``m_N``
   (:func:`metabo.acquisition.ei.log_expected_improvement`,
   :func:`metabo.acquisition.search.maximize`, which never returns an asked
   configuration); with no observation of ``D_new`` yet (no ``m_N``), the configuration of
   lowest posterior mean, i.e. the collaborative default.

Scale (the paper's tasks had 108 grid points each; the shipped knowledge base has ~500
runs on each of 42 tasks): the ranker sees at most ``max_points_per_task`` runs of each
past task (a seeded uniform draw, fixed per task and cached across suggestions, as is
their encoding) and the ranker's own pair and kernel-centre draws (its module docstring);
the GP is regressed on at most ``max_gp_points`` points: all of the new task's, then whole
tasks (past or collaborating), nearest to ``D_new`` in feature space first, the last one
a seeded draw (an exact GP on every point would be cubic in ~20,000). Every suggestion
retrains the ranker and the GP from scratch, as the paper does, so a suggestion is a
function of the histories and the seeds only.

Collaborative tuning (Figure 4, :func:`collaborative_tune`): several new datasets in
turn, one evaluation each per round, each suggestion trained on everything seen so far.

Baselines (sec. 4.1.2): :func:`global_default` (:class:`GlobalDefault`), the configuration
of lowest mean error over the past tasks; :func:`collaborative_default`, one step of SCoT
with no observation of the new task (the configuration of lowest posterior mean). Separate
surrogate tuning is :class:`~metabo.strategies.gp.GPBO`, random search
:class:`~metabo.strategies.random.RandomSearch`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration, thread_limits
from metabo.surrogates.ranker import RankSVM

if TYPE_CHECKING:
    from metabo.optimizer.history import History

logger = logging.getLogger(__name__)

#: The dataset features of the paper's AdaBoost study (sec. 4.1.1): K, log d, log(n/d), rho.
PAPER_FEATURES = ("scot_K", "scot_log_d", "scot_log_n_over_d", "scot_pca_rho95")

Objective = Callable[[str, dict[str, Any]], float | None]


class FeatureScaler:
    """Dataset features rescaled to [0, 1] over reference tasks (module docstring).

    ``reference``: tasks x meta-features; ``names``: the features (None: every column);
    those no reference task has are dropped. ``names_`` the features kept, ``lo_``,
    ``span_`` their minimum and range, ``fill_`` the imputed (rescaled) values.
    """

    def __init__(self, reference: pd.DataFrame, names: Sequence[str] | None = PAPER_FEATURES) -> None:
        cols = list(reference.columns) if names is None else [n for n in names if n in reference.columns]
        values = reference[cols].to_numpy(dtype=float) if cols else np.empty((len(reference), 0))
        seen = cast(np.ndarray, np.isfinite(values).any(axis=0)) if len(values) else np.zeros(len(cols), dtype=bool)
        dropped = sorted(set(names or cols) - {c for c, s in zip(cols, seen) if s})
        if dropped:
            logger.info("SCoT: no reference task has feature(s) %s; left out", dropped)
        self.names_ = [c for c, s in zip(cols, seen) if s]
        values = values[:, seen]
        self.lo_ = np.nanmin(values, axis=0) if self.names_ else np.empty(0)
        span = (np.nanmax(values, axis=0) - self.lo_) if self.names_ else np.empty(0)
        self.span_ = np.where(span > 0, span, 1.0)
        self.fill_ = np.nanmean((values - self.lo_) / self.span_, axis=0) if self.names_ else np.empty(0)

    def __call__(self, meta: Mapping[str, float]) -> np.ndarray:
        """The rescaled feature vector (q,) of one dataset's meta-features."""
        v = np.array([float(meta.get(n, math.nan)) for n in self.names_])
        scaled = (v - self.lo_) / self.span_
        return np.where(np.isfinite(scaled), scaled, self.fill_)


def _ranking_values(history: History) -> np.ndarray:
    """Values of the completed trials for ranking: failures below every success (worst + 1)."""
    done = history.completed
    v = np.array([r.value if r.ok and math.isfinite(r.value) else math.nan for r in done], dtype=float)
    finite = np.isfinite(v)
    worst = float(v[finite].max()) + 1.0 if finite.any() else 0.0
    return np.where(finite, v, worst)


class SCoT:
    """SCoT on one new dataset (module docstring); ``peers`` are the other new datasets'
    ``(meta-features, history)`` in collaborative mode (:func:`collaborative_tune`).

    Args:
        past: the past runs, with the tasks' meta-features (may hold no task).
        meta_features: the new dataset's meta-features (names as in ``past.meta_features``).
        peers: name -> (meta-features, live history) of datasets tuned collaboratively.
        features: the meta-features used as ``D`` (None: every column of the past's).
        n_init: uniform random configurations first (the paper's sec. 4.2 uses 10; sec. 4.1
            none: the first suggestion is then the collaborative default).
        max_points_per_task, max_gp_points: see the module docstring.
        gp_kernel, gp_restarts: the GP's kernel (``"se"``, the paper's SE-ARD) and restarts.
        n_random, n_local: the acquisition search (:func:`metabo.acquisition.search.maximize`).
        ranker: settings of :class:`~metabo.surrogates.ranker.RankSVM` (C, gamma, ...).
        threads: BLAS threads while suggesting (None: the libraries' default).
        seed: seeds the past-run draws, the ranker and the GP (the optimizer's seed drives
            the acquisition search).
    """

    name = "scot"

    def __init__(self, past: PastRuns, meta_features: Mapping[str, float], *,
                 peers: Mapping[str, tuple[Mapping[str, float], History]] | None = None,
                 features: Sequence[str] | None = PAPER_FEATURES, n_init: int = 0, max_points_per_task: int = 100,
                 max_gp_points: int = 300, gp_kernel: str = "se", gp_restarts: int = 1, n_random: int = 500,
                 n_local: int = 5, ranker: Mapping[str, Any] | None = None, threads: int | None = 1,
                 seed: int = 0) -> None:
        if n_init < 0 or max_points_per_task < 2 or max_gp_points < 1 or gp_restarts < 0:
            raise InputDataError("SCoT needs n_init >= 0, max_points_per_task >= 2, max_gp_points >= 1 and "
                                 "gp_restarts >= 0")
        self.past, self.n_init, self.seed, self.threads = past, n_init, int(seed), threads
        self.max_points_per_task, self.max_gp_points = max_points_per_task, max_gp_points
        self.gp_kernel, self.gp_restarts, self.n_random, self.n_local = gp_kernel, gp_restarts, n_random, n_local
        self.ranker_settings = dict(ranker or {})
        RankSVM(**self.ranker_settings)  # fail early on bad settings
        self.meta_features = {str(k): float(v) for k, v in dict(meta_features).items()}
        self.features = None if features is None else tuple(features)
        self.set_peers(peers or {})

    def set_peers(self, peers: Mapping[str, tuple[Mapping[str, float], History]]) -> None:
        """The other new datasets tuned collaboratively: name -> (meta-features, history)."""
        self.peers = dict(peers)
        tasks = [t for t in self.past.tasks if t in self.past.meta_features.index]
        if tasks:
            reference = self.past.meta_features.loc[tasks]
        else:  # no past task: the datasets being tuned (sec. 4.2 has no past either)
            rows = [self.meta_features] + [dict(m) for m, _ in self.peers.values()]
            reference = pd.DataFrame(rows, dtype=float)
        self.scaler = FeatureScaler(reference, self.features)
        self._past_cache: tuple[CASHSpace, np.ndarray, np.ndarray, np.ndarray, list[str]] | None = None

    def __repr__(self) -> str:
        return (f"SCoT(tasks={len(self.past.tasks)}, peers={len(self.peers)}, features={self.scaler.names_}, "
                f"n_init={self.n_init}, max_points_per_task={self.max_points_per_task}, "
                f"max_gp_points={self.max_gp_points}, gp_kernel={self.gp_kernel!r}, ranker={self.ranker_settings}, "
                f"seed={self.seed})")

    # ------------------------------------------------------------------ data
    def _past_points(self, space: CASHSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """``(Z, R, task index, task names)`` of the past runs valid in ``space``, at most
        ``max_points_per_task`` per task (a seeded draw); cached per space."""
        if self._past_cache is not None and self._past_cache[0] is space:
            return self._past_cache[1:]
        q = len(self.scaler.names_)
        Z, R, G = [], [], []
        names: list[str] = []
        meta = self.past.meta_features
        for k, task in enumerate(self.past.tasks):
            rows, values = [], []
            for algorithm, runs in sorted(self.past.task_runs(task).items()):
                if algorithm not in space:
                    continue
                for params, value in zip(runs.params, runs.values):
                    try:
                        rows.append(space.encode(algorithm, params))
                    except (InvalidConfigurationError, UnknownAlgorithmError):
                        continue
                    values.append(float(value))
            if len(set(values)) < 2:  # no pair
                continue
            X, v = np.array(rows), np.array(values)
            if len(v) > self.max_points_per_task:
                pick = np.sort(np.random.default_rng([self.seed, k]).choice(len(v), self.max_points_per_task,
                                                                            replace=False))
                X, v = X[pick], v[pick]
            d = self.scaler(meta.loc[task].to_dict() if task in meta.index else {})
            Z.append(np.hstack([np.broadcast_to(d, (len(v), q)), X]))
            R.append(v)
            G.append(np.full(len(v), len(names)))
            names.append(task)
        if Z:
            out = (np.vstack(Z), np.concatenate(R), np.concatenate(G), names)
        else:
            logger.info("SCoT: no past run is valid in the space; learning from the new datasets only")
            out = (np.empty((0, q + space.n_dims)), np.empty(0), np.empty(0, dtype=int), names)
        self._past_cache = (space, *out)
        return out

    def _points(self, space: CASHSpace, history: History, meta: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """``(Z, R)`` of a new dataset's completed trials (R for ranking, failures worst)."""
        done = history.completed
        q = len(self.scaler.names_)
        if not done:
            return np.empty((0, q + space.n_dims)), np.empty(0)
        return np.hstack([np.broadcast_to(self.scaler(meta), (len(done), q)), history.X(space)]), \
            _ranking_values(history)

    # ------------------------------------------------------------------ model
    def model(self, history: History, space: CASHSpace) -> tuple[Any, Callable[[np.ndarray], np.ndarray], float] | None:
        """``(M, X -> z at D_new, m_N)`` (module docstring, steps 1-3); ``m_N = inf`` with no
        observation of the new task; None when there is no preference pair to learn from."""
        from metabo.surrogates.gp import GaussianProcess

        Zp, Rp, Gp, names = self._past_points(space)
        n_past = len(names)
        blocks = [(Zp, Rp, Gp)]
        for j, (meta, h) in enumerate([(self.meta_features, history), *self.peers.values()]):
            z, r = self._points(space, h, meta)
            blocks.append((z, r, np.full(len(r), n_past + j)))
        Z = np.vstack([b[0] for b in blocks])
        R = np.concatenate([b[1] for b in blocks])
        G = np.concatenate([b[2] for b in blocks]).astype(int)
        if not any(len(np.unique(R[G == g])) > 1 for g in np.unique(G)):
            return None  # no preference pair
        ranker = RankSVM(**{"seed": self.seed, **self.ranker_settings})
        ranker.fit(Z, R, G, anchors=G >= n_past)  # step 2: f^ = B(P), every new point a centre
        f = ranker.predict(Z)
        rows = self._gp_rows(Z, G, n_past)
        gp = GaussianProcess(kernel=self.gp_kernel, n_restarts=self.gp_restarts, seed=self.seed)
        gp.fit(Z[rows], f[rows])  # step 3: M, the GP posterior of f^ at ((D, x), f^)
        own = G == n_past
        best = float(f[own].min()) if own.any() else math.inf
        d_new = self.scaler(self.meta_features)

        def at_new(X: np.ndarray) -> np.ndarray:
            return np.hstack([np.broadcast_to(d_new, (len(X), len(d_new))), X])

        return gp, at_new, best

    def _gp_rows(self, Z: np.ndarray, G: np.ndarray, own: int) -> np.ndarray:
        """The GP's points: the new task's, then whole tasks nearest to ``D_new`` (module
        docstring); the last task a seeded draw."""
        q = len(self.scaler.names_)
        d_new = self.scaler(self.meta_features)
        rows = [np.flatnonzero(G == own)]
        budget = self.max_gp_points - len(rows[0])
        others = [g for g in np.unique(G) if g != own]
        first = {g: int(np.flatnonzero(G == g)[0]) for g in others}
        order = sorted(others, key=lambda g: (float(np.sum((Z[first[g], :q] - d_new) ** 2)), g))
        for g in order:
            if budget <= 0:
                break
            idx = np.flatnonzero(G == g)
            if len(idx) > budget:
                idx = np.sort(np.random.default_rng([self.seed, int(g), 1]).choice(idx, budget, replace=False))
            rows.append(idx)
            budget -= len(idx)
        return np.concatenate(rows)

    # ------------------------------------------------------------------ strategy
    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next configuration (module docstring, step 4)."""
        with thread_limits(self.threads):
            return self._suggest(history, space, rng)

    def _suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        if len(history) < self.n_init:
            return random_configuration(space, rng, history.config_ids)
        built = self.model(history, space)
        if built is None:  # nothing to rank yet (no past, no two distinct observations)
            return random_configuration(space, rng, history.config_ids)
        gp, at_new, best = built
        from metabo.acquisition.ei import log_expected_improvement
        from metabo.acquisition.search import maximize

        if math.isfinite(best):
            def score(X: np.ndarray) -> np.ndarray:
                mean, var = gp.predict(at_new(X))
                return log_expected_improvement(mean, var, best)
        else:  # the collaborative default: the lowest posterior mean at D_new
            def score(X: np.ndarray) -> np.ndarray:
                return -gp.predict(at_new(X))[0]

        done = sorted(history.completed, key=lambda r: (not r.ok, r.value if r.ok else 0.0, r.number))
        starts = [(r.algorithm, dict(r.params)) for r in done[:5]]
        config, _ = maximize(space, score, starts=starts, evaluated=history.config_ids, n_random=self.n_random,
                             n_local=self.n_local, seed=rng)
        return config

    def posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        """The GP's posterior mean of ``f^`` at ``(D_new, x)`` for ``configs`` (lower is better)."""
        with thread_limits(self.threads):
            built = self.model(history, space)
            if built is None:
                raise InputDataError("SCoT has no preference pair to learn from yet: observe two distinct values")
            gp, at_new, _ = built
            return gp.predict(at_new(space.encode_many(list(configs))))[0]



# ---------------------------------------------------------------------- collaborative mode
def collaborative_tune(
    past: PastRuns, tasks: Mapping[str, tuple[Mapping[str, float], Objective]], space: CASHSpace, *,
    budget: int, seed: int = 0, **settings: Any,
) -> dict[str, History]:
    """SCoT's collaborative tuning (Figure 4): for ``budget`` rounds, one evaluation of every
    new dataset in ``tasks`` (name -> (meta-features, objective)) in turn, each suggestion
    retrained on the past and every new dataset's observations so far.

    ``objective(algorithm, params)`` returns the validation error (a lookup or a live
    evaluation); None or a non-finite value is recorded as a failed trial. ``settings``
    go to :class:`SCoT`. Returns each dataset's history.
    """
    from metabo.optimizer.optimizer import Optimizer

    if budget < 0 or not tasks:
        raise InputDataError("collaborative_tune needs budget >= 0 and at least one dataset")
    names = list(tasks)
    seeds = np.random.SeedSequence(seed).generate_state(len(names))
    strategies = {name: SCoT(past, tasks[name][0], seed=seed, **settings) for name in names}
    opts = {name: Optimizer(space, strategies[name], seed=int(s)) for name, s in zip(names, seeds)}
    for name in names:  # every strategy reads the others' live histories
        strategies[name].set_peers({o: (tasks[o][0], opts[o].history) for o in names if o != name})
    for _ in range(budget):
        for name in names:
            trial = opts[name].ask()
            value = tasks[name][1](trial.algorithm, dict(trial.params))
            if value is None or not math.isfinite(float(value)):
                opts[name].tell(trial, None, status="crash", message="objective returned no finite value")
            else:
                opts[name].tell(trial, float(value))
    return {name: opts[name].history for name in names}


# ---------------------------------------------------------------------- baselines
def global_default(past: PastRuns, space: CASHSpace) -> Config:
    """The global default (sec. 4.1.2): the configuration of lowest mean error over the past
    tasks. The paper's grid evaluates every configuration on every task; here the mean is
    taken over the configurations evaluated on the most tasks (normally all of them)."""
    values: dict[str, list[float]] = {}
    configs: dict[str, Config] = {}
    for (_, algorithm), runs in sorted(past.groups.items()):
        if algorithm not in space:
            continue
        for cid, params, value in zip(runs.config_ids, runs.params, runs.values):
            values.setdefault(cid, []).append(float(value))
            configs.setdefault(cid, (algorithm, params))
    if not values:
        raise InputDataError("no past run is in the space: the global default needs past runs of its algorithms")
    most = max(len(v) for v in values.values())
    n_tasks = len({t for t, a in past.groups if a in space})
    if most < n_tasks:
        logger.info("global default: no configuration was run on all %d tasks; mean over the %d-task ones",
                    n_tasks, most)
    mean = {c: float(np.mean(v)) for c, v in values.items() if len(v) == most}
    best = min(mean, key=lambda c: (mean[c], c))
    return space.normalize(*configs[best])


class GlobalDefault:
    """The global default as a strategy: that one configuration first (the paper's curve is
    then flat); later asks, to fill a budget, get uniform random configurations."""

    name = "global-default"

    def __init__(self, past: PastRuns) -> None:
        self.past = past
        self._default: tuple[CASHSpace, Config] | None = None

    def __repr__(self) -> str:
        return f"GlobalDefault(tasks={len(self.past.tasks)})"

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The global default of the past tasks first; once asked, random configurations."""
        if self._default is None or self._default[0] is not space:
            self._default = (space, global_default(self.past, space))
        config = self._default[1]
        if config_id(*config) not in history.config_ids:
            return config[0], dict(config[1])
        return random_configuration(space, rng, history.config_ids)


def collaborative_default(past: PastRuns, meta_features: Mapping[str, float], space: CASHSpace, *,
                          seed: int = 0, **settings: Any) -> Config:
    """The collaborative default (sec. 4.1.2): SVMrank's surrogate regressed by a GP, and
    the configuration of lowest posterior mean at the new dataset's features (SCoT's first
    suggestion with ``n_init=0``); ``settings`` go to :class:`SCoT`."""
    from metabo.optimizer.optimizer import Optimizer

    trial = Optimizer(space, SCoT(past, meta_features, seed=seed, **settings), seed=seed).ask()
    return trial.algorithm, dict(trial.params)


__all__ = ["PAPER_FEATURES", "FeatureScaler", "GlobalDefault", "SCoT", "collaborative_default",
           "collaborative_tune", "global_default"]
