"""Output warping: a monotone transform of the observed errors before the GP sees them.

A GP with Gaussian noise and a constant mean fits heavy-tailed, skewed targets badly: a
few large errors (a poor algorithm of a CASH space, Branin's plateau edges) set the
amplitude, and the region near the optimum, where expected improvement has to
discriminate, is squeezed into a small part of the standardized range. This is not in the
thesis (its GP models the raw validation error, 5.5); it is the remedy of Snoek et al.
2014 ("input/output warping") and of HEBO (Cowen-Rivers et al. 2022), which warps with a
power transform. ``scripts/bench_smbo.py`` measures GP-BO with it (``metabo-gp``) and
without it (``metabo-gp-nowarp``); the figures are in ``reports/smbo``.

``warp(y, m)``: Yeo-Johnson (Yeo & Johnson 2000, eq. 2.1) with ``lambda`` by maximum
likelihood (scikit-learn's :class:`~sklearn.preprocessing.PowerTransformer`), fitted on
the first ``m`` values standardized by their own mean and standard deviation, applied to
all of ``y`` and standardized again. (Increasing, though values closer than the float
resolution of the transform may map to the same number.) Fitting on a prefix keeps the transform fixed between
surrogate refits from scratch, so models extended one observation at a time see the same
targets for old observations. The transform is strictly increasing, so the ordering of
``y`` and improvement over the incumbent are preserved. Too few values
(``m < 3``), a constant prefix or a non-finite result give the standardization alone.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np

from metabo.exceptions import InputDataError

logger = logging.getLogger(__name__)

Warping = Literal["none", "yeo-johnson"]
WARPINGS: tuple[str, ...] = ("none", "yeo-johnson")


def warp(y: np.ndarray, m: int | None = None, kind: Warping = "yeo-johnson") -> np.ndarray:
    """``y`` transformed as in the module docstring, the transform fitted on ``y[:m]``
    (all of ``y`` when ``m`` is None); ``kind="none"`` returns ``y`` unchanged."""
    y = np.asarray(y, dtype=float)
    m = len(y) if m is None else int(m)
    if not 0 <= m <= len(y):
        raise InputDataError(f"m must be in 0..{len(y)}, got {m}")
    return fit_warping(y[:m], kind)(y)


def fit_warping(head: np.ndarray, kind: Warping = "yeo-johnson") -> Callable[[np.ndarray], np.ndarray]:
    """The transform of the module docstring fitted on ``head``, as a function of ``y``
    (``warp(y, m) == fit_warping(y[:m])(y)``): fitted once, applied as values arrive."""
    head = np.asarray(head, dtype=float)
    if kind not in WARPINGS:
        raise InputDataError(f"unknown output warping {kind!r}; use one of {list(WARPINGS)}")
    if kind == "none":
        return _identity
    head = _finite(head)
    if len(head) < 3 or np.ptp(head) == 0.0:
        return _copy
    shift, scale = float(head.mean()), float(head.std())
    with np.errstate(all="ignore"):
        uh = (head - shift) / scale
    if not np.all(np.isfinite(uh)):  # a spread below the float range
        return _copy
    from sklearn.preprocessing import PowerTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow while searching lambda
        pt = PowerTransformer(method="yeo-johnson", standardize=True).fit(uh[:, None])

    def transform(y: np.ndarray) -> np.ndarray:
        y = _finite(y)
        with np.errstate(all="ignore"):
            u = (y - shift) / scale
        if not np.all(np.isfinite(u)):
            return y.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            z = pt.transform(u[:, None])[:, 0]
        if not np.all(np.isfinite(z)):
            logger.warning("Yeo-Johnson warping (lambda %.3g) overflowed; using standardized values",
                           float(pt.lambdas_[0]))
            return u
        return z

    return transform


class WarpingCache:
    """``warp(y, m, kind)`` that refits the transform only when ``y[:m]`` changes: a
    search warps every suggestion's values, and the prefix changes only at a refit from
    scratch."""

    def __init__(self, kind: Warping = "yeo-johnson") -> None:
        self.kind = kind
        self._fitted: tuple[bytes, Callable[[np.ndarray], np.ndarray]] | None = None

    def __call__(self, y: np.ndarray, m: int | None = None) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        m = len(y) if m is None else int(m)
        if not 0 <= m <= len(y):
            raise InputDataError(f"m must be in 0..{len(y)}, got {m}")
        key = y[:m].tobytes()
        if self._fitted is None or self._fitted[0] != key:
            self._fitted = (key, fit_warping(y[:m], self.kind))
        return self._fitted[1](y)


def _identity(y: np.ndarray) -> np.ndarray:
    return np.asarray(y, dtype=float)


def _copy(y: np.ndarray) -> np.ndarray:
    return _finite(y).copy()


def _finite(y: np.ndarray) -> np.ndarray:
    """``y`` as floats, checked to be a finite 1-d array."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise InputDataError("warping needs a finite 1-d array of values")
    return y


__all__ = ["WARPINGS", "Warping", "WarpingCache", "fit_warping", "warp"]
