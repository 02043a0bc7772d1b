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
    # the most one member moves a difference of two classes' scores, and a margin for rounding
    spread, rounding = float(P.max() - P.min()), 1e-9 * max(1.0, float(np.abs(P).max()))
    single = library_losses(metric, loss, y, P)
    order = [int(h) for h in np.argsort(single, kind="stable")[: min(n_init, H, max_size)]]
    total = P[order].sum(axis=0)
    trajectory = [float(loss(y, P[order[: k + 1]].mean(axis=0))) for k in range(len(order))]
    while len(order) < max_size:
        size = len(order) + 1
        if metric == "error_rate" and H > SETTLE_FROM and P.shape[2] > 1:
            scores = _error_rates_of_additions(total, P, y, size, spread + rounding * size)
        else:
            scores = library_losses(metric, loss, y, (total[None] + P) / size)
        h = int(np.argmin(scores))  # ties: the lowest index
        order.append(h)
        total += P[h]
        trajectory.append(float(scores[h]))
    best = int(np.argmin(trajectory))  # the earliest prefix of lowest loss
    return EnsembleSelection(tuple(order[: best + 1]), trajectory[best], tuple(trajectory), tuple(order))


#: Library sizes up to which selection scores every row (:func:`library_losses`) rather than
#: :func:`_error_rates_of_additions`: finding the settled rows costs about as much as
#: scoring four models on all of them.
SETTLE_FROM = 4


def _error_rates_of_additions(total: np.ndarray, P: np.ndarray, y: np.ndarray, size: int,
                              lead: float) -> np.ndarray:
    """With two classes or more, the error rate of ``(total + P_h) / size`` for every ``h`` (``library_losses``), its
    arg max evaluated only on the rows one more member can change. Adding ``P_h`` moves the
    difference of two classes' scores by at most the range of the library's values, so a
    row whose leading class is ahead of the next by more than ``lead`` (that range and a
    margin for the sums' and division's rounding) keeps its prediction whatever is added:
    it counts the same for every ``h``. Exact (the values of scoring every row), and much
    cheaper once the ensemble has a few members, since most rows' lead then grows with
    each one."""
    n, K = total.shape
    if K == 2:
        ahead = np.abs(total[:, 1] - total[:, 0])
    else:
        top2 = np.partition(total, K - 2, axis=1)
        ahead = top2[:, K - 1] - top2[:, K - 2]
    settled = ahead > lead
    open_rows = np.flatnonzero(~settled)
    fixed_wrong = np.count_nonzero(first_argmax(total[settled]) != y[settled])
    wrong = np.count_nonzero(first_argmax((total[None, open_rows] + P[:, open_rows]) / size) != y[None, open_rows],
                             axis=1)
    return (fixed_wrong + wrong) / n


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
