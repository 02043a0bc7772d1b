"""The names of the strategies, importable without the strategies themselves (the CLI's
``--strategy`` choices, the service's request schema): the cold ones
:func:`~metabo.strategies.registry.make_strategy` builds, the warm ones
:mod:`metabo.strategies.warm` builds from a knowledge base."""

from __future__ import annotations

#: Cold starts, built by :func:`~metabo.strategies.registry.make_strategy`.
COLD_STRATEGIES: tuple[str, ...] = ("random", "gp", "gp-dense", "gp-per-algorithm")
