"""Toy optimization problems for tests of strategies and optimizers (known optima)."""

from __future__ import annotations

from collections.abc import Callable

from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Categorical, Float, Integer
from metabo.space.space import SearchSpace

Objective = Callable[[str, dict], float]


def _quadratic(algorithm: str, params: dict) -> float:
    """Minimum 0 at (1, -2)."""
    return (params["x"] - 1.0) ** 2 + (params["y"] + 2.0) ** 2


def _two_algorithms(algorithm: str, params: dict) -> float:
    """Algorithm 'b' holds the optimum 0 (v = 0.7, n = 5); 'a' is 1 or more."""
    if algorithm == "a":
        return 1.0 + (params["u"] - 0.3) ** 2 + 0.1 * (params["k"] != "l1")
    return (params["v"] - 0.7) ** 2 + 0.01 * abs(params["n"] - 5)


def quadratic_problem() -> tuple[CASHSpace, Objective]:
    """A 2-d quadratic on [-5, 5]^2 (one algorithm, ``quad``), minimum 0 at (1, -2)."""
    space = SearchSpace("quad", (Float("x", -5.0, 5.0), Float("y", -5.0, 5.0)))
    return CASHSpace({"quad": space}), _quadratic


def two_algorithm_problem() -> tuple[CASHSpace, Objective]:
    """A CASH space of two algorithms with mixed parameters; 'b' holds the optimum 0."""
    space = CASHSpace({
        "a": SearchSpace("a", (Float("u", 0.0, 1.0), Categorical("k", ("l1", "l2")))),
        "b": SearchSpace("b", (Float("v", 0.0, 1.0), Integer("n", 1, 10))),
    })
    return space, _two_algorithms


__all__ = ["Objective", "quadratic_problem", "two_algorithm_problem"]
