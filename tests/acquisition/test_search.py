"""maximize: random sampling + one-exchange local search over mixed, conditional and
CASH spaces; never an evaluated configuration; reproducible under a seed."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.acquisition import maximize
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.kb.canonical import config_id
from metabo.space import Categorical, EqualsCondition, Float, Integer, SearchSpace
from metabo.space.algorithms import default_cash_space
from metabo.space.cash import CASHSpace, as_cash


def mixed() -> CASHSpace:
    """A float, an int, a categorical and a child active only under c == 'b'."""
    space = SearchSpace(
        "mixed",
        [
            Float("x", -5.0, 5.0),
            Integer("n", 1, 20),
            Categorical("c", ("a", "b", "c")),
            Float("y", 1e-3, 1.0, log=True),
        ],
        [EqualsCondition("y", "c", "b")],
    )
    return as_cash(space, "mixed")


def three() -> CASHSpace:
    svm = SearchSpace(
        "svm",
        [Categorical("kernel", ("rbf", "poly")), Float("C", 1e-3, 1e3, log=True), Integer("degree", 2, 5)],
        [EqualsCondition("degree", "kernel", "poly")],
    )
    knn = SearchSpace("knn", [Integer("n_neighbors", 1, 30, default=5)])
    return CASHSpace({"knn": knn, "svm": svm, "nb": SearchSpace("nb", [])})


def peaked(space: CASHSpace, optimum: tuple[str, dict], width: float = 0.3):
    """exp(-|x - x*|^2 / (2 width^2)) on the encoding: its maximum is at ``optimum``."""
    target = space.encode(*optimum)

    def score(X: np.ndarray) -> np.ndarray:
        return np.exp(-((X - target) ** 2).sum(axis=1) / (2 * width**2))

    return score


MIXED_OPT = ("mixed", {"x": 1.5, "n": 7, "c": "b", "y": 0.05})
SVM_OPT = ("svm", {"kernel": "poly", "C": 10.0, "degree": 3})


def test_finds_the_optimum_of_a_mixed_conditional_space():
    space = mixed()
    values = []
    for seed in range(5):
        (a, p), value = maximize(space, peaked(space, MIXED_OPT), n_random=300, seed=seed)
        space.validate(a, p)
        assert a == "mixed" and p["n"] == 7 and p["c"] == "b"
        # value > 0.995 puts the point within 0.03 of the optimum in unit space (width 0.3):
        # 0.3 in x (range 10), 0.21 in log y (range log 1000)
        assert value > 0.995
        assert p["x"] == pytest.approx(1.5, abs=0.3) and np.log(p["y"]) == pytest.approx(np.log(0.05), abs=0.21)
        values.append(value)
    assert np.median(values) > 0.998


def test_finds_the_optimum_of_a_three_algorithm_cash_space():
    space = three()
    # knn's optimum is a lower peak elsewhere; the svm's poly branch holds the best.
    svm_score = peaked(space, SVM_OPT)
    knn_score = peaked(space, ("knn", {"n_neighbors": 20}))

    def score(X):
        return np.maximum(svm_score(X), 0.8 * knn_score(X))

    values = []
    for seed in range(5):
        (a, p), value = maximize(space, score, n_random=100, seed=seed)
        assert a == "svm" and p["kernel"] == "poly" and p["degree"] == 3
        # value > 0.99: within 0.042 of the optimum in unit space, 0.25 in log10 C (range 6)
        assert value > 0.99
        assert np.log10(p["C"]) == pytest.approx(1.0, abs=0.25)
        values.append(value)
    assert np.median(values) > 0.999


def test_local_search_switches_algorithm():
    """Starting only from knn (no random draws), the svm optimum is reached through the
    CASH neighbourhood (other algorithms at their defaults)."""
    space = three()
    (a, p), _ = maximize(
        space, peaked(space, SVM_OPT, width=1.0), starts=[("knn", {"n_neighbors": 5})], n_random=0, n_local=1
    )
    assert a == "svm" and p["kernel"] == "poly"


def test_default_cash_space_finds_the_algorithm_of_the_peak():
    space = default_cash_space()
    optimum = space.sample(42, 1)[0]
    (a, p), value = maximize(space, peaked(space, optimum), n_random=500, seed=0)
    assert a == optimum[0]
    assert value > 0.95


def test_never_returns_an_evaluated_configuration():
    space = mixed()
    score = peaked(space, MIXED_OPT)
    best, _ = maximize(space, score, n_random=300, seed=0)
    evaluated = {config_id(*best), config_id(*MIXED_OPT)}
    other, other_value = maximize(
        space, score, starts=[MIXED_OPT, best], evaluated=evaluated, n_random=300, seed=0
    )
    assert config_id(*other) not in evaluated
    assert other != best and other_value > 0.99


def test_discrete_space_returns_the_best_unevaluated_then_raises_when_exhausted():
    space = as_cash(SearchSpace("d", [Categorical("c", ("a", "b", "c")), Integer("k", 1, 3)]), "f")
    score = peaked(space, ("f", {"c": "b", "k": 2}))
    everything = [("f", {"c": c, "k": k}) for c in "abc" for k in (1, 2, 3)]
    ids = [config_id(*cfg) for cfg in everything]
    best, _ = maximize(space, score, n_random=20, seed=0)
    assert best == ("f", {"c": "b", "k": 2})
    second, _ = maximize(space, score, evaluated={config_id(*best)}, n_random=20, seed=0)
    assert second in [("f", {"c": "b", "k": 1}), ("f", {"c": "b", "k": 3})]  # nearest in encoding
    last = [i for i in ids if i != config_id("f", {"c": "a", "k": 3})]
    assert maximize(space, score, evaluated=last, n_random=5, seed=0)[0] == ("f", {"c": "a", "k": 3})
    with pytest.raises(InputDataError, match="exhausted"):
        maximize(space, score, evaluated=ids, n_random=20, seed=0)


def test_same_seed_same_result_other_seed_other_result():
    space = default_cash_space()
    score = peaked(space, space.sample(3, 1)[0], width=0.5)
    first = maximize(space, score, n_random=200, n_local=5, seed=7)
    assert maximize(space, score, n_random=200, n_local=5, seed=7) == first
    assert maximize(space, score, n_random=200, n_local=5, seed=np.random.default_rng(7)) == first
    assert maximize(space, score, n_random=200, n_local=5, seed=8) != first


def test_local_search_beats_random_sampling_for_the_same_budget():
    space = as_cash(SearchSpace("h", [Float(f"x{i}", 0.0, 1.0) for i in range(6)]), "f")
    for seed in range(3):
        optimum = space.sample(100 + seed, 1)[0]
        raw = peaked(space, optimum, width=0.15)
        n_scored = 0

        def score(X, raw=raw):
            nonlocal n_scored
            n_scored += len(X)
            return raw(X)

        _, local = maximize(space, score, n_random=100, n_local=3, seed=seed)
        budget, n_scored = n_scored, 0
        _, random_only = maximize(space, score, n_random=budget, n_local=0, seed=seed)
        assert n_scored == budget + 1  # the one default of the space is scored up front
        assert local > max(random_only, 0.9)


def test_starts_are_used_and_validated():
    space = mixed()
    score = peaked(space, MIXED_OPT, width=0.05)  # too narrow for 5 random draws to find
    near = ("mixed", {"x": 1.6, "n": 7, "c": "b", "y": 0.05})
    (a, p), value = maximize(space, score, starts=[near], n_random=5, seed=0)
    assert p["c"] == "b" and value >= score(space.encode_many([near]))[0]
    with pytest.raises(InvalidConfigurationError):
        maximize(space, score, starts=[("mixed", {"x": 99.0, "n": 7, "c": "a"})])


def test_bad_inputs():
    space = mixed()
    with pytest.raises(InputDataError, match="as_cash"):
        maximize(space["mixed"], lambda X: X[:, 0])
    with pytest.raises(InputDataError, match="one value per row"):
        maximize(space, lambda X: X)
    with pytest.raises(InputDataError, match="NaN"):
        maximize(space, lambda X: np.full(len(X), np.nan))
    with pytest.raises(InputDataError, match="nothing to search"):
        maximize(space, lambda X: X[:, 0], n_random=0)
    # -inf scores (log EI with no possible improvement) are fine.
    (a, p), value = maximize(space, lambda X: np.full(len(X), -np.inf), n_random=10)
    assert value == -np.inf


def test_as_cash():
    inner = mixed()["mixed"]
    wrapped = as_cash(inner)
    assert wrapped.algorithms == ("mixed",) and wrapped["mixed"].hyperparameters == inner.hyperparameters
    assert as_cash(inner, "f").algorithms == ("f",)
    cash = three()
    assert as_cash(cash) is cash
    with pytest.raises(InputDataError):
        as_cash({"x": inner})  # type: ignore[arg-type]
