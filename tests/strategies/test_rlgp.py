"""RLGP and RGPE: weights with known answers, the strategy contract, transfer that helps."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.optimizer import Optimizer, RandomSearch
from metabo.optimizer.history import History
from metabo.strategies.rgpe import RGPE
from metabo.strategies.rlgp import RLGP
from metabo.surrogates.bank import SurrogateBank, space_encoder
from metabo.testing.problems import noise_objective, shared_past, two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()


TASKS = {"copy": OBJECTIVE, "anti": lambda a, p: -OBJECTIVE(a, p), "noise": noise_objective(1)}


@pytest.fixture(scope="module")
def bank() -> SurrogateBank:
    return SurrogateBank.fit(shared_past(SPACE, TASKS), space_encoder(SPACE), max_points=None, seed=0)


def history_of(n: int, seed: int = 5) -> History:
    opt = Optimizer(SPACE, RandomSearch(), seed=seed)
    for _ in range(n):
        t = opt.ask()
        opt.tell(t, OBJECTIVE(t.algorithm, t.params))
    return opt.history


def weights_of(cls, bank, h):
    strategy = cls(bank, n_samples=200, seed=0)
    return strategy.weights(h, SPACE, strategy._target_models(h, SPACE), np.random.default_rng(0))


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_weights_go_to_the_copy_and_not_to_the_anti_correlated_task(bank, cls):
    """A smooth target its own GP also ranks well: ties between the copy and the target go
    to the target (RLGP's rule), the rest to the copy; nothing to the reversed task."""
    for a, w in weights_of(cls, bank, history_of(12)).items():
        if not w:
            continue
        base = w["copy"] + w["anti"] + w["noise"]
        assert w["copy"] >= 0.95 * base and w["copy"] + w["target"] >= 0.98, (a, w)
        assert w["anti"] == 0.0 and sum(w.values()) == pytest.approx(1.0), (a, w)


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_contract_valid_reproducible_distinct(bank, cls):
    def run(seed):
        opt = Optimizer(SPACE, cls(bank, n_random=100, seed=seed), seed=seed)
        for _ in range(8):
            t = opt.ask()
            opt.tell(t, OBJECTIVE(t.algorithm, t.params))
        return [r.config_id for r in opt.history], opt

    first, opt = run(0)
    assert first == run(0)[0] and first != run(1)[0]
    assert len(set(first)) == len(first)
    for r in opt.history:
        SPACE.validate(r.algorithm, r.params)


@pytest.mark.parametrize("search", ["algorithm", "joint"])
def test_transfer_from_a_copy_finds_the_optimum_sooner_than_random_search(bank, search):
    best_rlgp, best_random = [], []
    for seed in range(3):
        for cls, out in ((RLGP, best_rlgp), (None, best_random)):
            strategy = cls(bank, n_init=3, n_random=200, seed=seed, search=search) if cls else RandomSearch()
            opt = Optimizer(SPACE, strategy, seed=seed)
            for _ in range(10):
                t = opt.ask()
                opt.tell(t, OBJECTIVE(t.algorithm, t.params))
            out.append(opt.history.best().value)
    assert all(r < b for r, b in zip(best_rlgp, best_random))
    assert np.median(best_rlgp) < 0.1 * np.median(best_random)


def test_with_no_random_start_the_first_pick_is_the_base_models_best():
    similar = {"copy": OBJECTIVE, "scaled": lambda a, p: 3 * OBJECTIVE(a, p) + 1}
    bank = SurrogateBank.fit(shared_past(SPACE, similar), space_encoder(SPACE), max_points=None, seed=0)
    firsts = []
    for seed in range(3):
        opt = Optimizer(SPACE, RLGP(bank, n_init=0, n_random=300, seed=seed), seed=seed)
        t = opt.ask()
        firsts.append(OBJECTIVE(t.algorithm, t.params))
        opt.tell(t, firsts[-1])
        assert opt.ask().config_id != t.config_id
    rnd = [OBJECTIVE(a, p) for a, p in SPACE.sample(np.random.default_rng(0), 200)]
    assert max(firsts) < np.quantile(rnd, 0.05)  # the first pick is already among the best 5%


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_kept_leave_one_out_gps_give_the_samples_of_gps_fitted_anew(bank, cls):
    """The left-out target GPs kept between suggestions sample exactly as GPs fitted
    anew (same data, hyperparameters and seeds); new data or a refit replaces them."""
    strategy = cls(bank, seed=0)
    h = history_of(9)
    for a, (model, Xa, ya) in strategy._target_models(h, SPACE).items():
        anew = strategy._loo(model, Xa, ya, 3)
        np.testing.assert_array_equal(strategy._loo(model, Xa, ya, 3, a), anew)
        np.testing.assert_array_equal(strategy._loo(model, Xa, ya, 3, a), anew)  # from the kept GPs
        assert len(strategy._loo_models[a][1]) == len(ya)
        shifted = ya + np.linspace(0, 1, len(ya))  # other data: fitted again
        np.testing.assert_array_equal(strategy._loo(model, Xa, shifted, 4, a), strategy._loo(model, Xa, shifted, 4))


def test_suggestions_do_not_depend_on_the_kept_models(bank):
    """A strategy that kept its models over earlier suggestions picks what a new one does."""
    opt = Optimizer(SPACE, RLGP(bank, n_random=60, seed=2), seed=2)
    for _ in range(9):
        t = opt.ask()
        opt.tell(t, OBJECTIVE(t.algorithm, t.params))
    kept, fresh = opt.strategy, RLGP(bank, n_random=60, seed=2)
    assert kept._loo_models and not fresh._loo_models
    picks = [s.suggest(opt.history, SPACE, np.random.default_rng(7)) for s in (kept, fresh)]
    assert picks[0] == picks[1]


@pytest.mark.parametrize("search", ["algorithm", "joint"])
def test_joint_search_on_one_algorithm_is_the_per_algorithm_search(bank, search):
    """With one algorithm the CASH space is its own block: the joint search draws the same
    candidates, scores them by the same ensemble and returns the same configuration."""
    algorithm = SPACE.algorithms[0]
    sub = SPACE.subset([algorithm])
    opt = Optimizer(sub, RandomSearch(), seed=3)
    for _ in range(6):
        t = opt.ask()
        opt.tell(t, OBJECTIVE(t.algorithm, t.params))
    picks = {s: RLGP(bank, n_random=150, seed=1, search=s).suggest(opt.history, sub, np.random.default_rng(7))
             for s in ("algorithm", "joint")}
    assert picks["joint"] == picks["algorithm"]
    assert RLGP(bank, n_random=150, seed=1, search=search).suggest(opt.history, sub, np.random.default_rng(7)) \
        == picks[search]


def test_joint_search_is_reproducible_and_refuses_the_round_robin(bank):
    from metabo.exceptions import InputDataError

    def run(seed):
        opt = Optimizer(SPACE, RLGP(bank, n_random=100, seed=seed, search="joint"), seed=seed)
        for _ in range(6):
            t = opt.ask()
            opt.tell(t, OBJECTIVE(t.algorithm, t.params))
        return [r.config_id for r in opt.history]

    first = run(0)
    assert first == run(0) and len(set(first)) == len(first)
    with pytest.raises(InputDataError, match="one_per_algorithm"):
        RLGP(bank, search="joint", one_per_algorithm=True)
    with pytest.raises(InputDataError, match="search"):
        RLGP(bank, search="everywhere")
