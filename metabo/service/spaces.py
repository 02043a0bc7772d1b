"""The search space of a new study: the project's CASH space, a subset of it, or a
ConfigSpace JSON read by the project's conversion (:mod:`metabo.space`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from metabo.exceptions import InputDataError
from metabo.space.cash import ALGORITHM, CASHSpace, as_cash
from metabo.space.space import SearchSpace

#: The top-level keys of ConfigSpace's serialized JSON.
CONFIGSPACE_KEYS = frozenset({"name", "hyperparameters", "conditions", "forbiddens", "python_module_version",
                              "format_version", "json_format_version"})


def resolve_space(algorithms: Sequence[str] | None = None, configspace: Mapping[str, Any] | None = None) -> CASHSpace:
    """The CASH space of ``algorithms`` (all registered ones when both are None), or the one
    ``configspace`` describes: a CASH space (root categorical ``algorithm``, hyperparameters
    ``<algorithm>:<name>``, as ``metabo space export`` writes) or a single algorithm's space
    (wrapped as a one-algorithm CASH space named after it). A configspace of unknown keys,
    without a hyperparameter, or of one algorithm without its name is refused."""
    if algorithms is not None and configspace is not None:
        raise InputDataError("give algorithms or a configspace, not both")
    if configspace is None:
        from metabo.space.algorithms import default_cash_space

        return default_cash_space(algorithms)
    from metabo.space import configspace_io

    unknown = sorted(set(configspace) - CONFIGSPACE_KEYS)
    if unknown:
        raise InputDataError(f"not a serialized ConfigSpace: unknown keys {unknown}; it has "
                             f"{sorted(CONFIGSPACE_KEYS)} (as `metabo space export` writes)")
    try:
        cs = configspace_io.loads(json.dumps(dict(configspace), allow_nan=False))
    except (AttributeError, ValueError) as e:  # loads wraps what ConfigSpace itself raises
        raise InputDataError(f"not a serialized ConfigSpace: {e}") from e
    if not len(cs):
        raise InputDataError("the configspace has no hyperparameter: there is nothing to tune; send its "
                             "'hyperparameters' (or leave configspace out for the project's space)")
    if ALGORITHM in cs:
        return CASHSpace.from_configspace(cs)
    if not cs.name:
        raise InputDataError("a single algorithm's configspace needs its 'name': the algorithm the trials "
                             "are of")
    return as_cash(SearchSpace.from_configspace(cs))
