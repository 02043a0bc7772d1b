"""A CASH space in ConfigSpace form, the auto-sklearn convention.

A root Categorical ``"algorithm"``; algorithm ``a``'s hyperparameter ``h`` is named
``"a:h"``. A hyperparameter without a condition inside its own space gets
``EqualsCondition("a:h", "algorithm", a)``; one with a condition keeps it (renamed),
since ConfigSpace activates a child only when its parent is active.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, cast

import ConfigSpace as CS

from metabo.exceptions import InputDataError
from metabo.space.cash import ALGORITHM
from metabo.space.conditions import InCondition
from metabo.space.configspace_io import (
    check_no_forbiddens,
    cond_from_cs,
    cond_to_cs,
    hp_from_cs,
    hp_to_cs,
    ordered_hps,
)
from metabo.space.space import SearchSpace
from metabo.space.values import plain

if TYPE_CHECKING:
    from metabo.space.cash import CASHSpace


def to_configspace(cash: CASHSpace) -> CS.ConfigurationSpace:
    """``cash`` as a ConfigSpace: a categorical root ``algorithm``, each algorithm's
    hyperparameters prefixed ``algorithm:`` and conditioned on it."""
    cs = CS.ConfigurationSpace(name="cash")
    algorithms = list(cash.algorithms)
    root = CS.CategoricalHyperparameter(ALGORITHM, algorithms, default_value=algorithms[0])
    hyperparameters: list[Any] = [root]
    conditions: list[Any] = []
    for algorithm, space in cash.spaces.items():
        named = {
            hp.name: hp_to_cs(hp, f"{algorithm}:{hp.name}", i)
            for i, hp in enumerate(space.hyperparameters)
        }
        hyperparameters += named.values()
        inner = {c.child: c for c in space.conditions}
        conditions += [
            cond_to_cs(inner[name], named[name], named[inner[name].parent])
            if name in inner
            else CS.EqualsCondition(named[name], root, algorithm)
            for name in named
        ]
    cs.add(hyperparameters, conditions)  # one add: ConfigSpace checks the whole space once per call
    return cs


def _split(name: str, algorithms: set[str]) -> tuple[str, str]:
    algorithm, sep, hp = name.partition(":")
    if not sep or algorithm not in algorithms or not hp:
        raise InputDataError(
            f"ConfigSpace hyperparameter {name!r} is not named '<algorithm>:<hyperparameter>' "
            f"with an algorithm among {sorted(algorithms)}"
        )
    return algorithm, hp


def _is_root_condition(cs_cond: Any, algorithm: str) -> bool:
    if cs_cond.parent.name != ALGORITHM:
        return False
    kind = type(cs_cond)
    values = [cs_cond.value] if kind is CS.EqualsCondition else list(getattr(cs_cond, "values", []))
    if kind not in (CS.EqualsCondition, CS.InCondition) or [plain(v) for v in values] != [algorithm]:
        raise InputDataError(
            f"ConfigSpace condition {cs_cond}: a hyperparameter of {algorithm!r} must be active "
            f"exactly when {ALGORITHM!r} == {algorithm!r}"
        )
    return True


def from_configspace(cs: CS.ConfigurationSpace) -> CASHSpace:
    """The CASH space a ConfigSpace of :func:`to_configspace`'s form describes; raises
    InputDataError for any other form."""
    from metabo.space.cash import CASHSpace

    check_no_forbiddens(cs)
    if ALGORITHM not in cs or type(cs[ALGORITHM]) is not CS.CategoricalHyperparameter:
        raise InputDataError(f"a CASH ConfigSpace needs a categorical root hyperparameter {ALGORITHM!r}")
    algorithms = [plain(c) for c in cast(CS.CategoricalHyperparameter, cs[ALGORITHM]).choices]
    known = set(algorithms)
    hps: dict[str, list[Any]] = defaultdict(list)
    for cs_hp in ordered_hps([h for h in cs.values() if h.name != ALGORITHM]):
        hps[_split(cs_hp.name, known)[0]].append(cs_hp)
    conditions: dict[str, list[InCondition]] = defaultdict(list)
    rooted: set[str] = set()
    for cs_cond in cs.conditions:
        if not hasattr(cs_cond, "parent"):
            raise InputDataError(f"ConfigSpace condition {cs_cond} is not supported (conjunction)")
        algorithm, _ = _split(cs_cond.child.name, known)
        if _is_root_condition(cs_cond, algorithm):
            rooted.add(cs_cond.child.name)
            continue

        def rename(name: str, algorithm: str = algorithm, cs_cond: Any = cs_cond) -> str:
            owner, hp = _split(name, known)
            if owner != algorithm:
                raise InputDataError(f"ConfigSpace condition {cs_cond} links two algorithms")
            return hp

        conditions[algorithm].append(cond_from_cs(cs_cond, rename))
    conditioned = rooted | {f"{a}:{c.child}" for a, cs_ in conditions.items() for c in cs_}
    orphans = [h.name for hs in hps.values() for h in hs if h.name not in conditioned]
    if orphans:
        raise InputDataError(f"ConfigSpace hyperparameters {orphans} are not conditioned on {ALGORITHM!r}")
    return CASHSpace(
        {
            a: SearchSpace(a, tuple(hp_from_cs(h, _split(h.name, known)[1]) for h in hps[a]), tuple(conditions[a]))
            for a in algorithms
        }
    )
