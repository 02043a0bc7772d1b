"""Lookup benchmarks: a peer optimizer run on recorded candidates (OptunaOnCandidates)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.lookup import OptunaOnCandidates
from metabo.exceptions import InputDataError
from metabo.optimizer import Optimizer
from metabo.space.finite import FiniteCASHSpace
from metabo.testing.problems import two_algorithm_problem

pytest.importorskip("optuna")


def _run(seed: int, n: int):
    space, objective = two_algorithm_problem()
    finite = FiniteCASHSpace(space, space.sample(np.random.default_rng(0), 30))
    strategy = OptunaOnCandidates(seed=seed)
    opt = Optimizer(finite, strategy, seed=seed)
    for _ in range(n):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    return finite, strategy, opt


def test_tpe_picks_distinct_recorded_candidates_and_learns_only_what_was_observed():
    finite, strategy, opt = _run(0, 30)
    ids = [r.config_id for r in opt.history]
    assert sorted(ids) == sorted(finite.candidate_ids())  # every candidate once, nothing else
    trials = strategy._peer.study.trials
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 29  # every observation but the last is fed back before the next ask
    assert all(t.state.name in ("COMPLETE", "FAIL") for t in trials)  # proposals are discarded
    with pytest.raises(InputDataError):
        opt.ask()


def test_same_seed_same_picks():
    a = [r.config_id for r in _run(3, 12)[2].history]
    b = [r.config_id for r in _run(3, 12)[2].history]
    assert a == b
