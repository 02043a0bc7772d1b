"""The search space :class:`~metabo.integrations.sklearn.MetaSearchCV` tunes, from what a
scikit-learn user passes.

- ``None`` or ``"cash"`` (no estimator): the CASH space of every registered algorithm
  (:func:`metabo.space.algorithms.default_cash_space`); a :class:`CASHSpace` (or a
  ConfigSpace ``ConfigurationSpace`` with an ``algorithm`` root) for a subset.
- With an estimator: a :class:`SearchSpace`, a ConfigSpace ``ConfigurationSpace``, or a
  dict ``param -> values`` like ``RandomizedSearchCV``'s ``param_distributions``:
  a list is a categorical choice; ``scipy.stats.uniform(loc, scale)`` a float in
  ``[loc, loc + scale]``; ``scipy.stats.loguniform(a, b)`` a float in ``[a, b]`` on a
  log scale; ``scipy.stats.randint(low, high)`` an integer in ``low..high - 1``.
  Choices that are not JSON scalars (``None``, objects) are stored as their ``repr``
  (the knowledge base holds JSON) and given back to the estimator as themselves.

A user's estimator is recorded under the project's name for its class when it has one
(:func:`estimator_algorithm`: ``LogisticRegression`` -> ``logistic_regression``, ``SVC``
with its kernel -> ``svm_rbf``, as OpenML flows are mapped), so its search reads the runs
stored for that algorithm and its trials add to them; only the searched parameters are
recorded, the estimator's other settings are the user's. Another class keeps its class
name (nothing stored transfers to it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from metabo.exceptions import InputDataError
from metabo.space.cash import ALGORITHM, CASHSpace, as_cash
from metabo.space.hyperparameters import Categorical, Constant, Float, Hyperparameter, Integer
from metabo.space.space import SearchSpace

#: scipy.stats distribution name -> (hyperparameter type, log scale)
_DISTRIBUTIONS = {"uniform": (Float, False), "loguniform": (Float, True), "reciprocal": (Float, True),
                  "randint": (Integer, False)}


@dataclass(frozen=True)
class TunedSpace:
    """The CASH space searched, and how its configurations become estimator parameters.

    ``cash``: True when the algorithm is part of the search (no user estimator).
    ``tokens``: param -> {stored token: the user's value} for non-scalar choices.
    """

    space: CASHSpace
    cash: bool
    tokens: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def params(self, algorithm: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The candidate's parameters as ``cv_results_['params']`` shows them: the
        user's values; under CASH, ``algorithm`` first."""
        values = {k: self.tokens[k][v] if k in self.tokens else v for k, v in params.items()}
        return {ALGORITHM: algorithm, **values} if self.cash else values

    def size(self) -> int | None:
        """The number of configurations when it is finite and easily counted (one
        estimator's unconditional space of choices and constants), else None."""
        (space,) = self.space.spaces.values() if not self.cash else (None,)
        if space is None or space.conditions or not all(isinstance(hp, (Categorical, Constant)) for hp in space):
            return None
        return math.prod(len(hp.choices) if isinstance(hp, Categorical) else 1 for hp in space)


def tuned_space(estimator: Any, search_space: Any) -> TunedSpace:
    """The :class:`TunedSpace` of ``(estimator, search_space)`` (module docstring)."""
    try:
        from ConfigSpace import ConfigurationSpace
    except ImportError:  # pragma: no cover - ConfigSpace is a dependency
        ConfigurationSpace = ()  # type: ignore[assignment,misc]
    if estimator is None:
        if search_space is None or (isinstance(search_space, str) and search_space == "cash"):
            from metabo.space.algorithms import default_cash_space

            return TunedSpace(default_cash_space(), cash=True)
        if isinstance(search_space, CASHSpace):
            return TunedSpace(search_space, cash=True)
        if isinstance(search_space, ConfigurationSpace):
            return TunedSpace(CASHSpace.from_configspace(search_space), cash=True)
        raise InputDataError(f"search_space {type(search_space).__name__} needs an estimator to tune; without "
                             "one, pass None or 'cash' (every registered algorithm) or a CASHSpace")
    name = estimator_algorithm(estimator)
    if isinstance(search_space, SearchSpace):
        return TunedSpace(as_cash(search_space, name), cash=False)
    if isinstance(search_space, ConfigurationSpace):
        return TunedSpace(as_cash(SearchSpace.from_configspace(search_space), name), cash=False)
    if isinstance(search_space, Mapping) and search_space:
        hps, tokens = [], {}
        for param, values in search_space.items():
            hp, token_map = _hyperparameter(param, values)
            hps.append(hp)
            if token_map:
                tokens[param] = token_map
        return TunedSpace(as_cash(SearchSpace(name, tuple(hps)), name), cash=False, tokens=tokens)
    raise InputDataError(
        f"search_space for {name} must be a non-empty dict param -> list or scipy.stats distribution, a "
        f"SearchSpace or a ConfigSpace ConfigurationSpace; got {search_space!r}"
    )


def estimator_algorithm(estimator: Any) -> str:
    """The project's algorithm name of ``estimator``'s class (``svm_<kernel>`` for
    ``SVC``), else its class name."""
    from metabo.ingest.openml_flows import sklearn_algorithm

    cls = type(estimator)
    algorithm = sklearn_algorithm(f"{cls.__module__}.{cls.__qualname__}")
    if algorithm is None:
        return cls.__name__
    if algorithm == "svm":
        kernel = estimator.get_params().get("kernel", "rbf")
        return f"svm_{kernel}" if isinstance(kernel, str) and kernel.isidentifier() else cls.__name__
    return algorithm


def _hyperparameter(param: Any, values: Any) -> tuple[Hyperparameter, dict[str, Any]]:
    """One ``param_distributions`` entry as a hyperparameter (and its tokens)."""
    if not isinstance(param, str) or not param:
        raise InputDataError(f"search_space keys must be parameter names, got {param!r}")
    if hasattr(values, "rvs") and hasattr(values, "dist"):
        kind = _DISTRIBUTIONS.get(values.dist.name)
        if kind is None:
            raise InputDataError(
                f"{param}: scipy.stats.{values.dist.name} is not supported; use uniform, loguniform or randint "
                "(bounded, so the space can be encoded), or a list of values"
            )
        cls, log = kind
        low, high = values.support()
        if cls is Float:
            return Float(param, float(low), float(high), log=log), {}
        return Integer(param, int(low), int(high), log=log), {}
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise InputDataError(f"{param}: expected a list of values or a scipy.stats distribution, got {values!r} "
                             "(a single value is a one-element list)")
    values = list(values)
    try:
        return Categorical(param, tuple(values)), {}
    except InputDataError:
        if not values:
            raise
    tokens = {repr(v): v for v in values}  # non-scalar choices (None, objects): stored by repr
    if len(tokens) != len(values):
        raise InputDataError(f"{param}: choices {values!r} are not distinct by repr; give distinct values")
    return Categorical(param, tuple(tokens)), tokens
