"""Strategies by name (the CLI's ``--strategy``) and the posterior model of a strategy."""

from __future__ import annotations

from typing import Any

from metabo.exceptions import InputDataError
from metabo.strategies.base import PosteriorModel, Strategy
from metabo.strategies.gp import GPBO
from metabo.strategies.gp_per_algorithm import PerAlgorithmGPBO
from metabo.strategies.names import COLD_STRATEGIES
from metabo.strategies.random import RandomSearch


def posterior_model(strategy: Strategy, *, seed: int = 0) -> PosteriorModel:
    """The strategy itself if it has a posterior mean, else a conditional-kernel GPBO."""
    if isinstance(strategy, PosteriorModel):
        return strategy
    return GPBO(kernel="conditional", seed=seed)


def selection_model(strategy: Strategy, select: str, *, seed: int = 0) -> PosteriorModel | None:
    """The model :meth:`metabo.optimizer.Optimizer.best` selects with under ``select``:
    :func:`posterior_model` for ``posterior_mean``, None (the observed values) otherwise."""
    return posterior_model(strategy, seed=seed) if select == "posterior_mean" else None


def make_strategy(name: str, *, seed: int = 0, **kw: Any) -> Strategy:
    """A strategy by its CLI name: ``random``, ``gp``, ``gp-dense``, ``gp-per-algorithm``."""
    if name == "random":
        return RandomSearch(**kw)
    if name == "gp":
        return GPBO(kernel="conditional", seed=seed, **kw)
    if name == "gp-dense":
        return GPBO(kernel="dense", seed=seed, **kw)
    if name == "gp-per-algorithm":
        return PerAlgorithmGPBO(seed=seed, **kw)
    raise InputDataError(f"unknown strategy {name!r}; use one of {', '.join(COLD_STRATEGIES)}")


__all__ = ["make_strategy", "posterior_model", "selection_model"]
