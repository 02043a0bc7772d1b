"""What a recorded configuration costs to fit on a new dataset, from the stored fit seconds.

Notation: for a past task ``t`` and a configuration ``c`` (stored id) of algorithm
``a``, ``s_tc`` the median fit seconds of its successful runs of a metric, ``n_t`` the
task's training rows (the runs' ``fidelity`` when recorded, else 60% of its rows, the
default holdout's training part) and ``d_t`` its features; ``n`` and ``d`` the new task's.

Fit time is modelled as a power of rows and features, ``s ~ n^alpha_a d^beta_a``.
``(alpha_a, beta_a)`` are the within-configuration least-squares coefficients of
``log s_tc`` on ``(log n_t, log d_t)`` over every configuration of ``a`` run on two or
more tasks (pooled, a fixed effect per configuration), clipped to [0, 2.5] and [0, 2];
``beta_a = 0`` when the features do not vary within configurations (or ``d`` is not
given), and ``(1, 0)`` without evidence. On the tables the store holds (up to about
10,000 rows) the slopes are well below 1 (fixed overhead dominates), so they are used as
fitted up to ``N_a``, the largest recorded training size of ``a``; beyond it, where the
overhead no longer dominates, the rows' exponent is at least linear:

    s_hat_tc = s_tc (min(n, N_a) / n_t)^alpha_a (max(n, N_a) / N_a)^max(alpha_a, 1) (d / d_t)^beta_a

and the predicted fit seconds of ``c`` are the median of ``s_hat_tc`` over the tasks (and
recorded sizes) it ran on. Classes and the machine are not modelled; a strategy can rescale by what it
observes (:func:`observed_scale`). ``python scripts/bench_costs.py`` measures the
predictions on held-out tasks.

Used by :class:`~metabo.strategies.portfolio.PortfolioWarmStart` under a time budget, so
that the warm start does not open with configurations that cannot finish in it, by the
default trial limits (:mod:`metabo.optimizer.limits`), and (:class:`RowsScaling`) by the
time a search reserves for the final fit of a trial run on fewer rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

#: the exponents' ranges (rows, features -> fit seconds) and their values without evidence
ALPHA_RANGE = (0.0, 2.5)
BETA_RANGE = (0.0, 2.0)
DEFAULT_ALPHA = 1.0
#: a strategy's rescaling of the predictions by what it observed stays in this range
SCALE_RANGE = (0.25, 4.0)


def recorded_fit_seconds(kb: KnowledgeBase, tasks: Sequence[str], *, metric: str = "error_rate") -> pd.DataFrame:
    """One row per (task, stored configuration, training rows) with recorded fit seconds:
    ``dataset_id, config_id, algorithm, seconds`` (median over its successful runs of that
    size), ``rows`` (``n_t``) and ``features`` (``d_t``). A task built at two fidelities
    gives a configuration two rows."""
    if not tasks:
        return pd.DataFrame(columns=["dataset_id", "config_id", "algorithm", "seconds", "rows", "features"])
    return kb.query(
        "SELECT r.dataset_id, r.config_id, c.algorithm, median(r.fit_seconds) AS seconds, "
        "coalesce(r.fidelity, 0.6 * d.n_instances) AS rows, any_value(d.n_features) AS features "
        "FROM runs r JOIN configurations c USING (config_id) JOIN datasets d USING (dataset_id) "
        "WHERE r.metric = ? AND r.status = 'ok' AND r.fit_seconds > 0 "
        "AND r.dataset_id IN (SELECT unnest(?::VARCHAR[])) "
        "GROUP BY r.dataset_id, r.config_id, c.algorithm, rows "
        "ORDER BY r.dataset_id, r.config_id, rows", [metric, list(tasks)])


def _usable(records: pd.DataFrame) -> pd.DataFrame:
    """The records with positive seconds and rows; ``features`` NaN where unknown or absent."""
    frame = records[(records["seconds"].astype(float) > 0) & (records["rows"].astype(float) > 0)].copy()
    features = frame["features"].astype(float) if "features" in frame else pd.Series(np.nan, index=frame.index)
    frame["features"] = features.where(features > 0)
    return frame


def size_exponents(records: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """``(alpha_a, beta_a)`` per algorithm (module docstring)."""
    return _exponents(_usable(records))


def _exponents(frame: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """:func:`size_exponents` of records already :func:`_usable`."""
    out: dict[str, tuple[float, float]] = {}
    frame = frame.assign(ls=np.log(frame["seconds"].astype(float)), ln=np.log(frame["rows"].astype(float)),
                         ld=np.log(frame["features"]))
    # the fixed effect per configuration: every column centred within (algorithm, configuration), at once
    logs = frame[["ls", "ln", "ld"]]
    centred = logs - logs.groupby([frame["algorithm"], frame["config_id"]]).transform("mean")
    for algorithm, group in centred.groupby(frame["algorithm"]):
        alpha, beta = DEFAULT_ALPHA, 0.0
        if float((group["ln"] ** 2).sum()) > 1e-12:
            with_d = group.dropna()
            X = with_d[["ln", "ld"]].to_numpy()
            if len(with_d) >= 3 and np.linalg.matrix_rank(X) == 2 and float((with_d["ld"] ** 2).sum()) > 1e-12:
                (alpha, beta), *_ = np.linalg.lstsq(X, with_d["ls"].to_numpy(), rcond=None)
            else:
                alpha = float((group["ln"] * group["ls"]).sum() / (group["ln"] ** 2).sum())
        out[str(algorithm)] = (float(np.clip(alpha, *ALPHA_RANGE)), float(np.clip(beta, *BETA_RANGE)))
    return out


@dataclass(frozen=True)
class FitCosts:
    """Recorded fit seconds with the exponents fitted on them once: predictions for any
    table (:meth:`predict`) and the rows scaling (:attr:`scaling`) without refitting.
    ``records`` as :func:`recorded_fit_seconds` returns them."""

    records: pd.DataFrame
    exponents: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: predictions already made, by (rows, features): the warm start's and the trial
    #: limits' are the same table's
    _predicted: dict[tuple[int, int | None], dict[str, float]] = field(default_factory=dict, repr=False,
                                                                      compare=False)

    @classmethod
    def from_records(cls, records: pd.DataFrame) -> FitCosts:
        """The costs of ``records`` (as :func:`recorded_fit_seconds` returns them), their
        exponents fitted once."""
        frame = _usable(records)
        return cls(frame, _exponents(frame) if not frame.empty else {})

    @classmethod
    def from_kb(cls, kb: KnowledgeBase, tasks: Sequence[str], *, metric: str = "error_rate",
                algorithms: Sequence[str] | None = None) -> FitCosts:
        """The costs of ``tasks``' runs of ``metric`` (of ``algorithms`` only, when given)."""
        records = recorded_fit_seconds(kb, tasks, metric=metric)
        if algorithms is not None:
            records = records[records["algorithm"].isin(list(algorithms))]
        return cls.from_records(records)

    @classmethod
    def for_target(cls, kb: KnowledgeBase, dataset_id: str | None, algorithms: Sequence[str], *,
                   metric: str = "error_rate") -> FitCosts:
        """The costs every other stored task recorded for ``algorithms``: the tasks with
        ``dataset_id``'s content (same fingerprint) left out, as the warm start leaves them."""
        tasks = kb.query(
            "SELECT DISTINCT r.dataset_id FROM runs r JOIN configurations c USING (config_id) "
            "WHERE r.metric = ? AND r.status = 'ok' AND r.fit_seconds > 0 "
            "AND c.algorithm IN (SELECT unnest(?::VARCHAR[])) AND r.dataset_id NOT IN ("
            "SELECT dataset_id FROM datasets WHERE dataset_id = ? OR fingerprint = "
            "(SELECT fingerprint FROM datasets WHERE dataset_id = ?))",
            [metric, list(algorithms), dataset_id, dataset_id])["dataset_id"].tolist()
        return cls.from_kb(kb, tasks, metric=metric, algorithms=algorithms)

    @property
    def empty(self) -> bool:
        """Whether no usable record was given."""
        return self.records.empty

    def predict(self, n_rows: int, n_features: int | None = None) -> dict[str, float]:
        """Stored configuration id -> predicted fit seconds on ``n_rows`` training rows of
        ``n_features`` features (None: the features are not scaled); module docstring."""
        key = (int(n_rows), None if n_features is None or n_features <= 0 else int(n_features))
        if key not in self._predicted:
            self._predicted[key] = self._predict(*key)
        return dict(self._predicted[key])

    def _predict(self, n_rows: int, n_features: int | None) -> dict[str, float]:
        frame = self.records
        if frame.empty:
            return {}
        default = (DEFAULT_ALPHA, 0.0)
        alpha = frame["algorithm"].map(lambda x: self.exponents.get(str(x), default)[0]).to_numpy(dtype=float)
        beta = frame["algorithm"].map(lambda x: self.exponents.get(str(x), default)[1]).to_numpy(dtype=float)
        rows = frame["rows"].to_numpy(dtype=float)
        largest = frame.groupby("algorithm")["rows"].transform("max").to_numpy(dtype=float)
        scaled = frame["seconds"].to_numpy(dtype=float) * _growth(float(n_rows), alpha, largest) / _growth(
            rows, alpha, largest)
        if n_features is not None:
            ratio = (float(n_features) / frame["features"].to_numpy(dtype=float))
            scaled = scaled * np.where(np.isfinite(ratio), ratio, 1.0) ** beta
        by_config = pd.Series(scaled, index=frame["config_id"]).groupby(level=0).median()
        return {str(k): float(v) for k, v in by_config.items()}

    @property
    def scaling(self) -> RowsScaling:
        """:class:`RowsScaling` of these records."""
        if self.records.empty:
            return RowsScaling()
        largest = self.records.groupby("algorithm")["rows"].max()
        return RowsScaling(dict(self.exponents), {str(a): float(n) for a, n in largest.items()})

    def algorithm_of(self) -> dict[str, str]:
        """Stored configuration id -> its algorithm."""
        return dict(zip(self.records["config_id"].astype(str), self.records["algorithm"].astype(str)))


def predicted_fit_seconds(records: pd.DataFrame, n_rows: int, n_features: int | None = None) -> dict[str, float]:
    """Stored configuration id -> predicted fit seconds on ``n_rows`` training rows of
    ``n_features`` features (None: the features are not scaled); module docstring
    (:meth:`FitCosts.predict`; build a :class:`FitCosts` once to predict for several tables)."""
    return FitCosts.from_records(records).predict(n_rows, n_features)


def _growth(rows: Any, alpha: Any, largest: Any) -> Any:
    """``g(n) = min(n, N)^alpha (max(n, N) / N)^max(alpha, 1)``: fit seconds against rows up
    to a constant (module docstring); elementwise on arrays."""
    return np.minimum(rows, largest) ** alpha * (np.maximum(rows, largest) / largest) ** np.maximum(alpha, 1.0)


@dataclass(frozen=True)
class RowsScaling:
    """How an algorithm's fit seconds grow from ``n`` to ``m`` training rows under the
    module's model: ``g(m) / g(n)`` with ``g(n) = min(n, N_a)^alpha_a (max(n, N_a) / N_a)^max(alpha_a, 1)``
    (``N_a`` the largest recorded training rows of ``a``); linear for an algorithm without
    records. :meth:`from_records` reads the exponents from recorded fit seconds."""

    exponents: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    largest: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: pd.DataFrame) -> RowsScaling:
        """The rows scaling with the exponents fitted on ``records``."""
        return FitCosts.from_records(records).scaling

    def __call__(self, algorithm: str, n: float, m: float) -> float:
        if algorithm not in self.exponents or algorithm not in self.largest or n <= 0:
            return m / max(n, 1e-12)
        alpha, largest = self.exponents[algorithm][0], self.largest[algorithm]
        return float(_growth(m, alpha, largest) / _growth(n, alpha, largest))


class CompletedTrial(Protocol):
    """What :func:`observed_scale` reads of a completed trial
    (:class:`metabo.optimizer.history.TrialRecord`)."""

    @property
    def config_id(self) -> str:
        """The trial's configuration id."""
        ...

    @property
    def fit_seconds(self) -> float | None:
        """The trial's recorded fit seconds, or None if not recorded."""
        ...


class TrialHistory(Protocol):
    """What :func:`observed_scale` reads of a search's history
    (:class:`metabo.optimizer.history.History`, which this package does not import: it is above it)."""

    @property
    def completed(self) -> Sequence[CompletedTrial]:
        """The search's completed trials."""
        ...


def observed_scale(history: TrialHistory, predicted: Mapping[str, float]) -> float:
    """The median ratio of observed to predicted fit seconds over the completed trials
    that have a prediction (by canonical id), clipped to :data:`SCALE_RANGE`; 1 without any."""
    ratios = [r.fit_seconds / predicted[r.config_id] for r in history.completed
              if r.config_id in predicted and r.fit_seconds and predicted[r.config_id] > 0]
    return float(np.clip(np.median(ratios), *SCALE_RANGE)) if ratios else 1.0


__all__ = ["ALPHA_RANGE", "BETA_RANGE", "DEFAULT_ALPHA", "SCALE_RANGE", "CompletedTrial", "FitCosts", "RowsScaling",
           "TrialHistory", "observed_scale", "predicted_fit_seconds", "recorded_fit_seconds", "size_exponents"]
