"""Fixtures of the strategy tests: the toy problems of :mod:`metabo.testing.problems`."""

from __future__ import annotations

import pytest

from metabo.space.cash import CASHSpace
from metabo.testing.problems import Objective, quadratic_problem, two_algorithm_problem


@pytest.fixture
def quad() -> tuple[CASHSpace, Objective]:
    return quadratic_problem()


@pytest.fixture
def small_cash() -> tuple[CASHSpace, Objective]:
    return two_algorithm_problem()
