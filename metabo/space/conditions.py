"""Conditions: when a child hyperparameter is active.

"A hyperparameter gamma_i which depends on parent hyperparameter gamma_j will be referred
to as active if gamma_j in V_{j,i}" (Levesque 2018, section 5.3), and only if the parent
is itself active. :class:`InCondition` holds ``V_{j,i}``; :class:`EqualsCondition` is the
one-value case, kept as its own type so that ConfigSpace round trips preserve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from metabo.exceptions import InputDataError
from metabo.space.values import Scalar, check_name, check_scalar, same_scalar


@dataclass(frozen=True)
class InCondition:
    """``child`` is active only when ``parent`` is active and its value is in ``values``."""

    child: str
    parent: str
    values: tuple[Scalar, ...]

    def __post_init__(self) -> None:
        check_name(self.child)
        check_name(self.parent)
        if self.child == self.parent:
            raise InputDataError(f"hyperparameter {self.child!r} cannot be its own parent")
        if isinstance(self.values, (str, bytes)) or not hasattr(self.values, "__iter__"):
            raise InputDataError(f"condition on {self.child!r}: values must be a sequence")
        values = tuple(check_scalar(v, f"a value of the condition on {self.child!r}") for v in self.values)
        if not values:
            raise InputDataError(f"condition on {self.child!r} has no values")
        object.__setattr__(self, "values", values)

    def satisfied_by(self, parent_value: Any) -> bool:
        """Whether the parent's value activates the child (type-strict equality)."""
        return any(same_scalar(v, parent_value) for v in self.values)

    def renamed(self, *, child: str, parent: str) -> InCondition:
        """The same condition between other names (used by the CASH space)."""
        return InCondition(child, parent, self.values)


@dataclass(frozen=True, init=False)
class EqualsCondition(InCondition):
    """``child`` is active only when ``parent == value``."""

    def __init__(self, child: str, parent: str, value: Scalar) -> None:
        super().__init__(child, parent, (value,))

    @property
    def value(self) -> Scalar:
        """The one parent value that activates the child."""
        return self.values[0]

    def renamed(self, *, child: str, parent: str) -> EqualsCondition:
        """The same condition between renamed ``child`` and ``parent``."""
        return EqualsCondition(child, parent, self.value)


Condition: TypeAlias = InCondition
