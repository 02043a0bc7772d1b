"""The names of the strategies, importable without the strategies themselves (the CLI's
``--strategy`` choices, the service's request schema): the cold ones
:func:`~metabo.strategies.registry.make_strategy` builds, the warm ones built from a
knowledge base, and ``auto``; :func:`metabo.tuning.registry.resolve_strategy` turns any
of them into a strategy."""

from __future__ import annotations

#: Cold starts, built by :func:`~metabo.strategies.registry.make_strategy`.
COLD_STRATEGIES: tuple[str, ...] = ("random", "gp", "gp-dense", "gp-per-algorithm")
#: Warm starts, built from a knowledge base for one stored dataset
#: (:func:`metabo.tuning.registry.resolve_strategy`).
WARM_STRATEGIES: tuple[str, ...] = ("warm", "knn", "rgpe", "rlgp", "scot")
#: The name that picks the default warm start when there is knowledge, else cold GP-BO.
AUTO = "auto"
#: The warm start ``auto`` picks.
DEFAULT_WARM = "warm"
