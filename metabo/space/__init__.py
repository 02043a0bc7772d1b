"""Search spaces: typed hyperparameters, conditions, the CASH space and its encoding.

See ``hyperparameters`` (types and the unit-interval encoding), ``conditions``,
``space.SearchSpace`` (one algorithm), ``cash.CASHSpace`` (the algorithm choice as root)
and ``algorithms`` (the per-algorithm spaces and scikit-learn estimators).
"""

from metabo.space.conditions import EqualsCondition, InCondition
from metabo.space.hyperparameters import Categorical, Constant, Float, Hyperparameter, Integer
from metabo.space.space import SearchSpace

__all__ = [
    "Categorical",
    "Constant",
    "EqualsCondition",
    "Float",
    "Hyperparameter",
    "InCondition",
    "Integer",
    "SearchSpace",
]
