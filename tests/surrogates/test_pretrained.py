"""GP hyperparameter priors pre-trained on past tasks (metabo.surrogates.pretrained): the
stacked data, the lengthscales recovered from tasks whose scale is known, the prior's
per-dimension centre, and the warm start's search phase using it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import approx_fprime

from benchmarks.warm_variants import PortfolioVariant
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Float
from metabo.space.space import SearchSpace
from metabo.surrogates.pretrained import pretrain_theta, pretrained_priors, stacked_past
from metabo.surrogates.priors import GPPriors

SPACE = CASHSpace({
    "a": SearchSpace("a", (Float("u", 0.0, 1.0), Float("v", 0.0, 1.0))),
    "b": SearchSpace("b", (Float("w", 0.0, 1.0),)),
    "never": SearchSpace("never", (Float("q", 0.0, 1.0),)),
})


def past_of(n_tasks: int = 6, n: int = 30, seed: int = 0) -> PastRuns:
    """Tasks whose value varies fast along u (period ~0.3), slowly along v, and along w of b."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        phase, offset = rng.uniform(0, 2 * np.pi), rng.uniform(0, 5)
        for _ in range(n):
            u, v, w = rng.uniform(size=3)
            rows.append((f"t{t}", "a", {"u": u, "v": v}, offset + np.sin(20 * u + phase) + 0.3 * v))
            rows.append((f"t{t}", "b", {"w": w}, offset + 0.5 * np.cos(3 * w)))
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return PastRuns.from_frame(frame)


def test_stacked_past_standardizes_each_task_and_groups_each_task_algorithm_pair():
    past = past_of(n_tasks=3, n=30)
    X, z, groups = stacked_past(past, SPACE, warping="none", max_per_block=10, seed=1)
    assert X.shape == (60, SPACE.n_dims) and len(np.unique(groups)) == 6
    assert all(np.sum(groups == g) == 10 for g in np.unique(groups))  # capped per block
    for t in range(3):  # two blocks per task, in order
        zt = z[np.isin(groups, [2 * t, 2 * t + 1])]
        assert zt.mean() == pytest.approx(0.0, abs=1e-12) and zt.std() == pytest.approx(1.0)
    X2, z2, g2 = stacked_past(past, SPACE, warping="none", max_per_block=10, seed=1)
    assert np.array_equal(X, X2) and np.array_equal(z, z2)  # seeded
    with pytest.raises(InputDataError):
        stacked_past(past, SPACE, max_per_block=1)
    with pytest.raises(InputDataError, match="no past task"):
        stacked_past(past.only(algorithms=["a"]), CASHSpace({"never": SPACE["never"]}))


def test_pretrained_lengthscales_are_short_where_the_tasks_vary_fast():
    theta, informed = pretrain_theta(past_of(), SPACE, warping="none")
    u, v = SPACE.slices["a"].start, SPACE.slices["a"].start + 1
    w, q = SPACE.slices["b"].start, SPACE.slices["never"].start
    assert informed[[u, v, w]].all()
    assert not informed[q] and not informed[: len(SPACE)].any()  # never run; one-hot constant within a block
    assert np.exp(theta[u]) < 0.3 < np.exp(theta[v])  # sin(20 u) against a slow linear v


def test_pretrained_priors_centre_the_informed_lengthscales_and_keep_the_base_elsewhere():
    past = past_of()
    theta, informed = pretrain_theta(past, SPACE, warping="none")
    pri = pretrained_priors(past, SPACE, scale=0.3, warping="none")
    assert np.allclose(pri.lengthscale_loc[informed], theta[: len(informed)][informed])
    assert np.all(pri.lengthscale_loc[~informed] == 0.0)
    assert np.all(pri.lengthscale_scale[informed] == 0.3) and np.all(pri.lengthscale_scale[~informed] == 1.0)
    with pytest.raises(InputDataError):
        pretrained_priors(past, SPACE, scale=0.0)


def test_per_dimension_prior_log_density_and_its_gradient():
    d = 3
    pri = GPPriors(lengthscale_loc=np.array([0.0, -1.0, 2.0]), lengthscale_scale=np.array([1.0, 0.5, 2.0]))
    theta = np.array([0.3, -0.2, 1.0, 0.1, np.log(0.01), 0.2])
    lp, g = pri.log_prob(theta, d, grad=True)
    scalar = GPPriors()
    expected = scalar.log_prob(theta, d)[0] - 0.5 * 0.3**2 - 0.5 * (0.8 / 0.5) ** 2 - 0.5 * (1.0 / 2.0) ** 2 \
        + 0.5 * (0.3**2 + (-0.2) ** 2 + 1.0**2)
    assert lp == pytest.approx(expected)
    numeric = approx_fprime(theta, lambda th: pri.log_prob(th, d)[0], 1e-7)
    assert np.allclose(g, numeric, atol=1e-5)


def test_the_warm_starts_search_phase_uses_the_pretrained_priors():
    from metabo.optimizer import Optimizer

    past = past_of()
    strategy = PortfolioVariant(past, None, n_portfolio=2, n_design=2, pretrained=0.5, seed=0)
    opt = Optimizer(SPACE, strategy, seed=0)
    for _ in range(4):
        trial = opt.ask()
        opt.tell(trial, float(np.sin(20 * trial.params.get("u", 0.5))))
    assert strategy.then.priors is not None
    assert np.asarray(strategy.then.priors.lengthscale_loc).shape == (SPACE.n_dims,)
    with pytest.raises(InputDataError):
        PortfolioVariant(past, None, pretrained=0.0)
