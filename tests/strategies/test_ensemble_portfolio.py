"""The ensemble portfolio's greedy objective (metabo.strategies.ensemble_portfolio) on a
two-task past small enough to follow by hand."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.exceptions import InputDataError
from metabo.strategies.ensemble_portfolio import TaskPredictions, ensemble_portfolio
from metabo.strategies.portfolio import PortfolioWarmStart, RegretMatrix

Y = np.array([0] * 5 + [1] * 5)


def _proba(wrong: dict[int, float]) -> np.ndarray:
    """Probabilities that put 0.9 on the true class, except on the rows of ``wrong``, which
    get that much probability on the other class."""
    P = np.zeros((10, 2))
    P[np.arange(10), Y] = 0.9
    P[np.arange(10), 1 - Y] = 0.1
    for row, p in wrong.items():
        P[row, 1 - Y[row]], P[row, Y[row]] = p, 1 - p
    return P


def _task(best: dict, partner: dict, clone: dict) -> TaskPredictions:
    return TaskPredictions(np.stack([_proba(best), _proba(partner), _proba(clone)]), np.ones(3, bool), Y)


# Task 1: c0 wrong on rows 0 and 5 (error .2, each time by 0.6); c2 wrong on rows 1, 2, 6, 7
# (error .4, by 0.6), right where c0 is wrong, so (c0 + c2) / 2 is right everywhere; c1
# wrong on 0, 5 and 1 (error .3, by 0.9): with c0 it errs on 0 and 5 still (row 1 is a
# 0.5/0.5 tie, arg max class 0, right), error .2. lo = .2, hi = .4: q(c0) = 0,
# q(c1) = .5, q(c2) = 1; after c0 (l = 0), adding c2 gives q = (0 - .2) / .2 = -1, a gain
# of 1; adding c1 gives q = 0, no gain.
TASK_1 = _task({0: .6, 5: .6}, {0: .9, 5: .9, 1: .9}, {1: .6, 2: .6, 6: .6, 7: .6})
# Task 2: the roles of c1 and c2 swapped (c1 the partner, error .4; c2 the clone, error .3).
TASK_2 = _task({0: .6, 5: .6}, {1: .6, 2: .6, 6: .6, 7: .6}, {0: .9, 5: .9, 1: .9})


def test_first_pick_is_the_best_alone_then_the_weighted_partner() -> None:
    # first pick: gain of c0 = 1 - 0 on both tasks; c1: .7 (1 - .5) + .3 (1 - 1) = .35; c2: .3 * .5
    # second pick with w = (.7, .3): c2 gains .7 * 1, c1 gains .3 * 1
    assert ensemble_portfolio([TASK_1, TASK_2], 2, weights=[0.7, 0.3]) == [0, 2]
    assert ensemble_portfolio([TASK_1, TASK_2], 2, weights=[0.3, 0.7]) == [0, 1]


def test_the_single_best_objective_sees_no_gain_in_the_partner() -> None:
    # the warm start's single-best rule: after c0 (b = 0 on task 1) neither c1 nor c2 gains,
    # and c2 alone is the worst (q = 1); only the ensemble objective makes it the second pick
    Q = np.array([[0.0, 0.5, 1.0]])
    m = RegretMatrix(tasks=("t1",), configs=(("a", {}), ("b", {}), ("c", {})), ids=("0", "1", "2"), Q=Q)
    gain = PortfolioWarmStart._gains(m, np.ones(1), np.array([True, False, False]))
    assert gain[1] == gain[2] == 0.0
    assert ensemble_portfolio([TASK_1], 2) == [0, 2]


def test_cost_discount_trades_gain_for_seconds() -> None:
    # second pick: c2 gains .7 at 4 s, c1 .3 at 1 s; with gamma = 1, .7 / 4 < .3 / 1
    seconds = [1.0, 1.0, 4.0]
    assert ensemble_portfolio([TASK_1, TASK_2], 2, weights=[0.7, 0.3], seconds=seconds, cost_power=1.0) == [0, 1]
    assert ensemble_portfolio([TASK_1, TASK_2], 2, weights=[0.7, 0.3], seconds=seconds, cost_power=0.0) == [0, 2]


def test_a_candidate_gains_nothing_on_a_task_that_did_not_record_it() -> None:
    missing = TaskPredictions(TASK_1.probas, np.array([True, True, False]), Y)
    # c2 unrecorded on task 1, the only place it helped, gains nothing; c1 gains .3 on task 2
    assert ensemble_portfolio([missing, TASK_2], 2, weights=[0.7, 0.3]) == [0, 1]


def test_duplicating_a_task_is_doubling_its_weight_and_weights_are_scale_free() -> None:
    rng = np.random.default_rng(3)
    tasks = []
    for _ in range(3):
        y = rng.integers(0, 3, 40)
        P = rng.dirichlet(np.ones(3), size=(8, 40))
        P[:, np.arange(40), y] += rng.uniform(0, 1, (8, 40))
        tasks.append(TaskPredictions(P / P.sum(2, keepdims=True), rng.random(8) < 0.9, y))
    w = np.array([0.2, 0.5, 0.3])
    a = ensemble_portfolio(tasks, 6, weights=w)
    assert ensemble_portfolio(tasks, 6, weights=10 * w) == a
    assert ensemble_portfolio([*tasks, tasks[1]], 6, weights=[0.2, 0.25, 0.3, 0.25]) == a
    assert len(set(a)) == len(a) == 6


def test_bad_input_is_refused() -> None:
    with pytest.raises(InputDataError):
        ensemble_portfolio([], 2)
    with pytest.raises(InputDataError):
        ensemble_portfolio([TASK_1, TASK_2], 2, weights=[1.0])
    with pytest.raises(InputDataError):
        ensemble_portfolio([TASK_1], 2, cost_power=1.0)
    with pytest.raises(InputDataError):
        TaskPredictions(np.full((3, 10, 2), np.nan), np.ones(3, bool), Y)


def test_groups_make_each_pick_of_a_new_algorithm_while_one_gains() -> None:
    # w = (.3, .7): c1 gains .7, c2 .3; c1 shares c0's algorithm, so c2 (gain .3 > 0) comes first
    assert ensemble_portfolio([TASK_1, TASK_2], 3, weights=[0.3, 0.7], groups=["a", "a", "b"]) == [0, 2, 1]
    assert ensemble_portfolio([TASK_1, TASK_2], 3, weights=[0.3, 0.7]) == [0, 1, 2]
