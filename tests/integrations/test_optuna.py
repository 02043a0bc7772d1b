"""WarmStartSampler: Optuna's own sampler contract tests, then the warm start's properties
(order, fallback, determinism across studies and workers, the knowledge base's nearest
task first, a better start than a cold study)."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable

import optuna
import pandas as pd
import pytest
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.testing.pytest_samplers import (
    BasicSamplerTestCase,
    MultiObjectiveSamplerTestCase,
    RelativeSamplerTestCase,
    SingleOnlySamplerTestCase,
)

from metabo.exceptions import InputDataError
from metabo.integrations.optuna import WarmStartSampler
from metabo.kb import KnowledgeBase

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

#: Warm values the contract tests' distributions hold in part: x = 0.5 is in [-1, 1] but
#: not an integer; x = 3 is an integer and a choice of (1, 2, 3); "b" a choice of (a, b, c).
FAKE_WARM = [{"x": 0.5, "y": 1, "z": 0.25}, {"x": 3, "y": -10, "category": "y"}, {"x": "b", "y": 7}]

THEN: dict[str, Callable[[], BaseSampler | str]] = {
    "tpe": lambda: TPESampler(seed=0),
    "random": lambda: RandomSampler(seed=0),
    "gp": lambda: "gp",
}


# -- Optuna's contract tests ---------------------------------------------------------------
class TestBasicContract(BasicSamplerTestCase):
    @pytest.fixture(params=sorted(THEN))
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then=THEN[request.param](), seed=0)


class TestRelativeContract(RelativeSamplerTestCase):
    """``then`` samplers whose relative sampling gives every parameter from the first
    completed trial on (the contract's assumption; TPE's startup trials return none)."""

    @pytest.fixture(params=["gp", "tpe-multivariate"])
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        if request.param == "gp":
            return lambda: WarmStartSampler(FAKE_WARM, then="gp", seed=0)
        return lambda: WarmStartSampler(FAKE_WARM, then=TPESampler(multivariate=True, n_startup_trials=0, seed=0),
                                        seed=0)


class TestMultiObjectiveContract(MultiObjectiveSamplerTestCase):
    @pytest.fixture(params=["tpe", "random"])
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then=THEN[request.param](), seed=0)


class TestGPSingleOnlyContract(SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then="gp", seed=0)
