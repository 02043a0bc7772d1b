"""Strategies: what to evaluate next, given the history (one file each).

- :mod:`~metabo.strategies.base`: the :class:`Strategy` contract.
- :mod:`~metabo.strategies.random`: :class:`RandomSearch`.
- :mod:`~metabo.strategies.gp`: :class:`GPBO` over the joint CASH space (conditional or
  dense kernel); :mod:`~metabo.strategies.gp_per_algorithm`: :class:`PerAlgorithmGPBO`.
- :mod:`~metabo.strategies.registry`: :func:`make_strategy` (by CLI name) and
  :func:`posterior_model` (and :func:`selection_model`, the model of a selection rule).
"""

from typing import TYPE_CHECKING

from metabo._lazy import lazy_getattr

if TYPE_CHECKING:  # for type checkers; at run time each name is imported on first use (the GP's are slow)
    from metabo.strategies.base import Config, PosteriorModel, Strategy, random_configuration
    from metabo.strategies.gp import GPBO
    from metabo.strategies.gp_per_algorithm import PerAlgorithmGPBO
    from metabo.strategies.random import RandomSearch
    from metabo.strategies.registry import make_strategy, posterior_model, selection_model

_WHERE = {
    "Config": "base", "PosteriorModel": "base", "Strategy": "base", "random_configuration": "base",
    "GPBO": "gp", "PerAlgorithmGPBO": "gp_per_algorithm", "RandomSearch": "random",
    "make_strategy": "registry", "posterior_model": "registry", "selection_model": "registry",
}

__getattr__ = lazy_getattr(__name__, _WHERE)

__all__ = [
    "GPBO",
    "Config",
    "PerAlgorithmGPBO",
    "PosteriorModel",
    "RandomSearch",
    "Strategy",
    "make_strategy",
    "posterior_model",
    "selection_model",
    "random_configuration",
]
