"""A CASH space inferred from recorded configurations, for meta-datasets whose stored
parameters are not the project's scalar hyperparameters (PMF's list-valued pipeline
vectors, :mod:`metabo.metadatasets.deeppipe`).

Notation: algorithm ``a`` with recorded configurations ``P_a``; a stored parameter is a
JSON scalar or a list of numbers (a block of an encoded pipeline vector). Each stored
configuration ``p`` maps to a *flat* configuration ``f = flatten(a, p)`` of scalar
hyperparameters, and back, exactly (``unflatten(a, flatten(a, p)) == p``, same types, so
the same :func:`metabo.kb.canonical.config_id`):

- a scalar parameter keeps its name: a :class:`Categorical` over its sorted observed values
  when it is not numeric or takes at most ``max_categories`` values, else a :class:`Float`
  (:class:`Integer` for ints) over ``[min, max]`` of the observed values; a :class:`Constant`
  when it never varies;
- a list parameter ``v`` of one length ``L`` in every configuration becomes coordinates
  ``v_0 .. v_{L-1}``; when its length varies, a categorical scalar ``s`` whose value
  determines the length (the *selector*: PMF's ``preprocessor`` selects the block, hence
  the length of ``x_preprocessor``) gives each of its values ``c`` coordinates of their own,
  ``v_<c>_<i>``, active only when ``s == c`` (:class:`InCondition`): different blocks are
  different coordinates of the pipeline vector, never the same one;
- a coordinate ``j`` that takes one value in every configuration where it is active is kept
  in the layout as that fixed value (no search dimension); any other is a :class:`Float`
  over its observed ``[lo_j, hi_j]`` with default ``lo_j``; ints come back as ints.

Algorithm names: a CASH algorithm name cannot hold ``:`` (the ConfigSpace form's separator),
so stored ``pmf:estimator-0`` is ``pmf.estimator-0`` in :attr:`InferredSpace.space`
(every ``:`` replaced by ``.``; a clash is an error). :meth:`InferredSpace.to_flat` and
:meth:`InferredSpace.to_stored` map whole configurations ``(algorithm, params)``.

Encoding (:meth:`CASHSpace.encode`): for an active coordinate ``e_j = (v_j - lo_j) /
(hi_j - lo_j)``, the pipeline vector's entry min-max scaled over the recorded
configurations; an inactive coordinate (the other selector value's block) encodes as 0,
its default; fixed coordinates are left out, as they carry nothing a GP could use; a
selector ``s`` with ``n`` values encodes as ``(index + 0.5) / n``. So the encoding of a
configuration is its pipeline vector up to this per-coordinate affine scaling and the
dropped constant entries: the same inputs, up to the lengthscales, as the paper's base GPs
on the vectors themselves.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.past import PastRuns, TaskAlgorithmRuns
from metabo.space.cash import CASHSpace
from metabo.space.conditions import InCondition
from metabo.space.hyperparameters import Categorical, Constant, Float, Hyperparameter, Integer
from metabo.space.space import SearchSpace

#: A numeric scalar parameter with at most this many observed values is categorical.
MAX_CATEGORIES = 10


@dataclass(frozen=True)
class _Coordinate:
    """One entry of a list parameter: its flat name, or None and the fixed value."""

    name: str | None
    fixed: Any
    is_int: bool


@dataclass(frozen=True)
class _ListLayout:
    """A list parameter: its selector (None: one length) and its coordinates per selector value."""

    selector: str | None
    blocks: Mapping[Any, tuple[_Coordinate, ...]]  # selector value (None without one) -> coordinates


@dataclass(frozen=True)
class _Layout:
    """How one algorithm's stored parameters map to flat hyperparameters."""

    scalars: tuple[str, ...]
    lists: Mapping[str, _ListLayout]


def _key(value: Any) -> tuple[str, Any]:
    """A type-strict dictionary key for a JSON scalar (1, 1.0 and True differ)."""
    return type(value).__name__, value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class InferredSpace:
    """A :class:`CASHSpace` inferred from recorded configurations, with the exact map
    between stored and flat parameters (module docstring).

    Attributes:
        space: the CASH space of the flat configurations (hand it to any strategy).
    """

    def __init__(self, space: CASHSpace, layouts: Mapping[str, _Layout], stored_names: Mapping[str, str]) -> None:
        self.space = space
        self._layouts = dict(layouts)  # by space name
        self._stored = dict(stored_names)  # space name -> stored name
        self._names = {v: k for k, v in self._stored.items()}  # stored name -> space name

    def __repr__(self) -> str:
        return f"InferredSpace({len(self.space)} algorithms, {self.space.n_dims} encoded dimensions)"

    @classmethod
    def from_configurations(cls, configurations: Iterable[tuple[str, Mapping[str, Any]]], *,
                            max_categories: int = MAX_CATEGORIES) -> InferredSpace:
        """The space of ``(algorithm, stored params)`` pairs (algorithms in sorted order)."""
        by_alg: dict[str, list[Mapping[str, Any]]] = {}
        for algorithm, params in configurations:
            by_alg.setdefault(str(algorithm), []).append(params)
        if not by_alg:
            raise InputDataError("inferring a space needs at least one recorded configuration")
        spaces, layouts = {}, {}
        stored: dict[str, str] = {}
        for algorithm in sorted(by_alg):
            name = algorithm.replace(":", ".")
            if name in stored:
                raise InputDataError(f"algorithms {stored[name]!r} and {algorithm!r} both become {name!r}")
            stored[name] = algorithm
            spaces[name], layouts[name] = _infer(name, by_alg[algorithm], max_categories)
        return cls(CASHSpace(spaces), layouts, stored)

    def space_name(self, stored_algorithm: str) -> str:
        """The name in :attr:`space` of a stored algorithm."""
        if stored_algorithm not in self._names:
            raise UnknownAlgorithmError(f"unknown algorithm {stored_algorithm!r}; valid: {sorted(self._names)}")
        return self._names[stored_algorithm]

    def stored_name(self, algorithm: str) -> str:
        """The stored name of an algorithm of :attr:`space`."""
        if algorithm not in self._stored:
            raise UnknownAlgorithmError(f"unknown algorithm {algorithm!r}; valid: {sorted(self._stored)}")
        return self._stored[algorithm]

    def _layout(self, algorithm: str) -> _Layout:
        self.stored_name(algorithm)  # UnknownAlgorithmError naming the valid ones
        return self._layouts[algorithm]

    def to_flat(self, algorithm: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The configuration of :attr:`space` of a stored configuration."""
        name = self.space_name(algorithm)
        return name, self.flatten(name, params)

    def to_stored(self, algorithm: str, flat: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The stored configuration of a configuration of :attr:`space` (inverse of :meth:`to_flat`)."""
        return self.stored_name(algorithm), self.unflatten(algorithm, flat)

    def flatten(self, algorithm: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The flat parameters (normalized in :attr:`space`) of stored ``params`` of the
        algorithm named ``algorithm`` in :attr:`space`."""
        layout = self._layout(algorithm)
        expected = set(layout.scalars) | set(layout.lists)
        if set(params) != expected:
            raise InvalidConfigurationError(f"{algorithm}: stored parameters {sorted(params)} are not "
                                            f"the inferred ones {sorted(expected)}")
        flat = {name: params[name] for name in layout.scalars}
        for name, lst in layout.lists.items():
            coords = _block(algorithm, name, lst, params)
            values = params[name]
            if not isinstance(values, (list, tuple)) or len(values) != len(coords):
                raise InvalidConfigurationError(f"{algorithm}: {name} must be a list of {len(coords)} numbers, "
                                                f"got {values!r}")
            for c, v in zip(coords, values):
                if c.name is not None:
                    flat[c.name] = v
                elif v != c.fixed:
                    raise InvalidConfigurationError(f"{algorithm}: {name} holds {v!r} where every recorded "
                                                    f"configuration holds {c.fixed!r}")
        return self.space.normalize(algorithm, flat)[1]

    def unflatten(self, algorithm: str, flat: Mapping[str, Any]) -> dict[str, Any]:
        """The stored parameters of flat parameters (the inverse of :meth:`flatten`)."""
        layout = self._layout(algorithm)
        flat = self.space.normalize(algorithm, flat)[1]
        out: dict[str, Any] = {name: flat[name] for name in layout.scalars}
        for name, lst in layout.lists.items():
            coords = _block(algorithm, name, lst, flat)
            out[name] = [c.fixed if c.name is None else (int(flat[c.name]) if c.is_int else float(flat[c.name]))
                         for c in coords]
        return {k: out[k] for k in sorted(out)}

    def flatten_past(self, past: PastRuns) -> PastRuns:
        """``past`` in :attr:`space`: algorithms renamed, parameters flat (same stored config ids,
        values and meta-features); groups of algorithms outside the space are left out."""
        groups = {}
        for (task, algorithm), runs in past.groups.items():
            if algorithm in self._names:
                name = self._names[algorithm]
                params = tuple(self.flatten(name, p) for p in runs.params)
                groups[(task, name)] = TaskAlgorithmRuns(runs.config_ids, params, runs.values)
        return PastRuns(past.metric, groups, past.meta_features)


def _block(algorithm: str, name: str, lst: _ListLayout, params: Mapping[str, Any]) -> tuple[_Coordinate, ...]:
    sel = None if lst.selector is None else _key(params[lst.selector])
    if sel not in lst.blocks:
        assert lst.selector is not None  # without one, _infer stores the one block under None
        raise InvalidConfigurationError(
            f"{algorithm}: no recorded {name} for {lst.selector} = {params[lst.selector]!r}")
    return lst.blocks[sel]


def _scalar(name: str, values: list[Any], max_categories: int) -> Hyperparameter:
    distinct = sorted({_key(v): v for v in values}.values(), key=lambda v: (type(v).__name__, v))
    if len(distinct) == 1:
        return Constant(name, distinct[0])
    if not all(_is_number(v) for v in values) or len(distinct) <= max_categories:
        return Categorical(name, tuple(distinct))
    if all(isinstance(v, int) for v in values):
        return Integer(name, min(values), max(values), default=min(values))
    return Float(name, float(min(values)), float(max(values)), default=float(min(values)))


def _infer(algorithm: str, configs: list[Mapping[str, Any]], max_categories: int) -> tuple[SearchSpace, _Layout]:
    names = set(configs[0])
    if any(set(p) != names for p in configs):
        raise InputDataError(f"{algorithm}: the recorded configurations do not all have the same parameters "
                             "(conditional scalar parameters are not inferred)")
    scalars = sorted(n for n in names if not isinstance(configs[0][n], (list, tuple)))
    lists = sorted(names - set(scalars))
    hps: list[Hyperparameter] = [_scalar(n, [p[n] for p in configs], max_categories) for n in scalars]
    categorical = [hp.name for hp in hps if isinstance(hp, Categorical)]
    conditions: list[InCondition] = []
    layouts: dict[str, _ListLayout] = {}
    taken = set(scalars)
    for name in lists:
        if any(not isinstance(p[name], (list, tuple)) or not all(_is_number(v) for v in p[name]) for p in configs):
            raise InputDataError(f"{algorithm}: parameter {name!r} must be a list of numbers in every configuration")
        lengths = {len(p[name]) for p in configs}
        selector = None
        if len(lengths) > 1:
            selector = next((s for s in categorical if len({(_key(p[s]), len(p[name])) for p in configs})
                             == len({_key(p[s]) for p in configs})), None)
            if selector is None:
                raise InputDataError(f"{algorithm}: the length of {name!r} varies and no categorical parameter "
                                     "determines it")
        groups: dict[Any, list[Mapping[str, Any]]] = {}
        for p in configs:
            groups.setdefault(None if selector is None else _key(p[selector]), []).append(p)
        blocks = {}
        for sel, members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
            coords = []
            for i in range(len(members[0][name])):
                col = [p[name][i] for p in members]
                is_int = all(isinstance(v, int) for v in col)
                if len({float(v) for v in col}) == 1 and len({type(v) for v in col}) == 1:
                    coords.append(_Coordinate(None, col[0], is_int))
                    continue
                flat = f"{name}_{i}" if selector is None else f"{name}_{sel[1]}_{i}"
                if flat in taken:
                    raise InputDataError(f"{algorithm}: flat name {flat!r} clashes with another parameter")
                taken.add(flat)
                lo, hi = float(min(col)), float(max(col))
                if not (math.isfinite(lo) and math.isfinite(hi)):
                    raise InputDataError(f"{algorithm}: {name}[{i}] holds non-finite values")
                hps.append(Float(flat, lo, hi, default=lo))
                if selector is not None:
                    conditions.append(InCondition(flat, selector, (sel[1],)))
                coords.append(_Coordinate(flat, None, is_int))
            blocks[sel] = tuple(coords)
        layouts[name] = _ListLayout(selector, blocks)
    return SearchSpace(algorithm, tuple(hps), tuple(conditions)), _Layout(tuple(scalars), layouts)


__all__ = ["MAX_CATEGORIES", "InferredSpace"]
