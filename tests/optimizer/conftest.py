"""Fixtures of the optimizer tests: the toy problems of :mod:`metabo.testing.problems`, a store."""

from __future__ import annotations

import pytest

from metabo.kb import KnowledgeBase
from metabo.space.cash import CASHSpace
from metabo.testing.problems import Objective, quadratic_problem, two_algorithm_problem


@pytest.fixture
def quad() -> tuple[CASHSpace, Objective]:
    return quadratic_problem()


@pytest.fixture
def small_cash() -> tuple[CASHSpace, Objective]:
    return two_algorithm_problem()


@pytest.fixture
def kb_path(tmp_path):
    return tmp_path / "kb.duckdb"


@pytest.fixture
def dataset_id(kb_path) -> str:
    """A dataset registered in a fresh store (the runs of a black-box objective need one)."""
    with KnowledgeBase(kb_path) as kb:
        return kb.register_dataset(name="toy", source="synthetic")
