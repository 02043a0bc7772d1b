"""References on recorded values (benchmarks.recorded_bounds): closed-form greedy
portfolios, the oracle similarity, picks scored by the recorded values, the table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.recorded_bounds import (
    bounds_table,
    hindsight_portfolio,
    oracle_curve,
    recorded_curves,
    recorded_lookup,
    run_on_recorded,
    similarity_weights,
)
from benchmarks.transfer_live import reproduced
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.strategies.portfolio import RegretMatrix
from metabo.testing.problems import TWO_ALGORITHM_CONFIGS, recorded_past, two_algorithm_problem

CONFIGS = TWO_ALGORITHM_CONFIGS
A1, A2, B1, B2 = CONFIGS
past_runs = recorded_past


def space():
    return two_algorithm_problem()[0]


def test_hindsight_portfolio_is_the_greedy_cover_of_the_rows():
    Q = np.array([[0.0, 1.0, 0.5],
                  [1.0, 0.0, 0.5],
                  [1.0, 1.0, 0.4]])
    # column means 2/3, 2/3, .467: column 2 first; then column 0 lowers row 0 to 0 (mean .3),
    # as column 1 would row 1: the tie goes to the first
    assert hindsight_portfolio(Q, 2) == [2, 0]
    assert hindsight_portfolio(Q, 5) == [2, 0, 1]  # no more picks than columns
    assert hindsight_portfolio(np.array([[np.nan, 0.2]]), 1) == [1]  # NaN counts as regret 1
    with pytest.raises(InputDataError):
        hindsight_portfolio(np.zeros((2, 0)), 1)


def test_oracle_is_the_tasks_own_values_best_first_and_lookup_is_by_canonical_id():
    past = past_runs({"t": [0.3, 0.1, 0.4, 0.2]})
    s = space()
    lookup = recorded_lookup(past, s, "t")
    assert lookup[config_id(*s.normalize(*A2))] == 0.1 and len(lookup) == 4
    assert oracle_curve(lookup, 3) == [0.1, 0.2, 0.3]


def test_similarity_weights_go_to_the_tasks_that_rank_alike():
    past = past_runs({"same": [0.1, 0.2, 0.3, 0.4], "reverse": [0.4, 0.3, 0.2, 0.1], "close": [0.1, 0.3, 0.2, 0.4]})
    m = RegretMatrix.from_past(past, space())
    own = np.empty(4)
    for c, v in zip(CONFIGS, (0.0, 1.0, 2.0, 3.0)):
        own[m.ids.index(config_id(*space().normalize(*c)))] = v
    w = similarity_weights(m, own, 1)
    assert m.tasks[int(np.argmax(w))] == "same" and w.max() > 0.99
    w2 = similarity_weights(m, own, 2)
    assert {m.tasks[i] for i in np.argsort(-w2)[:2]} == {"same", "close"}
    assert w2.sum() == pytest.approx(1.0)


class Fixed:
    """A strategy proposing a fixed list."""

    name = "fixed"

    def __init__(self, configs):
        self.configs = list(configs)

    def suggest(self, history, space, rng):
        return self.configs[len(history)]


def test_picks_are_scored_by_the_recorded_values_and_unrecorded_ones_count_as_failures():
    s = space()
    past = past_runs({"t": [0.3, 0.1, np.nan, 0.2]})
    values, missing = run_on_recorded(Fixed([A1, B1, A2]), s, recorded_lookup(past, s, "t"), 3)
    assert values[0] == 0.3 and math.isnan(values[1]) and values[2] == 0.1 and missing == 1


def test_recorded_curves_hold_out_the_task_and_the_portfolio_uses_the_others():
    s = space()
    past = past_runs({"new": [0.9, 0.8, 0.1, 0.5], "p1": [0.9, 0.8, 0.1, 0.5], "p2": [0.1, 0.2, 0.9, 0.8],
                      "copy": [0.9, 0.8, 0.1, 0.5]})
    curves, missing = recorded_curves(past, s, ["new"], {"new": ["copy"]}, lambda t: {}, n=2, ks=(1,))
    assert curves["oracle"]["new"] == [0.1, 0.5]
    assert curves["hindsight"]["new"][0] == 0.1  # fitted on the task itself
    # the oracle similarity puts the prior on p1, whose best (B1) is the new task's best
    assert curves["similarity-1"]["new"][0] == 0.1
    assert set(curves) == {"oracle", "hindsight", "static", "portfolio", "similarity-1"}
    assert all(v == 0 for v in missing.values())


def test_table_and_when_cold_reaches_each_regret_at_5():
    runs = [{"method": "gp", "task": t, "seed": s, "regret": [1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]}
            for t in ("x", "y") for s in (0, 1)]
    runs += [{"method": "ref", "task": t, "seed": 0, "regret": [0.5, 0.3, 0.2, 0.2, 0.25]} for t in ("x", "y")]
    runs += [{"method": "short", "task": t, "seed": 0, "regret": [0.6, 0.5]} for t in ("x", "y")]
    summary, text = bounds_table(runs, ["gp", "ref", "short"], at=(1, 5))
    assert summary["at"]["ref"] == {"1": 0.5, "5": 0.25}
    assert summary["at"]["short"]["5"] == 0.5  # a shorter curve keeps its last value
    assert summary["gp_reaches_regret_at_5"] == {"gp": 5, "ref": 7, "short": 4}
    assert "ref" in text
    with pytest.raises(InputDataError):
        bounds_table(runs, ["gp", "missing"])


def test_agreement_counts_live_trials_at_recorded_configurations():
    s = space()
    past = past_runs({"t": [0.3, 0.1, 0.4, 0.2]})
    live = [{"task": "t", "configs": [list(A1), list(A2), ["a", {"u": 0.5, "k": "l1"}]],
             "values": [0.3, 0.15, 0.2]}]
    out = reproduced(live, past, s)
    assert out["n_at_recorded"] == 2 and out["equal_share"] == 0.5 and out["median_abs_diff"] == pytest.approx(0.025)
