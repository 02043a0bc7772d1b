"""OpenML evaluation measures -> lower-is-better metrics of the knowledge base.

:data:`METRICS`: ``predictive_accuracy`` -> ``error_rate`` = 1 - value,
``area_under_roc_curve`` -> ``one_minus_auc`` = 1 - value, ``f_measure`` ->
``one_minus_f_measure``, ``kappa`` -> ``one_minus_kappa``; error metrics
(``mean_absolute_error``, ``root_mean_squared_error``, ``relative_absolute_error``,
``root_relative_squared_error``) keep their name and value. Another metric needs
``lower_is_better=``: ``True`` stores it as is, ``False`` as ``neg_<metric>`` = -value.
"""

from __future__ import annotations

from dataclasses import dataclass

from metabo.exceptions import InputDataError


@dataclass(frozen=True)
class MetricMapping:
    """An OpenML metric stored as ``name`` = ``sign * value + offset`` (lower is better)."""

    name: str
    sign: float = 1.0
    offset: float = 0.0

    def convert(self, value: float) -> float:
        """The stored value of OpenML's ``value``: ``sign * value + offset``."""
        return self.sign * value + self.offset


METRICS: dict[str, MetricMapping] = {
    "predictive_accuracy": MetricMapping("error_rate", -1.0, 1.0),
    "area_under_roc_curve": MetricMapping("one_minus_auc", -1.0, 1.0),
    "f_measure": MetricMapping("one_minus_f_measure", -1.0, 1.0),
    "kappa": MetricMapping("one_minus_kappa", -1.0, 1.0),
    "mean_absolute_error": MetricMapping("mean_absolute_error"),
    "root_mean_squared_error": MetricMapping("root_mean_squared_error"),
    "relative_absolute_error": MetricMapping("relative_absolute_error"),
    "root_relative_squared_error": MetricMapping("root_relative_squared_error"),
}


def metric_mapping(metric: str, lower_is_better: bool | None = None) -> MetricMapping:
    """How ``metric`` is stored; :class:`InputDataError` for an unknown one without a hint."""
    if metric in METRICS:
        return METRICS[metric]
    if lower_is_better is None:
        raise InputDataError(
            f"unknown OpenML metric {metric!r}: known are {sorted(METRICS)}; pass "
            "lower_is_better=True (stored as is) or False (stored negated as neg_<metric>)"
        )
    return MetricMapping(metric) if lower_is_better else MetricMapping(f"neg_{metric}", -1.0)
