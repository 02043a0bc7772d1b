"""A search space: typed hyperparameters with conditions, encoded to the unit cube.

Notation: ``D = len(space)`` hyperparameters in the given order; a configuration is a
dict ``{name: value}`` holding exactly the active hyperparameters; ``x = encode(config)``
is a vector in [0, 1]^D where inactive hyperparameters are imputed with the encoding of
their default (Levesque 2018, 5.3.1, after Feurer et al. 2015); ``active_mask(config)``
is the boolean vector of active coordinates for the conditional kernel (thesis 5.4.1).
``neighbours`` is SMAC's one-exchange neighbourhood (thesis 5.3.2, eq. 5.8).

Each child has at most one condition; a child is active when its parent is active and
the parent's value satisfies the condition (thesis 5.3).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError
from metabo.space._graph import Graph
from metabo.space.conditions import InCondition
from metabo.space.hyperparameters import Float, Hyperparameter, Integer, neighbour_draws

if TYPE_CHECKING:
    from ConfigSpace import ConfigurationSpace


@dataclass(frozen=True)
class SearchSpace:
    """Hyperparameters (in encoding order) and the conditions between them."""

    name: str
    hyperparameters: tuple[Hyperparameter, ...]
    conditions: tuple[InCondition, ...] = ()
    _graph: Graph = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        hps, conds = tuple(self.hyperparameters), tuple(self.conditions)
        graph = Graph(self.name, hps, conds)
        object.__setattr__(self, "hyperparameters", hps)
        object.__setattr__(self, "conditions", graph.conditions)
        object.__setattr__(self, "_graph", graph)

    # -- container protocol -------------------------------------------------------
    def __len__(self) -> int:
        return len(self.hyperparameters)

    def __iter__(self) -> Iterator[Hyperparameter]:
        return iter(self.hyperparameters)

    def __contains__(self, name: object) -> bool:
        return name in self._graph.index

    def __getitem__(self, name: str) -> Hyperparameter:
        if name not in self._graph.index:
            raise KeyError(self._graph.unknown(name))
        return self.hyperparameters[self._graph.index[name]]

    @property
    def names(self) -> tuple[str, ...]:
        """The hyperparameter names, in the space's order."""
        return tuple(hp.name for hp in self.hyperparameters)

    # -- configurations -----------------------------------------------------------
    def active(self, config: Mapping[str, Any]) -> set[str]:
        """Names active under ``config``'s values (a partial config gives its roots)."""
        return self._graph.active(config)

    def validate(self, config: Mapping[str, Any]) -> None:
        """Raise :class:`InvalidConfigurationError` naming the first bad hyperparameter."""
        self.normalize(config)

    def normalize(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` validated, as plain Python values in hyperparameter order."""
        return self._graph.normalize(config)

    def sample(self, seed: Seed, n: int = 1) -> list[dict[str, Any]]:
        """``n`` configurations, uniform in each hyperparameter's unit space."""
        rng = as_generator(seed)
        out = []
        for _ in range(n):
            values: dict[str, Any] = {}
            for hp in self._graph.topological():
                if self._graph.is_active(hp.name, values):
                    values[hp.name] = hp.sample(rng)
            out.append(self._graph.ordered(values))
        return out

    def sample_encoded(self, seed: Seed, n: int = 1) -> np.ndarray:
        """The encodings (n, D) of ``n`` configurations drawn as :meth:`sample` draws them
        (uniform ``u`` per active hyperparameter, decoded), in one vectorized pass: equal in
        distribution to ``encode_many(sample(seed, n))``, not draw for draw; ``decode`` of
        a row gives its configuration."""
        if n < 0:
            raise InputDataError(f"n must be >= 0, got {n}")
        return self._graph.snap(as_generator(seed).random((n, len(self))))

    def default_configuration(self) -> dict[str, Any]:
        """Every active hyperparameter at its default."""
        values: dict[str, Any] = {}
        for hp in self._graph.topological():
            if self._graph.is_active(hp.name, values):
                values[hp.name] = hp.default
        return self._graph.ordered(values)

    # -- unit-cube encoding -------------------------------------------------------
    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        """``x`` in [0, 1]^D; inactive coordinates hold their default's encoding."""
        values = self.normalize(config)
        x = self._graph.default_vector.copy()
        for name, value in values.items():
            i = self._graph.index[name]
            x[i] = self.hyperparameters[i].to_unit(value)
        return x

    def encode_many(self, configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Stacked :meth:`encode`, shape ``(len(configs), D)``."""
        rows = [self.encode(c) for c in configs]
        return np.array(rows, dtype=float).reshape(len(configs), len(self))

    def active_mask(self, config: Mapping[str, Any]) -> np.ndarray:
        """Boolean vector, True where the hyperparameter is active in ``config``."""
        active = self.active(config)
        return np.array([hp.name in active for hp in self.hyperparameters], dtype=bool)

    def decode(self, vector: Any) -> dict[str, Any]:
        """The configuration of ``vector`` (active hyperparameters only); for a valid
        configuration, ``decode(encode(c)) == c`` up to float rounding."""
        x = np.asarray(vector, dtype=float)
        if x.shape != (len(self),):
            raise InputDataError(
                f"space {self.name!r} decodes vectors of shape ({len(self)},), got {x.shape}"
            )
        values: dict[str, Any] = {}
        for hp in self._graph.topological():
            if self._graph.is_active(hp.name, values):
                values[hp.name] = hp.from_unit(x[self._graph.index[hp.name]])
        return self._graph.ordered(values)

    # -- local search -------------------------------------------------------------
    def neighbours(
        self, config: Mapping[str, Any], rng: Seed, n_per_numeric: int = 4
    ) -> list[dict[str, Any]]:
        """One-exchange neighbours: each changes one active hyperparameter; children
        that become active take their defaults, those that become inactive are dropped."""
        gen = as_generator(rng)
        centre = self.normalize(config)
        out = []
        for name, value in centre.items():
            for new in self[name].neighbours(value, gen, n=n_per_numeric):
                out.append(self._graph.complete({**centre, name: new}))
        return out

    def neighbours_encoded(self, x: Any, rng: Seed, n_per_numeric: int = 4) -> np.ndarray:
        """:meth:`neighbours` in the encoding: rows (k, D) for the encoding ``x`` of a
        configuration (from :meth:`encode` or :meth:`sample_encoded`), each changing one
        active coordinate to another value's code (``neighbour_codes``); a changed parent is
        followed by its children (inactive coordinates already hold their defaults' codes,
        so newly active children take their defaults)."""
        x = np.asarray(x, dtype=float)
        if x.shape != (len(self),):
            raise InputDataError(f"space {self.name!r} takes encodings of shape ({len(self)},), got {x.shape}")
        return self.neighbours_encoded_many(x[None, :], rng, n_per_numeric)[0]

    def neighbours_encoded_many(self, X: Any, rng: Seed, n_per_numeric: int = 4) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`neighbours_encoded` of every row of ``X`` (m, D) in one pass: the rows of
        all neighbourhoods, row ``X[0]``'s first, and the index (into ``X``) of the row each
        comes from. Equal to calling :meth:`neighbours_encoded` on each row in turn with the
        same generator (the same draws in the same order); the codes are snapped and the
        children completed for all rows at once."""
        gen = as_generator(rng)
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self):
            raise InputDataError(f"space {self.name!r} takes encodings of shape (m, {len(self)}), got {X.shape}")
        active = self.active_encoded(X)
        draws = [self.draw_neighbours(X[k], active[k], gen, n_per_numeric) for k in range(len(X))]
        return self.neighbours_from_draws(X, active, draws, n_per_numeric)

    def active_encoded(self, X: np.ndarray) -> np.ndarray:
        """The boolean (m, D) matrix of the active coordinates of encoded rows ``X``."""
        return self._graph.snap_active(np.asarray(X, dtype=float))[1]

    def draw_neighbours(self, x: np.ndarray, active: np.ndarray, rng: np.random.Generator,
                        n_per_numeric: int) -> dict[int, np.ndarray]:
        """The random part of one row's neighbourhood: for each active numeric coordinate
        ``i``, ``neighbour_draws(x[i], rng, n)`` (one ``normal`` call each, in coordinate
        order, as ``neighbour_codes`` draws them)."""
        return {i: neighbour_draws(float(x[i]), rng, n_per_numeric)
                for i, hp in enumerate(self.hyperparameters) if active[i] and isinstance(hp, (Float, Integer))}

    def neighbours_from_draws(self, X: np.ndarray, active: np.ndarray, draws: Sequence[Mapping[int, np.ndarray]],
                              n_per_numeric: int) -> tuple[np.ndarray, np.ndarray]:
        """The neighbourhoods of the rows of ``X`` from their :meth:`draw_neighbours`
        (:meth:`neighbours_encoded_many`)."""
        snapped: dict[tuple[int, int], list[float]] = {}
        for i, hp in enumerate(self.hyperparameters):
            keys = [k for k in range(len(X)) if i in draws[k]]
            if keys:
                codes = hp.snap_unit(np.vstack([draws[k][i] for k in keys])).tolist()
                snapped.update({(k, i): c for k, c in zip(keys, codes)})
        owners, columns, values = [], [], []
        for k in range(len(X)):
            for i, hp in enumerate(self.hyperparameters):
                if not active[k, i]:
                    continue
                if (k, i) in snapped:
                    assert isinstance(hp, (Float, Integer))  # draws hold numeric coordinates only
                    codes = hp.codes_from_snapped(float(X[k, i]), snapped[k, i], n=n_per_numeric)
                else:
                    codes = hp.neighbour_codes(float(X[k, i]), None, n=n_per_numeric)
                if len(codes):
                    owners.append(np.full(len(codes), k))
                    columns.append(np.full(len(codes), i))
                    values.append(codes)
        if not owners:
            return np.empty((0, len(self))), np.empty(0, dtype=np.intp)
        owner, column = np.concatenate(owners), np.concatenate(columns)
        rows = X[owner]
        rows[np.arange(len(rows)), column] = np.concatenate(values)
        parents = np.array([hp.name in self._graph.parents for hp in self.hyperparameters], dtype=bool)
        changed_parent = parents[column]
        if changed_parent.any():
            rows[changed_parent] = self._graph.snap(rows[changed_parent])
        return rows, owner

    # -- ConfigSpace and JSON -----------------------------------------------------
    def to_configspace(self) -> ConfigurationSpace:
        """The space as a ConfigSpace: the same hyperparameters and conditions."""
        from metabo.space import configspace_io

        return configspace_io.to_configspace(self)

    @classmethod
    def from_configspace(cls, cs: ConfigurationSpace) -> SearchSpace:
        """The search space a ConfigSpace describes (no forbidden clauses)."""
        from metabo.space import configspace_io

        return configspace_io.from_configspace(cs)

    def to_json(self) -> str:
        """ConfigSpace's serialized dict of :meth:`to_configspace`, as JSON text."""
        from metabo.space import configspace_io

        return configspace_io.dumps(self.to_configspace())

    @classmethod
    def from_json(cls, text: str) -> SearchSpace:
        """The search space of a serialized ConfigSpace (JSON text)."""
        from metabo.space import configspace_io

        return cls.from_configspace(configspace_io.loads(text))
