"""Tuning a dataset: the orchestration above the strategies and the ensembles.

``tune`` (:func:`~metabo.tuning.tune.tune`) searches for one configuration or, by
default, the ensemble of the search's out-of-fold predictions; ``tune_ensemble``
(:func:`~metabo.tuning.ensemble.tune_ensemble`) runs an ensemble search (post-hoc
selection, ESMBO, EO or DivBO) around a strategy. Their parts, one module each:

- :mod:`~metabo.tuning.session`: loading and checking the data, the search protocol,
  storing the dataset and opening the session (:class:`~metabo.tuning.session.Setup`);
- :mod:`~metabo.tuning.registry`: a strategy by name, ``auto`` resolved against the
  knowledge base;
- :mod:`~metabo.tuning.trials`: asking, evaluating and telling trials in batches, and the
  opening trial under a time budget;
- :mod:`~metabo.tuning.final`: successive halving's promotions, the ensemble and the final
  model.

It stands above :mod:`metabo.strategies` and :mod:`metabo.ensembles`; the ask/tell core
(:mod:`metabo.optimizer`) imports nothing from it.
"""

from metabo.tuning.ensemble import tune_ensemble
from metabo.tuning.registry import resolve_strategy
from metabo.tuning.trials import OPENING, run_trials
from metabo.tuning.tune import TuneResult, tune

__all__ = ["OPENING", "TuneResult", "resolve_strategy", "run_trials", "tune", "tune_ensemble"]
