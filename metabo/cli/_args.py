"""Argument types of the ``metabo`` command: every number is checked when it is parsed,
so a bad one is refused in one line before anything is loaded, stored or run.

Each factory returns an ``argparse`` ``type=`` callable; its error becomes
``metabo: error: argument --budget: ...`` (exit 2).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: The longest duration any option takes, in seconds (about 115 days): larger values
#: overflow the timers of threads and processes (``--time-budget 1e9``).
MAX_SECONDS = 1e7


def integer(*, low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An integer in ``[low, high]`` (either bound may be open)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be an integer of at least {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be an integer of at most {high:,}, got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its message
    return parse


def count(low: int = 1, high: int = 10**9) -> Callable[[str], int]:
    """How many of something: an integer of at least ``low`` (1 by default)."""
    return integer(low=low, high=high)


def seconds(*, zero: str | None = None, high: float = MAX_SECONDS) -> Callable[[str], float]:
    """A positive, finite number of seconds up to ``high``; ``zero`` (its meaning, e.g.
    "none") allows 0."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
        if value == 0 and zero is not None:
            return 0.0
        if not math.isfinite(value) or value <= 0 or value > high:
            also = f" (or 0: {zero})" if zero is not None else ""
            raise argparse.ArgumentTypeError(f"must be more than 0 seconds{also} and at most {high:,.0f}, "
                                             f"got {text!r}")
        return value

    parse.__name__ = "seconds"
    return parse
