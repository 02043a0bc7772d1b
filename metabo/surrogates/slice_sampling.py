"""Univariate slice sampling with stepping out, one coordinate at a time (Neal 2003),
the sampler Spearmint uses for GP hyperparameters (Snoek et al. 2012; thesis 2.4, eq. 2.17).

For coordinate j of ``x``: draw the slice level ``log u = log p(x) - Exp(1)``, place an
interval of width ``w_j`` at random around ``x_j``, step it out by ``w_j`` while both ends
are above the level (at most ``max_steps`` each way, clipped to the bounds), then sample
uniformly in it, shrinking towards ``x_j`` on rejection.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metabo.exceptions import SurrogateError

LogDensity = Callable[[np.ndarray], float]


def _step(
    logp: LogDensity, x: np.ndarray, lp: float, j: int, w: float, lo: float, hi: float, rng: np.random.Generator,
    max_steps: int,
) -> tuple[np.ndarray, float]:
    level = lp - rng.exponential()
    left = x[j] - w * rng.uniform()
    right = left + w

    def at(v: float) -> float:
        z = x.copy()
        z[j] = v
        return logp(z)

    for _ in range(max_steps):
        if left <= lo or at(left) <= level:
            break
        left -= w
    for _ in range(max_steps):
        if right >= hi or at(right) <= level:
            break
        right += w
    left, right = max(left, lo), min(right, hi)
    for _ in range(100):
        z = x.copy()
        z[j] = rng.uniform(left, right)
        lz = logp(z)
        if lz > level:
            return z, lz
        if z[j] < x[j]:
            left = z[j]
        else:
            right = z[j]
    return x, lp  # the interval collapsed onto x (a numerically flat density)


def slice_sample(
    logp: LogDensity,
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    n_samples: int,
    n_burn: int,
    rng: np.random.Generator,
    width: np.ndarray | float = 1.0,
    max_steps: int = 10,
) -> np.ndarray:
    """``n_samples`` states (n_samples, p) of a chain started at ``x0`` after ``n_burn``
    sweeps; one sweep updates every coordinate once in a random order."""
    x = np.array(x0, dtype=float)
    widths = np.broadcast_to(np.asarray(width, dtype=float), x.shape)
    lp = logp(x)
    if not np.isfinite(lp):
        raise SurrogateError("the slice sampler must start where the density is positive")
    out = np.empty((n_samples, x.size))
    for it in range(n_burn + n_samples):
        for j in rng.permutation(x.size):
            x, lp = _step(logp, x, lp, int(j), float(widths[j]), float(lower[j]), float(upper[j]), rng, max_steps)
        if it >= n_burn:
            out[it - n_burn] = x
    return out
