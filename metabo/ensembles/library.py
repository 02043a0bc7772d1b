"""The library of a search's out-of-fold predictions, and the ensemble ``tune`` returns by
default when it beats the single best configuration.

Every successful trial of a search whose splits are fixed (the k-fold cross-validation of
``tune``'s default protocol, or its 60/20/20 hold-out) predicts the same selection rows:
the out-of-fold rows of the folds, or the validation part
(:func:`~metabo.ensembles.search.selection_rows`). :class:`OutOfFoldLibrary` keeps those
probabilities as the trials are told, at most ``max_models`` of them (the best by the
trial's value; float32, so 3,000 rows x 3 classes x 50 models is 1.8 MB), so choosing an
ensemble afterwards costs no refit.

:meth:`OutOfFoldLibrary.choose` is auto-sklearn's design (Feurer et al. 2015, sec. 3.2:
ensemble selection over the models the search trained, on held-out predictions) with two
safeguards of this project:

- the selection is bagged (Caruana et al. 2004, sec. 4: 20 bags of half the library, the
  weights averaged), which :class:`~metabo.ensembles.selection.PostHocSelection` does;
- the ensemble is kept only when its gain over the single best, measured on rows its
  selection did not see, exceeds one standard error
  (:func:`~metabo.ensembles.guard.guarded_ensemble`); otherwise the single best trial is
  returned. The selection rows are the out-of-fold rows, not a 20% part, whenever ``tune``
  cross-validates (Caruana et al. 2006, sec. 3, hillclimb on cross-validated predictions).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabo.ensembles.guard import GuardDecision, guarded_ensemble
from metabo.ensembles.search import out_of_fold, selection_rows
from metabo.ensembles.selection import PostHocSelection
from metabo.evaluation.evaluate import Evaluation
from metabo.evaluation.protocols import Split
from metabo.optimizer.history import TrialRecord

logger = logging.getLogger(__name__)

#: the default ceiling of models kept in the library (the best by value): auto-sklearn's
#: ``ensemble_nbest`` (50; Feurer et al. 2015, sec. 3.2 selects among the best models
#: only). Every greedy step of the guard's 120 selections scores every model of its bag,
#: so the ceiling bounds the seconds an answer takes after a long search.
MAX_MODELS = 50
#: the default size limit of each bag's selection (draws with replacement)
ENSEMBLE_SIZE = 50


def evaluated_probabilities(evaluations: Sequence[Evaluation]) -> np.ndarray | None:
    """A trial's probabilities on the selection rows, its splits' validation parts in fold
    order (:func:`~metabo.ensembles.search.out_of_fold`); None unless every split succeeded
    and kept them."""
    if not evaluations or not all(e.ok and e.valid_proba is not None for e in evaluations):
        return None
    return out_of_fold([e.valid_proba for e in evaluations])  # type: ignore[misc]


@dataclass(frozen=True)
class EnsembleChoice:
    """What :meth:`OutOfFoldLibrary.choose` decided: the guard's decision (``kept`` is
    ``"ensemble"`` or ``"single"``) and the members as (trial number, weight)."""

    decision: GuardDecision
    models: int  # the library's size when it chose

    @property
    def kept(self) -> str:
        """What the guard kept: ``"ensemble"`` or ``"single"``."""
        return self.decision.kept

    @property
    def weights(self) -> dict[int, float]:
        """The members' weights, by trial number."""
        return self.decision.weights

    @property
    def combine(self) -> str:
        """How the members' predictions combine: by averaged probabilities or by vote."""
        return self.decision.combine


class OutOfFoldLibrary:
    """Out-of-fold probabilities of a search's successful models on one set of selection
    rows whose class codes are ``y`` (module docstring). :meth:`for_splits` makes the
    library of a ``tune`` search (give :meth:`observe` as ``run_trials``' ``on_evaluated``);
    :class:`~metabo.integrations.sklearn.MetaSearchCV` and the service's studies
    :meth:`add` probabilities they hold already."""

    def __init__(self, y: np.ndarray, n_classes: int, *, metric: str = "error_rate", ensemble_size: int = ENSEMBLE_SIZE,
                 max_models: int = MAX_MODELS, seed: int = 0) -> None:
        self.selection = PostHocSelection(None, np.asarray(y), metric=metric,  # type: ignore[arg-type]
                                          ensemble_size=ensemble_size, n_classes=n_classes, seed=seed)
        self.metric, self.max_models, self.seed = metric, int(max_models), int(seed)
        self.n_splits: int | None = None
        self._values: dict[int, float] = {}

    @classmethod
    def for_splits(cls, splits: Sequence[Split], codes: np.ndarray, n_classes: int, **options: Any
                   ) -> OutOfFoldLibrary:
        """The library of a search evaluated on ``splits``: its selection rows are their
        validation parts in fold order (:func:`~metabo.ensembles.search.selection_rows`)."""
        library = cls(np.asarray(codes)[selection_rows(list(splits))], n_classes, **options)
        library.n_splits = len(splits)
        return library

    def __len__(self) -> int:
        return len(self.selection.probas)

    def observe(self, record: TrialRecord, evaluations: list[Evaluation]) -> None:
        """Keep ``record``'s out-of-fold probabilities when every split of it succeeded
        (a library made by :meth:`for_splits`)."""
        if self.n_splits is None:
            raise TypeError("observe needs the library of a search's splits (OutOfFoldLibrary.for_splits)")
        proba = evaluated_probabilities(evaluations)
        if record.ok and len(evaluations) == self.n_splits and proba is not None:
            self.add(record.number, float(record.value), proba)

    def add(self, number: int, value: float, proba: np.ndarray) -> bool:
        """Keep model ``number``'s probabilities on the selection rows (its search value
        ``value``, lower is better); False, logged, when they do not cover the rows or are
        not finite. Past ``max_models``, the model of highest value (the latest among
        ties) leaves."""
        proba = np.asarray(proba, dtype=float)
        if proba.shape[0] != len(self.selection.y) or not np.all(np.isfinite(proba)):
            logger.warning("model %d: its out-of-fold predictions do not cover the selection rows; left out of the "
                           "ensemble", number)
            return False
        self.selection.observe(number, proba)  # checks the shape and values
        self.selection.probas[number] = proba.astype(np.float32)
        self._values[number] = float(value)
        if len(self._values) > self.max_models:
            worst = max(self._values, key=lambda k: (self._values[k], k))
            del self._values[worst], self.selection.probas[worst]
        return True

    def refitted(self, models: dict[int, tuple[float, np.ndarray]]) -> OutOfFoldLibrary:
        """A library of the same selection rows and options holding only ``models`` (trial
        number -> (value, probabilities on the selection rows)): the same configurations
        trained on more rows (successive halving's promotions, :func:`metabo.tuning.tune`).
        Ensemble selection's weights fit the predictions they are chosen on (Caruana et
        al. 2004, sec. 2: the library's models are the ones combined); on a large table the
        search's models are trained on a few thousand rows, and how they complement each
        other changes as they are trained on the rest."""
        library = OutOfFoldLibrary(self.selection.y, self.selection.n_classes, metric=self.metric,
                                   ensemble_size=self.selection.ensemble_size, max_models=self.max_models,
                                   seed=self.seed)
        library.n_splits = self.n_splits
        for number, (value, proba) in sorted(models.items()):
            library.add(number, value, proba)
        return library

    def replaced(self, number: int, value: float, proba: np.ndarray) -> OutOfFoldLibrary:
        """A library of the same selection rows and options where model ``number`` has the
        probabilities ``proba`` and value ``value`` (added when it had none): the model
        that will be fitted for that trial, when it differs from the trial's (a model given
        more boosting rounds, :mod:`metabo.tuning.rounds`), is the one weighed."""
        models = {k: (self._values[k], self.selection.probas[k]) for k in self.selection.probas}
        return self.refitted({**models, number: (float(value), np.asarray(proba, dtype=float))})

    def among(self, numbers: Iterable[int]) -> OutOfFoldLibrary:
        """A library of the same selection rows and options holding only the models
        ``numbers`` of this one (those it does not hold are ignored): an ensemble chosen
        among the models that can still be fitted."""
        return self.refitted({k: (self._values[k], self.selection.probas[k]) for k in numbers
                              if k in self.selection.probas})

    def choose(self, single: int | None) -> EnsembleChoice | None:
        """The bagged ensemble selection over the library, kept if its cross-validated gain
        over model ``single`` (the search's selection; None: the library's best on the
        selection rows) is beyond its noise, else ``single`` alone; None when the library
        holds fewer than two models or not ``single``."""
        if len(self) < 2 or (single is not None and single not in self.selection.probas):
            return None
        decision = guarded_ensemble(self.selection, metric=self.metric, seed=self.seed, single=single)
        return EnsembleChoice(decision, len(self))


__all__ = ["ENSEMBLE_SIZE", "MAX_MODELS", "EnsembleChoice", "OutOfFoldLibrary", "evaluated_probabilities"]
