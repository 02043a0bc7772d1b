"""Typed hyperparameters and their encoding to the unit interval.

Notation: a value ``v`` is encoded as ``u = to_unit(v)`` in [0, 1] and decoded by
``from_unit(u)``; "Hyperparameters are rescaled in [0, 1] for the surrogate model, and
integer hyperparameters are rounded to the closest value" (Levesque 2018, section 5.5).
``t`` is ``log`` on a log scale and the identity otherwise.

- Float: ``u = (t(v) - t(low)) / (t(high) - t(low))``; on a log scale ``low -> 0``,
  ``high -> 1`` and the geometric midpoint ``-> 1/2``.
- Integer: value ``v`` owns the bin ``[v - 1/2, v + 1/2)`` of the real line; bins are
  mapped through ``t`` onto [0, 1], so on a linear scale the unit interval is split into
  ``k = high - low + 1`` equal bins. ``v`` is encoded at its bin's centre (in ``t``-space)
  and ``from_unit`` rounds to the nearest integer, so ``from_unit(to_unit(v)) == v``.
- Categorical with ``k`` choices: the same rule with ``k`` equal bins, choice ``i`` at
  ``(i + 1/2) / k`` (so a uniform ``u`` decodes to a uniform choice).
- Constant: ``1/2`` (the centre of a single bin).

Sampling draws ``u`` uniformly and decodes it (uniform in ``t``-space). ``snap_unit(u)``
is the vectorized ``to_unit(from_unit(u))`` (the code of the value ``u`` decodes to), used to
sample straight into the encoding (``SearchSpace.sample_encoded``). Neighbours follow
SMAC's one-exchange neighbourhood (thesis 5.3.2): numeric values are perturbed by
``N(0, 0.2^2)`` in unit space and clipped; integers keep distinct rounded values (topped
up with the nearest integers, the thesis' +-1 steps); a categorical's neighbours are all
its other choices; a constant has none. Defaults: the given one, else ``from_unit(1/2)``
for numbers (the (geometric) midpoint) and the first choice for categoricals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, TypeAlias

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.space.values import (
    Scalar,
    check_name,
    check_scalar,
    check_unit,
    is_integer,
    is_real,
    same_scalar,
)

NEIGHBOUR_SD = 0.2  # SMAC's standard deviation of numeric neighbours, in unit space
_TRIES_PER_NEIGHBOUR = 10


def neighbour_draws(centre: float, rng: Seed, n: int) -> np.ndarray:
    """The ``n x 10 + 1`` unit values behind :func:`_unit_neighbour_codes`: ``centre``, then
    ``N(centre, 0.2^2)`` draws, clipped to [0, 1] (one ``normal`` call of ``rng``)."""
    draws = as_generator(rng).normal(centre, NEIGHBOUR_SD, n * _TRIES_PER_NEIGHBOUR + 1)
    draws[0] = centre
    return np.clip(draws, 0.0, 1.0)


def _distinct_codes(snapped: Sequence[float], n: int) -> list[float]:
    """Up to ``n`` distinct codes of ``snapped[1:]``, in order, all different from
    ``snapped[0]`` (the centre's own code)."""
    own, *codes = snapped
    out: list[float] = []
    for c in codes:
        if len(out) >= n:
            break
        if c != own and c not in out:
            out.append(c)
    return out


def _unit_neighbour_codes(hp: Float | Integer, centre: float, rng: Seed, n: int) -> list[float]:
    """Codes of up to ``n`` distinct values decoded from ``N(centre, 0.2^2)`` draws clipped
    to [0, 1], all different from the value at ``centre`` (``n x 10`` draws at most)."""
    return _distinct_codes(hp.snap_unit(neighbour_draws(centre, rng, n)).tolist(), n)


class _Numeric:
    """Shared code of :class:`Float` and :class:`Integer` (``t``, range checks)."""

    name: str
    low: Any
    high: Any
    log: bool
    default: Any

    def normalize(self, value: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def from_unit(self, u: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _t(self, x: float) -> float:
        return math.log(x) if self.log else x

    def _t_inv(self, y: float) -> float:
        return math.exp(y) if self.log else y

    def _tv(self, x: np.ndarray) -> np.ndarray:
        return np.log(x) if self.log else x

    def _tv_inv(self, y: np.ndarray) -> np.ndarray:
        return np.exp(y) if self.log else y

    def _describe(self) -> str:
        scale = "log" if self.log else "linear"
        return f"[{self.low!r}, {self.high!r}] ({scale} scale)"

    def _out_of_range(self, value: Any) -> InvalidConfigurationError:
        return InvalidConfigurationError(
            f"hyperparameter {self.name!r} expects a {type(self).__name__.lower()} in "
            f"{self._describe()}, got {value!r}"
        )

    def _check_bounds(self, low: Any, high: Any) -> None:
        if not low < high:
            raise InputDataError(f"hyperparameter {self.name!r}: low={low!r} must be < high={high!r}")
        if self.log and low <= 0:
            raise InputDataError(f"hyperparameter {self.name!r}: a log scale needs low > 0, got {low!r}")

    def _set_default(self) -> None:
        default = self.from_unit(0.5) if self.default is None else self.default
        try:
            object.__setattr__(self, "default", self.normalize(default))
        except InvalidConfigurationError as e:
            raise InputDataError(f"default of {e}") from e

    def sample(self, rng: Seed) -> Any:
        """One value, uniform in ``t``-space."""
        return self.from_unit(float(as_generator(rng).random()))

    def validate(self, value: Any) -> None:
        """Raise :class:`InvalidConfigurationError` unless ``value`` is in range."""
        self.normalize(value)


@dataclass(frozen=True)
class Float(_Numeric):
    """A real hyperparameter in ``[low, high]``, optionally on a log scale."""

    name: str
    low: float
    high: float
    _: KW_ONLY
    log: bool = False
    default: float | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        if not (is_real(self.low) and is_real(self.high)):
            raise InputDataError(f"hyperparameter {self.name!r}: bounds must be numbers")
        low, high = float(self.low), float(self.high)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InputDataError(f"hyperparameter {self.name!r}: bounds must be finite")
        object.__setattr__(self, "log", bool(self.log))
        self._check_bounds(low, high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        self._set_default()

    def normalize(self, value: Any) -> float:
        """``value`` as a Python float, validated."""
        if not is_real(value) or not math.isfinite(float(value)):
            raise self._out_of_range(value)
        v = float(value)
        if not self.low <= v <= self.high:
            raise self._out_of_range(value)
        return v

    def to_unit(self, value: Any) -> float:
        """``value`` mapped to [0, 1], linearly on the (log, if log-scaled) range."""
        v = self.normalize(value)
        lo, hi = self._t(self.low), self._t(self.high)
        return min(max((self._t(v) - lo) / (hi - lo), 0.0), 1.0)

    def from_unit(self, u: Any) -> float:
        """The value at ``u`` in [0, 1], the inverse of :meth:`to_unit`, clipped to the range."""
        u = check_unit(u, repr(self.name))
        lo, hi = self._t(self.low), self._t(self.high)
        return min(max(self._t_inv(lo + u * (hi - lo)), self.low), self.high)

    def snap_unit(self, u: np.ndarray) -> np.ndarray:
        """``to_unit(from_unit(u))`` for each entry of ``u`` in [0, 1] (equal up to rounding)."""
        lo, hi = self._t(self.low), self._t(self.high)
        v = np.clip(self._tv_inv(lo + np.asarray(u, dtype=float) * (hi - lo)), self.low, self.high)
        return np.clip((self._tv(v) - lo) / (hi - lo), 0.0, 1.0)

    def neighbour_codes(self, u: float, rng: Seed, *, n: int = 4) -> np.ndarray:
        """Codes of ``n`` values around the one at ``u`` (Gaussian in unit space, sd 0.2, clipped)."""
        return np.array(_unit_neighbour_codes(self, u, rng, n))

    def codes_from_snapped(self, u: float, snapped: Sequence[float], *, n: int = 4) -> np.ndarray:
        """:meth:`neighbour_codes` from ``snap_unit(neighbour_draws(u, rng, n))`` computed
        elsewhere (a batch of searches snapped at once)."""
        return np.array(_distinct_codes(snapped, n))

    def neighbours(self, value: Any, rng: Seed, *, n: int = 4) -> list[float]:
        """``n`` values around ``value``: :meth:`neighbour_codes` decoded."""
        return [self.from_unit(c) for c in self.neighbour_codes(self.to_unit(value), rng, n=n)]


@dataclass(frozen=True)
class Integer(_Numeric):
    """An integer hyperparameter in ``low..high``, optionally on a log scale (low >= 1)."""

    name: str
    low: int
    high: int
    _: KW_ONLY
    log: bool = False
    default: int | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        if not (is_integer(self.low) and is_integer(self.high)):
            raise InputDataError(f"hyperparameter {self.name!r}: bounds must be integers")
        low, high = int(self.low), int(self.high)
        object.__setattr__(self, "log", bool(self.log))
        self._check_bounds(low, high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        self._set_default()

    def normalize(self, value: Any) -> int:
        """``value`` as a Python int, validated (floats are refused, even 3.0)."""
        if not is_integer(value) or not self.low <= int(value) <= self.high:
            raise self._out_of_range(value)
        return int(value)

    def _edges(self) -> tuple[float, float]:
        return self._t(self.low - 0.5), self._t(self.high + 0.5)

    def to_unit(self, value: Any) -> float:
        """``value`` mapped to [0, 1]: the centre of its cell, each integer owning an equal
        (log, if log-scaled) width."""
        v = self.normalize(value)
        a, b = self._edges()
        centre = 0.5 * (self._t(v - 0.5) + self._t(v + 0.5))
        return min(max((centre - a) / (b - a), 0.0), 1.0)

    def from_unit(self, u: Any) -> int:
        """The integer whose cell holds ``u`` in [0, 1], the inverse of :meth:`to_unit`."""
        u = check_unit(u, repr(self.name))
        a, b = self._edges()
        x = self._t_inv(a + u * (b - a))
        return int(min(max(math.floor(x + 0.5), self.low), self.high))

    def snap_unit(self, u: np.ndarray) -> np.ndarray:
        """``to_unit(from_unit(u))`` for each entry of ``u``: the code of its bin's integer."""
        a, b = self._edges()
        x = self._tv_inv(a + np.asarray(u, dtype=float) * (b - a))
        v = np.clip(np.floor(x + 0.5), self.low, self.high)
        centre = 0.5 * (self._tv(v - 0.5) + self._tv(v + 0.5))
        return np.clip((centre - a) / (b - a), 0.0, 1.0)

    def neighbour_codes(self, u: float, rng: Seed, *, n: int = 4) -> np.ndarray:
        """Codes of up to ``n`` distinct integers: rounded Gaussian draws, then the nearest ones."""
        return self.codes_from_snapped(u, self.snap_unit(neighbour_draws(u, rng, n)).tolist(), n=n)

    def codes_from_snapped(self, u: float, snapped: Sequence[float], *, n: int = 4) -> np.ndarray:
        """:meth:`neighbour_codes` from ``snap_unit(neighbour_draws(u, rng, n))`` computed
        elsewhere (a batch of searches snapped at once)."""
        v = self.from_unit(u)
        out = _distinct_codes(snapped, n)
        step = 1
        while len(out) < n and (v - step >= self.low or v + step <= self.high):
            for w in (v - step, v + step):
                if len(out) < n and self.low <= w <= self.high:
                    c = self.to_unit(w)
                    if c not in out:
                        out.append(c)
            step += 1
        return np.array(out)

    def neighbours(self, value: Any, rng: Seed, *, n: int = 4) -> list[int]:
        """Up to ``n`` distinct integers: :meth:`neighbour_codes` decoded."""
        return [self.from_unit(c) for c in self.neighbour_codes(self.to_unit(value), rng, n=n)]


@dataclass(frozen=True)
class Categorical:
    """A choice among JSON scalars; the default is the first choice unless given."""

    name: str
    choices: tuple[Scalar, ...]
    _: KW_ONLY
    default: Scalar | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        if isinstance(self.choices, (str, bytes)) or not hasattr(self.choices, "__iter__"):
            raise InputDataError(f"hyperparameter {self.name!r}: choices must be a sequence")
        choices = tuple(check_scalar(c, f"a choice of {self.name!r}") for c in self.choices)
        if not choices:
            raise InputDataError(f"hyperparameter {self.name!r} has no choices")
        keys = {(type(c), c) for c in choices}
        if len(keys) != len(choices):
            raise InputDataError(f"hyperparameter {self.name!r} has duplicate choices {choices!r}")
        object.__setattr__(self, "choices", choices)
        default = choices[0] if self.default is None else self.default
        try:
            object.__setattr__(self, "default", self.normalize(default))
        except InvalidConfigurationError as e:
            raise InputDataError(f"default of {e}") from e

    def index(self, value: Any) -> int:
        """Position of ``value`` among the choices (type-strict: 1, 1.0, True differ)."""
        for i, c in enumerate(self.choices):
            if same_scalar(c, value):
                return i
        raise InvalidConfigurationError(
            f"hyperparameter {self.name!r} expects one of {list(self.choices)!r}, got {value!r}"
        )

    def normalize(self, value: Any) -> Scalar:
        """The choice equal to ``value``; InvalidConfigurationError if there is none."""
        return self.choices[self.index(value)]

    def validate(self, value: Any) -> None:
        """Raise InvalidConfigurationError unless ``value`` is one of the choices."""
        self.index(value)

    def sample(self, rng: Seed) -> Scalar:
        """A choice drawn uniformly with ``rng``."""
        return self.choices[int(as_generator(rng).integers(len(self.choices)))]

    def to_unit(self, value: Any) -> float:
        """The centre of ``value``'s cell in [0, 1], each choice owning an equal width."""
        return (self.index(value) + 0.5) / len(self.choices)

    def from_unit(self, u: Any) -> Scalar:
        """The choice whose cell holds ``u`` in [0, 1]."""
        u = check_unit(u, repr(self.name))
        k = len(self.choices)
        return self.choices[min(int(math.floor(u * k)), k - 1)]

    def snap_unit(self, u: np.ndarray) -> np.ndarray:
        """``to_unit(from_unit(u))`` for each entry of ``u``: its bin's centre."""
        k = len(self.choices)
        return (np.minimum(np.floor(np.asarray(u, dtype=float) * k), k - 1) + 0.5) / k

    def neighbour_codes(self, u: float, rng: Seed, *, n: int = 4) -> np.ndarray:
        """The codes of every other choice (``rng`` and ``n`` are unused; thesis 5.3.2)."""
        k = len(self.choices)
        i = min(int(math.floor(check_unit(u, repr(self.name)) * k)), k - 1)
        return (np.array([j for j in range(k) if j != i], dtype=float) + 0.5) / k

    def neighbours(self, value: Any, rng: Seed, *, n: int = 4) -> list[Scalar]:
        """Every other choice (``rng`` and ``n`` are unused; thesis 5.3.2)."""
        i = self.index(value)
        return [c for j, c in enumerate(self.choices) if j != i]


@dataclass(frozen=True)
class Constant:
    """A fixed setting recorded in the configuration (no search dimension to speak of)."""

    name: str
    value: Scalar

    def __post_init__(self) -> None:
        check_name(self.name)
        object.__setattr__(self, "value", check_scalar(self.value, f"constant {self.name!r}"))

    @property
    def default(self) -> Scalar:
        """The constant value."""
        return self.value

    def normalize(self, value: Any) -> Scalar:
        """The constant, if ``value`` equals it; InvalidConfigurationError otherwise."""
        if not same_scalar(self.value, value):
            raise InvalidConfigurationError(
                f"hyperparameter {self.name!r} is the constant {self.value!r}, got {value!r}"
            )
        return self.value

    def validate(self, value: Any) -> None:
        """Raise InvalidConfigurationError unless ``value`` is the constant."""
        self.normalize(value)

    def sample(self, rng: Seed) -> Scalar:
        """The constant (nothing to draw)."""
        return self.value

    def to_unit(self, value: Any) -> float:
        """0.5, after checking that ``value`` is the constant."""
        self.normalize(value)
        return 0.5

    def from_unit(self, u: Any) -> Scalar:
        """The constant, whatever ``u`` in [0, 1]."""
        check_unit(u, repr(self.name))
        return self.value

    def snap_unit(self, u: np.ndarray) -> np.ndarray:
        """0.5 everywhere: the one code of the constant."""
        return np.full(np.shape(u), 0.5)

    def neighbour_codes(self, u: float, rng: Seed, *, n: int = 4) -> np.ndarray:
        """No codes: a constant has no neighbours."""
        return np.empty(0)

    def neighbours(self, value: Any, rng: Seed, *, n: int = 4) -> list[Scalar]:
        """No values: a constant has no neighbours (``value`` checked)."""
        self.normalize(value)
        return []


Hyperparameter: TypeAlias = Float | Integer | Categorical | Constant

__all__ = ["NEIGHBOUR_SD", "Categorical", "Constant", "Float", "Hyperparameter", "Integer"]
