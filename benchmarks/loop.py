"""The benchmarks' ask/tell loop on an objective that answers at once (a lookup table, a
surrogate model, recorded values): one place that times each suggestion."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metabo.space.cash import CASHSpace


@dataclass
class Played:
    """What :func:`play` recorded, one entry per trial in order."""

    values: list[float] = field(default_factory=list)
    #: seconds the strategy took to suggest each trial (``Optimizer.ask``)
    seconds: list[float] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)
    config_ids: list[str] = field(default_factory=list)


def play(space: CASHSpace, strategy: Any, objective: Callable[[str, Mapping[str, Any]], float], n: int, *,
         seed: int = 0) -> Played:
    """``n`` trials of ``strategy`` through the ask/tell optimizer (seeded by ``seed``),
    each scored by ``objective(algorithm, params)``; a non-finite score is told as a
    failed trial (``crash``)."""
    from metabo.optimizer import Optimizer

    opt = Optimizer(space, strategy, seed=seed)
    out = Played()
    for _ in range(n):
        start = time.perf_counter()
        trial = opt.ask()
        out.seconds.append(time.perf_counter() - start)
        value = float(objective(trial.algorithm, trial.params))
        opt.tell(trial, value, status="ok" if math.isfinite(value) else "crash")
        out.values.append(value)
        out.algorithms.append(trial.algorithm)
        out.config_ids.append(trial.config_id)
    return out


__all__ = ["Played", "play"]
