"""Benchmarks of the SMBO core: synthetic functions with known optima (``functions``)
and adapters running peer optimizers on them (``peers``, optional extra ``bench``)."""

from benchmarks.functions import (
    FUNCTIONS,
    SyntheticFunction,
    branin_function,
    four_branch,
    get_function,
    hartmann6_function,
)

__all__ = ["FUNCTIONS", "SyntheticFunction", "branin_function", "four_branch", "get_function", "hartmann6_function"]
