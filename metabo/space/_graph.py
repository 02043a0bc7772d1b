"""The condition graph of a search space: activity, validation and completion.

A forest: every child has at most one condition (one parent). Hyperparameters are visited
parents first (by depth, then in the space's order), so a child's activity is decided
from already-decided parents (Levesque 2018, 5.3: a child is active iff its parent is
active and takes a value in ``V_{j,i}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.space.conditions import InCondition
from metabo.space.hyperparameters import Categorical, Constant, Float, Integer

_TYPES = (Float, Integer, Categorical, Constant)


class Graph:
    """Indexes of a space's hyperparameters and conditions (immutable once built)."""

    def __init__(self, name: str, hps: Sequence[Any], conditions: Sequence[Any]) -> None:
        if not isinstance(name, str) or not name:
            raise InputDataError(f"a search space needs a non-empty string name, got {name!r}")
        self.name = name
        self.hps = tuple(hps)
        for hp in self.hps:
            if not isinstance(hp, _TYPES):
                raise InputDataError(
                    f"space {name!r}: {hp!r} is not a Float, Integer, Categorical or Constant"
                )
        self.index = {hp.name: i for i, hp in enumerate(self.hps)}
        if len(self.index) != len(self.hps):
            dup = sorted({hp.name for hp in self.hps if [h.name for h in self.hps].count(hp.name) > 1})
            raise InputDataError(f"space {name!r} has duplicate hyperparameter names {dup}")
        self.condition_of: dict[str, InCondition] = {}
        for cond in conditions:
            self._add_condition(cond)
        self.conditions = tuple(sorted(self.condition_of.values(), key=lambda c: self.index[c.child]))
        depth = {hp.name: self._depth(hp.name) for hp in self.hps}
        self._topological = tuple(sorted(self.hps, key=lambda hp: (depth[hp.name], self.index[hp.name])))
        self.default_vector = np.array([hp.to_unit(hp.default) for hp in self.hps], dtype=float)
        self.parents = frozenset(c.parent for c in self.conditions)

    def _add_condition(self, cond: Any) -> None:
        if not isinstance(cond, InCondition):
            raise InputDataError(f"space {self.name!r}: {cond!r} is not an InCondition/EqualsCondition")
        for role, hp_name in (("child", cond.child), ("parent", cond.parent)):
            if hp_name not in self.index:
                raise InputDataError(
                    f"space {self.name!r}: condition {role} {hp_name!r} is not a hyperparameter"
                )
        if cond.child in self.condition_of:
            raise InputDataError(
                f"space {self.name!r}: {cond.child!r} has more than one condition "
                "(only one parent is supported)"
            )
        parent = self.hps[self.index[cond.parent]]
        for value in cond.values:
            try:
                parent.validate(value)
            except InvalidConfigurationError as e:
                raise InputDataError(f"space {self.name!r}: condition on {cond.child!r}: {e}") from e
        self.condition_of[cond.child] = cond

    def _depth(self, name: str) -> int:
        seen = [name]
        while name in self.condition_of:
            name = self.condition_of[name].parent
            if name in seen:
                raise InputDataError(f"space {self.name!r}: conditions form a cycle through {seen}")
            seen.append(name)
        return len(seen) - 1

    def topological(self) -> tuple[Any, ...]:
        """The hyperparameters in an order where every parent comes before its children."""
        return self._topological

    def is_active(self, name: str, decided: Mapping[str, Any]) -> bool:
        """Whether ``name`` is active, given the values of active hyperparameters
        decided so far (parents come first in :meth:`topological`)."""
        cond = self.condition_of.get(name)
        return cond is None or (cond.parent in decided and cond.satisfied_by(decided[cond.parent]))

    def active(self, config: Mapping[str, Any]) -> set[str]:
        """The names of the hyperparameters active under ``config`` (conditions decided by the
        values given)."""
        decided: dict[str, Any] = {}
        active: set[str] = set()
        for hp in self._topological:
            if self.is_active(hp.name, decided):
                active.add(hp.name)
                if hp.name in config:
                    decided[hp.name] = config[hp.name]
        return active

    def unknown(self, name: Any) -> str:
        """The error message for a name the space does not hold, listing the valid names."""
        return f"space {self.name!r} has no hyperparameter {name!r}; valid names: {list(self.index)}"

    def normalize(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` checked and normalized: every active hyperparameter present and valid,
        inactive ones refused, in the space's order."""
        if not isinstance(config, Mapping):
            raise InvalidConfigurationError(
                f"a configuration of space {self.name!r} must be a mapping, got {type(config).__name__}"
            )
        for key in config:
            if key not in self.index:
                raise InvalidConfigurationError(self.unknown(key))
        out: dict[str, Any] = {}
        for hp in self._topological:
            if self.is_active(hp.name, out):
                if hp.name not in config:
                    raise InvalidConfigurationError(
                        f"space {self.name!r}: active hyperparameter {hp.name!r} has no value"
                    )
                out[hp.name] = hp.normalize(config[hp.name])
            elif hp.name in config:
                cond = self.condition_of[hp.name]
                raise InvalidConfigurationError(
                    f"space {self.name!r}: hyperparameter {hp.name!r} is inactive (active only when "
                    f"{cond.parent!r} is in {list(cond.values)!r}) but has the value {config[hp.name]!r}"
                )
        return self.ordered(out)

    def ordered(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` in the space's hyperparameter order (names not held left out)."""
        return {hp.name: values[hp.name] for hp in self.hps if hp.name in values}

    def complete(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Drop values that became inactive, give newly active ones their default."""
        out: dict[str, Any] = {}
        for hp in self._topological:
            if self.is_active(hp.name, out):
                out[hp.name] = values[hp.name] if hp.name in values else hp.default
        return self.ordered(out)

    def snap(self, U: np.ndarray) -> np.ndarray:
        """The encodings of the configurations that rows of ``U`` (n, D) in [0, 1] decode
        to: each active coordinate snapped to its value's code (``snap_unit``), each
        inactive one set to its default's code; parents first, so a child is active iff its
        parent is and the parent's decoded value satisfies the condition."""
        return self.snap_active(U)[0]

    def snap_active(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`snap` and the boolean (n, D) matrix of active coordinates."""
        X = np.array(U, dtype=float, ndmin=2)
        active = np.ones(X.shape, dtype=bool)
        for hp in self._topological:
            i = self.index[hp.name]
            cond = self.condition_of.get(hp.name)
            if cond is not None:
                p = self.index[cond.parent]
                parent = self.hps[p]
                codes, inverse = np.unique(X[:, p], return_inverse=True)
                ok = np.array([cond.satisfied_by(parent.from_unit(float(c))) for c in codes], dtype=bool)
                active[:, i] = active[:, p] & ok[inverse.reshape(-1)]
            X[:, i] = np.where(active[:, i], hp.snap_unit(X[:, i]), self.default_vector[i])
        return X, active
