"""Imported first by the scripts that use the benchmark protocols: puts the repository's
root on ``sys.path``, for the top-level ``benchmarks`` package, which is not installed
with ``metabo``. ``python scripts/NAME.py`` puts ``scripts/`` there, not the root.

The root goes right after ``scripts/``, as ``python -m`` from the root and the tests'
``pythonpath`` put it first: the scripts run the ``benchmarks`` and the ``metabo`` of
this checkout, whatever else is installed.
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)
