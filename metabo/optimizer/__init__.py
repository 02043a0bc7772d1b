"""The SMBO core: trials and their history, ask/tell, budgets and limits.

``history``: :class:`Trial`, :class:`TrialRecord`, :class:`History`; ``optimizer``:
:class:`Optimizer` (ask/tell, every result written to the knowledge base,
:meth:`Optimizer.resume`); ``budget``, ``limits``, ``halving``: the time budget, the
trials' default limits and successive halving's rungs.

Tuning a dataset (:func:`metabo.tuning.tune`) and the strategies
(:mod:`metabo.strategies`) stand above this package. The names this package used to
re-export from them (``tune``, ``TuneResult``, ``GPBO``, ``RandomSearch``, ...) are still
found here, looked up by name when first asked for, so that existing imports keep
working; nothing here imports them.
"""


from metabo._lazy import lazy_getattr
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.optimizer.optimizer import Optimizer

#: name -> the module above this package that defines it (looked up on first use)
_ELSEWHERE = {"tune": "metabo.tuning.tune", "TuneResult": "metabo.tuning.tune", "GPBO": "metabo.strategies",
              "PerAlgorithmGPBO": "metabo.strategies", "RandomSearch": "metabo.strategies",
              "Strategy": "metabo.strategies", "make_strategy": "metabo.strategies"}


__getattr__ = lazy_getattr(__name__, _ELSEWHERE)

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
