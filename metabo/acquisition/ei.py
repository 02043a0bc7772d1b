"""Expected improvement for minimization, and its numerically stable logarithm.

Notation (all arrays broadcast together; the result has their broadcast shape):

- ``mean`` (m,), ``var`` (m,): posterior mean and variance of the latent objective ``f``;
  ``sigma = sqrt(var)``.
- ``best``: the lowest observed value ``f_best``; ``xi >= 0`` an optional margin.
- ``d = best - xi - mean`` the predicted improvement, ``z = d / sigma`` (thesis eq. 2.11).
- ``h(z) = z Phi(z) + phi(z)`` with ``Phi``, ``phi`` the standard normal CDF and density.

``EI = E[max(best - xi - f, 0)] = sigma h(z)`` (Levesque 2018, eqs. 2.9-2.10, 5.6; Jones
2001). EI underflows to 0 long before it stops carrying ranking information (``h(z)``
is below the smallest double for ``z < -38``), so acquisition maximizers should rank by
``log EI = log sigma + log h(z)``. ``log h`` follows Ament et al. (2023, "Unexpected
improvements to expected improvement", eq. 9):

- ``z > -1``: ``log(z Phi(z) + phi(z))`` directly (``h(-1) ~ 0.083``, no cancellation);
- ``-50 < z <= -1``: with ``Phi(z) = erfcx(-z/sqrt2) exp(-z^2/2) / 2``,
  ``h(z) = phi(z) (1 - |z| sqrt(pi/2) erfcx(|z|/sqrt2))``, so
  ``log h = -z^2/2 - log(2 pi)/2 + log1mexp(log(|z| erfcx(|z|/sqrt2)) + log(pi/2)/2)``;
- ``z <= -50``: the asymptotic series ``h(z) = phi(z) / z^2 (1 - 3t + 15t^2 - 105t^3 +
  945t^4 - ...)``, ``t = 1/z^2``, i.e. ``log h = log phi(z) - 2 log|z| + log1p(...)``.

The switch point differs from Ament et al. (who keep the erfcx form down to
``-1/sqrt(eps)`` and then use ``log phi(z) - 2 log|z|``): the bracket
``1 - |z| sqrt(pi/2) erfcx(.)`` is about ``1/z^2`` and carries an absolute error of a few
``eps``, so its relative error grows like ``eps z^2`` (a NaN near ``z = -1/sqrt(eps)``);
at ``z = -50`` both forms agree to ~1e-12 (next series term ``10395 t^5``).

So ``log EI`` is finite for ``|z| < 1e154`` (about ``-z^2/2``: -5e5 at ``z = -1e3``)
and strictly increasing in ``z``. Zero variance is the deterministic limit
``EI = max(d, 0)``: ``log EI = log(d)`` when ``d > 0`` and ``-inf`` when no improvement
is possible (also the limit of ``sigma -> 0``). Negative variances (round-off of a
posterior) are treated as 0; NaN inputs raise :class:`InputDataError`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx, ndtr

from metabo._typing import FloatArray
from metabo.exceptions import InputDataError

__all__ = ["expected_improvement", "log_expected_improvement", "log_h"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)  # c1 of Ament et al.
_LOG_SQRT_PI_OVER_2 = 0.5 * math.log(math.pi / 2.0)  # c2 of Ament et al.
_ASYMPTOTIC_Z = -50.0  # erfcx form above, asymptotic series below
_SATURATED_Z = 40.0  # Phi(z) == 1 and phi(z) == 0 in double precision beyond this


def _log1mexp(x: FloatArray) -> FloatArray:
    """``log(1 - exp(x))`` for ``x < 0`` (Maechler 2012: two branches around -log 2)."""
    out = np.empty_like(x)
    near = x > -math.log(2.0)
    out[near] = np.log(-np.expm1(x[near]))
    out[~near] = np.log1p(-np.exp(x[~near]))
    return out


def log_h(z: FloatArray) -> FloatArray:
    """``log(z Phi(z) + phi(z))`` elementwise, finite for ``|z| < 1e154`` (see module)."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    direct = z > -1.0
    tail = (z <= -1.0) & (z > _ASYMPTOTIC_Z)
    far = z <= _ASYMPTOTIC_Z
    zd = z[direct]
    out[direct] = np.log(zd * ndtr(zd) + np.exp(-0.5 * zd * zd - _LOG_SQRT_2PI))
    zt = -z[tail]  # |z|
    out[tail] = (
        -0.5 * zt * zt
        - _LOG_SQRT_2PI
        + _log1mexp(np.log(zt * erfcx(zt / math.sqrt(2.0))) + _LOG_SQRT_PI_OVER_2)
    )
    zf = -z[far]
    t = 1.0 / (zf * zf)
    series = np.log1p(t * (-3.0 + t * (15.0 + t * (-105.0 + t * 945.0))))
    out[far] = -0.5 * zf * zf - _LOG_SQRT_2PI - 2.0 * np.log(zf) + series
    return out


def _split(
    mean: FloatArray | float, var: FloatArray | float, best: FloatArray | float, xi: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(d, sigma, z, limit)`` broadcast; ``limit`` marks ``sigma == 0`` or ``z >= 40``
    (incl. overflow to +inf), where ``EI == max(d, 0)`` exactly in double precision."""
    mean_a, var_a, best_a = np.broadcast_arrays(
        np.asarray(mean, dtype=float), np.asarray(var, dtype=float), np.asarray(best, dtype=float)
    )
    if np.isnan(mean_a).any() or np.isnan(var_a).any() or np.isnan(best_a).any() or math.isnan(xi):
        raise InputDataError(
            "expected improvement got NaN in mean, var, best or xi; check the surrogate's predictions"
        )
    d = best_a - float(xi) - mean_a
    sigma = np.sqrt(np.clip(var_a, 0.0, None))  # negative variances: round-off, read as 0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        z = d / sigma
    limit = (sigma == 0.0) | (z >= _SATURATED_Z) | np.isnan(z)
    return d, sigma, z, limit


def log_expected_improvement(
    mean: FloatArray | float, var: FloatArray | float, best: FloatArray | float, xi: float = 0.0
) -> FloatArray:
    """``log EI = log sigma + log h(z)``, ``z = (best - xi - mean) / sigma`` (thesis eqs.
    2.10-2.11; stable form of Ament et al. 2023); ``log(max(d, 0))`` (``-inf`` for no
    possible improvement) where ``var == 0``."""
    d, sigma, z, limit = _split(mean, var, best, xi)
    out = np.empty(d.shape, dtype=float)
    dl = d[limit]
    with np.errstate(divide="ignore"):
        out[limit] = np.log(np.clip(dl, 0.0, None))  # log 0 = -inf
    rest = ~limit
    out[rest] = np.log(sigma[rest]) + log_h(z[rest])
    return out


def expected_improvement(
    mean: FloatArray | float, var: FloatArray | float, best: FloatArray | float, xi: float = 0.0
) -> FloatArray:
    """``EI = sigma (z Phi(z) + phi(z))`` for minimization (thesis eq. 2.10), as
    ``exp(log EI)``; ``max(d, 0)`` exactly where ``var == 0`` or ``z >= 40``. Exactly 0
    only where it underflows (``z < -38``) or no improvement is possible."""
    d, sigma, z, limit = _split(mean, var, best, xi)
    out = np.empty(d.shape, dtype=float)
    out[limit] = np.clip(d[limit], 0.0, None)
    rest = ~limit
    out[rest] = np.exp(np.log(sigma[rest]) + log_h(z[rest]))
    return out
