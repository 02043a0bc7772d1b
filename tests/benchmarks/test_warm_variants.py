"""The warm start's ablations that lost (benchmarks.warm_variants.PortfolioVariant): each
option as it was measured, and the default when none is given (moved from
tests/strategies/test_portfolio.py, issue 34 item 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.warm_variants import PortfolioVariant, balance_sources, prior_weights, warm_start
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer.history import History
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Float
from metabo.space.space import SearchSpace
from metabo.strategies import portfolio
from metabo.strategies.portfolio import PortfolioWarmStart
from metabo.testing.problems import (
    TWO_ALGORITHM_CONFIGS,
    history_of,
    matrix_column,
    recorded_past,
    two_algorithm_problem,
)

A1, A2, B1, B2 = TWO_ALGORITHM_CONFIGS




def test_without_options_the_variant_is_the_default_and_warm_start_builds_it_only_with_one():
    space, objective = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3], "t2": [0.9, 0.5, 0.4, 0.1]},
                     meta_features={"t0": 0.0, "t1": 1.0, "t2": 3.0})
    from metabo.optimizer import Optimizer

    def run(strategy) -> list:
        opt = Optimizer(space, strategy, seed=0)
        for _ in range(5):
            t = opt.ask()
            opt.tell(t, objective(t.algorithm, t.params))
        return [(r.algorithm, r.params) for r in opt.history]

    common = {"n_portfolio": 2, "n_design": 3, "seed": 0}
    assert run(PortfolioVariant(past, {"f": 0.5}, **common)) == run(PortfolioWarmStart(past, {"f": 0.5}, **common))
    assert prior_weights(past, ("t0", "t1", "t2"), {"f": 0.5}) == pytest.approx(
        portfolio.prior_weights(past, ("t0", "t1", "t2"), {"f": 0.5}), rel=0, abs=0)
    assert type(warm_start(past, None, beta=2.0)) is PortfolioWarmStart
    variant = warm_start(past, None, beta=2.0, bandwidth_k=3)
    assert type(variant) is PortfolioVariant and variant.beta == 2.0 and variant.bandwidth_k == 3
    assert "bandwidth_k=3" in repr(variant)
    with pytest.raises(TypeError):
        PortfolioWarmStart(past, None, prior_mean=True)  # the default has no ablation options


def test_the_benchmarks_warm_at_options_build_the_variant():
    from benchmarks.warm_bench import make_method

    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3]})
    assert type(make_method("warm@beta=2", past, {}, 0, None, "t", [])) is PortfolioWarmStart
    s = make_method("warm@n_distinct=6@prior_mean=true", past, {}, 0, None, "t", [])
    assert type(s) is PortfolioVariant and s.n_distinct == 6 and s.prior_mean is True


def test_unknown_prior_weighs_a_task_without_a_distance():
    values = {t: [0.1, 0.2, 0.3, 0.4] for t in ("t0", "t1", "t2", "t3")}
    past = recorded_past(values)
    # t3 is known by "f" alone (as an OpenML task known by its size), and matches the target on it exactly
    mf = pd.DataFrame({"f": [0.0, 1.0, 3.0, 0.0], "g": [0.0, 1.0, 3.0, np.nan], "h": [0.0, 1.0, 3.0, np.nan]},
                      index=["t0", "t1", "t2", "t3"])
    past = PastRuns(past.metric, past.groups, mf)
    tasks, mine = ("t0", "t1", "t2", "t3"), {"f": 0.0, "g": 0.0, "h": 0.0}
    w = prior_weights(past, tasks, mine)
    assert w[3] == pytest.approx(w[1])  # the default's median weight
    w_min = prior_weights(past, tasks, mine, unknown="min")
    assert w_min[3] == pytest.approx(w_min[2]) and w_min[0] > w_min[1] > w_min[2]
    w_zero = prior_weights(past, tasks, mine, unknown="zero")
    assert w_zero[3] == 0.0 and w_zero[:3] == pytest.approx(w[:3] / w[:3].sum())
    with pytest.raises(InputDataError):
        prior_weights(past, tasks, mine, unknown="max")
    # a zero prior weight stays zero under the target's evidence
    space, _ = two_algorithm_problem()
    strategy = PortfolioVariant(past, mine, unknown_prior="zero")
    history = history_of(space, [(A1, 0.1), (A2, 0.2), (B1, 0.3)])
    assert strategy.weights(history, space)[list(strategy.matrix(space)[0].tasks).index("t3")] == 0.0
    with pytest.raises(InputDataError):
        PortfolioVariant(past, mine, unknown_prior="max")


def test_n_distinct_lets_the_later_picks_return_to_an_algorithm_already_tried():
    space, _ = two_algorithm_problem()
    # A1 is best on t0, A2 on t1; after A1, A2 gains most (t1's regret from 1/2 to 0), B2 less (to 1/4)
    past = recorded_past({"t0": [0.1, 0.3, 0.5, 0.5], "t1": [0.3, 0.1, 0.5, 0.2]})
    rng = np.random.default_rng(0)
    after_a1 = history_of(space, [(A1, 0.2)])
    everywhere = PortfolioVariant(past, n_portfolio=2, n_design=2)
    once = PortfolioVariant(past, n_portfolio=2, n_design=2, n_distinct=1)
    assert everywhere.suggest(History(), space, rng) == once.suggest(History(), space, rng) == space.normalize(*A1)
    assert everywhere.suggest(after_a1, space, rng) == space.normalize(*B2)  # distinct, though it gains less
    assert once.suggest(after_a1, space, rng) == space.normalize(*A2)
    assert once.portfolio(space) == [space.normalize(*A1), space.normalize(*A2)]
    with pytest.raises(InputDataError, match="n_distinct"):
        PortfolioVariant(past, n_distinct=-1)


def test_bandwidth_k_is_the_distance_of_the_kth_nearest_task():
    past = recorded_past({"t0": [0.1, 0.2, 0.3, 0.4], "t1": [0.4, 0.3, 0.2, 0.1], "t2": [0.1, 0.1, 0.2, 0.3]},
                     meta_features={"t0": 0.0, "t1": 1.0, "t2": 3.0})
    tasks = ("t0", "t1", "t2")
    median = prior_weights(past, tasks, {"f": 0.0})
    assert prior_weights(past, tasks, {"f": 0.0}, bandwidth_k=2) == pytest.approx(median)  # the 2nd of 3 is the median
    wide = prior_weights(past, tasks, {"f": 0.0}, bandwidth_k=3)  # h = d(t2) = 3 d(t1)
    assert np.log(wide[0] / wide[1]) == pytest.approx(np.log(median[0] / median[1]) / 3)
    assert prior_weights(past, tasks, {"f": 0.0}, bandwidth_k=99) == pytest.approx(wide)  # past the last: the farthest
    with pytest.raises(InputDataError, match="bandwidth_k"):
        PortfolioVariant(past, {"f": 0.0}, bandwidth_k=0)


def test_balanced_sources_hold_equal_shares_and_keep_the_order_within_each():
    w = balance_sources(np.array([0.4, 0.1, 0.1, 0.1, 0.1, 0.2]), ["a", "b", "b", "b", "b", "a"])
    assert w.sum() == pytest.approx(1)
    assert w[[0, 5]].sum() == pytest.approx(0.5) and w[1:5].sum() == pytest.approx(0.5)
    assert w[0] == pytest.approx(2 * w[5]) and w[1] == pytest.approx(w[4])
    assert balance_sources(np.array([0.5, 0.5]), ["a", "a"]) == pytest.approx([0.5, 0.5])
    past = recorded_past({"t0": [0.1, 0.2, 0.3, 0.4], "t1": [0.4, 0.3, 0.2, 0.1], "t2": [0.1, 0.1, 0.2, 0.3]})
    past = PastRuns(past.metric, past.groups, past.meta_features, {"t0": "session", "t1": "oboe", "t2": "oboe"})
    assert prior_weights(past, ("t0", "t1", "t2"), None, "equal") == pytest.approx([0.5, 0.25, 0.25])
    assert prior_weights(past, ("t0", "t1", "t2"), None) == pytest.approx([1 / 3] * 3)
    with pytest.raises(InputDataError, match="source_prior"):
        PortfolioVariant(past, source_prior="count")


def test_transfer_mean_averages_the_nearest_recorded_configurations_regret():
    space, _ = two_algorithm_problem()
    past = recorded_past({"t0": [0.1, 0.5, 0.6, 0.3], "t1": [0.2, 0.5, 0.1, 0.3]})
    s = PortfolioVariant(past, prior_mean=True)
    s.n_neighbours = 1
    m, _ = s.matrix(space)
    mean = s.transfer_mean(History(), space)
    for c in (A1, A2, B1, B2):
        j = matrix_column(m.ids, space, c)
        assert mean(space.encode_many([c]))[0] == pytest.approx(m.Q[:, j].mean())  # uniform weights, itself nearest
    far = ("a", {"u": 0.25, "k": "l1"})  # nearest recorded: A1
    assert mean(space.encode_many([far]))[0] == pytest.approx(m.Q[:, matrix_column(m.ids, space, A1)].mean())


def test_prior_mean_makes_an_untried_algorithm_that_did_well_in_the_past_more_promising():
    base, _ = two_algorithm_problem()
    space = CASHSpace({**{a: base[a] for a in base.algorithms}, "c": SearchSpace("c", (Float("w", 0.0, 1.0),))})
    # past: 'a' good and 'b' poor everywhere; 'c' good at small w, poor at large w
    rows = []
    for t in ("t0", "t1", "t2"):
        rows += [(t, *A1, 0.10), (t, *A2, 0.12), (t, *B1, 0.50), (t, *B2, 0.52),
                 (t, "c", {"w": 0.1}, 0.20), (t, "c", {"w": 0.5}, 0.30), (t, "c", {"w": 0.9}, 0.40)]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    past = PastRuns.from_frame(frame)
    # the target has seen 'c' only, ordered as in the past
    h = history_of(space, [(("c", {"w": 0.1}), 0.2), (("c", {"w": 0.5}), 0.3), (("c", {"w": 0.9}), 0.4)])
    scores = {}
    for prior in (True, False):
        s = PortfolioVariant(past, prior_mean=prior, n_portfolio=0, n_design=0, seed=0)
        s.n_neighbours = 1  # three recorded configurations of 'c': its nearest alone varies
        score = s.acquisition(h, space, np.random.default_rng(0))
        scores[prior] = score(space.encode_many([A1, B1]))
    assert scores[True][0] > scores[True][1] + 1.0  # log EI: 'a' (past regret 0) far above 'b' (regret ~1)
    assert scores[False][0] == pytest.approx(scores[False][1], abs=1e-6)  # without it both are the GP's prior
