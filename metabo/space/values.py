"""Checks and conversions of hyperparameter values shared by the space modules.

Values handed to a space may come from JSON, from ConfigSpace (which returns NumPy
scalars such as ``np.str_`` and ``np.int64``) or from user code; the space stores and
returns plain Python scalars only, so that ``canonical_json`` of a configuration is
stable (metabo/kb/canonical.py).
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import numpy as np

from metabo.exceptions import InputDataError

Scalar: TypeAlias = str | int | float | bool

#: Tolerance on unit-cube coordinates before they are clipped to [0, 1].
UNIT_TOLERANCE = 1e-9


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python scalar it holds; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def is_real(value: Any) -> bool:
    """True for int/float numbers (NumPy ones too), False for bools and the rest."""
    value = plain(value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """True for ints (NumPy ones too), False for bools, floats and the rest."""
    value = plain(value)
    return isinstance(value, int) and not isinstance(value, bool)


def same_scalar(a: Any, b: Any) -> bool:
    """Equality that keeps types apart: ``1``, ``1.0`` and ``True`` are three values."""
    a, b = plain(a), plain(b)
    return type(a) is type(b) and a == b


def check_name(name: Any) -> str:
    """A hyperparameter or space name: a non-empty string."""
    if not isinstance(name, str) or not name:
        raise InputDataError(f"a hyperparameter name must be a non-empty string, got {name!r}")
    return str(name)


def check_scalar(value: Any, what: str) -> Scalar:
    """A JSON scalar usable as a categorical choice or constant: str, int, finite float
    or bool (NumPy scalars converted)."""
    value = plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputDataError(f"{what} is {value}; only finite numbers are allowed")
    if not isinstance(value, (str, int, float, bool)):
        raise InputDataError(
            f"{what} has type {type(value).__name__}; use str, int, float or bool"
        )
    return value


def check_unit(u: Any, what: str) -> float:
    """A coordinate of the unit cube, clipped to [0, 1] within :data:`UNIT_TOLERANCE`."""
    if not is_real(u) or not math.isfinite(float(u)):
        raise InputDataError(f"unit-cube coordinate of {what} must be a finite number, got {u!r}")
    u = float(u)
    if u < -UNIT_TOLERANCE or u > 1.0 + UNIT_TOLERANCE:
        raise InputDataError(f"unit-cube coordinate of {what} is {u}, outside [0, 1]")
    return min(max(u, 0.0), 1.0)
