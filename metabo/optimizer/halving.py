"""Successive halving on training-set size for large tables.

Successive halving (Jamieson & Talwalkar 2016; the inner loop of Hyperband, Li et al. 2018,
Algorithm 1, lines 3-9) evaluates many configurations cheaply and the best of them again on
more resources, keeping the best ``1 / eta`` at each rung. Here the resource is the number
of training rows (Li et al. 2018, sec. 4.2 use it too), on one hold-out split, so the
validation rows stay the same at every rung.

Rungs (:func:`rung_sizes`): ``r_0`` = :data:`FIRST_RUNG` rows (the knowledge base's own
fidelity, so the warm start's past values are on the scale the search sees), then
``r_k = r_0 eta^k`` while below ``n``, the training rows; the last rung is ``n`` (it replaces
a last ``r_k`` less than half of ``n``). With fewer than three rungs there is nothing to halve
(``n`` < 12,000 rows with the defaults).

The bracket (:func:`successive_halving`), deviating from Hyperband where the warm start
should choose: rung 0 is the search itself (any strategy, warm or cold, at ``r_0`` rows, its
trials told as usual), not ``n_0`` random configurations; its best
``min(ceil(N / eta), eta^(R-2))`` successful trials (``N`` of them, ``R`` rungs) go to rung
1, with the best trial of every algorithm not among them (``tune`` does this: learning curves
of algorithms differ in slope and cross, Mohr & van Rijn 2022, so a nearest-neighbour model
that ranks low on 2,000 rows may lead on 12,000); at every later rung the best ``ceil(n_k / eta)`` of the
previous rung (by their value
there, the earliest trial among ties) are evaluated again. The last rung, every row, is the
final model's fit: it is not spent on one configuration's evaluation. The winner
(:func:`winner`) is the best of the highest rung evaluated completely.

Every rung's trials are scored on the same stratified sample of at most :data:`EVAL_ROWS`
validation rows (and as many test rows): on a table of 1,000,000 rows the 20% held out for
each is 200,000 rows, and predicting them cost a kernel SVM fitted on rung 0's 2,000 rows
about 80 s where its fit took 3 s. The standard error of an error rate ``p`` on ``V`` rows is
``sqrt(p (1 - p) / V)``, .004 at ``p = .2`` and ``V = 10,000``: below the differences the rungs
decide between, at a cost that no longer grows with the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metabo.exceptions import TimeBudgetExceeded

#: rung 0's training rows: the fidelity the knowledge base records large tables at
FIRST_RUNG = 2000
#: the halving rate: 1 / ETA of a rung's configurations go on, on ETA times the rows
ETA = 3
#: the validation (and test) rows a rung's trial predicts, at most (module docstring)
EVAL_ROWS = 10_000


def rung_sizes(n_train: int, *, first: int = FIRST_RUNG, eta: int = ETA) -> list[int]:
    """The rungs' training rows on ``n_train`` rows (module docstring); ``[n_train]`` when
    the table is too small to start below it."""
    if n_train <= first:
        return [n_train]
    sizes = [first]
    while sizes[-1] * eta < n_train:
        sizes.append(sizes[-1] * eta)
    if n_train < 2 * sizes[-1] and len(sizes) > 1:
        sizes[-1] = n_train
    else:
        sizes.append(n_train)
    return sizes


@dataclass(frozen=True)
class Rung:
    """The trials evaluated on ``rows`` training rows and their values (NaN: failed);
    ``complete`` unless the time budget ran out during the rung."""

    rows: int
    values: dict[int, float] = field(default_factory=dict)
    complete: bool = True


def _ranked(values: Mapping[int, float]) -> list[int]:
    """The trials with a finite value, best first, the earliest among ties."""
    return sorted((k for k, v in values.items() if math.isfinite(v)), key=lambda k: (values[k], k))


def first_promotion(first: Mapping[int, float], n_rungs: int, *, eta: int = ETA,
                    groups: Mapping[int, str] | None = None) -> list[int]:
    """The trials rung 0 (values ``first``) sends to rung 1, best first: its best
    ``min(ceil(N / eta), eta^(R-2))`` successful ones, then, with ``groups`` (trial ->
    algorithm), the best trial of every other algorithm (module docstring)."""
    ranked = _ranked(first)
    chosen = ranked[:min(math.ceil(len(ranked) / eta), eta ** max(n_rungs - 2, 0))]
    if groups is not None:
        leaders: dict[Any, int] = {}
        for k in ranked:
            leaders.setdefault(groups[k], k)
        chosen += [k for k in leaders.values() if k not in chosen]
    return chosen


def successive_halving(first: Mapping[int, float], sizes: Sequence[int], evaluate: Callable[[int, int], float],
                       *, eta: int = ETA, groups: Mapping[int, str] | None = None) -> list[Rung]:
    """The bracket's rungs after rung 0 (the search's values ``first``, trial -> value on
    ``sizes[0]`` rows), up to ``sizes[-2]`` (module docstring); ``evaluate(trial, rows)``
    gives a trial's value on ``rows`` training rows (NaN when it fails). A
    :class:`TimeBudgetExceeded` raised by it ends the bracket, that rung incomplete.
    ``groups`` (trial -> algorithm): the best trial of every algorithm enters rung 1 too,
    after the best ones, since algorithms' learning curves differ in slope and cross."""
    if eta < 2:
        raise ValueError(f"eta must be at least 2, got {eta}")
    rungs = [Rung(int(sizes[0]), dict(first))]
    ranked = first_promotion(first, len(sizes), eta=eta, groups=groups)
    take = len(ranked)
    for rows in sizes[1:-1]:
        chosen = ranked[:take]
        if len(chosen) < 2:
            break  # nothing left to compare
        values: dict[int, float] = {}
        try:
            for k in chosen:
                values[k] = float(evaluate(k, int(rows)))
        except TimeBudgetExceeded:
            rungs.append(Rung(int(rows), values, complete=False))
            break
        rungs.append(Rung(int(rows), values))
        ranked = _ranked(values)
        take = math.ceil(len(ranked) / eta)
    return rungs


def winner(rungs: Sequence[Rung]) -> int | None:
    """The best trial of the highest complete rung that has one (None: no finite value)."""
    for rung in reversed(rungs):
        ranked = _ranked(rung.values)
        if rung.complete and ranked:
            return ranked[0]
    return None


__all__ = ["ETA", "FIRST_RUNG", "Rung", "first_promotion", "rung_sizes", "successive_halving", "winner"]
