"""Ensemble weights from how well each model ranks the target's observations (RGPE, RLGP).

Notation: target observations ``(x_i, y_i)``, ``i = 1..n``, lower is better; ``M`` models
(base GPs of past tasks, then the target's own GP); ``S`` posterior samples. For model ``m``
and sample ``s``, ``f_m^s`` is a joint posterior sample of its latent function at the
``n`` points.

- Relative landmarks (RLGP, Manolache & Vanschoren 2019, eqs. 2, 5 and 7): the number of
  ordered pairs whose order the model gets right,
  ``c_m^s = sum_{i != j} 1(f_m^s(x_i) > f_m^s(x_j) and y_i > y_j)``; each pair with
  ``y_i != y_j`` counts once, when ``i`` is the worse of the two.
- The target model is judged out of sample (RLGP eq. 6; RGPE, Feurer et al. 2018, sec.
  3.2): ``f_{-i}`` is the target GP conditioned on every observation but ``i`` (same
  hyperparameters), and ``c_t^s = sum_{i != j} 1(f_{-i}^s(x_i) > f_{-i}^s(x_j) and y_i > y_j)``,
  each left-out model sampled jointly at all ``n`` points.
- RGPE's ranking loss is the complement: ``l_m^s = P - c_m^s`` with ``P`` the number of
  pairs with ``y_i > y_j`` (no ties in continuous samples).
- Weights (RGPE eq. 6, RLGP eq. 8): ``w_m = (1/S) sum_s 1(m = argmax_m' c_m'^s)``, the
  share of samples in which model ``m`` ranks best.

Choices where the papers leave room (RLGP's eq. 8 reads as an average count, but its
"ties are either broken randomly or weighted on t_new" only makes sense for an arg max):

- ``argmax`` weighting (default, as RGPE): ties within a sample go to the target model
  if it is among them (RLGP's "weighted on t_new"), else to one of the tied models drawn
  uniformly (seeded). ``proportional``: ``w_m`` proportional to the mean count ``mean_s c_m^s``
  (RLGP's eq. 8 read literally), an option for comparison.
- Fewer than two distinct target values: no pair, every count 0, so every sample is a
  tie and the target takes it all under ``argmax`` (it has nothing to rank yet, so
  callers give base models no information either way; the strategies fall back to the
  base models' equal-weight mixture in that case).
- Weight dilution (RGPE sec. 3.3): base model ``m`` is discarded (weight 0) when the median
  of its losses exceeds the 95th percentile of the target model's losses.

A deviation from both papers (:func:`target_floor`, applied by
:mod:`metabo.strategies.transfer_ensemble`): the target's weight is at least
``n / (n + n0)`` with ``n`` its completed observations and ``n0`` =
:data:`TARGET_FLOOR_N0` (a prior worth ``n0`` observations), the base weights rescaled to
the rest. Without it the target's weight collapses even as its evidence grows: validation
errors are quantized and tied, and its leave-one-out counts rarely beat the best of tens
of base models at every sample, so the arg max gives it almost nothing (0.02 at 16
observations in ``tests/strategies/test_transfer_ensemble_fixes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError

Weighting = Literal["argmax", "proportional"]


def _pair_masks(y: np.ndarray) -> np.ndarray:
    """``W[i, j] = 1(y_i > y_j)`` (n, n)."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise InputDataError("target values must be a finite 1-d array")
    return (y[:, None] > y[None, :]).astype(float)


def n_pairs(y: np.ndarray) -> int:
    """``P``: the number of ordered pairs with ``y_i > y_j``."""
    return int(_pair_masks(y).sum())


def landmark_counts(samples: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``c^s`` of each model and sample: ``samples`` (M, S, n) -> counts (M, S)."""
    f = np.asarray(samples, dtype=float)
    W = _pair_masks(y)
    if f.ndim != 3 or f.shape[2] != len(W):
        raise InputDataError(f"samples must be (models, samples, {len(W)}), got {f.shape}")
    greater = f[:, :, :, None] > f[:, :, None, :]  # (M, S, n, n): f(x_i) > f(x_j)
    return np.einsum("msij,ij->ms", greater, W)


def loo_counts(loo_samples: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``c_t^s`` of the target model from leave-one-out samples (S, n, n), where
    ``loo_samples[s, i]`` is a joint sample of ``f_{-i}`` at all ``n`` points -> (S,)."""
    f = np.asarray(loo_samples, dtype=float)
    W = _pair_masks(y)
    n = len(W)
    if f.ndim != 3 or f.shape[1:] != (n, n):
        raise InputDataError(f"leave-one-out samples must be (samples, {n}, {n}), got {f.shape}")
    own = np.einsum("sii->si", f)  # f_{-i}(x_i)
    greater = own[:, :, None] > f  # (S, i, j): f_{-i}(x_i) > f_{-i}(x_j)
    return np.einsum("sij,ij->s", greater, W)


def loo_samples(
    fit_predict_sample: Callable[[np.ndarray, np.ndarray, int], np.ndarray], n: int, n_samples: int, seed: Seed = 0
) -> np.ndarray:
    """(S, n, n): for each ``i``, ``fit_predict_sample(keep, all_points, seed_i)`` returns
    ``S`` joint samples at all ``n`` points of the model conditioned on the rows ``keep``
    (every row but ``i``), ``(S, n)``."""
    rng = as_generator(seed)
    out = np.empty((n_samples, n, n))
    everything = np.arange(n)
    for i in range(n):
        keep = np.delete(everything, i)
        out[:, i, :] = fit_predict_sample(keep, everything, int(rng.integers(2**31 - 1)))
    return out


def argmax_weights(counts: np.ndarray, *, target: int | None = None, seed: Seed = 0) -> np.ndarray:
    """``w_m``: the share of samples in which model ``m`` has the highest count (M, S) -> (M,);
    ties go to ``target`` (an index) if it is tied, else uniformly at random."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or c.shape[0] == 0:
        raise InputDataError(f"counts must be (models, samples) with at least one model, got {c.shape}")
    rng = as_generator(seed)
    best = c == c.max(axis=0, keepdims=True)  # (M, S)
    wins = np.zeros(c.shape[0])
    for s in range(c.shape[1]):
        tied = np.flatnonzero(best[:, s])
        winner = target if target is not None and best[target, s] else tied[rng.integers(len(tied))]
        wins[winner] += 1.0
    return wins / c.shape[1]


def proportional_weights(counts: np.ndarray) -> np.ndarray:
    """``w_m`` proportional to the mean count (uniform when every count is 0)."""
    mean = np.asarray(counts, dtype=float).mean(axis=1)
    total = mean.sum()
    return mean / total if total > 0 else np.full(len(mean), 1.0 / len(mean))


#: ``n0`` of :func:`target_floor`: the target's weight is at least one half at ``n0`` observations.
TARGET_FLOOR_N0 = 10.0


def target_floor(weights: np.ndarray, n: int, n0: float = TARGET_FLOOR_N0) -> np.ndarray:
    """Weights (base models, then the target last; summing to 1) with the target's raised to
    at least ``n / (n + n0)`` and the base models' rescaled to ``1 -`` that (module
    docstring; a deviation from RGPE and RLGP). Unchanged when the target is above it."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or len(w) == 0:
        raise InputDataError(f"weights must be a non-empty 1-d array, got shape {w.shape}")
    if n < 0 or not n0 > 0:
        raise InputDataError(f"n >= 0 and n0 > 0 are required, got n={n}, n0={n0}")
    floor = n / (n + n0)
    if w[-1] >= floor:
        return w.copy()
    out = w.copy()
    base = w[:-1].sum()
    out[:-1] = w[:-1] * ((1.0 - floor) / base) if base > 0 else 0.0
    out[-1] = floor if base > 0 else 1.0
    return out


def dilution_keep(base_counts: np.ndarray, target_counts: np.ndarray, total_pairs: int) -> np.ndarray:
    """RGPE's guard: keep base model ``m`` unless ``median_s l_m^s > percentile_95(l_t)``,
    losses ``l = P - c``; (M,) booleans."""
    base_loss = total_pairs - np.asarray(base_counts, dtype=float)
    target_loss = total_pairs - np.asarray(target_counts, dtype=float)
    return np.median(base_loss, axis=1) <= np.percentile(target_loss, 95)


def ensemble_weights(
    base_counts: np.ndarray, target_counts: np.ndarray | None, total_pairs: int, *,
    weighting: Weighting = "argmax", dilution: bool = False, seed: Seed = 0,
) -> np.ndarray:
    """Weights of the base models then (if ``target_counts`` is given) the target model:
    counts (M, S) and (S,) -> (M + 1,) or (M,), summing to 1 (module docstring)."""
    base = np.asarray(base_counts, dtype=float)
    if base.ndim != 2:
        raise InputDataError(f"base counts must be (models, samples), got shape {base.shape}")
    counts = base if target_counts is None else np.vstack([base, np.asarray(target_counts, dtype=float)[None, :]])
    if counts.shape[0] == 0:
        raise InputDataError("no model to weight")
    keep = np.ones(counts.shape[0], dtype=bool)
    if dilution and target_counts is not None and len(base):
        keep[: len(base)] = dilution_keep(base, target_counts, total_pairs)
    target = counts.shape[0] - 1 if target_counts is not None else None
    live = counts[keep]
    if weighting == "argmax":
        w_live = argmax_weights(live, target=None if target is None else len(live) - 1, seed=seed)
    elif weighting == "proportional":
        w_live = proportional_weights(live)
    else:
        raise InputDataError(f"weighting must be 'argmax' or 'proportional', got {weighting!r}")
    w = np.zeros(counts.shape[0])
    w[keep] = w_live
    return w


__all__ = [
    "TARGET_FLOOR_N0",
    "Weighting",
    "argmax_weights",
    "dilution_keep",
    "ensemble_weights",
    "landmark_counts",
    "loo_counts",
    "loo_samples",
    "n_pairs",
    "proportional_weights",
    "target_floor",
]
