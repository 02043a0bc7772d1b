"""A finite CASH space (lookup benchmarks): sampling, subsets, exhaustive acquisition search."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.acquisition.search import maximize
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.kb.canonical import config_id
from metabo.optimizer import GPBO, Optimizer, RandomSearch
from metabo.space.finite import FiniteCASHSpace
from metabo.testing.problems import two_algorithm_problem


def finite():
    space, objective = two_algorithm_problem()
    rng = np.random.default_rng(0)
    candidates = space.sample(rng, 40)
    return FiniteCASHSpace(space, candidates + candidates[:5]), objective, candidates  # duplicates dropped


def test_candidates_sampling_and_subsets():
    space, _, candidates = finite()
    assert len(space.candidates) == len({config_id(a, p) for a, p in candidates}) == 40
    ids = set(space.candidate_ids())
    assert all(config_id(a, p) in ids for a, p in space.sample(1, 200))
    np.testing.assert_array_equal(space.encoded_candidates(), space.encode_many(space.candidates))
    sub = space.subset(["b"])
    assert set(sub.algorithms) == {"b"} and all(a == "b" for a, _ in sub.candidates)
    assert len(space.neighbours_encoded(space.encoded_candidates()[0], 0)) == 0
    with pytest.raises(InvalidConfigurationError):
        FiniteCASHSpace(two_algorithm_problem()[0], [("b", {"v": 2.0, "n": 1})])
    with pytest.raises(InputDataError):
        FiniteCASHSpace(two_algorithm_problem()[0], [])


def test_maximize_scores_every_candidate_left():
    space, objective, _ = finite()
    values = np.array([objective(a, p) for a, p in space.candidates])
    order = np.argsort(values)
    score = lambda X: -np.array([objective(*space.decode(x)) for x in X])  # noqa: E731
    (a, p), _ = maximize(space, score)
    assert config_id(a, p) == space.candidate_ids()[order[0]]
    (a, p), _ = maximize(space, score, evaluated={space.candidate_ids()[order[0]]})
    assert config_id(a, p) == space.candidate_ids()[order[1]]
    with pytest.raises(InputDataError, match="already evaluated"):
        maximize(space, score, evaluated=set(space.candidate_ids()))


@pytest.mark.parametrize("strategy", [RandomSearch(), GPBO(n_init=3, n_random=50, refit_every=5, n_restarts=0)])
def test_strategies_stay_in_the_candidates_until_exhausted(strategy):
    space, objective, _ = finite()
    opt = Optimizer(space, strategy, seed=0)
    for _ in range(40):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    assert sorted(r.config_id for r in opt.history) == sorted(space.candidate_ids())
    with pytest.raises(InputDataError):
        opt.ask()
