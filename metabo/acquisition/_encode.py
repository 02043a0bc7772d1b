"""Batch encoding of many CASH configurations, column by column.

Gives the same matrix as ``CASHSpace.encode_many`` for valid configurations (those from
``sample``, ``neighbours`` or ``normalize``), without validating each one again: rows start
as the template ``[0 (m), enc(default_1), ..., enc(default_m)]`` (inactive coordinates hold
the default's encoding, thesis 5.3.1), then each algorithm's rows get their one-hot and,
column by column, ``to_unit`` of the values they hold. Each distinct value is encoded once
per encoder and memoized (neighbours share all but one value with their centre), and every
number still comes from the hyperparameter's own ``to_unit``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from metabo.space.cash import CASHSpace

_MISSING = object()


class BatchEncoder:
    """``encode(configs) -> (n, D)``, equal to ``space.encode_many(configs)``."""

    def __init__(self, space: CASHSpace) -> None:
        self.space = space
        self._column = {a: i for i, a in enumerate(space.algorithms)}
        blocks = [np.zeros(len(space.algorithms))]
        for a in space.algorithms:
            sub = space[a]
            blocks.append(sub.encode(sub.default_configuration()))
        self._template = np.concatenate(blocks)
        # per algorithm and column: (type(value), value) -> to_unit(value)
        self._memo = {a: [{} for _ in space[a].hyperparameters] for a in space.algorithms}

    def encode(self, configs: Sequence[tuple[str, Mapping[str, Any]]]) -> np.ndarray:
        X = np.tile(self._template, (len(configs), 1))
        groups: dict[str, list[int]] = {}
        for r, (a, _) in enumerate(configs):
            groups.setdefault(a, []).append(r)
        for a, rows in groups.items():
            X[rows, self._column[a]] = 1.0
            start = self.space.slices[a].start
            params = [configs[r][1] for r in rows]
            for j, hp in enumerate(self.space[a].hyperparameters):
                values = [p.get(hp.name, _MISSING) for p in params]
                hit = [i for i, v in enumerate(values) if v is not _MISSING]
                if not hit:
                    continue
                memo = self._memo[a][j]
                u = [memo.get((type(v), v)) for v in (values[i] for i in hit)]
                for n, i in enumerate(hit):
                    if u[n] is None:  # type-strict key: 1, 1.0 and True differ
                        u[n] = memo[(type(values[i]), values[i])] = hp.to_unit(values[i])
                X[[rows[i] for i in hit], start + j] = u
        return X
