"""OBOE's selection step: closed-form rank and design cases, and exact recovery of a
low-rank new row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer.history import History, TrialRecord
from metabo.space import Float, SearchSpace
from metabo.space.cash import CASHSpace
from metabo.strategies.matrix_completion import OBOESelection, approx_rank, d_optimal_order

SPACE = CASHSpace({"a": SearchSpace("a", [Float("x", 0.0, 1.0)])})
XS = [round(0.1 * i, 1) for i in range(10)]


def past_of(E: np.ndarray) -> PastRuns:
    rows = [(f"t{i}", "a", {"x": x}, float(E[i, j])) for i in range(len(E)) for j, x in enumerate(XS)]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return PastRuns.from_frame(frame)


def told(values: dict[float, float]) -> History:
    h = History()
    for i, (x, v) in enumerate(values.items()):
        h.add(TrialRecord(number=i, algorithm="a", params={"x": x}, config_id=config_id("a", {"x": x}),
                          state="complete", value=v, status="ok"))
    return h


def test_approx_rank_counts_singular_values_above_the_threshold():
    E = np.diag([10.0, 1.0, 0.2])
    assert approx_rank(E, 0.01) == 3 and approx_rank(E, 0.03) == 2 and approx_rank(E, 0.5) == 1


def test_d_optimal_design_spans_before_it_repeats_a_direction():
    Y = np.array([[1.0, 0.99, 0.0], [0.0, 0.01, 1.0]])
    assert d_optimal_order(Y, 2) == [0, 2] or d_optimal_order(Y, 2) == [1, 2]
    assert sorted(d_optimal_order(np.eye(3), 3)) == [0, 1, 2]


def test_a_rank_one_past_predicts_the_new_row_after_one_trial_and_proposes_its_best():
    rng = np.random.default_rng(0)
    b = rng.uniform(0.1, 1.0, len(XS))
    E = np.outer(rng.uniform(0.5, 2.0, 8), b)  # rank 1
    s = OBOESelection(past_of(E), n_design=1)
    first = s.suggest(History(), SPACE, rng)
    target = 0.3 * b
    h = told({first[1]["x"]: float(target[XS.index(first[1]["x"])])})
    np.testing.assert_allclose(s.predict(h, SPACE)[[s.model(SPACE)[0].configs.index(("a", {"x": x})) for x in XS]],
                               target, rtol=1e-9)
    best = XS[int(np.argmin(np.where(np.array(XS) == first[1]["x"], np.inf, target)))]
    assert s.suggest(h, SPACE, rng) == ("a", {"x": best})


def test_no_repeats_until_the_recorded_columns_run_out():
    rng = np.random.default_rng(1)
    E = rng.uniform(size=(6, len(XS)))
    s = OBOESelection(past_of(E), n_design=3)
    seen: dict[float, float] = {}
    for _ in range(len(XS)):
        _, p = s.suggest(told(seen), SPACE, rng)
        assert p["x"] not in seen
        seen[p["x"]] = float(rng.uniform())
    assert sorted(seen) == XS
    assert s.suggest(told(seen), SPACE, rng)[1]["x"] not in XS  # then random configurations


def test_bad_arguments_are_refused():
    with pytest.raises(InputDataError):
        OBOESelection(past_of(np.ones((2, len(XS)))), n_design=0)
    with pytest.raises(InputDataError):
        OBOESelection(past_of(np.ones((2, len(XS)))), threshold=1.5)
