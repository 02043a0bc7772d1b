"""The CASH space: the algorithm choice as root, each algorithm's space below it.

"K = A u Gamma_1 u ... u Gamma_m, where the first hyperparameter a in A is a new
hyperparameter representing the choice of the learning algorithm" (Levesque 2018, 5.3).
A CASH configuration is ``(algorithm, params)``.

Encoding, ``D = m + sum_i D_i``: ``x = [onehot(a) (m), x_1 (D_1), ..., x_m (D_m)]``; the
chosen algorithm's block is its space's encoding, every other block is the encoding of
that algorithm's default configuration (imputation, thesis 5.3.1). The one-hot follows
the thesis' remark that a categorical choice "would be more principled" than an integer
(5.5). ``slices[a]`` is algorithm ``a``'s block; ``active_mask`` marks the one-hot and the
active coordinates of the chosen block (for the conditional kernel, thesis 5.4.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.space.space import SearchSpace

if TYPE_CHECKING:
    from ConfigSpace import ConfigurationSpace

#: Name of the root hyperparameter in ConfigSpace form (the auto-sklearn convention).
ALGORITHM = "algorithm"


class CASHSpace:
    """Per-algorithm search spaces under a root algorithm choice (order is kept).

    Algorithm ``a``'s space is named ``a`` (renamed if needed), so that ConfigSpace
    round trips give equal CASH spaces.
    """

    def __init__(self, spaces: Mapping[str, SearchSpace]) -> None:
        items = dict(spaces)
        if not items:
            raise InputDataError("a CASH space needs at least one algorithm")
        for name, space in items.items():
            if not isinstance(name, str) or not name or ":" in name:
                raise InputDataError(f"algorithm name {name!r} must be a non-empty string without ':'")
            if not isinstance(space, SearchSpace):
                raise InputDataError(f"algorithm {name!r}: {type(space).__name__} is not a SearchSpace")
            if space.name != name:
                items[name] = replace(space, name=name)
        # Plain dicts (exposed read-only) keep the space picklable for worker processes.
        self._spaces = items
        self._algorithms = tuple(items)
        offsets = np.cumsum([len(self._algorithms)] + [len(s) for s in items.values()])
        bounds = zip(self._algorithms, offsets[:-1], offsets[1:])
        self._slices = {a: slice(int(lo), int(hi)) for a, lo, hi in bounds}
        self._defaults = {a: s.encode(s.default_configuration()) for a, s in items.items()}
        self.n_dims = int(offsets[-1])
        self._json: str | None = None  # to_json, made once: the space never changes

    # -- container protocol -------------------------------------------------------
    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithm names, in the space's order."""
        return self._algorithms

    @property
    def spaces(self) -> Mapping[str, SearchSpace]:
        """Each algorithm's search space, read-only."""
        return MappingProxyType(self._spaces)

    @property
    def slices(self) -> Mapping[str, slice]:
        """Each algorithm's block of the encoded vector."""
        return MappingProxyType(self._slices)

    def __len__(self) -> int:
        """The number of algorithms (see :attr:`n_dims` for the vector length)."""
        return len(self._algorithms)

    def __iter__(self) -> Iterator[str]:
        return iter(self._algorithms)

    def __contains__(self, algorithm: object) -> bool:
        return isinstance(algorithm, str) and algorithm in self._spaces

    def __getitem__(self, algorithm: str) -> SearchSpace:
        return self._spaces[self._check(algorithm)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CASHSpace):
            return NotImplemented
        return list(self._spaces.items()) == list(other._spaces.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CASHSpace({dict(self._spaces)!r})"

    def _check(self, algorithm: Any) -> str:
        if algorithm not in self:
            raise UnknownAlgorithmError(
                f"unknown algorithm {algorithm!r}; valid algorithms: {list(self._algorithms)}"
            )
        return algorithm

    def subset(self, names: Iterable[str]) -> CASHSpace:
        """The CASH space of ``names`` only, in the given order."""
        return CASHSpace({n: self[n] for n in names})

    # -- configurations -----------------------------------------------------------
    def validate(self, algorithm: str, params: Mapping[str, Any]) -> None:
        """:class:`UnknownAlgorithmError` or :class:`InvalidConfigurationError`."""
        self[algorithm].validate(params)

    def normalize(self, algorithm: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """``(algorithm, params)`` with ``params`` normalized by the algorithm's space."""
        return algorithm, self[algorithm].normalize(params)

    def sample(self, seed: Seed, n: int = 1) -> list[tuple[str, dict[str, Any]]]:
        """``n`` configurations: the algorithm uniformly, then its parameters."""
        rng = as_generator(seed)
        out = []
        for _ in range(n):
            algorithm = self._algorithms[int(rng.integers(len(self._algorithms)))]
            out.append((algorithm, self._spaces[algorithm].sample(rng)[0]))
        return out

    def sample_encoded(self, seed: Seed, n: int = 1) -> np.ndarray:
        """The encodings (n, :attr:`n_dims`) of ``n`` configurations drawn as :meth:`sample`
        draws them (algorithm uniformly, then its block by ``SearchSpace.sample_encoded``,
        the other blocks at their defaults), vectorized; ``decode`` gives each row's
        configuration. Equal in distribution to ``encode_many(sample(seed, n))``."""
        if n < 0:
            raise InputDataError(f"n must be >= 0, got {n}")
        rng = as_generator(seed)
        m = len(self._algorithms)
        chosen = rng.integers(m, size=n)
        X = np.tile(np.concatenate([np.zeros(m), *self._defaults.values()]), (n, 1))
        X[np.arange(n), chosen] = 1.0
        for k, a in enumerate(self._algorithms):
            rows = np.flatnonzero(chosen == k)
            if len(rows):
                X[rows, self._slices[a]] = self._spaces[a].sample_encoded(rng, len(rows))
        return X

    def default_configuration(self, algorithm: str | None = None) -> tuple[str, dict[str, Any]]:
        """The default of ``algorithm`` (the first algorithm when None)."""
        algorithm = self._algorithms[0] if algorithm is None else algorithm
        return algorithm, self[algorithm].default_configuration()

    def neighbours(
        self, algorithm: str, params: Mapping[str, Any], rng: Seed, n_per_numeric: int = 4
    ) -> list[tuple[str, dict[str, Any]]]:
        """One-exchange neighbours: the same algorithm with one parameter changed, and
        every other algorithm at its default (the root is a categorical, thesis 5.3.2)."""
        own = [(algorithm, p) for p in self[algorithm].neighbours(params, rng, n_per_numeric)]
        return own + [self.default_configuration(a) for a in self._algorithms if a != algorithm]

    def neighbours_encoded(
        self, x: Any, rng: Seed, n_per_numeric: int = 4, *, other_algorithms: bool = True
    ) -> np.ndarray:
        """:meth:`neighbours` in the encoding: the rows of the encoded configuration ``x``
        with one parameter of its algorithm changed (``SearchSpace.neighbours_encoded``),
        then (``other_algorithms``) every other algorithm at its default."""
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_dims,):
            raise InputDataError(f"a CASH vector must have shape ({self.n_dims},), got {x.shape}")
        return self.neighbours_encoded_many(x[None, :], rng, n_per_numeric, other_algorithms=other_algorithms)[0]

    def neighbours_encoded_many(
        self, X: Any, rng: Seed, n_per_numeric: int = 4, *, other_algorithms: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`neighbours_encoded` of every row of ``X`` (m, :attr:`n_dims`) in one pass:
        the rows of all neighbourhoods, ``X[0]``'s first, and the index (into ``X``) of the
        row each comes from. The same draws in the same order as calling
        :meth:`neighbours_encoded` on each row in turn (rows of different algorithms
        interleaved as they come); snapping is batched per algorithm
        (``SearchSpace.neighbours_from_draws``)."""
        gen = as_generator(rng)
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_dims:
            raise InputDataError(f"CASH vectors must have shape (m, {self.n_dims}), got {X.shape}")
        m = len(self._algorithms)
        chosen = np.argmax(X[:, :m], axis=1)
        groups = {k: np.flatnonzero(chosen == k) for k in np.unique(chosen)}
        active = {k: self._spaces[self._algorithms[k]].active_encoded(X[rows][:, self._slices[self._algorithms[k]]])
                  for k, rows in groups.items()}
        position = np.empty(len(X), dtype=np.intp)
        for rows in groups.values():
            position[rows] = np.arange(len(rows))
        draws: dict[int, list[dict[int, np.ndarray]]] = {k: [] for k in groups}
        for r in range(len(X)):  # the generator's draws in row order
            k = int(chosen[r])
            space, block = self._spaces[self._algorithms[k]], self._slices[self._algorithms[k]]
            draws[k].append(space.draw_neighbours(X[r, block], active[k][position[r]], gen, n_per_numeric))
        blocks, owners = [], []
        for k, rows in groups.items():
            a = self._algorithms[k]
            own, local = self._spaces[a].neighbours_from_draws(X[rows][:, self._slices[a]], active[k], draws[k],
                                                               n_per_numeric)
            full = X[rows[local]]
            full[:, self._slices[a]] = own
            blocks.append(full)
            owners.append(rows[local])
        if other_algorithms:
            defaults = self._default_rows()
            for r in range(len(X)):
                others = [j for j in range(m) if j != chosen[r]]
                blocks.append(defaults[others])
                owners.append(np.full(len(others), r))
        rows_all = np.vstack(blocks) if blocks else np.empty((0, self.n_dims))
        owner = np.concatenate(owners) if owners else np.empty(0, dtype=np.intp)
        order = np.argsort(owner, kind="stable")  # each row's own neighbours, then the defaults
        return rows_all[order], owner[order]

    def _default_rows(self) -> np.ndarray:
        """The encodings of every algorithm's default, in algorithm order (m, n_dims)."""
        return np.vstack([self.encode(*self.default_configuration(a)) for a in self._algorithms])

    # -- encoding -------------------------------------------------------------------
    def encode(self, algorithm: str, params: Mapping[str, Any]) -> np.ndarray:
        """The configuration as one vector: the algorithm one-hot, its block encoded, the other
        blocks at their defaults."""
        space = self[algorithm]
        x = np.zeros(self.n_dims)
        x[self._algorithms.index(algorithm)] = 1.0
        for a, block in self._slices.items():
            x[block] = space.encode(params) if a == algorithm else self._defaults[a]
        return x

    def encode_many(self, configs: Sequence[tuple[str, Mapping[str, Any]]]) -> np.ndarray:
        """:meth:`encode` of each configuration, as rows of an ``(n, n_dims)`` array."""
        rows = [self.encode(a, p) for a, p in configs]
        return np.array(rows, dtype=float).reshape(len(configs), self.n_dims)

    def active_mask(self, algorithm: str, params: Mapping[str, Any]) -> np.ndarray:
        """Which entries of :meth:`encode`'s vector are active: the one-hot and the algorithm's
        active hyperparameters."""
        mask = np.zeros(self.n_dims, dtype=bool)
        mask[: len(self._algorithms)] = True
        mask[self._slices[self._check(algorithm)]] = self[algorithm].active_mask(params)
        return mask

    def decode(self, vector: Any) -> tuple[str, dict[str, Any]]:
        """The algorithm with the largest one-hot coordinate (ties: the first), then
        its block decoded."""
        x = np.asarray(vector, dtype=float)
        if x.shape != (self.n_dims,) or not np.all(np.isfinite(x)):
            raise InputDataError(f"a CASH vector must be finite with shape ({self.n_dims},), got {x.shape}")
        algorithm = self._algorithms[int(np.argmax(x[: len(self._algorithms)]))]
        return algorithm, self._spaces[algorithm].decode(x[self._slices[algorithm]])

    # -- ConfigSpace and JSON -----------------------------------------------------
    def to_configspace(self) -> ConfigurationSpace:
        """The space as a ConfigSpace (root ``algorithm``, conditioned ``algorithm:hp`` names)."""
        from metabo.space import _cash_configspace

        return _cash_configspace.to_configspace(self)

    @classmethod
    def from_configspace(cls, cs: ConfigurationSpace) -> CASHSpace:
        """The CASH space a ConfigSpace of :meth:`to_configspace`'s form describes."""
        from metabo.space import _cash_configspace

        return _cash_configspace.from_configspace(cs)

    def to_json(self) -> str:
        """ConfigSpace's serialized dict of :meth:`to_configspace`, as JSON text (built on
        the first call, then kept)."""
        if self._json is None:
            from metabo.space import configspace_io

            self._json = configspace_io.dumps(self.to_configspace())
        return self._json

    @classmethod
    def from_json(cls, text: str) -> CASHSpace:
        """The CASH space of a serialized ConfigSpace (JSON text)."""
        from metabo.space import configspace_io

        return cls.from_configspace(configspace_io.loads(text))


def as_cash(space: SearchSpace | CASHSpace, name: str | None = None) -> CASHSpace:
    """``space`` itself if it is a CASH space, else the one-algorithm CASH space
    ``{name: space}`` (its configurations are ``(name, params)``); ``name`` defaults to
    the space's own name when that is a valid algorithm name, else ``"f"``."""
    if isinstance(space, CASHSpace):
        return space
    if isinstance(space, SearchSpace):
        if name is None:
            name = space.name if space.name and ":" not in space.name else "f"
        return CASHSpace({name: space})
    raise InputDataError(f"expected a SearchSpace or CASHSpace, got {type(space).__name__}")
