"""Acquisition functions and their maximizers (thesis 2.9-2.11, 5.3.2).

``ei``: expected improvement for minimization and its stable logarithm; ``search``:
:func:`maximize`, random sampling + SMAC-style local search over a CASH space.
"""

from metabo.acquisition.ei import expected_improvement, log_expected_improvement
from metabo.acquisition.search import maximize

__all__ = ["expected_improvement", "log_expected_improvement", "maximize"]
