"""kNN warm start: the nearest tasks' best configurations first, nearest first, then GP-BO."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer
from metabo.strategies.knn import KNNWarmStart
from metabo.testing.problems import two_algorithm_problem


def past_runs() -> PastRuns:
    """Tasks t0..t3 with meta-feature f = 0, 1, 2, 3; task ti's best is b(v = 0.1 (i + 1), n = i + 1)."""
    rows = []
    for i in range(4):
        task = f"t{i}"
        rows.append((task, "b", {"v": 0.1 * (i + 1), "n": i + 1}, 0.1))
        rows.append((task, "b", {"v": 0.9, "n": 9}, 0.5))
        rows.append((task, "a", {"u": 0.5, "k": "l2"}, 0.3))
        rows.append((task, "c", {"w": 1}, 0.0))  # an algorithm outside the space: passed over
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    mf = pd.DataFrame({"f": [0.0, 1.0, 2.0, 3.0], "g": [1.0, 1.0, 1.0, 2.0]}, index=[f"t{i}" for i in range(4)])
    return PastRuns.from_frame(frame, meta_features=mf)


def test_design_is_the_nearest_tasks_best_configurations_nearest_first():
    space, objective = two_algorithm_problem()
    strategy = KNNWarmStart(past_runs(), {"f": 2.2, "g": 1.0}, k=3, seed=0)
    assert list(strategy.neighbours()["dataset_id"]) == ["t2", "t1", "t0"]  # t3 differs in g
    design = strategy.design(space)
    assert [task for _, task, _ in design] == ["t2", "t1", "t0"]
    assert design[0][0] == ("b", {"v": pytest.approx(0.3), "n": 3}) and design[0][2] == pytest.approx(0.1)

    opt = Optimizer(space, strategy, seed=0)
    for _ in range(6):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    asked = [(r.algorithm, r.params) for r in opt.history]
    assert asked[:3] == [c for c, _, _ in design]  # the design first, in order
    for a, p in asked:
        space.validate(a, p)
    assert len({config_id(a, p) for a, p in asked}) == 6  # then GP-BO, no repeats


def test_needs_meta_features_and_k():
    past = past_runs()
    with pytest.raises(InputDataError):
        KNNWarmStart(past, {"f": 1.0}, k=0)
    with pytest.raises(InputDataError):
        KNNWarmStart(PastRuns(past.metric, past.groups, pd.DataFrame()), {"f": 1.0})
    with pytest.raises(InputDataError, match="shared"):
        KNNWarmStart(past, {"zzz": 1.0}).neighbours()
    assert np.isfinite(KNNWarmStart(past, {"f": 1.0, "g": np.nan}).neighbours()["distance"]).all()
