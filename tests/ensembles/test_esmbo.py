"""ESMBO: with one replicate and no bootstrap it is SMBO (same picks, its arg min); with
bootstrap replicates each history holds every model's risk on its own replicate."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.ensembles.esmbo import ESMBO, default_replicates
from metabo.evaluation.metrics import get_metric
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.optimizer import GPBO, Optimizer
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()
N_ROWS = 60
Y = np.random.default_rng(0).integers(2, size=N_ROWS)


def proba(algorithm: str, params: dict) -> np.ndarray:
    """A model's validation probabilities: better configurations are surer of the truth."""
    f = OBJECTIVE(algorithm, params)
    noise = np.random.default_rng(int(config_id(algorithm, params)[:8], 16)).normal(0, 1, N_ROWS)
    q = 1 / (1 + np.exp(-(2.0 - 2.0 * f + noise)))  # probability of the true class
    P = np.empty((N_ROWS, 2))
    P[np.arange(N_ROWS), Y] = q
    P[np.arange(N_ROWS), 1 - Y] = 1 - q
    return P


def _base(seed: int):
    return lambda j: GPBO(n_init=3, n_random=100, n_local=3, n_restarts=0, seed=seed)


def test_one_replicate_without_bootstrap_is_smbo():
    loss = get_metric("log_loss")
    smbo = Optimizer(SPACE, GPBO(n_init=3, n_random=100, n_local=3, n_restarts=0, seed=1), seed=2)
    esmbo = ESMBO(_base(1), Y, n_replicates=1, metric="log_loss", bootstrap=False)
    ens = Optimizer(SPACE, esmbo, seed=2)
    for _ in range(10):
        a, b = smbo.ask(), ens.ask()
        assert a.config_id == b.config_id
        smbo.tell(a, loss(Y, proba(a.algorithm, a.params)))
        P = proba(b.algorithm, b.params)
        esmbo.observe(b.number, P)
        (risk,) = esmbo.risks[b.number]
        ens.tell(b, loss(Y, P))
        assert risk == pytest.approx(loss(Y, P))
    best = min(smbo.history.completed, key=lambda r: r.value).number
    assert esmbo.members() == [best]


def test_replicates_round_robin_and_members():
    esmbo = ESMBO(_base(0), Y, n_replicates=6, metric="error_rate", seed=3)
    opt = Optimizer(SPACE, esmbo, seed=0)
    for _ in range(12):
        t = opt.ask()
        P = proba(t.algorithm, t.params)
        esmbo.observe(t.number, P)
        risks = esmbo.risks[t.number]
        err = (P.argmax(axis=1) != Y).astype(float)
        expected = [err[r].mean() for r in esmbo.rows]  # error rate on each bootstrap replicate
        np.testing.assert_allclose(risks, expected)
        opt.tell(t, float(err.mean()))
    members = esmbo.members()
    assert len(members) == 6
    R = np.stack([esmbo.risks[k] for k in range(12)])
    assert all(R[m, j] == R[:, j].min() for j, m in enumerate(members))
    P = esmbo.predict_proba()
    assert P.shape == (N_ROWS, 2) and np.allclose(P.sum(axis=1), 1)
    assert set(np.unique(esmbo.predict())) <= {0, 1}


def test_a_trial_told_without_predictions_is_refused():
    esmbo = ESMBO(_base(0), Y, n_replicates=2)
    opt = Optimizer(SPACE, esmbo, seed=0)
    t = opt.ask()
    opt.tell(t, 0.5)
    with pytest.raises(InputDataError, match="observe"):
        opt.ask()
    with pytest.raises(InputDataError):
        ESMBO(_base(0), Y)  # neither n_replicates nor budget


@pytest.mark.parametrize(("budget", "expected"), [(2, 1), (12, 1), (16, 2), (25, 3), (100, 12), (1000, 125)])
def test_replicates_scale_with_the_budget_each_proposing_at_least_eight(budget, expected):
    n = default_replicates(budget)
    assert n == expected
    assert 1 <= n <= max(1, budget // 2)  # the paper's N = floor(M / 2) is the limit
    assert n == 1 or budget / n >= 8
    assert default_replicates(budget, min_own=2) == max(1, budget // 2)  # the paper's count
    assert ESMBO(_base(0), Y, budget=budget).n_replicates == n


def test_final_on_all_rows_without_bootstrap_is_the_arg_min():
    """``final(rows)`` redoes the last step on ``rows``: with bootstrap off, every replicate
    is ``rows`` itself, so the member is the trial of lowest error there (ties: earliest)."""
    esmbo = ESMBO(_base(0), Y, n_replicates=3, bootstrap=False)
    opt = Optimizer(SPACE, esmbo, seed=0)
    errors = {}
    for _ in range(6):
        t = opt.ask()
        P = proba(t.algorithm, t.params)
        esmbo.observe(t.number, P)
        opt.tell(t, float(np.mean(P.argmax(axis=1) != Y)))
        errors[t.number] = P
    rows = np.arange(0, N_ROWS, 2)
    on_rows = {k: float(np.mean(P[rows].argmax(axis=1) != Y[rows])) for k, P in errors.items()}
    best = min(on_rows, key=lambda k: (on_rows[k], k))
    assert esmbo.final(rows) == {best: 1.0}
    assert esmbo.final(np.arange(N_ROWS)) == esmbo.ensemble()
