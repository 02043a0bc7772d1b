"""SCoT: surrogate-based collaborative tuning (Bardenet, Brendel, Kégl and Sebag 2013), and
its baselines, global default and collaborative default.

Notation (sec. 3, Figures 3 and 4): observations ``O = (D_i, x_i, R_i)``: dataset features
``D`` (here the paper's three, ``K``, ``log d``, ``log(n/d)``: the meta-features
``scot_K``, ``scot_log_d``, ``scot_log_n_over_d``, z-scored over the past tasks), the
configuration ``x`` (its CASH encoding, ``CASHSpace.encode``: one-hot algorithm and every
block, inactive coordinates imputed; the paper tunes one algorithm, this generalizes it to
CASH) and the validation error ``R``. Each suggestion (Figure 3, lines 2-6):

1. pairwise rankings ``P`` within each task, the past tasks' and the new one's (eq. 2);
2. the latent ranker ``f^ = B(P)`` (:class:`~metabo.surrogates.ranker.RankSVM`);
3. ``f^`` evaluated at the observed points, and a GP (Matérn 5/2 ARD here, SE-ARD in the
   paper) regressed on them;
4. the next ``x`` maximizes EI of that GP at ``(D_new, x)``
   (:func:`metabo.acquisition.search.maximize`), against the best ``f^`` of the new task.

Scale choices (the paper's tasks had about 100 grid points each): the ranker sees at most
``max_points_per_task`` seeded runs of each past task; the GP is regressed on the new
task's observations, its collaborators' and at most ``max_gp_points`` past points from the
past tasks nearest in feature space (a GP on every past run would be cubic in 20,000).

Collaborative tuning (Figure 4, :func:`collaborative_tune`): several new datasets tuned in
turn, one evaluation each per round, every suggestion retrained on everything seen so far
(the past and every new dataset's observations).

Baselines (sec. 4.1.2): :func:`global_default`, the configuration with the lowest mean
error over the past tasks (among those evaluated on every task); :func:`collaborative_default`,
one step of SCoT with no observation of the new task (the GP mean's minimizer at its
features).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration
from metabo.surrogates.ranker import RankSVM

if TYPE_CHECKING:
    from metabo.optimizer.history import History

logger = logging.getLogger(__name__)

FEATURES = ("scot_K", "scot_log_d", "scot_log_n_over_d")


class _Features:
    """z-scored dataset features (statistics of the past tasks; a missing value is the mean, 0)."""

    def __init__(self, past: PastRuns, names: Sequence[str] = FEATURES) -> None:
        mf = past.meta_features.reindex(columns=list(names))
        values = mf.to_numpy(float)
        self.names = list(names)
        self.mu = np.nan_to_num(np.nanmean(values, axis=0)) if len(values) else np.zeros(len(names))
        sd = np.nanstd(values, axis=0) if len(values) else np.ones(len(names))
        self.sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
        self.table = {t: self(mf.loc[t].to_dict()) for t in mf.index}

    def __call__(self, meta: Mapping[str, float]) -> np.ndarray:
        v = np.array([float(meta.get(n, np.nan)) for n in self.names])
        z = (v - self.mu) / self.sd
        return np.where(np.isfinite(z), z, 0.0)


class SCoT:
    """SCoT for one new dataset (module docstring); ``peers`` hold the other new datasets'
    (features, history) in collaborative mode.

    Args:
        past: the past runs, with meta-features.
        meta_features: the new dataset's meta-features.
        n_init: random evaluations first (0: the first suggestion is the collaborative default).
        max_points_per_task, max_gp_points: see the module docstring.
        ranker: settings of :class:`RankSVM`.
    """

    name = "scot"

    def __init__(self, past: PastRuns, meta_features: Mapping[str, float], *, n_init: int = 0,
                 max_points_per_task: int = 100, max_gp_points: int = 300, n_random: int = 500, n_local: int = 5,
                 ranker: Mapping[str, Any] | None = None, seed: int = 0) -> None:
        if n_init < 0:
            raise InputDataError("n_init must be >= 0")
        self.past, self.n_init, self.seed = past, n_init, seed
        self.max_points_per_task, self.max_gp_points = max_points_per_task, max_gp_points
        self.n_random, self.n_local = n_random, n_local
        self.ranker_settings = dict(ranker or {})
        self.features = _Features(past)
        self.meta_features = {str(k): float(v) for k, v in dict(meta_features).items()}
        self.peers: dict[str, tuple[Mapping[str, float], History]] = {}
        self._past_cache: tuple[CASHSpace, np.ndarray, np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        return (f"SCoT(tasks={len(self.past.tasks)}, n_init={self.n_init}, max_points_per_task="
                f"{self.max_points_per_task}, max_gp_points={self.max_gp_points}, seed={self.seed})")

    # ------------------------------------------------------------------ data
    def _past_points(self, space: CASHSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Z, R, task index) of the past runs valid in ``space`` (subsampled per task)."""
        if self._past_cache is None or self._past_cache[0] is not space:
            Z, R, G = [], [], []
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
                        values.append(value)
                if len(rows) < 2:
                    continue
                X, v = np.array(rows), np.array(values)
                if len(v) > self.max_points_per_task:
                    rng = np.random.default_rng([self.seed, k])
                    pick = np.sort(rng.choice(len(v), self.max_points_per_task, replace=False))
                    X, v = X[pick], v[pick]
                f = np.broadcast_to(self.features.table.get(task, np.zeros(len(self.features.names))),
                                    (len(v), len(self.features.names)))
                Z.append(np.hstack([f, X]))
                R.append(v)
                G.append(np.full(len(v), k))
            if not Z:
                raise InputDataError("no past run is valid in the space: SCoT has nothing to learn from")
            self._past_cache = (space, np.vstack(Z), np.concatenate(R), np.concatenate(G))
        return self._past_cache[1], self._past_cache[2], self._past_cache[3]

    def _new_points(self, space: CASHSpace, history: History, meta: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        done = history.completed
        if not done:
            return np.empty((0, len(self.features.names) + space.n_dims)), np.empty(0)
        X = history.X(space)
        f = np.broadcast_to(self.features(meta), (len(done), len(self.features.names)))
        return np.hstack([f, X]), history.y

    # ------------------------------------------------------------------ model
    def model(self, history: History, space: CASHSpace) -> tuple[Any, Callable[[np.ndarray], np.ndarray], float]:
        """(GP, ``X -> z`` at the new task's features, best f^ of the new task or +inf)."""
        from metabo.surrogates.gp import GaussianProcess

        Zp, Rp, Gp = self._past_points(space)
        blocks = [(Zp, Rp, Gp)]
        z_new, r_new = self._new_points(space, history, self.meta_features)
        n_tasks = int(Gp.max()) + 1
        blocks.append((z_new, r_new, np.full(len(r_new), n_tasks)))
        for j, (meta, h) in enumerate(self.peers.values(), start=1):
            zp, rp = self._new_points(space, h, meta)
            blocks.append((zp, rp, np.full(len(rp), n_tasks + j)))
        Z = np.vstack([b[0] for b in blocks])
        R = np.concatenate([b[1] for b in blocks])
        G = np.concatenate([b[2] for b in blocks])
        ranker = RankSVM(seed=self.seed, **self.ranker_settings).fit(Z, R, G)
        f = ranker.predict(Z)
        # GP points: the new task's, the peers', and past points of the nearest past tasks
        new_rows = np.flatnonzero(G >= n_tasks)
        feats = self.features(self.meta_features)
        task_feats = {int(g): Z[np.flatnonzero(G == g)[0], : len(feats)] for g in np.unique(Gp)}
        order = sorted(task_feats, key=lambda g: (float(np.sum((task_feats[g] - feats) ** 2)), g))
        past_rows: list[int] = []
        budget = self.max_gp_points - len(new_rows)
        for g in order:
            if budget <= 0:
                break
            rows = np.flatnonzero(G == g)[:budget]
            past_rows.extend(rows.tolist())
            budget -= len(rows)
        rows = np.r_[np.array(past_rows, dtype=int), new_rows]
        gp = GaussianProcess(kernel="matern52", n_restarts=1, seed=self.seed).fit(Z[rows], f[rows])
        own = np.flatnonzero(G == n_tasks)
        best = float(f[own].min()) if len(own) else float("inf")

        def at_new(X: np.ndarray) -> np.ndarray:
            return np.hstack([np.broadcast_to(feats, (len(X), len(feats))), X])

        return gp, at_new, best

    # ------------------------------------------------------------------ suggest
    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        if len(history) < self.n_init:
            return random_configuration(space, rng, history.config_ids)
        from metabo.acquisition.ei import log_expected_improvement
        from metabo.acquisition.search import maximize

        gp, at_new, best = self.model(history, space)
        if not np.isfinite(best):  # no observation of the new task: the collaborative default
            def score(X: np.ndarray) -> np.ndarray:
                return -gp.predict(at_new(X))[0]
        else:
            def score(X: np.ndarray) -> np.ndarray:
                return log_expected_improvement(*gp.predict(at_new(X)), best)

        done = history.completed
        starts = [(r.algorithm, dict(r.params)) for r in sorted(done, key=lambda r: r.value)[:5]] if done else []
        config, _ = maximize(space, score, starts=starts, evaluated=history.config_ids, n_random=self.n_random,
                             n_local=self.n_local, seed=rng)
        return config


def global_default(past: PastRuns, space: CASHSpace) -> Config:
    """The configuration with the lowest mean error over the past tasks, among those
    evaluated on every task (sec. 4.1.2, "global default")."""
    by: dict[str, list[float]] = {}
    configs: dict[str, Config] = {}
    for (task, algorithm), runs in past.groups.items():
        if algorithm not in space:
            continue
        for cid, params, value in zip(runs.config_ids, runs.params, runs.values):
            by.setdefault(cid, []).append(float(value))
            configs[cid] = (algorithm, params)
    n_tasks = len({t for t, a in past.groups if a in space})
    full = {c: np.mean(v) for c, v in by.items() if len(v) == n_tasks}
    if not full:
        raise InputDataError("no configuration was evaluated on every past task")
    cid = min(full, key=lambda c: (full[c], c))
    return space.normalize(*configs[cid])


class GlobalDefault:
    """The global default first (a single configuration in the paper, whose curve is then
    flat); later asks get uniform random configurations, so that the strategy can fill a
    budget."""

    name = "global-default"

    def __init__(self, past: PastRuns) -> None:
        self.past = past

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        if not len(history):
            return global_default(self.past, space)
        return random_configuration(space, rng, history.config_ids)


def collaborative_default(past: PastRuns, meta_features: Mapping[str, float], space: CASHSpace, *,
                          seed: int = 0) -> Config:
    """One step of SCoT with no observation of the new task (sec. 4.1.2)."""
    from metabo.optimizer.optimizer import Optimizer

    trial = Optimizer(space, SCoT(past, meta_features, seed=seed), seed=seed).ask()
    return trial.algorithm, dict(trial.params)


def collaborative_tune(
    past: PastRuns, tasks: Mapping[str, tuple[Mapping[str, float], Callable[[str, dict[str, Any]], float]]],
    space: CASHSpace, *, budget: int, seed: int = 0, n_init: int = 0, **settings: Any,
) -> dict[str, History]:
    """Figure 4: tune every new dataset in ``tasks`` (name -> (meta-features, objective))
    in turn for ``budget`` rounds, each suggestion trained on everything seen so far."""
    from metabo.optimizer.optimizer import Optimizer

    strategies = {name: SCoT(past, meta, n_init=n_init, seed=seed, **settings) for name, (meta, _) in tasks.items()}
    opts = {name: Optimizer(space, strategies[name], seed=seed) for name in tasks}
    for _ in range(budget):
        for name, (meta, objective) in tasks.items():
            strategies[name].peers = {o: (tasks[o][0], opts[o].history) for o in tasks if o != name}
            trial = opts[name].ask()
            opts[name].tell(trial, float(objective(trial.algorithm, dict(trial.params))))
    return {name: opt.history for name, opt in opts.items()}


__all__ = ["FEATURES", "GlobalDefault", "SCoT", "collaborative_default", "collaborative_tune", "global_default"]
