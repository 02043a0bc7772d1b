"""The record describing one learning algorithm: its space and how to build it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from importlib.metadata import version
from typing import Any, Literal, TypeAlias

from metabo.space.space import SearchSpace

#: ``build(params, seed)``: an unfitted scikit-learn classifier; ``params`` are valid.
Builder: TypeAlias = Callable[[Mapping[str, Any], "int | None"], Any]

#: the most boosting rounds a final model may take beyond its algorithm's searched range
#: (:attr:`AlgorithmSpec.rounds`)
MAX_ROUNDS = 5000


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm of the CASH space.

    ``needs_scaling``: features should be standardized first (distances, margins,
    penalties or gradient steps depend on their scale). ``encoding``: how categorical
    features should be encoded for it ("ordinal" for trees and boosting, "onehot" for the
    rest, "native" for an estimator that treats the ordinal codes as categories itself once
    told which columns hold them: its ``categorical`` parameter,
    :func:`metabo.evaluation.preprocessing.tell_nominal`). ``handles_missing``: it accepts NaN in the features
    as they are.
    ``encoding_param``: the hyperparameter that chooses the encoding per configuration
    instead (a pipeline's encoder step, :mod:`.pipelines`); :meth:`needs_for` reads it.
    ``rounds``: a gradient-boosting library's number of boosting rounds, which a final model
    may take beyond the searched range, up to :data:`MAX_ROUNDS`
    (:func:`metabo.space.algorithms.build_estimator`); a spec that names it promises that
    :mod:`metabo.tuning.rounds` reads its rounds (raw scores over a range of rounds, and a fit
    that the clock ends keeping the rounds made).
    """

    name: str
    space: SearchSpace
    needs_scaling: bool
    encoding: Literal["onehot", "ordinal", "native"]
    handles_missing: bool
    build: Builder
    encoding_param: str | None = None
    rounds: str | None = None

    def needs_for(self, params: Mapping[str, Any]) -> AlgorithmSpec:
        """The preprocessing needs of the configuration ``params``: this spec, with the
        encoding its ``encoding_param`` names when it has one."""
        if self.encoding_param is None:
            return self
        return replace(self, encoding=params.get(self.encoding_param, self.encoding))


def make_space(name: str, *hps: Any) -> SearchSpace:
    """The space of algorithm ``name`` (unconditional hyperparameters)."""
    return SearchSpace(name, hps)


def sklearn_at_least(major: int, minor: int) -> bool:
    """Whether the installed scikit-learn is at least ``major.minor`` (without importing it)."""
    parts = version("scikit-learn").split(".")
    return (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)) >= (major, minor)
