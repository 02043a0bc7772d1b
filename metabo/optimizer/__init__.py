"""The SMBO core: trials and their history, strategies, ask/tell, and tuning a dataset.

``history``: :class:`Trial`, :class:`TrialRecord`, :class:`History`; the strategies
(:mod:`metabo.strategies`, re-exported here): :class:`RandomSearch`, :class:`GPBO`,
:class:`PerAlgorithmGPBO`; ``optimizer``: :class:`Optimizer` (ask/tell, every
result written to the knowledge base, :meth:`Optimizer.resume`); ``tune``: :func:`tune`.
"""

from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.optimizer import Optimizer
from metabo.optimizer.tune import TuneResult, tune
from metabo.strategies import (
    GPBO,
    PerAlgorithmGPBO,
    RandomSearch,
    Strategy,
    make_strategy,
)

__all__ = [
    "GPBO",
    "History",
    "Optimizer",
    "PerAlgorithmGPBO",
    "RandomSearch",
    "Strategy",
    "Trial",
    "TrialRecord",
    "TuneResult",
    "make_strategy",
    "tune",
]
