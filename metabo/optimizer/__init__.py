"""The SMBO core: trials and their history, strategies, ask/tell, and tuning a dataset.

``history``: :class:`Trial`, :class:`TrialRecord`, :class:`History`; ``strategies``:
:class:`RandomSearch`, :class:`GPBO` (conditional or dense kernel over the joint CASH
space), :class:`PerAlgorithmGPBO`; ``optimizer``: :class:`Optimizer` (ask/tell, every
result written to the knowledge base, :meth:`Optimizer.resume`); ``tune``: :func:`tune`.
"""

from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.optimizer import Optimizer
from metabo.optimizer.strategies import GPBO, PerAlgorithmGPBO, RandomSearch, Strategy, make_strategy
from metabo.optimizer.tune import TuneResult, tune

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
