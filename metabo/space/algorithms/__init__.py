"""The algorithms of the CASH space: search spaces and scikit-learn estimators.

``ALGORITHMS`` (read-only, in this order): the nine of Levesque (2018) Table 5.1
(``table51``), then the additions of DESIGN.md (``extra``), then those that make every
configuration of OBOE's grid a point of the space (``oboe_grid``), then XGBoost and CatBoost
(``boosting``). ``PIPELINES``: Tensor-OBOE's
five-step pipelines, ``pipeline_<algorithm>`` (``pipelines``), known to :func:`get_algorithm`
but outside the default space (:func:`pipeline_cash_space`). ``build_estimator`` validates
a configuration and returns an unfitted classifier with ``predict_proba`` (softmax of
the decision function for the two SVMs, see ``proba``), ``random_state=seed`` where the
estimator has one and ``n_jobs=1`` where it takes one. Thread pools of OpenMP/BLAS
(hist_gradient_boosting, mlp) are the caller's to limit (threadpoolctl). Warnings such as
ConvergenceWarning are left to the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from metabo.exceptions import UnknownAlgorithmError
from metabo.space.algorithms import boosting, extra, oboe_grid, pipelines, table51
from metabo.space.algorithms.proba import DecisionProbaClassifier
from metabo.space.algorithms.spec import MAX_ROUNDS, AlgorithmSpec
from metabo.space.cash import CASHSpace
from metabo.space.values import is_integer

ALGORITHMS: Mapping[str, AlgorithmSpec] = MappingProxyType(
    {s.name: s for s in (*table51.SPECS, *extra.SPECS, *oboe_grid.SPECS, *boosting.SPECS)}
)
PIPELINES: Mapping[str, AlgorithmSpec] = MappingProxyType(
    {s.name: s for s in (pipelines.pipeline_spec(ALGORITHMS[a]) for a in pipelines.ESTIMATORS)}
)


def get_algorithm(name: str) -> AlgorithmSpec:
    """The spec of ``name``; :class:`UnknownAlgorithmError` lists the valid names."""
    try:
        return ALGORITHMS[name] if name in ALGORITHMS else PIPELINES[name]
    except (KeyError, TypeError):
        raise UnknownAlgorithmError(
            f"unknown algorithm {name!r}; valid algorithms: {list(ALGORITHMS)} and the pipelines {list(PIPELINES)}"
        ) from None


def build_estimator(algorithm: str, params: Mapping[str, Any], *, seed: int | None) -> Any:
    """An unfitted classifier for ``(algorithm, params)``; raises
    :class:`InvalidConfigurationError` for params outside the algorithm's space."""
    spec = get_algorithm(algorithm)
    return spec.build(normalize_params(spec, params), seed)


def normalize_params(spec: AlgorithmSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` validated in ``spec``'s space, but for its boosting rounds
    (:attr:`AlgorithmSpec.rounds`), which may exceed the searched range up to
    :data:`~metabo.space.algorithms.spec.MAX_ROUNDS` (a final model's, :mod:`metabo.tuning.rounds`)."""
    name = spec.rounds
    if name is None or name not in params or name not in spec.space:
        return spec.space.normalize(params)
    hp = spec.space[name]
    value, high = params[name], getattr(hp, "high", None)
    if high is None or not is_integer(value) or not high < int(value) <= MAX_ROUNDS:
        return spec.space.normalize(params)
    return {**spec.space.normalize({**params, name: high}), name: int(value)}


def default_cash_space(names: Iterable[str] | None = None) -> CASHSpace:
    """The CASH space of ``names`` (all of :data:`ALGORITHMS` when None), in the given order."""
    names = list(ALGORITHMS) if names is None else list(names)
    return CASHSpace({n: get_algorithm(n).space for n in names})


def pipeline_cash_space(names: Iterable[str] | None = None) -> CASHSpace:
    """The CASH space of Tensor-OBOE's pipelines ``names`` (all of :data:`PIPELINES` when None)."""
    return default_cash_space(list(PIPELINES) if names is None else names)


__all__ = [
    "ALGORITHMS",
    "PIPELINES",
    "AlgorithmSpec",
    "DecisionProbaClassifier",
    "build_estimator",
    "default_cash_space",
    "get_algorithm",
    "normalize_params",
    "pipeline_cash_space",
]
