"""Moments of the numeric attributes, as OpenML's ``Statistical`` characterizer computes
them (Apache commons-math ``DescriptiveStatistics``).

Notation: for one numeric attribute, x_1..x_m its m finite values (missing and
infinite values left out), xbar their mean, s their sample standard deviation
(divisor m - 1), z_i = (x_i - xbar) / s.

- mean xbar; standard deviation s (0 when m = 1);
- skewness G1 = m / ((m-1)(m-2)) * sum_i z_i^3 (needs m >= 3), scipy's
  ``skew(bias=False)``;
- excess kurtosis G2 = m(m+1) / ((m-1)(m-2)(m-3)) * sum_i z_i^4
  - 3 (m-1)^2 / ((m-2)(m-3)) (needs m >= 4), scipy's ``kurtosis(bias=False)``.

A constant attribute (or one so nearly constant that the moments lose all precision)
has skewness 0 and kurtosis 0, the commons-math convention, with no warning. Each
aggregate (mean, min, max, median = Quartile2) runs over the attributes whose value is
defined; it is NaN when none is. As in OpenML, a numeric target (regression) counts as a
numeric attribute here.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from metabo.data.meta_features._prepare import Prepared

_KINDS = ("Means", "StdDev", "Skewness", "Kurtosis")
_AGGREGATES = {
    "Means": ("Mean",),
    "StdDev": ("Mean",),
    "Skewness": ("Mean", "Min", "Max", "Quartile2"),
    "Kurtosis": ("Mean", "Min", "Max", "Quartile2"),
}
NAMES: tuple[str, ...] = tuple(
    f"{agg}{kind}OfNumericAtts" for kind in _KINDS for agg in _AGGREGATES[kind]
)


def moments(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column of the n x p matrix ``M``: (mean, std, skewness, kurtosis).

    Missing and infinite values are left out; NaN where a value is undefined (no finite
    value; fewer than 3 for the skewness, 4 for the kurtosis).
    """
    M = np.where(np.isfinite(M), M, np.nan)
    m = np.sum(~np.isnan(M), axis=0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # empty and constant columns
        mean = np.nanmean(M, axis=0)
        std = np.where(m == 1, 0.0, np.nanstd(M, axis=0, ddof=1))
        constant = np.nanmax(M, axis=0) == np.nanmin(M, axis=0)
        skew = np.asarray(stats.skew(M, axis=0, bias=False, nan_policy="omit"), np.float64)
        kurt = np.asarray(
            stats.kurtosis(M, axis=0, fisher=True, bias=False, nan_policy="omit"), np.float64
        )
    # constant, or so nearly constant that scipy gives up (precision loss): 0
    skew = np.where(constant | ~np.isfinite(skew), 0.0, skew)
    kurt = np.where(constant | ~np.isfinite(kurt), 0.0, kurt)
    skew[m < 3] = np.nan
    kurt[m < 4] = np.nan
    return mean, std, skew, kurt


def column_moments(x: np.ndarray) -> tuple[float, float, float, float]:
    """(mean, std, skewness, kurtosis) of one attribute; NaN where undefined."""
    mean, std, skew, kurt = moments(np.asarray(x, np.float64).reshape(-1, 1))
    return float(mean[0]), float(std[0]), float(skew[0]), float(kurt[0])


def statistical_features(prep: Prepared) -> dict[str, float]:
    """The statistical features of ``prep`` (:data:`NAMES`): moments of the numeric columns (and
    a numeric target), by kind."""
    columns = [prep.X[c].to_numpy(np.float64) for c in prep.numeric]
    if not prep.is_classification:
        columns.append(prep.y.to_numpy(np.float64))
    out: dict[str, float] = {}
    if columns:
        per_kind = dict(zip(_KINDS, moments(np.column_stack(columns)), strict=True))
    else:
        per_kind = {kind: np.empty(0) for kind in _KINDS}
    for kind in _KINDS:
        values = per_kind[kind]
        values = values[np.isfinite(values)]
        for agg in _AGGREGATES[kind]:
            out[f"{agg}{kind}OfNumericAtts"] = _aggregate(agg, values)
    return {name: out[name] for name in NAMES}


def _aggregate(agg: str, values: np.ndarray) -> float:
    if values.size == 0:
        return float("nan")
    if agg == "Mean":
        return float(values.mean())
    if agg == "Min":
        return float(values.min())
    if agg == "Max":
        return float(values.max())
    return float(np.median(values))  # Quartile2
