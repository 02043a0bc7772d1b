"""The adaptive portfolio warm start (metabo.strategies.portfolio): closed-form regrets,
weights and greedy picks on a tiny past, then the search phase."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer
from metabo.optimizer.history import History, TrialRecord
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Float
from metabo.space.space import SearchSpace
from metabo.strategies.gp import GPBO
from metabo.strategies.portfolio import (
    PortfolioWarmStart,
    RegretMatrix,
    coverage_weights,
    prior_weights,
    rank_agreement,
)
from metabo.testing.problems import (
    TWO_ALGORITHM_CONFIGS,
    history_of,
    matrix_column,
    recorded_past,
    two_algorithm_problem,
)

# configurations: a(u=.2), a(u=.8), b(v=.5, n=5), b(v=.1, n=1)
A1, A2, B1, B2 = TWO_ALGORITHM_CONFIGS




def test_regret_matrix_is_each_tasks_min_max_normalized_values():
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.3, 0.5, 0.2], "t1": [0.4, 0.4, 0.4, 0.4], "t2": [0.9, np.nan, 0.1, 0.5]})
    m = RegretMatrix.from_past(past, space)
    assert m.tasks == ("t0", "t1", "t2") and m.Q.shape == (3, 4)
    q0 = [m.Q[0, matrix_column(m.ids, space, c)] for c in (A1, A2, B1, B2)]
    assert q0 == pytest.approx([0.0, 0.5, 1.0, 0.25])
    assert np.all(m.Q[1] == 0)  # a task whose values are all equal: regret 0 everywhere
    assert np.isnan(m.Q[2, matrix_column(m.ids, space, A2)]) and m.Q[2, matrix_column(m.ids, space, B1)] == 0


def test_rank_agreement_is_kendalls_tau_over_the_targets_pairs():
    Q = np.array([[0.0, 0.5, 1.0], [1.0, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, np.nan, 1.0]])
    tau, pairs = rank_agreement(Q, np.array([0.1, 0.2, 0.3]))
    assert tau.tolist() == pytest.approx([1.0, -1.0, 1.0, 1.0])
    assert pairs.tolist() == [3, 3, 2, 1]  # ties and missing values left out


def test_first_pick_is_the_lowest_mean_regret_and_the_next_covers_what_it_left():
    space, _ = two_algorithm_problem()
    # A1 is best on t0, t1 (mean regret 1/6); B2 is best on t2, where A1 is half way
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.1, 0.5, 0.6, 0.3], "t2": [0.3, 0.5, 0.4, 0.1]})
    s = PortfolioWarmStart(past, n_portfolio=2, n_design=2)
    m, _ = s.matrix(space)
    g = s.gains(History(), space)
    mean_regret = 1 - m.Q.mean(axis=0)  # gain before any pick: sum_p w_p (1 - Q_pc), w uniform
    assert g == pytest.approx(mean_regret)
    rng = np.random.default_rng(0)
    first = s.suggest(History(), space, rng)
    assert first == space.normalize(*A1)
    second = s.suggest(history_of(space, [(A1, 0.2)]), space, rng)
    assert second == space.normalize(*B2)  # A1 leaves t2 at regret 1/2: B2 covers it


def test_a_trial_the_portfolio_did_not_choose_takes_no_pick_and_leaves_its_algorithm_untried():
    """tune's opening (a configuration the past never recorded) comes first: the portfolio
    still makes its n_portfolio picks, the first of them of the opening's algorithm."""
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.1, 0.5, 0.6, 0.3], "t2": [0.3, 0.5, 0.4, 0.1]})
    s = PortfolioWarmStart(past, n_portfolio=2, n_design=2)
    rng = np.random.default_rng(0)
    opening = ("a", {"u": 0.5, "k": "l1"})  # of A1's algorithm, not recorded
    assert config_id(*space.normalize(*opening)) not in s.matrix(space)[0].ids
    after_opening = history_of(space, [(opening, 0.3)])
    assert s.suggest(after_opening, space, rng) == space.normalize(*A1)
    assert s.suggest(history_of(space, [(opening, 0.3), (A1, 0.2)]), space, rng) == space.normalize(*B2)
    # two picks made: the design is over, the search phase (GP-BO) answers
    assert s._next_design(history_of(space, [(opening, 0.3), (A1, 0.2), (B2, 0.1)]), space) is None


def test_weights_move_to_the_tasks_that_order_the_target_alike():
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.2, 0.3, 0.4], "t1": [0.4, 0.3, 0.2, 0.1]}, meta_features={"t0": 0.0, "t1": 1.0})
    s = PortfolioWarmStart(past, {"f": 0.0})
    w0 = s.weights(History(), space)
    assert w0[0] > w0[1]  # prior: nearer in meta-features
    h = history_of(space, [(A1, 0.9), (A2, 0.5), (B1, 0.3)])  # ordered as t1 orders them
    w = s.weights(h, space)
    assert w[1] > 0.9
    assert np.log(w[1] / w[0]) == pytest.approx(np.log(w0[1] / w0[0]) + 1.0 * 3 * 2)  # beta n (tau1 - tau0)


def test_prior_weights_uniform_without_meta_features_and_exponential_in_distance():
    past = recorded_past({"t0": [0.1, 0.2, 0.3, 0.4], "t1": [0.4, 0.3, 0.2, 0.1], "t2": [0.1, 0.1, 0.2, 0.3]},
                     meta_features={"t0": 0.0, "t1": 1.0, "t2": 3.0})
    assert prior_weights(past, ("t0", "t1", "t2"), None) == pytest.approx([1 / 3] * 3)
    w = prior_weights(past, ("t0", "t1", "t2"), {"f": 0.0})
    assert w[0] > w[1] > w[2] and w.sum() == pytest.approx(1)
    assert np.log(w[0] / w[1]) / np.log(w[1] / w[2]) == pytest.approx(1 / 2)  # d: 0, 1, 3 (z-scored: linear)


def test_a_task_described_by_few_shared_features_gets_the_median_weight():
    values = {t: [0.1, 0.2, 0.3, 0.4] for t in ("t0", "t1", "t2", "t3")}
    past = recorded_past(values)
    # t3 is known by "f" alone (as an OpenML task known by its size), and matches the target on it exactly
    mf = pd.DataFrame({"f": [0.0, 1.0, 3.0, 0.0], "g": [0.0, 1.0, 3.0, np.nan], "h": [0.0, 1.0, 3.0, np.nan]},
                      index=["t0", "t1", "t2", "t3"])
    past = PastRuns(past.metric, past.groups, mf)
    w = prior_weights(past, ("t0", "t1", "t2", "t3"), {"f": 0.0, "g": 0.0, "h": 0.0})
    assert w[0] > w[1] > w[2] and w.sum() == pytest.approx(1)
    assert w[3] == pytest.approx(w[1])  # the median of t0..t2's weights, not the nearest


def test_a_thinly_covered_task_counts_in_proportion_to_its_coverage():
    Q = np.array([[0.0, 0.5, 1.0, 0.2], [0.1, 0.2, np.nan, 0.3], [0.0, np.nan, np.nan, np.nan],
                  [np.nan] * 4])
    # best-covered: 4 configurations, so 2 or more count fully; 1 counts 1/2, none 0
    assert coverage_weights(Q) == pytest.approx([1.0, 1.0, 0.5, 0.0])
    assert coverage_weights(np.full((3, 5), 0.3)) == pytest.approx([1.0] * 3)  # a dense build: unchanged
    # in the strategy's prior: t2 recorded 1 of the 4 configurations (a short session), so half its weight
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.2, 0.3, 0.4], "t1": [0.4, 0.3, 0.2, 0.1],
                      "t2": [0.1, np.nan, np.nan, np.nan]})
    _, w0 = PortfolioWarmStart(past).matrix(space)
    assert w0 == pytest.approx(np.array([1.0, 1.0, 0.5]) / 2.5)


def test_design_then_search_runs_to_budget_without_repeats_and_is_seeded():
    space, objective = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3], "t2": [0.9, 0.5, 0.4, 0.1]})

    def run(seed: int) -> list[tuple[str, dict]]:
        opt = Optimizer(space, PortfolioWarmStart(past, n_portfolio=2, n_design=4, seed=seed), seed=seed)
        for _ in range(12):
            t = opt.ask()
            opt.tell(t, objective(t.algorithm, t.params))
        return [(r.algorithm, r.params) for r in opt.history]

    asked = run(0)
    assert len({config_id(a, p) for a, p in asked}) == 12
    assert asked[0] == space.normalize(*B2)  # mean regret (0.4 + 0.5 + 0) / 3, the lowest
    assert run(0) == asked
    assert {a for a, _ in asked[:4]} == {"a", "b"}  # the design spans the algorithms


def test_another_search_phase_is_asked_after_the_design():
    """``then`` other than GP-BO (here random search) gets every suggestion after the design."""
    from metabo.strategies.random import RandomSearch

    space, objective = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3]})
    calls: list[int] = []

    class Counting(RandomSearch):
        def suggest(self, history, space, rng):
            calls.append(len(history))
            return super().suggest(history, space, rng)

    opt = Optimizer(space, PortfolioWarmStart(past, n_portfolio=2, n_design=2, then=Counting(), seed=0), seed=0)
    for _ in range(5):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    assert calls == [2, 3, 4] and len({r.config_id for r in opt.history}) == 5


def test_design_explores_an_algorithm_the_past_never_ran():
    space, objective = two_algorithm_problem()
    wide = CASHSpace({**{a: space[a] for a in space.algorithms}, "c": SearchSpace("c", (Float("w", 0.0, 1.0),))})
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3]})
    opt = Optimizer(wide, PortfolioWarmStart(past, n_portfolio=2, n_design=5, seed=0), seed=0)
    algorithms = []
    for _ in range(5):
        t = opt.ask()
        algorithms.append(t.algorithm)
        opt.tell(t, 0.5 if t.algorithm == "c" else objective(t.algorithm, t.params))
    assert "c" in algorithms[2:5]


def test_gp_search_starts_from_the_transferred_configurations(monkeypatch):
    import metabo.acquisition.search as search

    space, objective = two_algorithm_problem()
    h = history_of(space, [(A1, objective(*A1)), (A2, objective(*A2)), (B1, objective(*B1))])
    seen: list[list] = []
    real = search.maximize

    def spy(space_, score, *, starts=(), **kw):
        seen.append([space.normalize(a, p) for a, p in starts])
        return real(space_, score, starts=starts, **kw)

    monkeypatch.setattr(search, "maximize", spy)
    gp = GPBO(n_init=0, n_random=20, n_local=2, n_starts=1, seed=0)
    target = ("b", {"v": 0.0, "n": 1})
    gp.suggest(h, space, np.random.default_rng(0), extra_starts=[target, A1])
    assert space.normalize(*target) in seen[-1]
    assert space.normalize(*A1) not in seen[-1][1:]  # asked already: not a start (only the incumbent slot)
    gp.suggest(h, space, np.random.default_rng(0))
    assert space.normalize(*target) not in seen[-1]  # extra starts last one suggestion only


def test_bad_arguments_are_refused():
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3]})
    with pytest.raises(InputDataError):
        PortfolioWarmStart(past, n_design=-1)
    with pytest.raises(InputDataError):
        PortfolioWarmStart(past.without("t0"))
    with pytest.raises(TypeError):  # the ablations are benchmarks.warm_variants.PortfolioVariant's
        PortfolioWarmStart(past, n_distinct=1)
    other = CASHSpace({"z": SearchSpace("z", (Float("w", 0.0, 1.0),))})
    with pytest.raises(InputDataError, match="portfolio"):
        RegretMatrix.from_past(past, other)


def test_a_cost_limit_keeps_the_portfolio_to_configurations_that_can_finish():
    """A1 would be the first pick (previous test's past) but is predicted to take 36 s; with
    max_cost 10 s the first pick is the next best affordable one. Once a trial shows fits
    take a quarter of the prediction, A1 (9 s rescaled) is affordable again."""
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.1, 0.5, 0.6, 0.3], "t2": [0.3, 0.5, 0.4, 0.1]})
    costs = {config_id(*A1): 36.0, config_id(*A2): 1.0, config_id(*B1): 1.0, config_id(*B2): 5.0}
    rng = np.random.default_rng(0)
    free = PortfolioWarmStart(past, n_portfolio=2, n_design=2)
    capped = PortfolioWarmStart(past, n_portfolio=2, n_design=2, costs=costs, max_cost=10.0)
    assert free.suggest(History(), space, rng) == space.normalize(*A1)
    assert capped.suggest(History(), space, rng) == space.normalize(*B2)
    assert not capped.affordable(History(), space)[matrix_column(capped.matrix(space)[0].ids, space, A1)]
    b2 = space.normalize(*B2)
    faster = History()
    faster.add(TrialRecord(number=0, algorithm=b2[0], params=b2[1], config_id=config_id(*b2), state="complete",
                           value=0.2, status="ok", fit_seconds=1.25))  # predicted 5 s: the machine is 4x faster
    assert capped.suggest(faster, space, rng) == space.normalize(*A1)
    with pytest.raises(InputDataError, match="max_cost"):
        PortfolioWarmStart(past, max_cost=0.0)
