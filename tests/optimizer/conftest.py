"""Toy problems for the optimizer tests: a 2-d quadratic and a small two-algorithm CASH space."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from metabo.kb import KnowledgeBase
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Categorical, Float, Integer
from metabo.space.space import SearchSpace

Objective = Callable[[str, dict], float]


def _quadratic(algorithm: str, params: dict) -> float:
    """Minimum 0 at (1, -2)."""
    return (params["x"] - 1.0) ** 2 + (params["y"] + 2.0) ** 2


def _cash_objective(algorithm: str, params: dict) -> float:
    """Algorithm 'b' holds the optimum (v = 0.7, n = 5)."""
    if algorithm == "a":
        return 1.0 + (params["u"] - 0.3) ** 2 + 0.1 * (params["k"] != "l1")
    return (params["v"] - 0.7) ** 2 + 0.01 * abs(params["n"] - 5)


@pytest.fixture
def quad() -> tuple[CASHSpace, Objective]:
    space = SearchSpace("quad", (Float("x", -5.0, 5.0), Float("y", -5.0, 5.0)))
    return CASHSpace({"quad": space}), _quadratic


@pytest.fixture
def small_cash() -> tuple[CASHSpace, Objective]:
    space = CASHSpace({
        "a": SearchSpace("a", (Float("u", 0.0, 1.0), Categorical("k", ("l1", "l2")))),
        "b": SearchSpace("b", (Float("v", 0.0, 1.0), Integer("n", 1, 10))),
    })
    return space, _cash_objective


@pytest.fixture
def kb_path(tmp_path):
    return tmp_path / "kb.duckdb"


@pytest.fixture
def dataset_id(kb_path) -> str:
    """A dataset registered in a fresh store (the runs of a black-box objective need one)."""
    with KnowledgeBase(kb_path) as kb:
        return kb.register_dataset(name="toy", source="synthetic")
