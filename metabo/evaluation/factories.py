"""Estimator factories: what :func:`~metabo.evaluation.evaluate.evaluate` builds models with.

A factory is ``factory(algorithm, params, seed) -> (needs, estimator)``: the
preprocessing needs of the algorithm (:class:`~metabo.evaluation.preprocessing.PreprocessingNeeds`)
and an unfitted, seeded estimator. It raises
:class:`~metabo.exceptions.InvalidConfigurationError` for a configuration outside its
space, which ``evaluate`` records as a crash.

- :func:`registry_factory` (the default) builds the registered algorithms of
  :mod:`metabo.space.algorithms`, validating the configuration first.
- :class:`EstimatorFactory` wraps any scikit-learn classifier class, for models outside
  the registry; it is picklable, so it travels to parallel workers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metabo.evaluation.preprocessing import PreprocessingNeeds, PreprocessingSpec
from metabo.exceptions import InvalidConfigurationError

Factory = Callable[[str, Mapping[str, Any], int], tuple[PreprocessingNeeds, Any]]


def registry_factory(algorithm: str, params: Mapping[str, Any], seed: int) -> tuple[PreprocessingNeeds, Any]:
    """Build ``algorithm`` from :mod:`metabo.space.algorithms` (validates, then builds)."""
    from metabo.space.algorithms import build_estimator, get_algorithm

    spec = get_algorithm(algorithm)
    return spec.needs_for(params), build_estimator(algorithm, dict(params), seed=seed)


@dataclass(frozen=True)
class EstimatorFactory:
    """``estimator(**params)`` with ``seed_param`` set to the seed (when it has one).

    Any ``algorithm`` name is accepted (it only labels the runs). A keyword the class
    does not take raises :class:`InvalidConfigurationError`; bad values surface when
    fitting, as a crash.
    """

    estimator: type
    needs: PreprocessingNeeds = field(default_factory=PreprocessingSpec)
    seed_param: str | None = "random_state"

    def __call__(self, algorithm: str, params: Mapping[str, Any], seed: int) -> tuple[PreprocessingNeeds, Any]:
        try:
            model = self.estimator(**params)
        except TypeError as e:
            raise InvalidConfigurationError(f"{algorithm}: {e}") from e
        if self.seed_param and self.seed_param in model.get_params(deep=False):
            model.set_params(**{self.seed_param: seed})
        return self.needs, model
