"""SCoT: the contract, transfer from past tasks, invariance, collaborative mode, baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer, RandomSearch
from metabo.strategies.scot import SCoT, collaborative_default, collaborative_tune, global_default
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()


def shifted(k: float):
    """Task k: the same shape on its own scale (the optimum at b, v = 0.7, n = 5)."""
    return lambda a, p: (1 + k) * OBJECTIVE(a, p) + 3 * k


def make_past(n_tasks: int = 4, n: int = 40, warp_task: int | None = None) -> PastRuns:
    rows = []
    configs = SPACE.sample(np.random.default_rng(0), n)
    for k in range(n_tasks):
        f = shifted(k)
        for a, p in configs:
            v = f(a, p)
            rows.append((f"t{k}", a, p, float(np.exp(4 * v)) if k == warp_task else v))
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    mf = pd.DataFrame({"scot_K": [2.0 + k % 2 for k in range(n_tasks)], "scot_log_d": [1.0 + 0.1 * k for k in range(n_tasks)],
                       "scot_log_n_over_d": [3.0 - 0.1 * k for k in range(n_tasks)]}, index=[f"t{k}" for k in range(n_tasks)])
    return PastRuns.from_frame(frame, meta_features=mf)


NEW = {"scot_K": 2.0, "scot_log_d": 1.05, "scot_log_n_over_d": 2.95}


def run(strategy, n: int, seed: int, objective=OBJECTIVE):
    opt = Optimizer(SPACE, strategy, seed=seed)
    for _ in range(n):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    return opt.history


def test_contract_valid_reproducible_distinct():
    past = make_past()
    a = run(SCoT(past, NEW, n_random=100, seed=0), 6, 0)
    b = run(SCoT(past, NEW, n_random=100, seed=0), 6, 0)
    ids = [r.config_id for r in a]
    assert ids == [r.config_id for r in b] and len(set(ids)) == 6
    for r in a:
        SPACE.validate(r.algorithm, r.params)


def test_warm_started_scot_beats_random_search():
    past = make_past()
    scot = [run(SCoT(past, NEW, n_random=200, seed=s), 5, s).best().value for s in range(3)]
    rnd = [run(RandomSearch(), 5, s).best().value for s in range(3)]
    assert all(a < b for a, b in zip(scot, rnd)) and np.median(scot) < 0.3 * np.median(rnd)
    first = collaborative_default(past, NEW, SPACE)  # no observation yet: the model's best guess
    assert first[0] == "b" and OBJECTIVE(*first) < 0.2


def test_suggestions_ignore_a_monotone_rescaling_of_one_past_tasks_errors():
    plain = run(SCoT(make_past(), NEW, n_random=100, seed=1), 4, 1)
    warped = run(SCoT(make_past(warp_task=2), NEW, n_random=100, seed=1), 4, 1)
    assert [r.config_id for r in plain] == [r.config_id for r in warped]


def test_collaborative_tuning_and_global_default():
    past = make_past(3)
    tasks = {"new1": (NEW, shifted(0.5)), "new2": ({**NEW, "scot_K": 3.0}, shifted(1.5))}
    histories = collaborative_tune(past, tasks, SPACE, budget=3, seed=0, n_random=100)
    assert set(histories) == {"new1", "new2"} and all(len(h) == 3 for h in histories.values())
    assert min(h.best().value - 3 * k for h, k in zip(histories.values(), (0.5, 1.5))) < 0.5
    a, p = global_default(past, SPACE)
    SPACE.validate(a, p)
    assert a == "b"  # the algorithm holding the optimum on every past task
