"""Strategy contract (valid, reproducible, seed-dependent, no repeats) and GP-BO vs random search."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.exceptions import InputDataError
from metabo.optimizer import GPBO, Optimizer, PerAlgorithmGPBO, RandomSearch, make_strategy
from metabo.optimizer.history import History, TrialRecord

FAST = {"n_restarts": 0, "refit_every": 4, "n_random": 100, "n_local": 3, "n_starts": 3}
STRATEGIES = {
    "random": RandomSearch,
    "gp": lambda: GPBO(kernel="conditional", n_init=3, **FAST),
    "gp-dense": lambda: GPBO(kernel="dense", n_init=3, **FAST),
    "gp-per-algorithm": lambda: PerAlgorithmGPBO(**FAST),
}


def run(space, strategy, objective, n: int, seed: int) -> Optimizer:
    opt = Optimizer(space, strategy, seed=seed)
    for _ in range(n):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    return opt


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_contract_valid_reproducible_seeded_distinct(small_cash, name):
    space, objective = small_cash
    first = run(space, STRATEGIES[name](), objective, 8, seed=0)
    again = run(space, STRATEGIES[name](), objective, 8, seed=0)
    other = run(space, STRATEGIES[name](), objective, 8, seed=1)
    ids = [r.config_id for r in first.history]
    assert ids == [r.config_id for r in again.history]
    assert ids != [r.config_id for r in other.history]
    assert len(set(ids)) == len(ids)
    for r in first.history:
        space.validate(r.algorithm, r.params)
    if name == "gp-per-algorithm":  # every algorithm tried twice before any GP
        assert sorted(r.algorithm for r in first.history[:4]) == ["a", "a", "b", "b"]


def test_gp_beats_random_search_on_a_quadratic(quad):
    space, objective = quad
    seeds = range(4)
    gp = [run(space, GPBO(n_init=5, seed=s, **FAST), objective, 15, s).history.best().value for s in seeds]
    rs = [run(space, RandomSearch(), objective, 15, s).history.best().value for s in seeds]
    assert all(g < r for g, r in zip(gp, rs))
    assert np.mean(gp) < 0.1 * np.mean(rs)


def test_failed_trials_are_imputed_and_gp_still_suggests(small_cash):
    space, objective = small_cash
    opt = Optimizer(space, GPBO(n_init=2, **FAST), seed=0)
    for i in range(6):
        t = opt.ask()
        if i % 2:
            opt.tell(t, None, status="timeout")
        else:
            opt.tell(t, objective(t.algorithm, t.params))
    y = opt.history.y
    ok = np.array([r.ok for r in opt.history.completed])
    assert np.all(y[~ok] == y[ok].max())
    t = opt.ask()
    space.validate(t.algorithm, t.params)


def test_per_algorithm_passes_over_an_exhausted_algorithm(small_cash):
    space, objective = small_cash
    from metabo.space.hyperparameters import Constant
    from metabo.space.space import SearchSpace

    one = type(space)({**space.spaces, "c": SearchSpace("c", (Constant("s", "svd"),))})
    opt = run(one, PerAlgorithmGPBO(**FAST), lambda a, p: 2.0 if a == "c" else objective(a, p), 9, seed=0)
    algos = [r.algorithm for r in opt.history]
    assert algos.count("c") == 1 and algos[:5].count("a") == 2 and algos[:5].count("b") == 2


def test_history_views():
    h = History()
    for i, (a, v, s) in enumerate([("x", 0.5, "ok"), ("y", np.nan, "crash"), ("x", 0.2, "ok"), ("y", 0.9, "ok")]):
        h.add(TrialRecord(i, a, {"p": i}, f"id{i}"))
        h.complete(i, value=v, status=s)
    h.add(TrialRecord(4, "x", {"p": 4}, "id4"))
    assert len(h) == 5 and len(h.completed) == 4 and [r.number for r in h.pending] == [4]
    assert h.y.tolist() == [0.5, 0.9, 0.2, 0.9]
    assert h.best().number == 2 and [r.number for r in h.incumbents()] == [0, 2]
    assert "id4" in h and h.config_ids == {f"id{i}" for i in range(5)}
    assert TrialRecord.from_json(h[1].to_json()).status == "crash"


def test_make_strategy():
    assert make_strategy("random").name == "random"
    assert make_strategy("gp", seed=3).seed == 3 and make_strategy("gp-dense").kernel == "dense"
    assert make_strategy("gp-per-algorithm").name == "gp-per-algorithm"
    with pytest.raises(InputDataError, match="unknown strategy"):
        make_strategy("tpe")


@pytest.mark.parametrize("warping", ["yeo-johnson", "none"])
def test_warped_models_are_extended_between_refits_from_scratch(quad, warping):
    """The warping is fitted on the same prefix as the hyperparameters, so the cached GP
    is extended by ``add`` (not refitted) until the next multiple of ``refit_every``; the
    extended model equals one fitted with the same warped targets."""
    space, objective = quad
    strategy = GPBO(n_init=3, seed=0, warping=warping, **{**FAST, "refit_every": 5, "n_random": 30})
    opt = run(space, strategy, objective, 6, seed=0)  # GP fitted on 5 (m = 5), 0 added
    model_5 = strategy._cache._entry[-1]
    for _ in range(3):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
        assert strategy._cache._entry[-1] is model_5  # extended, not rebuilt
    h = opt.history
    model, z = strategy._fit(h, space)
    assert model is model_5 and len(z) == 9
    np.testing.assert_allclose(model.y_, z)  # the model holds the warped values
    from metabo.surrogates.warping import warp

    np.testing.assert_array_equal(z, warp(h.y, 5, warping))
    assert np.argmin(z) == np.argmin(h.y)


def test_unknown_warping_is_refused():
    with pytest.raises(InputDataError):
        GPBO(warping="log")


def test_selection_model_is_the_strategys_posterior_for_posterior_mean_and_none_for_argmin():
    from metabo.strategies import GPBO, RandomSearch, selection_model

    gp, rs = GPBO(seed=0), RandomSearch()
    assert selection_model(gp, "posterior_mean") is gp
    assert isinstance(selection_model(rs, "posterior_mean", seed=3), GPBO)
    assert selection_model(gp, "argmin") is None and selection_model(rs, "argmin") is None
