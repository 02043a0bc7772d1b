"""Type aliases shared across metabo."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

Seed: TypeAlias = int | np.random.Generator | None
FloatArray: TypeAlias = np.ndarray


def as_generator(seed: Seed) -> np.random.Generator:
    """Normalize a seed once, the scikit-learn ``check_random_state`` habit."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
