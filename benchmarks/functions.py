"""Synthetic objectives with known optima, as CASH spaces (lower is better).

Notation: a :class:`SyntheticFunction` maps a CASH configuration ``(a, params)`` to a
float; ``optimum`` is the known global minimum ``f*``, so ``f(a, params) - f*`` is the
simple regret. A plain function is the one-algorithm CASH space ``{"f": space}``.

Formulas (Dixon & Szegő 1978, "The global optimization problem: an introduction";
constants as in Surjanovic & Bingham, Virtual Library of Simulation Experiments,
https://www.sfu.ca/~ssurjano/optimization.html):

- Branin, x1 in [-5, 10], x2 in [0, 15]:
  ``f = a (x2 - b x1^2 + c x1 - r)^2 + s (1 - t) cos(x1) + s`` with ``a = 1``,
  ``b = 5.1 / (4 pi^2)``, ``c = 5 / pi``, ``r = 6``, ``s = 10``, ``t = 1 / (8 pi)``;
  ``f* = 0.397887`` at (-pi, 12.275), (pi, 2.275) and (9.42478, 2.475).
- Hartmann-d (d = 3, 6), x in [0, 1]^d:
  ``f = -sum_{i=1..4} alpha_i exp(-sum_j A_ij (x_j - P_ij)^2)``, ``alpha = (1, 1.2, 3, 3.2)``;
  ``f* = -3.86278`` at (0.114614, 0.555649, 0.852547) for d = 3 and
  ``f* = -3.32237`` at (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573) for d = 6.
- Rosenbrock-2: ``f = 100 (x2 - x1^2)^2 + (1 - x1)^2``, ``f* = 0`` at (1, 1).

The 4-branch conditional function :func:`four_branch` (this module's own construction):
the root chooses one of four algorithms, each a shifted/scaled known function on its own
hyperparameters, so that only ``hartmann3`` reaches the global optimum ``f* = 0``::

    branin      x1 in [-5, 10], x2 in [0, 15] (floats)
                f = 0.5 + 0.1 (branin(x1, x2) - 0.397887)                min 0.5
    quadratic   n in 0..20 (int), y in [0.01, 100] (float, log), shape in {a, b, c}
                f = 0.3 + ((n - 7) / 5)^2 + (log10 y - 0.5)^2 + c(shape),
                c(a) = 0, c(b) = 0.25, c(c) = 1                          min 0.3 at (7, 10^0.5, a)
    hartmann3   x1, x2, x3 in [0, 1] (floats)
                f = hartmann3(x) + 3.86278                                min 0 (to 1e-5)
    rosenbrock  x1 in [-2, 2], x2 in [-1, 3] (floats), mode in {fixed, tuned},
                power in 1..5 (int), active only when mode == tuned
                f = 0.2 + 0.01 rosenbrock(x1, x2) + g,
                g = 0.5 (fixed) or 0.1 (power - 3)^2 (tuned)             min 0.2 at (1, 1, tuned, 3)

Branch means under uniform sampling are of the same order (about 3-6), so the
algorithm choice is not given away by a few random draws; the easy quadratic branch
is a trap at 0.3 that only a good optimization of ``hartmann3`` beats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.space import Categorical, EqualsCondition, Float, Integer, SearchSpace
from metabo.space.cash import CASHSpace

Config = tuple[str, dict[str, Any]]
Objective = Callable[[str, Mapping[str, Any]], float]

# ----------------------------------------------------------------- raw functions
BRANIN_MIN = 0.397887
BRANIN_MINIMIZERS = ((-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475))

_HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_HARTMANN3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_HARTMANN3_P = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
)
_HARTMANN6_A = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ]
)
_HARTMANN6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
HARTMANN3_MIN = -3.86278
HARTMANN3_MINIMIZER = (0.114614, 0.555649, 0.852547)
HARTMANN6_MIN = -3.32237
HARTMANN6_MINIMIZER = (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)


def branin(x1: Any, x2: Any) -> Any:
    """Branin-Hoo (Dixon & Szegő 1978), elementwise on arrays."""
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * np.cos(x1) + s


def _hartmann(x: Any, A: np.ndarray, P: np.ndarray) -> Any:
    """``-sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2)`` over the last axis of ``x``."""
    x = np.asarray(x, dtype=float)
    inner = np.sum(A * (x[..., None, :] - P) ** 2, axis=-1)  # (..., 4)
    return -np.sum(_HARTMANN_ALPHA * np.exp(-inner), axis=-1)


def hartmann3(x: Any) -> Any:
    """Hartmann-3 on [0, 1]^3 (last axis of ``x``)."""
    return _hartmann(x, _HARTMANN3_A, _HARTMANN3_P)


def hartmann6(x: Any) -> Any:
    """Hartmann-6 on [0, 1]^6 (last axis of ``x``)."""
    return _hartmann(x, _HARTMANN6_A, _HARTMANN6_P)


def rosenbrock(x1: Any, x2: Any) -> Any:
    """Rosenbrock in two dimensions, ``100 (x2 - x1^2)^2 + (1 - x1)^2``."""
    return 100.0 * (x2 - x1**2) ** 2 + (1.0 - x1) ** 2


# ----------------------------------------------------------------- the container
@dataclass(frozen=True, eq=False)
class SyntheticFunction:
    """A named objective over a CASH space with its known minimum ``optimum``.

    ``minimizers``: configurations known to reach ``optimum`` (up to the published
    rounding). Calling the function validates the configuration first.
    """

    name: str
    space: CASHSpace
    objective: Objective
    optimum: float
    minimizers: tuple[Config, ...] = field(default=())

    def __call__(self, algorithm: str, params: Mapping[str, Any]) -> float:
        algorithm, params = self.space.normalize(algorithm, params)
        return float(self.objective(algorithm, params))

    @property
    def n_dims(self) -> int:
        """Number of hyperparameters over all algorithms (the flat dimension)."""
        return sum(len(s) for s in self.space.spaces.values())


# ----------------------------------------------------------------- objectives
# Module-level functions (not closures) so that functions pickle into worker processes.
def _branin_objective(algorithm: str, p: Mapping[str, Any]) -> float:
    return float(branin(p["x1"], p["x2"]))


def _hartmann6_objective(algorithm: str, p: Mapping[str, Any]) -> float:
    return float(hartmann6([p[f"x{i}"] for i in range(1, 7)]))


_SHAPE_COST = MappingProxyType({"a": 0.0, "b": 0.25, "c": 1.0})


def _four_branch_objective(algorithm: str, p: Mapping[str, Any]) -> float:
    if algorithm == "branin":
        return 0.5 + 0.1 * (float(branin(p["x1"], p["x2"])) - BRANIN_MIN)
    if algorithm == "quadratic":
        return 0.3 + ((p["n"] - 7) / 5) ** 2 + (math.log10(p["y"]) - 0.5) ** 2 + _SHAPE_COST[p["shape"]]
    if algorithm == "hartmann3":
        return float(hartmann3([p["x1"], p["x2"], p["x3"]])) - HARTMANN3_MIN
    if algorithm == "rosenbrock":
        g = 0.5 if p["mode"] == "fixed" else 0.1 * (p["power"] - 3) ** 2
        return 0.2 + 0.01 * float(rosenbrock(p["x1"], p["x2"])) + g
    raise UnknownAlgorithmError(f"unknown algorithm {algorithm!r} of the 4-branch function")


# ----------------------------------------------------------------- factories
def branin_function() -> SyntheticFunction:
    """Branin on x1 in [-5, 10], x2 in [0, 15]; ``f* = 0.397887``."""
    space = SearchSpace("f", [Float("x1", -5.0, 10.0), Float("x2", 0.0, 15.0)])
    minimizers = tuple(("f", {"x1": a, "x2": b}) for a, b in BRANIN_MINIMIZERS)
    return SyntheticFunction("branin", CASHSpace({"f": space}), _branin_objective, BRANIN_MIN, minimizers)


def hartmann6_function() -> SyntheticFunction:
    """Hartmann-6 on the unit cube; ``f* = -3.32237``."""
    space = SearchSpace("f", [Float(f"x{i}", 0.0, 1.0) for i in range(1, 7)])
    best = ("f", {f"x{i}": v for i, v in enumerate(HARTMANN6_MINIMIZER, start=1)})
    return SyntheticFunction("hartmann6", CASHSpace({"f": space}), _hartmann6_objective, HARTMANN6_MIN, (best,))


def four_branch_space() -> CASHSpace:
    """The CASH space of :func:`four_branch` (module docstring)."""
    return CASHSpace(
        {
            "branin": SearchSpace("branin", [Float("x1", -5.0, 10.0), Float("x2", 0.0, 15.0)]),
            "quadratic": SearchSpace(
                "quadratic",
                [Integer("n", 0, 20), Float("y", 0.01, 100.0, log=True, default=1.0),
                 Categorical("shape", ("a", "b", "c"))],
            ),
            "hartmann3": SearchSpace("hartmann3", [Float(f"x{i}", 0.0, 1.0) for i in (1, 2, 3)]),
            "rosenbrock": SearchSpace(
                "rosenbrock",
                [
                    Float("x1", -2.0, 2.0),
                    Float("x2", -1.0, 3.0),
                    Categorical("mode", ("fixed", "tuned")),
                    Integer("power", 1, 5),
                ],
                [EqualsCondition("power", "mode", "tuned")],
            ),
        }
    )


def four_branch() -> SyntheticFunction:
    """The 4-branch conditional function (module docstring); ``f* = 0`` in ``hartmann3``."""
    best = ("hartmann3", {f"x{i}": v for i, v in enumerate(HARTMANN3_MINIMIZER, start=1)})
    return SyntheticFunction("four_branch", four_branch_space(), _four_branch_objective, 0.0, (best,))


#: The benchmark functions by name (factories: each call builds a fresh function).
FUNCTIONS: Mapping[str, Callable[[], SyntheticFunction]] = MappingProxyType(
    {"branin": branin_function, "hartmann6": hartmann6_function, "four_branch": four_branch}
)


def get_function(name: str) -> SyntheticFunction:
    """The function called ``name``; :class:`InputDataError` lists the valid names."""
    try:
        return FUNCTIONS[name]()
    except KeyError:
        raise InputDataError(f"unknown benchmark function {name!r}; valid: {list(FUNCTIONS)}") from None


__all__ = [
    "FUNCTIONS",
    "SyntheticFunction",
    "branin",
    "branin_function",
    "four_branch",
    "four_branch_space",
    "get_function",
    "hartmann3",
    "hartmann6",
    "hartmann6_function",
    "rosenbrock",
]
