"""Toy optimization problems for tests of strategies and optimizers (known optima)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer.history import History, TrialRecord
from metabo.space.cash import CASHSpace
from metabo.space.hyperparameters import Categorical, Float, Integer
from metabo.space.space import SearchSpace

Objective = Callable[[str, dict], float]


def _quadratic(algorithm: str, params: dict) -> float:
    """Minimum 0 at (1, -2)."""
    return (params["x"] - 1.0) ** 2 + (params["y"] + 2.0) ** 2


def _two_algorithms(algorithm: str, params: dict) -> float:
    """Algorithm 'b' holds the optimum 0 (v = 0.7, n = 5); 'a' is 1 or more."""
    if algorithm == "a":
        return 1.0 + (params["u"] - 0.3) ** 2 + 0.1 * (params["k"] != "l1")
    return (params["v"] - 0.7) ** 2 + 0.01 * abs(params["n"] - 5)


def quadratic_problem() -> tuple[CASHSpace, Objective]:
    """A 2-d quadratic on [-5, 5]^2 (one algorithm, ``quad``), minimum 0 at (1, -2)."""
    space = SearchSpace("quad", (Float("x", -5.0, 5.0), Float("y", -5.0, 5.0)))
    return CASHSpace({"quad": space}), _quadratic


def two_algorithm_problem() -> tuple[CASHSpace, Objective]:
    """A CASH space of two algorithms with mixed parameters; 'b' holds the optimum 0."""
    space = CASHSpace({
        "a": SearchSpace("a", (Float("u", 0.0, 1.0), Categorical("k", ("l1", "l2")))),
        "b": SearchSpace("b", (Float("v", 0.0, 1.0), Integer("n", 1, 10))),
    })
    return space, _two_algorithms


def noise_objective(seed: int) -> Objective:
    """A standard normal value per configuration, the one drawn when it is first asked
    (every call draws one; later draws are discarded): a task nothing transfers to or from."""
    rng = np.random.default_rng(seed)
    table: dict[str, float] = {}

    def objective(algorithm: str, params: dict) -> float:
        return table.setdefault(config_id(algorithm, params), float(rng.normal()))

    return objective


def shared_past(space: CASHSpace, tasks: Mapping[str, Objective], n: int = 30, seed: int = 0,
                                  algorithms: Sequence[str] | None = None) -> PastRuns:
    """Past tasks ``tasks[name](a, p)`` evaluated on the same ``n`` seeded random
    configurations of ``algorithms`` (all of the space's by default), each once."""
    sub = space if algorithms is None else space.subset(list(algorithms))
    configs = sub.sample(np.random.default_rng(seed), n)
    rows = [(name, a, p, float(f(a, p))) for name, f in tasks.items() for a, p in configs]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return PastRuns.from_frame(frame.drop_duplicates(["dataset_id", "config_id"]))




#: Four configurations of :func:`two_algorithm_problem`'s space: a(u=.2), a(u=.8), b(v=.5, n=5), b(v=.1, n=1).
TWO_ALGORITHM_CONFIGS: tuple[tuple[str, dict], ...] = (
    ("a", {"u": 0.2, "k": "l1"}), ("a", {"u": 0.8, "k": "l2"}), ("b", {"v": 0.5, "n": 5}), ("b", {"v": 0.1, "n": 1}),
)


def recorded_past(values: Mapping[str, Sequence[float]], meta_features: Mapping[str, float] | None = None
                  ) -> PastRuns:
    """Past tasks that recorded :data:`TWO_ALGORITHM_CONFIGS`: ``values[task]`` holds one
    value per configuration, NaN where not run; ``meta_features``: task -> one meta-feature
    ``f``."""
    rows = [(task, a, p, v) for task, vs in values.items() for (a, p), v in zip(TWO_ALGORITHM_CONFIGS, vs)
            if v == v]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    meta = None if meta_features is None else pd.DataFrame({"f": dict(meta_features)})
    return PastRuns.from_frame(frame, meta_features=meta)


def history_of(space: CASHSpace, told: Sequence[tuple[tuple[str, dict], float]]) -> History:
    """A history of completed trials at ``told``'s configurations (normalized in ``space``)
    with its values, in order."""
    h = History()
    for i, ((a, p), v) in enumerate(told):
        a, p = space.normalize(a, p)
        h.add(TrialRecord(number=i, algorithm=a, params=p, config_id=config_id(a, p), state="complete", value=v,
                          status="ok"))
    return h


def matrix_column(ids: Sequence[str], space: CASHSpace, config: tuple[str, dict]) -> int:
    """The column of ``config`` (normalized in ``space``) among a regret matrix's ``ids``."""
    return list(ids).index(config_id(*space.normalize(*config)))


__all__ = ["TWO_ALGORITHM_CONFIGS", "Objective", "history_of", "matrix_column", "noise_objective", "quadratic_problem",
           "recorded_past", "shared_past", "two_algorithm_problem"]
