"""Synthetic benchmark functions: known optima at known minimizers, valid spaces,
determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import FUNCTIONS, four_branch, get_function
from benchmarks.functions import branin, hartmann3, hartmann6, rosenbrock
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.space.cash import CASHSpace


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_known_optimum_at_known_minimizers(name: str) -> None:
    fn = get_function(name)
    assert fn.minimizers
    for algorithm, params in fn.minimizers:
        assert fn(algorithm, params) == pytest.approx(fn.optimum, abs=1e-5)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_no_random_point_beats_the_optimum(name: str) -> None:
    fn = get_function(name)
    values = [fn(a, p) for a, p in fn.space.sample(0, 1000)]
    assert min(values) > fn.optimum - 1e-5


def test_published_values() -> None:
    # Surjanovic & Bingham: Branin 0.397887 at three minimizers, Hartmann f* values.
    assert branin(-math.pi, 12.275) == pytest.approx(0.397887, abs=1e-6)
    assert branin(9.42478, 2.475) == pytest.approx(0.397887, abs=1e-6)
    assert hartmann3([0.114614, 0.555649, 0.852547]) == pytest.approx(-3.86278, abs=1e-5)
    assert hartmann6([0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]) == pytest.approx(-3.32237, abs=1e-5)
    assert rosenbrock(1.0, 1.0) == 0.0
    # vectorized over leading axes
    X = np.random.default_rng(0).random((5, 6))
    np.testing.assert_allclose(hartmann6(X), [hartmann6(x) for x in X])


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_spaces_validate_and_round_trip(name: str) -> None:
    fn = get_function(name)
    assert isinstance(fn.space, CASHSpace)
    for algorithm, params in fn.space.sample(1, 50):
        fn.space.validate(algorithm, params)
        x = fn.space.encode(algorithm, params)
        assert x.shape == (fn.space.n_dims,) and np.all((0 <= x) & (x <= 1))
    assert CASHSpace.from_configspace(fn.space.to_configspace()) == fn.space


def test_four_branch_layout() -> None:
    fn = four_branch()
    assert fn.space.algorithms == ("branin", "quadratic", "hartmann3", "rosenbrock")
    assert all(2 <= len(s) <= 4 for s in fn.space.spaces.values())
    # each branch's own minimum, only hartmann3 reaches the global one
    assert fn("branin", {"x1": math.pi, "x2": 2.275}) == pytest.approx(0.5, abs=1e-6)
    assert fn("quadratic", {"n": 7, "y": 10**0.5, "shape": "a"}) == pytest.approx(0.3)
    assert fn("rosenbrock", {"x1": 1.0, "x2": 1.0, "mode": "tuned", "power": 3}) == pytest.approx(0.2)
    assert fn("rosenbrock", {"x1": 1.0, "x2": 1.0, "mode": "fixed"}) == pytest.approx(0.7)
    # the conditional child is active only under its parent's value
    rosen = fn.space["rosenbrock"]
    assert rosen.active({"x1": 0.0, "x2": 0.0, "mode": "fixed"}) == {"x1", "x2", "mode"}
    with pytest.raises(InvalidConfigurationError):
        fn("rosenbrock", {"x1": 1.0, "x2": 1.0, "mode": "fixed", "power": 3})


def test_deterministic_and_validating() -> None:
    a, b = four_branch(), four_branch()
    configs = a.space.sample(7, 100)
    assert [a(c, p) for c, p in configs] == [b(c, p) for c, p in configs]
    assert a.space.sample(7, 5) == b.space.sample(7, 5)
    with pytest.raises(InvalidConfigurationError):
        get_function("branin")("f", {"x1": 11.0, "x2": 0.0})


def test_unknown_function_names_the_valid_ones() -> None:
    with pytest.raises(InputDataError, match="branin"):
        get_function("nope")
