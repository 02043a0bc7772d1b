"""The guard: keep the single best model unless the ensemble's cross-validated gain over it
is beyond its noise, and combine by averaged probabilities or by vote, whichever does
better out of sample.

An ensemble chosen on the rows it is scored on looks better than it is: selection picks
members that fit those rows by chance (a single overfit member can win every bootstrap
replicate; see ``reports/ensembles-v2/README.md``). The guard measures the gain of the search's last step on
rows that step did not see:

1. Cut the selection rows (the validation part, or the out-of-fold rows of a k-fold
   search) into ``n_folds`` seeded parts. For each part ``B`` with the rest ``A``: the
   ensemble ``w_A`` the search's last step picks from ``A`` alone
   (:meth:`~metabo.ensembles.base.EnsembleSearch.final`), and the single model of lowest
   loss on ``A``; both scored row by row on ``B``, the ensemble once per combination rule.
2. ``d_i = l_single(i) - l_ensemble(i)`` over every row: the gain is ``mean(d)``, its
   noise the standard error ``sd(d) / sqrt(n)`` (Nadeau and Bengio's caveat applies: the
   folds share training rows, so this standard error is optimistic; ``z`` is the margin).
   For metrics that are not means of row losses, ``d`` holds one value per fold.
3. The rule of lowest cross-validated loss (ties: the search's own) is kept; the ensemble
   (all rows' :meth:`~metabo.ensembles.base.EnsembleSearch.ensemble`, with that rule) is
   returned if its gain exceeds ``z`` standard errors, else the single best trial on all
   rows, weight 1 (selection overfits a small hillclimb set, which is why Caruana et al.
   2006 study the hillclimb set's size and hillclimb on cross-validated predictions).

Searches whose members cannot be re-chosen on part of the rows (EO's slots are filled
during the search) keep their members in step 1, so their gain is optimistic; the guard
is then one-sided in favour of the ensemble, never against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from metabo.ensembles.base import Combine, EnsembleSearch
from metabo.ensembles.combine import combined_codes, per_example_losses, weighted_average
from metabo.evaluation.metrics import get_metric
from metabo.exceptions import InputDataError

COMBINES = ("average", "vote")


@dataclass(frozen=True)
class GuardDecision:
    """What the guard kept and why (module docstring)."""

    kept: str  # "ensemble" or "single"
    combine: Combine
    weights: dict[int, float]
    gain: float  # cross-validated mean loss reduction of the ensemble against the single best
    se: float  # its standard error
    losses: dict[str, float]  # cross-validated loss: "single", and the ensemble under each rule

    @property
    def gain_text(self) -> str:
        """The cross-validated gain with its standard error, as the output words it."""
        return f"cross-validated gain {self.gain:+.4f} +- {self.se:.4f}"

    @property
    def summary(self) -> str:
        """One line: what was kept, how it combines, and the cross-validated gain with its standard error."""
        return f"{self.kept} ({self.combine}): {self.gain_text} over the single best"


def _row_losses(metric: str, y: np.ndarray, proba: np.ndarray, codes: np.ndarray | None) -> np.ndarray | float:
    """Per-row losses where the metric has them, else the metric's value on these rows;
    ``codes`` (a vote's predictions) replace the arg max of ``proba`` for the error rate."""
    if codes is not None and metric == "error_rate":
        return (codes != y).astype(float)
    rows = per_example_losses(metric, y, proba)
    return rows if rows is not None else float(get_metric(metric)(y, proba))


def guarded_ensemble(search: EnsembleSearch, *, metric: str = "error_rate", n_folds: int = 5, z: float = 1.0,
                     seed: int = 0, combines: tuple[str, ...] = COMBINES, single: int | None = None
                     ) -> GuardDecision:
    """The guard's decision for ``search`` after its last trial (module docstring);
    ``single``: the trial returned when the guard keeps one model (default: the one of
    lowest ``metric`` on all selection rows, the earliest among ties)."""
    numbers = sorted(search.probas)
    if not numbers:
        raise InputDataError("no trained model observed yet")
    if single is not None and single not in search.probas:
        raise InputDataError(f"trial {single} has no predictions to keep")
    if n_folds < 2 or z < 0:
        raise InputDataError(f"n_folds must be >= 2 and z >= 0, got {n_folds}, {z}")
    combines = tuple(c for c in combines if c == "average" or metric == "error_rate")  # a vote has no probabilities
    if search.combine not in combines:
        combines = (search.combine, *combines)
    y, K = search.y, search.n_classes
    loss = get_metric(metric)
    single_all = single if single is not None else min(numbers, key=lambda k: (loss(y, search.probas[k]), k))
    full = search.ensemble()
    n = len(y)
    n_folds = min(n_folds, n)
    parts = np.array_split(np.random.default_rng(seed).permutation(n), n_folds)
    per_rule: dict[str, list] = {c: [] for c in combines}
    single_losses: list = []
    for f, held in enumerate(parts):
        rest = np.setdiff1d(np.arange(n), held)
        w = search.final(rest, seed + 1 + f)
        best = min(numbers, key=lambda k: (loss(y[rest], search.probas[k][rest]), k))
        held_probas = {k: search.probas[k][held] for k in set(w) | {best}}
        single_losses.append(_row_losses(metric, y[held], held_probas[best], None))
        for c in combines:
            codes = combined_codes(w, held_probas, c, K) if c == "vote" else None
            per_rule[c].append(_row_losses(metric, y[held], weighted_average(w, held_probas), codes))

    def flat(parts_: list) -> np.ndarray:
        return np.concatenate([np.atleast_1d(p) for p in parts_]).astype(float)

    s = flat(single_losses)
    cv = {"single": float(s.mean())} | {c: float(flat(v).mean()) for c, v in per_rule.items()}
    rule: Combine = "vote" if min(combines, key=lambda c: (cv[c], c != search.combine)) == "vote" else "average"
    d = s - flat(per_rule[rule])
    gain = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.inf
    if len(full) > 1 and gain > z * se:
        return GuardDecision("ensemble", rule, full, gain, se, cv)
    return GuardDecision("single", "average", {single_all: 1.0}, gain, se, cv)


__all__ = ["COMBINES", "GuardDecision", "guarded_ensemble"]
