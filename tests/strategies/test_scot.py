"""SCoT: the strategy contract, transfer from past tasks sharing an optimum, the use of
dataset features, invariance to a monotone rescaling of one task's errors, collaborative
tuning (Figure 4) and the two baselines."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer, RandomSearch
from metabo.optimizer.history import History
from metabo.strategies.scot import (
    FeatureScaler,
    GlobalDefault,
    SCoT,
    _ranking_values,
    collaborative_default,
    collaborative_tune,
    global_default,
)
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()  # optimum 0 at b, v = 0.7, n = 5
FAST = {"n_random": 100, "n_local": 3, "gp_restarts": 0}


def shifted(k: float):
    """Task k: the same error surface on its own scale and offset."""
    return lambda a, p: (1 + k) * OBJECTIVE(a, p) + 3 * k


def frame_of(rows):
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return frame


def make_past(n_tasks: int = 4, n: int = 30, warp_task: int | None = None) -> PastRuns:
    """Past tasks sharing the optimum; ``warp_task``'s errors through an increasing map."""
    configs = SPACE.sample(np.random.default_rng(0), n)
    rows = []
    for k in range(n_tasks):
        for a, p in configs:
            v = shifted(k)(a, p)
            rows.append((f"t{k}", a, p, math.exp(4 * v) if k == warp_task else v))
    ks = range(n_tasks)
    mf = pd.DataFrame({"scot_K": [2.0 + k % 2 for k in ks], "scot_log_d": [1.0 + 0.1 * k for k in ks],
                       "scot_log_n_over_d": [3.0 - 0.1 * k for k in ks]}, index=[f"t{k}" for k in ks])
    return PastRuns.from_frame(frame_of(rows), meta_features=mf)


NEW = {"scot_K": 2.0, "scot_log_d": 1.05, "scot_log_n_over_d": 2.95}


def run(strategy, n: int, seed: int, objective=OBJECTIVE) -> History:
    opt = Optimizer(SPACE, strategy, seed=seed)
    for _ in range(n):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    return opt.history


def test_contract_valid_reproducible_distinct_per_seed():
    past = make_past()
    h = run(SCoT(past, NEW, **FAST), 4, 0)
    ids = [r.config_id for r in h]
    assert ids == [r.config_id for r in run(SCoT(past, NEW, **FAST), 4, 0)]
    assert ids != [r.config_id for r in run(SCoT(past, NEW, **FAST), 4, 1)]
    assert len(set(ids)) == 4  # never a repeat
    for r in h:
        SPACE.validate(r.algorithm, r.params)


def evaluations_to(history: History, threshold: float) -> int:
    """Evaluations until a value below ``threshold`` (len + 1 if never)."""
    return next((i + 1 for i, r in enumerate(history) if r.value < threshold), len(history) + 1)


def test_warm_started_scot_reaches_a_good_configuration_before_random_search():
    # below 0.005: b with n = 5 and |v - 0.7| < 0.07, about 1 uniform draw in 140; SCoT
    # learns where that is from the past tasks
    past = make_past()
    scot = [evaluations_to(run(SCoT(past, NEW, **FAST), 3, s), 0.005) for s in range(3)]
    rnd = [evaluations_to(run(RandomSearch(), 10, s), 0.005) for s in range(3)]
    assert max(scot) <= 2 and min(rnd) > 10, (scot, rnd)


def test_the_collaborative_default_follows_the_dataset_features():
    """Past optima at v = 0.15, 0.35, 0.65, 0.85 as a feature grows: the collaborative
    default of a new task in between interpolates, the global default cannot."""
    configs = SPACE.sample(np.random.default_rng(0), 40)
    v_star = [0.15, 0.35, 0.65, 0.85]
    rows = [(f"t{k}", a, p, (1 + k) * (1 + (p["u"] - 0.3) ** 2 if a == "a" else (p["v"] - vs) ** 2) + k)
            for k, vs in enumerate(v_star) for a, p in configs]
    past = PastRuns.from_frame(frame_of(rows), meta_features=pd.DataFrame({"scot_log_d": v_star},
                                                                          index=[f"t{k}" for k in range(4)]))
    for new in (0.2, 0.5, 0.8):
        a, p = collaborative_default(past, {"scot_log_d": new}, SPACE, n_random=100, gp_restarts=0)
        assert a == "b" and abs(p["v"] - new) < 0.08, (new, p)
    a, p = global_default(past, SPACE)
    assert a == "b" and abs(p["v"] - 0.5) > 0.1


def test_suggestions_ignore_a_monotone_rescaling_of_one_past_tasks_errors():
    plain, warped = SCoT(make_past(), NEW, **FAST), SCoT(make_past(warp_task=2), NEW, **FAST)
    h = run(plain, 3, 1)
    assert [r.config_id for r in h] == [r.config_id for r in run(warped, 3, 1)]
    gp1, at1, best1 = plain.model(h, SPACE)
    gp2, at2, best2 = warped.model(h, SPACE)
    X = SPACE.encode_many(SPACE.sample(np.random.default_rng(3), 20))
    assert best1 == best2
    np.testing.assert_array_equal(gp1.predict(at1(X))[0], gp2.predict(at2(X))[0])


def test_failures_rank_below_every_success_and_no_pair_means_random():
    h = run(RandomSearch(), 3, 0)
    opt = Optimizer(SPACE, RandomSearch(), seed=0)
    for r in h:
        opt.tell(opt.ask(), r.value)
    opt.tell(opt.ask(), None, status="crash")
    values = _ranking_values(opt.history)
    assert values[-1] > values[:-1].max()
    empty = PastRuns.from_frame(frame_of([]).astype({"value": float}))
    strategy = SCoT(empty, NEW, **FAST)
    assert strategy.model(History(), SPACE) is None
    run(strategy, 4, 0)  # random until two distinct values, then the ranker (no past at all)


def test_feature_scaling_and_imputation():
    ref = pd.DataFrame({"a": [1.0, 3.0, np.nan], "b": [5.0, 5.0, 5.0], "c": [np.nan] * 3})
    s = FeatureScaler(ref, ["a", "b", "c", "missing"])
    assert s.names_ == ["a", "b"]  # features no reference task has are left out
    np.testing.assert_allclose(s({"a": 2.0, "b": 5.0}), [0.5, 0.0])
    np.testing.assert_allclose(s({"a": 5.0}), [2.0, 0.0])  # beyond the range, imputed b
    np.testing.assert_allclose(s({}), [0.5, 0.0])  # the past tasks' mean


def test_collaborative_tuning_in_turn_on_everything_seen():
    past = make_past(3)
    calls = []

    def task(name, k):
        def objective(a, p):
            calls.append(name)
            return None if name == "new2" and len(calls) == 2 else shifted(k)(a, p)
        return objective

    tasks = {"new1": (NEW, task("new1", 0.5)), "new2": ({**NEW, "scot_K": 3.0}, task("new2", 1.5))}
    histories = collaborative_tune(past, tasks, SPACE, budget=3, seed=0, **FAST)
    assert calls == ["new1", "new2"] * 3  # one evaluation of each dataset per round (Figure 4)
    assert [len(h) for h in histories.values()] == [3, 3]
    assert histories["new2"][0].status == "crash"  # None from the objective: a failed trial
    assert min(h.best().value - 3 * k for h, k in zip(histories.values(), (0.5, 1.5))) < 0.05
    # each dataset's model is trained on the other's observations too
    alone = SCoT(past, NEW, **FAST)
    with_peer = SCoT(past, NEW, peers={"new2": (tasks["new2"][0], histories["new2"])}, **FAST)
    X = SPACE.encode_many(SPACE.sample(np.random.default_rng(0), 10))
    gp1, at1, _ = alone.model(histories["new1"], SPACE)
    gp2, at2, _ = with_peer.model(histories["new1"], SPACE)
    assert not np.allclose(gp1.predict(at1(X))[0], gp2.predict(at2(X))[0])


def test_global_default_is_the_lowest_mean_error_and_a_strategy():
    past = make_past(3)
    a, p = global_default(past, SPACE)
    means = {}
    for runs in past.groups.values():
        for cid, v in zip(runs.config_ids, runs.values):
            means.setdefault(cid, []).append(v)
    assert config_id(a, p) == min(means, key=lambda c: np.mean(means[c]))
    h = run(GlobalDefault(past), 4, 0)
    assert (h[0].algorithm, h[0].params) == (a, p) and len(set(h.config_ids)) == 4
    with pytest.raises(InputDataError, match="global default"):
        global_default(past.only(algorithms=["other"]), SPACE)
