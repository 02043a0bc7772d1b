"""Successive halving on training rows (metabo.optimizer.halving): the rungs, a bracket on a
toy objective whose cheap fidelity misleads, and a bracket cut by the time budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metabo.exceptions import TimeBudgetExceeded
from metabo.optimizer.halving import Rung, rung_sizes, successive_halving, winner


@pytest.mark.parametrize(("n", "sizes"), [
    (1000, [1000]), (2000, [2000]), (5000, [2000, 5000]), (7000, [2000, 7000]),
    (12_000, [2000, 6000, 12_000]), (20_000, [2000, 6000, 20_000]), (40_000, [2000, 6000, 18_000, 40_000]),
    (1_000_000, [2000, 6000, 18_000, 54_000, 162_000, 486_000, 1_000_000]),
])
def test_the_rungs_grow_by_eta_from_the_knowledge_fidelity_to_every_row(n, sizes):
    assert rung_sizes(n) == sizes


X = np.linspace(0.0, 1.0, 30)  # trial k is the configuration x = X[k]


def toy(k: int, rows: int) -> float:
    """The error of x on ``rows`` rows: (x - 0.3)^2 plus a small-sample bias towards 0.8
    that shrinks as 1 / rows, so 2,000 rows prefer x = 0.38 and every row x = 0.3."""
    x = X[k]
    return (x - 0.3) ** 2 + 0.2 * (2000 / rows) * (x - 0.8) ** 2


def test_a_bracket_on_a_misleading_cheap_fidelity_reaches_the_known_best():
    sizes = rung_sizes(40_000)  # 2,000, 6,000, 18,000, all
    first = {k: toy(k, sizes[0]) for k in range(len(X))}
    calls = []

    def evaluate(k: int, rows: int) -> float:
        calls.append((k, rows))
        return toy(k, rows)

    rungs = successive_halving(first, sizes, evaluate)
    best_on_all_rows = min(range(len(X)), key=lambda k: toy(k, sizes[-1]))
    assert min(first, key=first.get) != best_on_all_rows  # rung 0 alone picks another
    assert winner(rungs) == best_on_all_rows
    # 9 (= eta^(R-2)) of rung 0 on 6,000 rows, their best 3 on 18,000; every row is the final fit's
    assert [(r.rows, len(r.values)) for r in rungs] == [(2000, 30), (6000, 9), (18_000, 3)]
    assert len(calls) == 12 and all(rows < sizes[-1] for _, rows in calls)


def test_failed_trials_are_not_promoted_and_a_cut_rung_does_not_decide():
    sizes = [100, 300, 900, 2700]
    # 10 successful trials (and a failure, trial 1, whose NaN would sort anywhere)
    first = {k: 0.1 * k for k in range(11)} | {1: math.nan}
    seen = []

    def evaluate(k: int, rows: int) -> float:
        if rows == 900:
            raise TimeBudgetExceeded("no time left")
        seen.append(k)
        return {0: 0.3, 2: 0.2, 3: 0.05, 4: 0.25}[k]

    rungs = successive_halving(first, sizes, evaluate)
    assert seen == [0, 2, 3, 4]  # ceil(10 / 3) = 4 of the successful ones, best first
    assert rungs[-1] == Rung(900, {}, complete=False)
    assert winner(rungs) == 3  # the best of the last complete rung, not rung 0's best (0)


def test_the_best_of_every_algorithm_enters_the_first_promotion():
    """A nearest-neighbour model ranks last on few rows and leads on many (learning curves
    cross): with the trials' algorithms, its best trial is promoted and wins."""
    sizes = [100, 300, 900]
    first = {0: 0.10, 1: 0.11, 2: 0.12, 3: 0.13, 4: 0.14, 5: 0.30, 6: 0.35}
    groups = {0: "forest", 1: "forest", 2: "forest", 3: "forest", 4: "forest", 5: "knn", 6: "knn"}
    on_more_rows = {0: 0.09, 1: 0.10, 2: 0.11, 5: 0.04}
    seen = []

    def evaluate(k: int, rows: int) -> float:
        seen.append(k)
        return on_more_rows[k]

    assert winner(successive_halving(first, sizes, evaluate)) == 0  # knn never promoted
    seen.clear()
    rungs = successive_halving(first, sizes, evaluate, groups=groups)
    assert seen == [0, 1, 2, 5] and winner(rungs) == 5  # the top ceil(7 / 3) = 3, then knn's best
