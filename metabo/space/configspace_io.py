"""Conversion between metabo search spaces and ConfigSpace 1.x (the SMAC/auto-sklearn format).

Supported: UniformFloat, UniformInteger, Categorical, Constant (UnParametrized included)
hyperparameters; EqualsCondition and InCondition. Categorical weights are dropped with a
warning (the set of configurations is unchanged). Anything else (normal/beta/ordinal
hyperparameters, other conditions, conjunctions, forbidden clauses) raises
:class:`InputDataError`.

ConfigSpace reorders hyperparameters (parents first, then by name), so our order is
kept in each ConfigSpace hyperparameter's ``meta[ORDER_KEY]``; a space without it keeps
ConfigSpace's order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Hashable
from typing import Any

import ConfigSpace as CS

from metabo.exceptions import InputDataError
from metabo.space.conditions import EqualsCondition, InCondition
from metabo.space.hyperparameters import Categorical, Constant, Float, Hyperparameter, Integer
from metabo.space.space import SearchSpace
from metabo.space.values import plain

logger = logging.getLogger(__name__)

ORDER_KEY = "metabo_index"


def hp_to_cs(hp: Hyperparameter, name: str, index: int) -> Any:
    """Our hyperparameter as a ConfigSpace one named ``name``."""
    meta: dict[Hashable, Any] = {ORDER_KEY: index}
    if isinstance(hp, Float):
        return CS.UniformFloatHyperparameter(
            name, hp.low, hp.high, default_value=hp.default, log=hp.log, meta=meta
        )
    if isinstance(hp, Integer):
        return CS.UniformIntegerHyperparameter(
            name, hp.low, hp.high, default_value=hp.default, log=hp.log, meta=meta
        )
    if isinstance(hp, Categorical):
        return CS.CategoricalHyperparameter(name, list(hp.choices), default_value=hp.default, meta=meta)
    return CS.Constant(name, hp.value, meta=meta)


def hp_from_cs(cs_hp: Any, name: str) -> Hyperparameter:
    """A ConfigSpace hyperparameter as ours, named ``name``."""
    kind = type(cs_hp)
    if kind is CS.UniformFloatHyperparameter:
        return Float(name, float(cs_hp.lower), float(cs_hp.upper), log=bool(cs_hp.log),
                     default=float(cs_hp.default_value))
    if kind is CS.UniformIntegerHyperparameter:
        return Integer(name, int(cs_hp.lower), int(cs_hp.upper), log=bool(cs_hp.log),
                       default=int(cs_hp.default_value))
    if kind is CS.CategoricalHyperparameter:
        if cs_hp.weights is not None:
            logger.warning(
                "categorical %r: ConfigSpace weights %s dropped (uniform sampling)", name, cs_hp.weights
            )
        return Categorical(name, tuple(plain(c) for c in cs_hp.choices), default=plain(cs_hp.default_value))
    if isinstance(cs_hp, CS.Constant):
        return Constant(name, plain(cs_hp.value))
    raise InputDataError(f"hyperparameter {name!r}: ConfigSpace type {kind.__name__} is not supported")


def cond_to_cs(cond: InCondition, child: Any, parent: Any) -> Any:
    """``cond`` as a ConfigSpace condition between the ConfigSpace hyperparameters ``child`` and
    ``parent``."""
    if isinstance(cond, EqualsCondition):
        return CS.EqualsCondition(child, parent, cond.value)
    return CS.InCondition(child, parent, list(cond.values))


def cond_from_cs(cs_cond: Any, rename: Callable[[str], str]) -> InCondition:
    """A ConfigSpace condition as ours, hyperparameter names passed through ``rename``."""
    kind = type(cs_cond)
    if kind is CS.EqualsCondition:
        child, parent = rename(cs_cond.child.name), rename(cs_cond.parent.name)
        return EqualsCondition(child, parent, plain(cs_cond.value))
    if kind is CS.InCondition:
        values = tuple(plain(v) for v in cs_cond.values)
        return InCondition(rename(cs_cond.child.name), rename(cs_cond.parent.name), values)
    raise InputDataError(f"ConfigSpace condition {cs_cond} ({kind.__name__}) is not supported")


def ordered_hps(cs_hps: list[Any]) -> list[Any]:
    """ConfigSpace hyperparameters in our order when every one records it."""
    if all(isinstance(h.meta, dict) and isinstance(h.meta.get(ORDER_KEY), int) for h in cs_hps):
        return sorted(cs_hps, key=lambda h: h.meta[ORDER_KEY])
    return cs_hps


def check_no_forbiddens(cs: CS.ConfigurationSpace) -> None:
    """Raise InputDataError if ``cs`` has forbidden clauses, which the project's spaces cannot express."""
    if cs.forbidden_clauses:
        raise InputDataError(f"ConfigSpace {cs.name!r}: forbidden clauses are not supported")


def to_configspace(space: SearchSpace) -> CS.ConfigurationSpace:
    """``space`` as a ConfigSpace: the same hyperparameters and conditions."""
    cs = CS.ConfigurationSpace(name=space.name)
    cs_hps = {hp.name: hp_to_cs(hp, hp.name, i) for i, hp in enumerate(space.hyperparameters)}
    cs.add(list(cs_hps.values()))
    cs.add([cond_to_cs(c, cs_hps[c.child], cs_hps[c.parent]) for c in space.conditions])
    return cs


def from_configspace(cs: CS.ConfigurationSpace) -> SearchSpace:
    """The search space a ConfigSpace describes (no forbidden clauses)."""
    check_no_forbiddens(cs)
    hps = [hp_from_cs(h, h.name) for h in ordered_hps(list(cs.values()))]
    conditions = [cond_from_cs(c, str) for c in cs.conditions]
    return SearchSpace(cs.name or "space", tuple(hps), tuple(conditions))


def dumps(cs: CS.ConfigurationSpace) -> str:
    """ConfigSpace's serialized dict (format 0.4) as JSON text."""
    return json.dumps(cs.to_serialized_dict())


def loads(text: str) -> CS.ConfigurationSpace:
    """The ConfigSpace serialized in the JSON ``text``; InputDataError if it is not one."""
    try:
        return CS.ConfigurationSpace.from_serialized_dict(json.loads(text))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise InputDataError(f"not a serialized ConfigSpace: {e}") from e
