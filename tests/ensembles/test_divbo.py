"""DivBO (Shen et al. 2022): the saturating weight of eq. 5, the diversity surrogate's
symmetric training pairs and its ranking of held-out pairs, and the rank-sum acquisition at
its two extremes (performance alone, diversity dominating)."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.ensembles.divbo import DivBO, DiversitySurrogate, diversity_weight, surrogate_kendall_tau
from metabo.ensembles.diversity import diversity
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.optimizer import GPBO, Optimizer
from metabo.strategies import RandomSearch
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()
N_ROWS = 80
Y = np.random.default_rng(0).integers(2, size=N_ROWS)
Z = np.random.default_rng(1).normal(size=N_ROWS)


def proba(algorithm: str, params: dict) -> np.ndarray:
    """Probabilities that vary smoothly with the configuration (so diversity is learnable)."""
    x = params.get("u", params.get("v"))
    shift = 3.0 * x + (2.0 if algorithm == "b" else 0.0)
    p1 = 1.0 / (1.0 + np.exp(-(Z * np.cos(shift) + (2 * Y - 1) * (1.5 - OBJECTIVE(algorithm, params)))))
    return np.column_stack([1 - p1, p1])


def test_weight_saturates():
    w = [diversity_weight(t) for t in range(0, 200, 5)]
    assert w[0] == 0.0 and all(a < b for a, b in zip(w[:15], w[1:15])) and all(a <= b for a, b in zip(w, w[1:]))
    assert all(x <= 0.05 / 2 for x in w) and w[-1] == pytest.approx(0.05 / 2, rel=1e-6)


def test_pairs_in_both_orders():
    X = np.arange(6, dtype=float).reshape(3, 2)
    D = np.array([[0, 0.2, 0.5], [0.2, 0, 0.1], [0.5, 0.1, 0]])
    F, t = DiversitySurrogate.pairs(X, D)
    assert len(F) == 6  # 3 * 2 ordered pairs, no self pairs
    rows = {(tuple(f[:2]), tuple(f[2:])): v for f, v in zip(F, t)}
    for (a, b), v in rows.items():
        assert rows[(b, a)] == v


def _models(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    configs = SPACE.sample(seed, n)
    return SPACE.encode_many(configs), np.stack([proba(a, p) for a, p in configs]), configs


def test_surrogate_ranks_held_out_pairs():
    X, P, _ = _models(40, 3)
    tau = surrogate_kendall_tau(X, P, holdout=0.25, seed=0)
    assert tau > 0.5
    model = DiversitySurrogate(seed=0).fit(X, P)
    mean, var = model.predict(X[:5], X[5:10])
    assert mean.shape == var.shape == (5,) and np.all(var >= 0)
    truth = [diversity(P[i], P[i + 5]) for i in range(5)]
    assert np.max(np.abs(mean - truth)) < 0.15


def _run(beta: float, n: int = 9, n_init: int = 4) -> tuple[DivBO, Optimizer]:
    divbo = DivBO(GPBO(n_init=2, n_random=100, n_local=2, n_restarts=0, seed=0), Y, beta=beta, tau=5.0,
                  n_init=n_init, n_random=150, n_local=3, ensemble_size=5, seed=0)
    opt = Optimizer(SPACE, divbo, seed=0)
    for _ in range(n):
        t = opt.ask()
        P = proba(t.algorithm, t.params)
        opt.tell(t, float(np.mean(P.argmax(axis=1) != Y)))
        divbo.observe(t.number, P)
    return divbo, opt


def test_without_diversity_the_pick_is_the_best_acquisition():
    divbo, opt = _run(beta=0.0)
    assert divbo.last_["w"] == 0.0 and divbo.last_["r_perf"] == 1.0
    ids = [config_id(r.algorithm, r.params) for r in opt.history]
    assert len(set(ids)) == len(ids)  # never asks a configuration twice


def test_a_dominant_weight_picks_the_most_diverse_candidate():
    divbo, _ = _run(beta=1e6)
    assert divbo.last_["w"] > 1e5 and divbo.last_["r_div"] == 1.0
    weights = divbo.ensemble()
    assert sum(weights.values()) == pytest.approx(1.0) and set(weights) <= set(divbo.probas)


def test_needs_a_performance_acquisition():
    with pytest.raises(InputDataError, match="acquisition"):
        DivBO(RandomSearch(), Y)
