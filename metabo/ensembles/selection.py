"""Post-hoc ensemble selection (Caruana, Niculescu-Mizil, Crew and Ksikes 2004): forward
greedy selection with replacement from a library of trained models, on their validation
predictions.

Notation: the library's ``H`` models with validation class probabilities ``P_h`` (n, K),
the true codes ``y`` (n,), a metric ``L(y, P)`` (lower is better, any of
:mod:`metabo.evaluation.metrics`). An ensemble is a multiset ``S`` of library indices and
predicts the average ``P_S = 1/|S| sum_{h in S} P_h`` (repeated members weigh more).

1. Initialization (Caruana et al. sec. 2.1, "sorted ensemble initialization"): the
   ``n_init`` models of lowest ``L(y, P_h)``, best first.
2. Forward steps with replacement: add the ``h`` minimizing ``L(y, P_{S + h})`` (ties: the
   lowest index), until ``|S| = max_size``.
3. Return the prefix of that sequence of lowest loss (the paper's "select the ensemble
   from the nested set with maximum performance on the hillclimb set"), every prefix
   counted, those of the initialization too; so the returned loss is never above the best
   single model's, nor above any earlier step's.

Bagged selection (Caruana et al. 2004, "bagged ensemble selection", the third
of that paper's additions beside selection with replacement and sorted initialization;
:func:`bagged_selection`): ``n_bags`` times, draw a random
``fraction`` of the library (without replacement, seeded) and run the selection above on
that bag alone; the final ensemble is the average of the bags' weight vectors. A model
that fits the selection rows by chance wins only in the bags that hold it, so one lucky
overfit model weighs at most its bag share; the paper uses p = 0.5 and 20 bags. (Issue 20
names Caruana, Munson and Niculescu-Mizil 2006 for these; that paper's own addition used
here is hillclimbing on cross-validated predictions: :mod:`metabo.ensembles.search`'s ``cv``.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from metabo.ensembles.base import EnsembleSearch
from metabo.evaluation.metrics import first_argmax, get_metric, library_losses
from metabo.exceptions import InputDataError
from metabo.strategies.base import Config, Strategy

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.space.cash import CASHSpace


@dataclass(frozen=True)
class EnsembleSelection:
    """The selected multiset (library indices with their counts) and the trajectory."""

    members: tuple[int, ...]  # the selected sequence, with repeats
    loss: float
    trajectory: tuple[float, ...] = field(repr=False)  # loss of every prefix of the greedy sequence
    order: tuple[int, ...] = field(repr=False)  # the whole greedy sequence

    @property
    def weights(self) -> dict[int, float]:
        """Library index -> weight (its share of the members)."""
        counts = Counter(self.members)
        return {h: c / len(self.members) for h, c in sorted(counts.items())}

    def predict_proba(self, probas: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
        """``P_S`` for the library's predictions ``probas`` (H, n, K) on any rows."""
        P = np.asarray(probas, dtype=float)
        return P[list(self.members)].mean(axis=0)


def ensemble_selection(probas: Sequence[np.ndarray] | np.ndarray, y: np.ndarray, *, metric: str = "error_rate",
                       max_size: int = 50, n_init: int = 3) -> EnsembleSelection:
    """Caruana's ensemble selection (module docstring) over ``probas`` (H, n, K)."""
    P = np.asarray(probas, dtype=float)
    y = np.asarray(y)
    if P.ndim != 3 or P.shape[0] < 1 or P.shape[1] != len(y):
        raise InputDataError(f"probas must be (models, n, K) with n = len(y) = {len(y)}, got {P.shape}")
    if not np.all(np.isfinite(P)):
        raise InputDataError("the library's predictions hold non-finite values")
    if max_size < 1 or n_init < 1:
        raise InputDataError(f"max_size and n_init must be >= 1, got {max_size}, {n_init}")
    loss = get_metric(metric)
    H = P.shape[0]
    single = library_losses(metric, loss, y, P)
    order = [int(h) for h in np.argsort(single, kind="stable")[: min(n_init, H, max_size)]]
    if H == 1:  # every step adds the one model: the average is that model, the first prefix is kept
        return EnsembleSelection((0,), float(single[0]), (float(single[0]),) * max_size, (0,) * max_size)
    total = P[order].sum(axis=0)
    trajectory = [float(loss(y, P[order[: k + 1]].mean(axis=0))) for k in range(len(order))]
    settled = (_SettledRows(P, y, total) if metric == "error_rate" and H * (P.shape[2] - 1) > SETTLE_FROM
               else None)
    while len(order) < max_size:
        size = len(order) + 1
        if settled is not None:
            scores = settled.error_rates(total, size)
        else:
            scores = library_losses(metric, loss, y, (total[None] + P) / size)
        h = int(np.argmin(scores))  # ties: the lowest index
        order.append(h)
        total += P[h]
        if settled is not None:
            settled.added(h, total, size)
        trajectory.append(float(scores[h]))
    best = int(np.argmin(trajectory))  # the earliest prefix of lowest loss
    return EnsembleSelection(tuple(order[: best + 1]), trajectory[best], tuple(trajectory), tuple(order))


#: The size of a library times its classes less one up to which selection scores every row
#: (:func:`library_losses`) rather than tracking the settled rows (:class:`_SettledRows`):
#: tracking them costs about as much per step as scoring eight models of two classes
#: (``scripts/bench_guard.py`` measures the guard's answers).
SETTLE_FROM = 8


class _SettledRows:
    """The error rate of ``(total + P_h) / size`` for every ``h`` (as :func:`library_losses`
    computes it), with the arg max evaluated only on the rows one more member can change.

    Adding ``P_h`` moves the difference of two classes' scores by at most the range of the
    library's values, so a row whose leading class ``a`` is ahead of every other by more than
    that range (and a margin for the sums' rounding) keeps its prediction whatever is
    added: it counts the same for every ``h``. The lead of such a row is not recomputed
    after each step; a lower bound of it is carried: adding ``P_h`` changes it by at least
    ``P_h[a] - max_k P_h[k]``. Rows whose bound falls to the range are scored exactly and
    their leading class and lead recomputed. Exact (the values of scoring every row), and
    much cheaper once the ensemble has a few members, since most rows' lead then grows with
    each one; with many classes it saves the sort of every row at every step."""

    def __init__(self, P: np.ndarray, y: np.ndarray, total: np.ndarray) -> None:
        self.P, self.y = P, y
        self.spread = float(P.max() - P.min())
        self.rounding = 1e-9 * max(1.0, float(np.abs(P).max()))
        self.top_value = P.max(axis=2)  # (H, n): the most one member adds to any class of a row
        self.leader = np.zeros(len(y), dtype=np.intp)
        self.lead = np.zeros(len(y))
        self._recompute(total, np.arange(len(y)))

    def _recompute(self, total: np.ndarray, rows: np.ndarray) -> None:
        """The exact leading class (first maximum) and lead of ``rows``."""
        K = total.shape[1]
        part = total[rows]
        self.leader[rows] = first_argmax(part)
        if K == 2:
            self.lead[rows] = np.abs(part[:, 1] - part[:, 0])
        else:
            top2 = np.partition(part, K - 2, axis=1)
            self.lead[rows] = top2[:, K - 1] - top2[:, K - 2]

    def _margin(self, size: int) -> float:
        return self.spread + self.rounding * size

    def error_rates(self, total: np.ndarray, size: int) -> np.ndarray:
        """The error rate of ``(total + P_h) / size`` for every model ``h``."""
        open_rows = np.flatnonzero(self.lead <= self._margin(size))
        fixed_wrong = np.count_nonzero(self.leader != self.y) - np.count_nonzero(
            self.leader[open_rows] != self.y[open_rows])
        wrong = np.count_nonzero(
            first_argmax((total[None, open_rows] + self.P[:, open_rows]) / size) != self.y[None, open_rows], axis=1)
        return (fixed_wrong + wrong) / len(self.y)

    def added(self, h: int, total: np.ndarray, size: int) -> None:
        """Carry the leads after ``P_h`` was added to ``total`` (now the sum of ``size``
        members): a settled row keeps its leading class and its lead bound grows by
        ``P_h[a] - max_k P_h[k]``; the rows that were open, and those whose bound falls to the
        range, are recomputed exactly."""
        was_open = self.lead <= self._margin(size)
        self.lead += np.take_along_axis(self.P[h], self.leader[:, None], axis=1)[:, 0] - self.top_value[h]
        self._recompute(total, np.flatnonzero(was_open | (self.lead <= self._margin(size + 1))))


def bagged_selection(probas: Sequence[np.ndarray] | np.ndarray, y: np.ndarray, *, metric: str = "error_rate",
                     max_size: int = 50, n_init: int = 3, n_bags: int = 20, fraction: float = 0.5,
                     seed: int = 0) -> dict[int, float]:
    """Bagged ensemble selection (module docstring): library index -> weight, the mean of
    ``n_bags`` selections, each over a seeded random ``fraction`` of the library (at least
    one model). With one model, or ``n_bags=1`` and ``fraction=1``, it is
    :func:`ensemble_selection`'s weights."""
    P = np.asarray(probas, dtype=float)
    if n_bags < 1 or not 0.0 < fraction <= 1.0:
        raise InputDataError(f"n_bags must be >= 1 and fraction in (0, 1], got {n_bags}, {fraction}")
    H = P.shape[0] if P.ndim == 3 else 0
    size = max(1, round(fraction * H))
    rng = np.random.default_rng(seed)
    total: dict[int, float] = {}
    for _ in range(n_bags):
        bag = np.sort(rng.choice(H, size=size, replace=False)) if size < H else np.arange(H)
        chosen = ensemble_selection(P[bag], y, metric=metric, max_size=max_size, n_init=n_init)
        for h, w in chosen.weights.items():
            total[int(bag[h])] = total.get(int(bag[h]), 0.0) + w / n_bags
    return dict(sorted(total.items()))


def select_from(probas: Mapping[int, np.ndarray], y: np.ndarray, *, metric: str = "error_rate",
                max_size: int = 50, n_init: int = 3, n_bags: int = 0, fraction: float = 0.5,
                seed: int = 0, rows: np.ndarray | None = None) -> dict[int, float]:
    """:func:`ensemble_selection` (``n_bags=0``) or :func:`bagged_selection` over a library
    keyed by trial number, on the rows ``rows`` of ``probas`` and ``y`` (None: all): trial
    number -> weight in the selected ensemble."""
    if not probas:
        raise InputDataError("no trained model observed yet")
    numbers = sorted(probas)
    if rows is None:
        library = [probas[k] for k in numbers]
    else:
        library, y = [np.asarray(probas[k])[rows] for k in numbers], np.asarray(y)[rows]
    if n_bags:
        weights = bagged_selection(library, y, metric=metric, max_size=max_size, n_init=n_init, n_bags=n_bags,
                                   fraction=fraction, seed=seed)
    else:
        weights = ensemble_selection(library, y, metric=metric, max_size=max_size, n_init=n_init).weights
    return {numbers[h]: w for h, w in weights.items()}


class PostHocSelection(EnsembleSearch):
    """A plain search (any strategy's suggestions, untouched) whose final ensemble is
    ensemble selection over every model it trained: BO-post / RS-post (Caruana et al.;
    auto-sklearn's post-hoc design), bagged by default (20 bags of half the library,
    Caruana et al. 2004; ``n_bags=0``: selection without bagging)."""

    name = "posthoc"
    combine = "average"

    def __init__(self, base: Strategy, y_valid: Sequence[int] | np.ndarray, *, metric: str = "error_rate",
                 ensemble_size: int = 50, n_init: int = 3, n_bags: int = 20, fraction: float = 0.5,
                 n_classes: int | None = None, seed: int = 0) -> None:
        super().__init__(y_valid, n_classes)
        if ensemble_size < 1:
            raise InputDataError(f"ensemble_size must be >= 1, got {ensemble_size}")
        if n_bags < 0 or not 0.0 < fraction <= 1.0:
            raise InputDataError(f"n_bags must be >= 0 and fraction in (0, 1], got {n_bags}, {fraction}")
        self.base, self.metric, self.ensemble_size, self.n_init = base, metric, int(ensemble_size), int(n_init)
        self.n_bags, self.fraction, self.seed = int(n_bags), float(fraction), int(seed)

    def __repr__(self) -> str:
        return (f"PostHocSelection(size={self.ensemble_size}, metric={self.metric!r}, bags={self.n_bags}, "
                f"base={self.base!r})")

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The wrapped strategy's suggestion (the selection runs after the search)."""
        return self.base.suggest(history, space, rng)

    def ensemble(self) -> dict[int, float]:
        """Ensemble selection over every trained model, bagged unless ``n_bags=0``."""
        return self.final(np.arange(len(self.y)), self.seed)

    def final(self, rows: np.ndarray, seed: int = 0) -> dict[int, float]:
        """The selection on the validation rows ``rows``."""
        return select_from(self.probas, self.y, metric=self.metric, max_size=self.ensemble_size, n_init=self.n_init,
                           n_bags=self.n_bags, fraction=self.fraction, seed=seed, rows=rows)


__all__ = [
    "EnsembleSelection",
    "PostHocSelection",
    "bagged_selection",
    "ensemble_selection",
    "library_losses",
    "select_from",
]
