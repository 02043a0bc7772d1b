"""Peer adapters: valid suggestions on the conditional function, reproducible under a
seed, observations fed and a suggestion timed. Skipped when a peer is not installed
(optional extra ``bench``)."""

from __future__ import annotations

import warnings

import pytest

from benchmarks import four_branch, get_function, peers
from metabo.exceptions import InputDataError

FAST = ["random", "optuna-tpe"]
SLOW = ["metabo-gp", "optuna-gp", "skopt-gp", "smac"]


def need(name: str) -> None:
    why = peers.available(name)
    if why is not None:
        pytest.skip(f"{name} not available: {why}")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def check_trace(trace: peers.Trace, budget: int) -> None:
    assert len(trace.values) == len(trace.seconds) == budget
    assert all(s >= 0 for s in trace.seconds)
    assert list(trace.best_so_far()) == sorted(trace.best_so_far(), reverse=True)


@pytest.mark.parametrize("name", FAST)
def test_fast_optimizers_run_and_reproduce(name: str) -> None:
    need(name)
    fn = four_branch()  # the objective validates every suggestion (conditional child included)
    a, b = peers.run(name, fn, 15, seed=3), peers.run(name, fn, 15, seed=3)
    check_trace(a, 15)
    assert a.values == b.values
    assert peers.run(name, fn, 15, seed=4).values != a.values


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
@pytest.mark.parametrize("function", ["branin", "four_branch"])
def test_model_based_optimizers_give_valid_suggestions(name: str, function: str) -> None:
    need(name)
    check_trace(peers.run(name, get_function(function), 14, seed=0), 14)


@pytest.mark.parametrize("name", FAST)
def test_suggestion_after_observations(name: str) -> None:
    need(name)
    t = peers.suggestion_seconds(name, four_branch(), 20, seed=0, window=3)
    assert set(t) == {"first", "steady"} and t["first"] > 0 and t["steady"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_model_based_suggestion_after_observations(name: str) -> None:
    need(name)
    t = peers.suggestion_seconds(name, four_branch(), 15, seed=0, window=2)
    assert t["first"] > 0 and t["steady"] > 0


def test_skopt_flat_space_round_trip() -> None:
    need("skopt-gp")
    fn = four_branch()
    s = peers.SkoptSuggester(fn, seed=0)
    for algorithm, params in fn.space.sample(0, 40):
        x = s._encode(algorithm, params)
        assert len(x) == 1 + fn.n_dims
        assert s._decode(x) == (algorithm, params)


def test_smac_configspace_round_trip() -> None:
    need("smac")
    fn = four_branch()
    s = peers.SmacSuggester(fn, seed=0, n_trials=10)
    try:
        for algorithm, params in fn.space.sample(0, 40):
            a, p = s._decode(s._encode(algorithm, params))
            assert a == algorithm and list(p) == list(params)
            for k, v in params.items():  # ConfigSpace rounds floats to about 13 digits
                assert p[k] == (pytest.approx(v, rel=1e-10) if isinstance(v, float) else v)
    finally:
        s.close()


def test_unknown_optimizer() -> None:
    with pytest.raises(InputDataError, match="optuna-tpe"):
        peers.make("nope", four_branch(), 0, 10)
    assert "unknown" in (peers.available("nope") or "")
