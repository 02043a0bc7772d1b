"""The trials of a tuning session: what was asked, what was told.

Notation: ``n`` trials in the order they were asked (``number`` 0..n-1); the ``c``
completed ones (told, whatever their status) are what a surrogate is fitted on:
``X`` is c x D (:meth:`CASHSpace.encode`), ``y`` has length c, lower is better.

Failed trials (status ``crash`` / ``timeout`` / ``memout``, value NaN) enter ``y`` as the
worst value observed among the successful ones (the maximum), the usual imputation of
SMAC and auto-sklearn: the surrogate learns that region is bad without inventing a scale.
With no successful trial yet they are 0.0 (a constant the GP cannot learn from). The
imputed value changes when a worse successful value arrives, so ``y`` is recomputed from
the records each time, never stored.

Pending trials (asked, not yet told) are what several workers evaluate at once. A
strategy asked for one more configuration meanwhile sees :meth:`History.with_lies`: the
constant-liar heuristic ("CL") of Ginsbourger, Le Riche & Carraro (2010, "Kriging is
well-suited to parallelize optimization"): every pending trial is taken as observed
with the same made-up value ``L`` (the ``min``, ``mean`` or ``max`` of the successful
values), so the surrogate's variance collapses there and the next suggestion moves away.
``max`` (the pessimistic lie, what Optuna's TPE ``constant_liar`` uses) keeps concurrent
workers furthest apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace

TrialState = Literal["pending", "complete"]
Liar = Literal["min", "mean", "max"]
LIARS: tuple[str, ...] = ("min", "mean", "max")


@dataclass(frozen=True)
class Trial:
    """One configuration to evaluate (what :meth:`Optimizer.ask` returns)."""

    number: int
    algorithm: str
    params: Mapping[str, Any]
    config_id: str


@dataclass(frozen=True)
class TrialRecord:
    """A trial and, once told, its outcome.

    ``value`` is the objective (validation metric, lower is better; NaN when failed),
    ``test_value`` the same metric on a held-out test part if the caller measured it.
    """

    number: int
    algorithm: str
    params: Mapping[str, Any] = field(hash=False)
    config_id: str
    state: TrialState = "pending"
    value: float = math.nan
    status: str | None = None
    test_value: float | None = None
    fit_seconds: float | None = None
    predict_seconds: float | None = None
    suggest_seconds: float | None = None
    message: str | None = None
    #: the preprocessing's seconds of the trial's splits (:attr:`Evaluation.prepare_seconds`)
    prepare_seconds: float | None = None

    @property
    def trial(self) -> Trial:
        """The trial this record is of (number, algorithm, params, config id)."""
        return Trial(self.number, self.algorithm, dict(self.params), self.config_id)

    @property
    def complete(self) -> bool:
        """Whether the trial has been told its result."""
        return self.state == "complete"

    @property
    def ok(self) -> bool:
        """Whether the trial's evaluation succeeded."""
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None), the form stored in the knowledge base."""
        out = asdict(self)
        out["params"] = dict(self.params)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrialRecord:
        """The record of :meth:`to_json`'s mapping (a null value read as NaN)."""
        data = dict(data)
        data["value"] = math.nan if data.get("value") is None else float(data["value"])
        return cls(**data)


class History:
    """The trials of a session, in the order they were asked."""

    def __init__(self, records: list[TrialRecord] | None = None) -> None:
        self._records: list[TrialRecord] = []
        self._by_config: dict[str, int] = {}
        for r in records or []:
            self._append(r)

    # -- container ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[TrialRecord]:
        return iter(self._records)

    def __getitem__(self, number: int) -> TrialRecord:
        return self._records[number]

    def __repr__(self) -> str:
        return f"History({len(self.completed)} complete, {len(self.pending)} pending)"

    @property
    def completed(self) -> list[TrialRecord]:
        """The completed trials, in order."""
        return [r for r in self._records if r.complete]

    @property
    def pending(self) -> list[TrialRecord]:
        """The trials asked and not yet told, in order."""
        return [r for r in self._records if not r.complete]

    @property
    def config_ids(self) -> set[str]:
        """Ids of every asked configuration, pending ones included."""
        return set(self._by_config)

    def __contains__(self, config_id: object) -> bool:
        return config_id in self._by_config

    # -- updates (the optimizer's) --------------------------------------------------
    def _append(self, record: TrialRecord) -> None:
        if record.number != len(self._records):
            raise InputDataError(f"trial {record.number} appended after {len(self._records)} trials")
        self._records.append(record)
        self._by_config.setdefault(record.config_id, record.number)

    def add(self, record: TrialRecord) -> None:
        """Append a newly asked trial (its number must be the next one)."""
        self._append(record)

    def complete(self, number: int, **outcome: Any) -> TrialRecord:
        """Mark trial ``number`` complete with ``outcome`` (value, status, ...)."""
        record = replace(self._records[number], state="complete", **outcome)
        self._records[number] = record
        return record

    def with_lies(self, liar: Liar = "max") -> History:
        """This history with every pending trial told the constant lie ``L`` (module
        docstring): status ``ok``, value ``L`` = the ``liar`` statistic (min, mean or max)
        of the successful values. Itself when nothing is pending or nothing succeeded yet
        (there is no value to lie with; strategies draw at random then anyway)."""
        if liar not in LIARS:
            raise InputDataError(f"liar must be one of {LIARS}, got {liar!r}")
        values = [r.value for r in self.completed if r.ok and math.isfinite(r.value)]
        if not values or not self.pending:
            return self
        statistic: dict[str, Callable[[list[float]], float]] = {
            "min": min, "mean": lambda v: math.fsum(v) / len(v), "max": max}
        lie = statistic[liar](values)
        return History([r if r.complete else replace(r, state="complete", status="ok", value=float(lie))
                        for r in self._records])

    # -- views for surrogates ---------------------------------------------------------
    def X(self, space: CASHSpace) -> np.ndarray:  # noqa: N802 - the usual name
        """The c x D encoding of the completed trials."""
        return space.encode_many([(r.algorithm, r.params) for r in self.completed])

    def groups(self, space: CASHSpace) -> np.ndarray:
        """The algorithm index (in ``space.algorithms``) of each completed trial."""
        index = {a: i for i, a in enumerate(space.algorithms)}
        return np.array([index[r.algorithm] for r in self.completed], dtype=np.int64)

    @property
    def y(self) -> np.ndarray:
        """Values of the completed trials, failures imputed (module docstring)."""
        done = self.completed
        values = np.array([r.value if r.ok else np.nan for r in done], dtype=float)
        finite = np.isfinite(values)
        worst = float(values[finite].max()) if finite.any() else 0.0
        return np.where(finite, values, worst)

    # -- incumbents -------------------------------------------------------------------
    def best(self) -> TrialRecord | None:
        """The successful trial with the lowest value (the earliest among ties)."""
        ok = [r for r in self.completed if r.ok and math.isfinite(r.value)]
        return min(ok, key=lambda r: (r.value, r.number)) if ok else None

    def incumbents(self) -> list[TrialRecord]:
        """The trials that improved on every earlier one, in order (the trajectory)."""
        out: list[TrialRecord] = []
        for r in self._records:
            if r.complete and r.ok and math.isfinite(r.value) and (not out or r.value < out[-1].value):
                out.append(r)
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per trial; ``best_so_far`` is the incumbent value after each trial."""
        cols = [f.name for f in TrialRecord.__dataclass_fields__.values()]
        frame = pd.DataFrame([asdict(r) for r in self._records], columns=cols)
        ok_values = frame["value"].where(frame["status"] == "ok")
        frame["best_so_far"] = ok_values.cummin()
        return frame
